"""The command line (see the package's docstring): `serve`, `run`, `library`; and Child, a rig for a
script."""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from .core import Rig
from .library import make_library
from .procs import log, start_reaper

USAGE = sys.modules[__package__].__doc__
# The entry point, scripts/rig.py.
ENTRY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rig.py")


class Child:
    """A rig for a script: `rig.py serve` as a child process that stops when we do. `info` is its
    description; `env` points D-Bus and PulseAudio clients at it."""

    def __init__(self, mopidy_mpris=False):
        env = dict(os.environ)
        if mopidy_mpris:
            env["RIG_MOPIDY_MPRIS"] = "1"
        self.proc = subprocess.Popen([sys.executable, ENTRY, "serve",
                                      "--owner", str(os.getpid())],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
        self.info = json.loads(self.proc.stdout.readline())
        if "error" in self.info:
            raise SystemExit(f"rig: {self.info['error']}")
        self.env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS=self.info["bus_address"],
                        PULSE_SERVER=self.info["pulse_server"], XDG_RUNTIME_DIR=self.info["pulse_runtime"])
        self.env.pop("DISPLAY", None)

    def cmd(self, **c):
        self.proc.stdin.write(json.dumps(c) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def rpc(self, method, **params):
        return self.cmd(cmd="rpc", method=method, params=params).get("ok")

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def watch_owner(owner, on_gone):
    def loop():
        while True:
            try:
                os.kill(owner, 0)
            except ProcessLookupError:
                on_gone()
                return
            time.sleep(0.5)
    threading.Thread(target=loop, name="rig-owner-watch", daemon=True).start()


class StopRequest:
    """Why the rig should stop, set from a signal handler or a thread and polled by the main
    thread. A plain attribute: a signal handler must take no lock (a handler that calls
    threading.Event.set() deadlocks when a second signal lands while the main thread holds the
    Event's lock)."""

    def __init__(self):
        self.reason = None

    def __call__(self, signum=None, _frame=None):
        self.reason = self.reason or signum or "asked"


def serve(args, interactive):
    root = args.dir or tempfile.mkdtemp(prefix="groove-rig-")
    os.makedirs(root, exist_ok=True)
    # Every process the rig starts carries it (a test finds any left over by it).
    os.environ["GROOVE_RIG_DIR"] = root
    # First of all, so that every process started after it is stopped however the rig ends.
    start_reaper(None if (args.keep or args.dir) else root)
    stop = StopRequest()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    rig = Rig(root, sound=args.sound)
    if args.owner:
        watch_owner(args.owner, stop)
    status = [None]

    def start():
        """On a thread of its own: the main thread stays free to notice a stop request."""
        try:
            rig.start()
        except Exception as e:
            log(f"start failed: {e}")
            print(json.dumps({"error": str(e), "dir": root}), flush=True)
            status[0] = 1
            stop()
            return
        announce(rig, root, interactive)
        # This thread lives on: PR_SET_PDEATHSIG fires when the thread that forked a child ends,
        # not the process.
        if not interactive:
            read_commands(rig, stop)
        while True:
            time.sleep(3600)

    threading.Thread(target=start, name="rig-commands", daemon=True).start()
    while stop.reason is None:
        time.sleep(0.05)
    rig.stop()
    if not args.keep and not args.dir:
        shutil.rmtree(root, ignore_errors=True)
    try:
        sys.stdout.flush()
    except Exception:
        pass
    # Without waiting for the other threads (one may sit in a read of stdin or a service's start).
    os._exit(status[0] or 0)


def announce(rig, root, interactive):
    info = rig.info()
    if interactive:
        print("Groove Audio test server on loopback (Ctrl-C stops it):")
        for k in ("stream_url", "native_stream_url", "groove_rpc_url", "groove_ws_url",
                  "mopidy_rpc_url", "mopidy_ws_url", "bus_address", "pulse_server", "dir"):
            print(f"  {k:18} {info[k]}")
        print(f"  listener password  in {root}/password (mode 600)")
        sys.stdout.flush()
    else:
        print(json.dumps(info), flush=True)
    pw_path = os.path.join(root, "password")
    fd = os.open(pw_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, (rig.password + "\n").encode())
    os.close(fd)
    # Written whole, then renamed: a script waiting for the file never reads half of it.
    with open(os.path.join(root, "rig.json.new"), "w") as f:
        json.dump({k: v for k, v in info.items() if k != "password"}, f)
    os.replace(os.path.join(root, "rig.json.new"), os.path.join(root, "rig.json"))


def read_commands(rig, stop):
    """Answers each command line on stdin with one JSON line; EOF stops the rig."""
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            reply = {"ok": rig.command(json.loads(line))}
        except Exception as e:
            reply = {"error": str(e)}
        print(json.dumps(reply), flush=True)
    stop()


def main():
    ap = argparse.ArgumentParser(description=USAGE, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    for mode in ("serve", "run"):
        p = sub.add_parser(mode)
        p.add_argument("--dir", help="working folder (default: a new temporary one)")
        p.add_argument("--owner", type=int, help="stop everything when this pid is gone")
        p.add_argument("--keep", action="store_true", help="keep the temporary folder")
        p.add_argument("--sound", choices=Rig.SOUND_SERVERS, default="pulseaudio",
                       help="the sound server clients play to (default: pulseaudio)")
    lib = sub.add_parser("library")
    lib.add_argument("dir")
    args = ap.parse_args()
    if args.mode == "library":
        make_library(args.dir)
        return 0
    return serve(args, interactive=(args.mode == "run"))
