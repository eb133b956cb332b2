"""The whole rig: its folder, ports and services, started in order, watched, stopped, described,
and commanded."""

import os
import secrets
import signal
import subprocess
import sys
import threading
import time

from .buses import BusesMixin
from .icecast import IcecastMixin
from .library import TRACK_SECONDS, TRACKS, LibraryMixin, make_library
from .link import LinksMixin
from .mopidy import MopidyMixin
from .music import MUSIC, MusicMixin, make_music
from .procs import LOOPBACK, free_port, free_udp_port, log, state, wait_for
from .routes import RoutesMixin
from .sound import SoundMixin


class Rig(BusesMixin, SoundMixin, IcecastMixin, MopidyMixin, RoutesMixin, LibraryMixin, LinksMixin, MusicMixin):
    def __init__(self, root, sound="pulseaudio"):
        self.root = root
        self.lock = threading.RLock()
        self.services = {}
        self.password = secrets.token_hex(12)
        self.source_password = secrets.token_hex(12)
        self.ports = dict(icecast=free_port(), mopidy=free_port(), nginx=free_port(), nginx_tls=free_port(),
                          nginx_home=free_port(), nginx_remote=free_port(),
                          pcm=free_udp_port(), pcm_native=free_udp_port())
        self.is_root = os.geteuid() == 0
        if self.is_root:
            # Icecast drops to its own user and must be able to reach its folder below this one
            # (mkdtemp makes it 0700).
            os.chmod(root, 0o711)
        for d in ("music", "mopidy", "icecast", "nginx", "nginx_home", "nginx_remote", "home", "bus", "sysbus",
                  "logs", "tls"):
            os.makedirs(os.path.join(root, d), exist_ok=True)
        self.bus_address = f"unix:path={root}/bus/socket"
        self.system_bus_address = f"unix:path={root}/sysbus/socket"
        self.sink = "groove_test"
        # The sound servers started, by kind; the first is the one every client is pointed at.
        self.sound = sound
        self.sounds = {}
        self.pulse_runtime = self.sound_runtime(sound)
        self.pulse_server = f"unix:{self.pulse_runtime}/pulse/native"
        self.stopping = False
        # Impaired links to Icecast, by name (link.py).
        self.links = {}

    # -- helpers --

    def path(self, *p):
        return os.path.join(self.root, *p)

    def logp(self, name):
        return self.path("logs", f"{name}.log")

    def base_env(self):
        env = dict(os.environ)
        env.update(HOME=self.path("home"), XDG_RUNTIME_DIR=self.pulse_runtime,
                   PULSE_SERVER=self.pulse_server, DBUS_SESSION_BUS_ADDRESS=self.bus_address)
        for k in ("DISPLAY", "WAYLAND_DISPLAY"):
            env.pop(k, None)
        return env

    def add(self, svc):
        self.services[svc.name] = svc
        svc.start()

    # -- whole rig --

    def start(self):
        # From the first service on: Debian's Icecast 2.4.4 now and then dies of a NULL strlen
        # (SIGSEGV) just after it started, while the encoders wait for it.
        threading.Thread(target=self._supervise, name="rig-supervisor", daemon=True).start()
        make_library(self.path("music"))
        make_music(self.path("music"))
        self.start_dbus()
        self.start_system_bus()
        self.start_sound(self.sound)
        self.start_icecast()
        self.start_encoders()
        self.start_mopidy()
        self.start_nginx()
        self.queue_library()

    def _supervise(self):
        """Starts again what ended unasked and may restart (see Service), saying so on stderr
        with the end of its log: the encoders when Icecast went away, as a real Groove server's
        source client reconnects, and PulseAudio."""
        while not self.stopping:
            time.sleep(0.2)
            with self.lock:
                # A copy: the start adds services meanwhile, without the lock.
                for svc in list(self.services.values()):
                    p = svc.proc
                    if svc.restart and svc.wanted and p is not None and p.poll() is not None:
                        try:
                            if (svc.restart is True or svc.restart()) and svc.respawn_if_ended():
                                print(f"rig: {svc.name} exited with {p.returncode}, restarted; "
                                      f"its log ends:\n{svc.log_tail()}", file=sys.stderr, flush=True)
                        except Exception:
                            pass

    STOP_ORDER = ("nginx_remote", "nginx_home", "nginx", "mopidy", "encoder_native", "encoder", "icecast",
                  "pulse", "pipewire-pulse", "wireplumber", "pipewire", "sysbus", "dbus")

    def stop(self, grace=2.5):
        """Stops every service, all at once and without the lock (a command may hold it for a
        while): SIGTERM (the encoders SIGKILL), then SIGKILL to the process group of any still
        running after `grace` seconds."""
        state.stopping = self.stopping = True
        services = dict(self.services)
        svcs = [services[n] for n in self.STOP_ORDER if n in services]
        svcs += [s for s in services.values() if s not in svcs]
        for svc in svcs:
            svc.wanted = False
            try:
                svc.signal(svc.shutdown_signal)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        for svc in svcs:
            p = svc.proc
            if p is None:
                continue
            try:
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log(f"{svc.name} did not stop on SIGTERM within {grace} s; SIGKILL")
                svc.kill_group()
                p.wait()

    def info(self):
        p = self.ports
        base = f"http://{LOOPBACK}"
        return {
            "dir": self.root,
            "password": self.password,
            "user": "listener",
            "ports": p,
            "stream_url": f"{base}:{p['icecast']}/stream.flac",
            "native_stream_url": f"{base}:{p['icecast']}/native.flac",
            "nginx_stream_url": f"{base}:{p['nginx']}/stream.flac",
            "groove_rpc_url": f"{base}:{p['nginx']}/api/mopidy/rpc",
            "groove_ws_url": f"ws://{LOOPBACK}:{p['nginx']}/ws/mopidy",
            "tls_stream_url": f"https://{LOOPBACK}:{p['nginx_tls']}/stream.flac",
            "tls_rpc_url": f"https://{LOOPBACK}:{p['nginx_tls']}/api/mopidy/rpc",
            "tls_ws_url": f"wss://{LOOPBACK}:{p['nginx_tls']}/ws/mopidy",
            "ca_file": self.path("tls", "ca.pem"),
            "home_stream_url": f"{base}:{p['nginx_home']}/stream.flac",
            "home_rpc_url": f"{base}:{p['nginx_home']}/api/mopidy/rpc",
            "home_ws_url": f"ws://{LOOPBACK}:{p['nginx_home']}/ws/mopidy",
            "remote_stream_url": f"https://{LOOPBACK}:{p['nginx_remote']}/stream.flac",
            "remote_rpc_url": f"https://{LOOPBACK}:{p['nginx_remote']}/api/mopidy/rpc",
            "remote_ws_url": f"wss://{LOOPBACK}:{p['nginx_remote']}/ws/mopidy",
            "system_bus_address": self.system_bus_address,
            "playlists_dir": self.path("mopidy", "playlists"),
            "mopidy_rpc_url": f"{base}:{p['mopidy']}/mopidy/rpc",
            "mopidy_ws_url": f"ws://{LOOPBACK}:{p['mopidy']}/mopidy/ws",
            "bus_address": self.bus_address,
            "sound": self.sound,
            "sounds": self.sounds,
            "pulse_server": self.pulse_server,
            "pulse_runtime": self.pulse_runtime,
            "sink": self.sink,
            "monitor": f"{self.sink}.monitor",
            "tracks": [{k: t[k] for k in ("title", "artists", "album", "albumartist", "freq",
                                          "track", "disc", "genre", "date")} for t in TRACKS],
            "track_seconds": TRACK_SECONDS,
            "music": [{k: t[k] for k in ("title", "kind")} for t in MUSIC],
            "pids": {n: s.pid for n, s in self.services.items()},
            "links": {n: link.port for n, link in dict(self.links).items()},
        }

    def command(self, req):
        cmd = req.get("cmd")
        with self.lock:
            if cmd == "info":
                return self.info()
            if cmd in ("stop", "start", "restart", "signal"):
                name = req.get("name")
                svc = self.services.get(name)
                if svc is None:
                    raise ValueError(f"no service {name!r}")
                if cmd in ("stop", "restart"):
                    sig = getattr(signal, "SIG" + req.get("signal", "TERM"))
                    svc.stop(sig)
                # A start of what runs already leaves it be (a second one could not take its port,
                # and the one running would no longer be tracked).
                if cmd in ("start", "restart") and svc.pid is None:
                    svc.start()
                    if name == "mopidy":
                        # A new Mopidy starts with an empty tracklist: queue the library again.
                        self.queue_library()
                if cmd == "signal":
                    svc.signal(getattr(signal, "SIG" + req["signal"]))
                return {"pid": svc.pid, "ready_at": svc.ready_at}
        if cmd == "sound":
            with self.lock:
                return self.start_sound(req.get("name"))
        if cmd == "wait_live":
            # Without the lock: the supervisor needs it to start the encoder again.
            mount = req.get("mount", "/stream.flac")
            return {"live_at": wait_for(f"{mount} live", lambda: self.icecast_mount_live(mount),
                                        timeout=float(req.get("timeout", 20)), interval=0.01)}
        if cmd == "queue":
            with self.lock:
                if req.get("set") == "music":
                    self.queue_music()
                else:
                    self.queue_library()
            return {}
        if cmd == "encoder_delay":
            with self.lock:
                return self.set_encoder_delay(req.get("ms", 0))
        if cmd == "rpc":
            return self.rpc(req["method"], req.get("params"))
        if cmd == "link":
            return self.link(req)
        if cmd == "link_log":
            return self.link_log(req)
        raise ValueError(f"unknown command {cmd!r}")
