"""How the rig starts a child and keeps track of it: every child in its own process group, its pid
told to the reaper (reaper.py) between fork and exec; the loopback ports; waiting on the monotonic
clock."""

import ctypes
import os
import random
import signal
import socket
import subprocess
import sys
import time

LOOPBACK = "127.0.0.1"
RATE, CHANNELS = 44100, 2


def log(msg):
    print(f"rig: {msg}", file=sys.stderr, flush=True)


# The ports this process has claimed: their claims, held for its life (`_claim`).
_claimed = []


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return max(2048, int(f.read().split()[0]))
    except (OSError, ValueError, IndexError):
        return 32768


def _claim(kind):
    """A loopback port of `kind` (SOCK_STREAM or SOCK_DGRAM) for a service started later, free now
    and claimed for this process's life. A port from bind(0) is free only until its socket
    closes: another rig may be given the same one, or an outgoing connection may take it as its
    source port, before the service binds it (a rig once found another's server on its nginx
    port). So the port is drawn below the ephemeral range, where no outgoing connection lands,
    and claimed by an abstract Unix socket named after it, which every rig on the machine
    respects and which goes with the process that holds it (no file is left behind)."""
    top = _ephemeral_low()
    bottom = max(1024, top - 12000)
    for _ in range(2000):
        port = random.randrange(bottom, top)
        claim = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            claim.bind(f"\0groove-rig-port-{port}")
            with socket.socket(socket.AF_INET, kind) as s:
                s.bind((LOOPBACK, port))
        except OSError:
            claim.close()
            continue
        _claimed.append(claim)
        return port
    raise RuntimeError(f"no free loopback port in {bottom}..{top - 1}")


def free_port():
    return _claim(socket.SOCK_STREAM)


def free_udp_port():
    return _claim(socket.SOCK_DGRAM)


_prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl
PR_SET_PDEATHSIG = 1


class _State:
    # The write end of the reaper's lifeline (see reaper.py), once there is one.
    lifeline = None
    # Set when the rig stops: nothing is started any more.
    stopping = False


state = _State()


def child_setup(deathsig=True):
    """preexec_fn for every child of the rig, run between fork and exec: its own process group,
    its pid told to the reaper (so it is stopped however the rig ends) and, unless it forks
    workers of its own (nginx), SIGKILL when the rig dies (PR_SET_PDEATHSIG; a process that changes
    its credentials, Icecast, loses it: the reaper stops that one). PR_SET_PDEATHSIG fires when the
    thread that forked the child ends: children are started only on threads that live as long as
    the rig (start and commands, the supervisor). Ends the child at once if the rig died before the
    child got there."""
    parent, fd = os.getpid(), state.lifeline

    def setup():
        if deathsig:
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        os.setpgrp()
        if fd is not None:
            try:
                os.write(fd, b"%d\n" % os.getpid())
            except OSError:  # no reaper (someone killed it): PR_SET_PDEATHSIG and the rig's stop remain
                pass
        if os.getppid() != parent:
            os._exit(1)
    return setup


def run_child(argv, **kw):
    """subprocess.run for the rig's short-lived helpers (pactl, openssl, sox, mopidy scan), known
    to the reaper like every other child."""
    if state.stopping:
        raise RuntimeError("the rig is stopping")
    return subprocess.run(argv, preexec_fn=child_setup(), **kw)


def start_reaper(root_to_remove=None):
    """Starts reaper.py on the read end of a new lifeline pipe; keeps the write end."""
    r, w = os.pipe()
    subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "reaper.py")],
                     stdin=r, stdout=subprocess.DEVNULL, start_new_session=True)
    os.close(r)
    state.lifeline = w
    if root_to_remove:
        os.write(w, f"rmtree {root_to_remove}\n".encode())


def wait_for(what, check, timeout=20.0, interval=0.05):
    """Polls `check` until it holds; returns time.monotonic() when it did (CLOCK_MONOTONIC, the
    clock the tests read)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            if check():
                return time.monotonic()
        except Exception as e:  # the service is still starting
            last = e
        time.sleep(interval)
    raise RuntimeError(f"{what} did not come up within {timeout:.0f} s (last error: {last})")


def tcp_open(port):
    with socket.create_connection((LOOPBACK, port), timeout=0.5):
        return True


def run_quiet(argv):
    r = run_child(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed: {r.stderr.decode(errors='replace')[-500:]}")

