#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal of its own (its controlling terminal, so /dev/tty is it)
and types answers as a person would: each one once its prompt has appeared, never earlier (typed
ahead, the terminal would echo it while echo is still on).

  at_a_terminal.py SECONDS PROMPT ANSWER [PROMPT ANSWER ...] -- COMMAND [ARG ...]

Prints everything the terminal showed, then exits with the command's status (124 when a prompt
did not come, or the command did not end, within SECONDS)."""
import os
import pty
import select
import sys
import time


def main():
    args = sys.argv[1:]
    split = args.index("--")
    timeout, pairs, command = float(args[0]), args[1:split], args[split + 1:]
    script = list(zip(pairs[0::2], pairs[1::2]))
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    shown, seen, deadline = b"", 0, time.monotonic() + timeout
    status = 124
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                data = os.read(fd, 4096)
            except OSError:  # the command ended and closed the terminal
                data = b""
            if not data:
                _, code = os.waitpid(pid, 0)
                status = os.waitstatus_to_exitcode(code)
                break
            shown += data
        if script:
            prompt, answer = script[0]
            at = shown.find(prompt.encode(), seen)
            if at >= 0:
                seen = at + len(prompt)
                os.write(fd, answer.encode() + b"\r")
                script.pop(0)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    sys.stdout.write(shown.decode(errors="replace"))
    sys.exit(status)


if __name__ == "__main__":
    main()
