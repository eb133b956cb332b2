"""One child process of the rig."""

import os
import signal
import subprocess
import threading
import time

from .procs import child_setup, state, wait_for


class Service:
    """One child process, started by argv and stopped by pid. `restart`: False, True (started
    again whenever it ends unasked) or a callable saying when it may be (the encoders: once
    Icecast is back)."""

    def __init__(self, name, argv, env=None, ready=None, log_path=None, restart=False, ready_interval=0.05,
                 more_log=None, deathsig=True, shutdown_signal=signal.SIGTERM):
        self.name, self.argv, self.env, self.ready = name, argv, env, ready
        # PR_SET_PDEATHSIG, unless the process forks workers that would outlive it (see child_setup).
        self.deathsig = deathsig
        # What the rig's own stop sends first.
        self.shutdown_signal = shutdown_signal
        self.log_path, self.restart = log_path, restart
        # A log the program writes itself, also shown when it ended unasked.
        self.more_log = more_log
        # How often `ready` is asked: finely for a port (cheap, and outage tests time it).
        self.ready_interval = ready_interval
        self.proc = None
        self.respawn_lock = threading.Lock()
        self.wanted = False
        self.starts = 0
        self.ready_at = None

    def spawn(self):
        if state.stopping:
            raise RuntimeError("the rig is stopping")
        logf = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(self.argv, env=self.env, stdin=subprocess.DEVNULL,
                                     stdout=logf, stderr=subprocess.STDOUT,
                                     preexec_fn=child_setup(self.deathsig))
        if logf is not subprocess.DEVNULL:
            logf.close()
        self.wanted = True
        self.starts += 1

    def log_tail(self, lines=5):
        out = ""
        for path in (self.log_path, self.more_log):
            try:
                with open(path, errors="replace") as f:
                    out += "".join(f.readlines()[-lines:])
            except (OSError, TypeError):
                pass
        return out

    def start(self):
        self.spawn()
        self.ready_at = time.monotonic()
        if self.ready:
            try:
                self.ready_at = wait_for(self.name, lambda: self._alive() and self.ready(),
                                         interval=self.ready_interval)
            except RuntimeError as e:
                raise RuntimeError(f"{e}; see {self.log_path}") from None

    def respawn_if_ended(self):
        """Starts it again if it has ended: from the wait for it to be ready or from the rig's
        supervisor, whichever comes first, never both. True when it did."""
        with self.respawn_lock:
            if self.proc is None or self.proc.poll() is None:
                return False
            self.spawn()
            return True

    def _alive(self):
        if self.proc.poll() is not None:
            if self.restart:
                # A source client's first login can be refused while libshout probes protocols;
                # like a real source client, try again.
                time.sleep(0.3)
                self.respawn_if_ended()
                return False
            raise RuntimeError(f"{self.name} exited with {self.proc.returncode}")
        return True

    def stop(self, sig=signal.SIGTERM):
        self.wanted = False
        p = self.proc
        if p is None or p.poll() is not None:
            return
        try:
            os.kill(p.pid, sig)
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
        except ProcessLookupError:
            pass

    def signal(self, sig):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def kill_group(self):
        """SIGKILL to its process group (nginx's workers with their master), while it is not
        reaped: until then its pid, the group's id, cannot have been reused."""
        p = self.proc
        if p is not None and p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    @property
    def pid(self):
        return self.proc.pid if self.proc and self.proc.poll() is None else None
