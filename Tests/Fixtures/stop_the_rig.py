#!/usr/bin/env python3
"""Stops the demo and the rig the ways people and programs do, and looks for anything left.

  stop_the_rig.py demo RUNS     scripts/demo on a pseudo-terminal of its own, as a person runs it:
                                waits until it prints that the player plays (playerctl follows
                                org.mpris.MediaPlayer2.groove on the rig's bus), then types Ctrl-C
                                (the terminal sends SIGINT to its foreground process group)
  stop_the_rig.py demo-term RUNS the same, but SIGTERM to scripts/demo alone (as a service manager or
                                `kill` stops it)
  stop_the_rig.py signals RUNS  scripts/rig.py serve, then SIGINT and SIGTERM to it back to back
                                (microseconds apart), at moments spread over its start and after
  stop_the_rig.py kill RUNS     scripts/rig.py serve, then SIGKILL to it, during its start and after

After each stop it watches, for at most 5 s (DEADLINE) on the monotonic clock, until nothing of the
run is left: no process the rig or the demo started (every one carries the rig's folder in its
environment or command line, or is one of the pids in the rig's rig.json, or in one of their
process groups), no listening socket on any of the rig's ports. Prints one JSON line per run:
  {"kind", "run", "ok", "gone_after", "left": [what is left at the deadline], "note"}
and exits 0 when every run was ok. Zombies count as gone (they hold nothing; this machine's pid 1
may not reap orphans)."""
import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEADLINE = 5.0


def stat_of(pid):
    """(state, pgid, starttime) of a live process, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return fields[0].decode(), int(fields[2]), int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


class Run:
    """What belongs to one run: its folder, the pids it learnt and their start times."""

    def __init__(self, folder):
        self.folder = folder
        self.known = {}  # pid -> (name, starttime)
        self.ports = {}

    def learn(self, rig_json=None, info=None):
        """The ports and pids of the rig's description: `info`, or its rig.json when written."""
        if info is None:
            try:
                info = json.loads(read(rig_json) or b"null")
            except ValueError:
                return False
        if not info:
            return False
        self.ports = dict(info.get("ports", {}))
        for name, pid in info.get("pids", {}).items():
            st = stat_of(pid) if pid else None
            if st:
                self.known[pid] = (name, st[2])
        return True

    def left(self, also=()):
        """Everything of the run still there."""
        out = []
        mark = self.folder.encode()
        leaders = {pid for pid in self.known}
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            pid = int(entry)
            st = stat_of(pid)
            if st is None or st[0] == "Z":
                continue
            cmd = read(f"/proc/{pid}/cmdline")
            why = None
            if pid in self.known and self.known[pid][1] == st[2]:
                why = self.known[pid][0]
            elif st[1] in leaders and st[1] != os.getpgrp():
                why = f"group of {self.known[st[1]][0]}"
            elif mark in cmd or mark in read(f"/proc/{pid}/environ"):
                why = "the run's folder in its environment"
            elif pid in also:
                why = "started by the test"
            if why:
                shown = cmd.replace(b"\0", b" ").decode(errors="replace")[:120]
                out.append(f"pid {pid} ({why}): {shown}")
        listening = listening_ports()
        for name, port in self.ports.items():
            if port in listening:
                out.append(f"port {port} ({name}) still bound")
        return out

    def watch(self, since, also=()):
        """Waits until nothing is left or DEADLINE passed; returns (seconds, what is left)."""
        while True:
            left = self.left(also)
            now = time.monotonic()
            if not left or now - since > DEADLINE:
                return round(now - since, 3), left
            time.sleep(0.05)


def listening_ports():
    ports = set()
    for name in ("tcp", "tcp6", "udp", "udp6"):
        for line in read(f"/proc/net/{name}").decode().splitlines()[1:]:
            cols = line.split()
            if len(cols) > 3 and (name.startswith("udp") or cols[3] == "0A"):
                ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


def report(kind, n, run, since, also=(), note=""):
    gone_after, left = run.watch(since, also)
    ok = not left
    print(json.dumps({"kind": kind, "run": n, "ok": ok, "gone_after": gone_after, "left": left,
                      "note": note}), flush=True)
    return ok


def demo(n, bridge_bin, kind="demo"):
    """scripts/demo on a terminal; once it plays, Ctrl-C (kind "demo") or SIGTERM to it alone
    ("demo-term")."""
    scratch = tempfile.mkdtemp(prefix="groove-demo-test-")
    os.makedirs(f"{scratch}/config")
    os.makedirs(f"{scratch}/runtime", mode=0o700)
    env = {k: v for k, v in os.environ.items()
           if k not in ("DBUS_SESSION_BUS_ADDRESS", "PULSE_SERVER", "DISPLAY", "WAYLAND_DISPLAY")}
    env.update(XDG_CONFIG_HOME=f"{scratch}/config", XDG_RUNTIME_DIR=f"{scratch}/runtime", TERM="dumb")
    if bridge_bin:
        env["GROOVE_BRIDGE_BIN"] = bridge_bin
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(ROOT)
        os.execvpe("scripts/demo", ["scripts/demo"], env)
    shown, run, plays_at, status, since = b"", None, None, None, None
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if select.select([fd], [], [], 0.05)[0]:
            try:
                data = os.read(fd, 4096)
            except OSError:
                data = b""
            if not data:
                status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
                break
            shown += data
        if run is None:
            for line in shown.decode(errors="replace").splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[0] == "dir" and parts[1].startswith("/tmp/groove-demo-"):
                    run = Run(os.path.dirname(parts[1]))
                    run.learn(os.path.join(parts[1], "rig.json"))
        if plays_at is None and b"playerctl: Playing" in shown:
            plays_at = time.monotonic()
            if kind == "demo":
                os.write(fd, b"\x03")  # Ctrl-C, typed: the line discipline sends SIGINT to the group
            else:
                os.kill(pid, signal.SIGTERM)
            since = time.monotonic()
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    os.close(fd)
    text = shown.decode(errors="replace")
    if run is None or plays_at is None:
        print(json.dumps({"kind": kind, "run": n, "ok": False, "gone_after": None,
                          "left": ["the demo did not play"], "note": text[-3000:]}), flush=True)
        shutil.rmtree(scratch, ignore_errors=True)
        return False
    ok = report(kind, n, run, since, also=(pid,),
                note=f"exit status {status}; stopped: {'demo: stopped' in text}")
    if status != (130 if kind == "demo" else 143) or "demo: stopped" not in text:
        print(json.dumps({"kind": kind, "run": n, "ok": False, "gone_after": None,
                          "left": [f"the demo ended with status {status}"], "note": text[-3000:]}), flush=True)
        ok = False
    shutil.rmtree(scratch, ignore_errors=True)
    return ok


def rig(kind, n, delay):
    """scripts/rig.py serve; after `delay` seconds (None: once it answered its info), the stop."""
    folder = tempfile.mkdtemp(prefix="groove-rig-stop-")
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "scripts", "rig.py"), "serve",
                             "--dir", folder], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=open(os.path.join(folder, "rig.err"), "wb"))
    run = Run(folder)
    if delay is None:
        line = proc.stdout.readline()
        info = json.loads(line) if line else {"error": "no description"}
        started = "error" not in info
        run.learn(info=info)
        if not started:
            print(json.dumps({"kind": kind, "run": n, "ok": False, "gone_after": None,
                              "left": ["the rig did not start"],
                              "note": read(os.path.join(folder, "rig.err")).decode(errors="replace")[-2000:]}),
                  flush=True)
    else:
        time.sleep(delay)
        run.learn(os.path.join(folder, "rig.json"))
    if kind == "signals":
        os.kill(proc.pid, signal.SIGINT)
        os.kill(proc.pid, signal.SIGTERM)
    else:
        os.kill(proc.pid, signal.SIGKILL)
    since = time.monotonic()
    try:
        proc.wait(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        pass
    exited = proc.poll() is not None
    ok = report(kind, n, run, since, also=(proc.pid,),
                note=f"stopped {'once started' if delay is None else f'{delay:.2f} s into its start'}")
    if not exited:
        proc.kill()
        proc.wait()
    shutil.rmtree(folder, ignore_errors=True)
    return ok and exited


def main():
    kind, runs = sys.argv[1], int(sys.argv[2])
    ok = True
    for n in range(1, runs + 1):
        if kind in ("demo", "demo-term"):
            ok &= demo(n, os.environ.get("GROOVE_BRIDGE_BIN"), kind)
        else:
            # Spread over the rig's start (about 5 s here), every third run once it is up.
            delay = None if n % 3 == 0 else ((n * 0.77) % 4.5)
            ok &= rig(kind, n, delay)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
