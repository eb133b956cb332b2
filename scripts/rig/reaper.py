#!/usr/bin/env python3
"""The rig's reaper: stops what the rig started when the rig itself is gone, however it went
(SIGKILL included).

Started by the rig with the read end of its "lifeline" pipe on stdin, in a session of its own and
deaf to SIGINT/SIGTERM/SIGHUP (a Ctrl-C or a signal to the rig's process group does not reach it
early). Every child of the rig writes its pid on that pipe itself, between fork and exec (see
`child_setup` in procs.py), so no child is ever unknown to the reaper. Lines:

  PID            a child, leader of its own process group
  rmtree PATH    a folder to remove once everything is stopped

The write end is held by the rig alone (close-on-exec), so EOF means the rig has ended. Then
every recorded process still alive gets SIGKILL, its whole process group with it (nginx's
workers). A group is signalled only while its leader is alive, as seen through a pidfd: a live
leader's pid cannot have been reused, so the group is the rig's. SIGKILL rather than the usual
PR_SET_PDEATHSIG: Icecast drops root with setuid, which clears PR_SET_PDEATHSIG."""
import os
import select
import shutil
import signal
import sys
import time


def alive(pidfd):
    """False once the process has ended (its pidfd polls readable)."""
    return not select.select([pidfd], [], [], 0)[0]


def main():
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    children, folders, buf = {}, [], b""
    while True:
        try:
            chunk = os.read(0, 4096)
        except InterruptedError:
            continue
        if not chunk:
            break
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            text = line.decode(errors="replace").strip()
            if text.startswith("rmtree "):
                folders.append(text[len("rmtree "):])
            elif text.isdigit():
                pid = int(text)
                try:
                    children[pid] = os.pidfd_open(pid)
                except OSError:  # already gone
                    pass
    live = {pid: fd for pid, fd in children.items() if alive(fd)}
    for pid, fd in live.items():
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(alive(fd) for fd in live.values()):
        time.sleep(0.02)
    if live:
        print(f"rig reaper: stopped {len(live)} process group(s) the rig left", file=sys.stderr, flush=True)
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
