#!/usr/bin/env python3
"""A real Groove Audio server on loopback, for tests, benchmarks and the demo.

Starts, each on a port chosen free at run time and bound to 127.0.0.1 only:
  - a private D-Bus session bus              (dbus-daemon)
  - a sound server with a null sink "groove_test" (record it through groove_test.monitor):
    PulseAudio, or PipeWire + WirePlumber + pipewire-pulse (--sound pipewire); the other one too
    on request ({"cmd":"sound","name":"pipewire"}), on a runtime folder of its own
  - Icecast 2 with listener Basic auth        (/stream.flac Ogg FLAC, /native.flac native FLAC)
  - a long-lived encoder                     (gst-launch: UDP PCM + silence -> FLAC -> Icecast,
                                              ffmpeg: the same PCM -> native FLAC -> Icecast)
  - Mopidy + Mopidy-Local with a software mixer, playing a generated library of sine tones
  - nginx in front with the Groove URL layout (/api/mopidy/rpc, /ws/mopidy, /stream.flac, /local/),
    on plain HTTP and on TLS (a certificate for 127.0.0.1 from a CA made for the run: tls/ca.pem)
  - two more front ends of the same layout for the route tests: "nginx_home" (plain HTTP, the
    home network's, stopped and started to leave and come home) and "nginx_remote" (TLS, the
    address from outside)
  - a second dbus-daemon as the system bus (DBUS_SYSTEM_BUS_ADDRESS), on which a test may own
    org.freedesktop.login1 and org.freedesktop.NetworkManager and send their signals

Why the encoder is a separate process: putting flacenc ! oggmux ! shout2send inside Mopidy's own
output drops the Icecast source at every track switch or stop. Mopidy sends raw PCM over UDP to
the encoder instead, so the Icecast source never disconnects and a pause is silence.

Usage:
  rig.py serve [--dir DIR] [--owner PID] [--sound pulseaudio|pipewire]
                                           start everything, print one JSON line describing it,
                                           then read commands on stdin (one JSON object a line):
                                             {"cmd":"info"}
                                             {"cmd":"stop","name":"icecast"}
                                             {"cmd":"start","name":"icecast"}  (answers its pid and
                                               "ready_at", time.monotonic() when it accepted)
                                             {"cmd":"wait_live","mount":"/stream.flac"}  (answers
                                               "live_at", when the mount took listeners again)
                                             {"cmd":"signal","name":"icecast","signal":"STOP"}
                                             {"cmd":"rpc","method":"core.playback.next"}
                                             {"cmd":"queue"}  (the library again, playing)
                                             {"cmd":"sound","name":"pipewire"}  (that sound server
                                               too, started on first use: where its clients go)
                                           and answer each with one JSON line. EOF on stdin, SIGTERM,
                                           SIGINT or the owner process dying stops every process.
  rig.py run [--dir DIR]                   the same, for a person: prints the endpoints, runs until
                                           Ctrl-C.
  rig.py library DIR                       only generate the test library into DIR.

Only the standard library is used. Every process is started by this supervisor, recorded by pid
and stopped by pid (children also get PR_SET_PDEATHSIG so they die with it).
"""

import argparse
import ctypes
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

LOOPBACK = "127.0.0.1"
RATE, CHANNELS = 44100, 2

# The generated library: distinct tones so that a recording tells which track is heard.
TRACKS = [
    dict(file="01-alpha.flac", freq=440, title="Alpha Tone", artists=["Groove Test Band"],
         album="Rig Sessions", albumartist="Groove Test Band", track=1, disc=1, genre="Test",
         date="2024-05-01"),
    dict(file="02-duet.flac", freq=660, title="Duet in A", artists=["Ada Lovelace", "Alan Turing"],
         album="Rig Sessions", albumartist="Groove Test Band", track=2, disc=1, genre="Test",
         date="2024-05-01"),
    dict(file="03-cafe.flac", freq=880, title="Café Ñandú – 東京", artists=["Sigur Rós"],
         album="Ñandú Nights", albumartist="Sigur Rós", track=3, disc=1, genre="Ambient",
         date="2023"),
    dict(file="04-low.flac", freq=330, title="Low Hum", artists=["Groove Test Band"],
         album="Rig Sessions", albumartist="Groove Test Band", track=4, disc=2, genre="Test",
         date="2024-05-01"),
    dict(file="05-high.flac", freq=1100, title="High Whistle", artists=["Groove Test Band"],
         album="Rig Sessions", albumartist="Groove Test Band", track=5, disc=2, genre="Test",
         date="2024-05-01"),
]
TRACK_SECONDS = 30


def log(msg):
    print(f"rig: {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


_prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl
PR_SET_PDEATHSIG = 1
# The write end of the reaper's lifeline (see scripts/rig/reaper.py), once there is one.
lifeline = None
# Set when the rig stops: nothing is started any more.
stopping = False


def child_setup(deathsig=True):
    """preexec_fn for every child of the rig, run between fork and exec: its own process group,
    its pid told to the reaper (so it is stopped however the rig ends) and, unless it forks
    workers of its own (nginx), SIGKILL when the rig dies (PR_SET_PDEATHSIG; a process that changes
    its credentials, Icecast, loses it: the reaper stops that one). PR_SET_PDEATHSIG fires when the
    thread that forked the child ends: children are started only on threads that live as long as
    the rig (start and commands, the supervisor). Ends the child at once if the rig died before the
    child got there."""
    parent, fd = os.getpid(), lifeline

    def setup():
        if deathsig:
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        os.setpgrp()
        if fd is not None:
            os.write(fd, b"%d\n" % os.getpid())
        if os.getppid() != parent:
            os._exit(1)
    return setup


def run_child(argv, **kw):
    """subprocess.run for the rig's short-lived helpers (pactl, openssl, sox, mopidy scan), known
    to the reaper like every other child."""
    if stopping:
        raise RuntimeError("the rig is stopping")
    return subprocess.run(argv, preexec_fn=child_setup(), **kw)


def start_reaper(root_to_remove=None):
    """Starts scripts/rig/reaper.py on the read end of a new lifeline pipe; keeps the write end."""
    global lifeline
    r, w = os.pipe()
    subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "rig", "reaper.py")],
                     stdin=r, stdout=subprocess.DEVNULL, start_new_session=True)
    os.close(r)
    lifeline = w
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


# ---------------------------------------------------------------------------------------------
# The test library


def run_quiet(argv):
    r = run_child(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed: {r.stderr.decode(errors='replace')[-500:]}")


def make_library(music_dir, seconds=TRACK_SECONDS):
    """Generates FLAC tracks (sine tones, full tags, embedded art) plus a cover.jpg per album."""
    os.makedirs(music_dir, exist_ok=True)
    stamp = os.path.join(music_dir, ".generated")
    want = json.dumps([TRACKS, seconds], sort_keys=True)
    if os.path.exists(stamp) and open(stamp).read() == want:
        return
    covers = {}
    for i, album in enumerate(sorted({t["album"] for t in TRACKS})):
        sub = os.path.join(music_dir, album)
        os.makedirs(sub, exist_ok=True)
        cover = os.path.join(sub, "cover.jpg")
        color = ["0x3060c0", "0xc06030"][i % 2]
        run_quiet(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                   f"color=c={color}:s=320x320", "-frames:v", "1", cover])
        covers[album] = cover
    for t in TRACKS:
        path = os.path.join(music_dir, t["album"], t["file"])
        run_quiet(["sox", "-n", "-r", str(RATE), "-c", str(CHANNELS), "-b", "16", path,
                   "synth", str(seconds), "sine", str(t["freq"]), "vol", "0.5"])
        tags = [f"--set-tag=TITLE={t['title']}", f"--set-tag=ALBUM={t['album']}",
                f"--set-tag=ALBUMARTIST={t['albumartist']}",
                f"--set-tag=TRACKNUMBER={t['track']}", f"--set-tag=DISCNUMBER={t['disc']}",
                f"--set-tag=GENRE={t['genre']}", f"--set-tag=DATE={t['date']}"]
        tags += [f"--set-tag=ARTIST={a}" for a in t["artists"]]
        run_quiet(["metaflac", "--remove-all-tags", *tags,
                   f"--import-picture-from={covers[t['album']]}", path])
    with open(stamp, "w") as f:
        f.write(want)


# ---------------------------------------------------------------------------------------------
# Services


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
        self.wanted = False
        self.starts = 0
        self.ready_at = None

    def spawn(self):
        if stopping:
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

    def _alive(self):
        if self.proc.poll() is not None:
            if self.restart:
                # A source client's first login can be refused while libshout probes protocols;
                # like a real source client, try again.
                time.sleep(0.3)
                self.spawn()
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


class Rig:
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

    def rpc(self, method, params=None, port=None):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                           "params": params or {}}).encode()
        req = urllib.request.Request(f"http://{LOOPBACK}:{port or self.ports['mopidy']}/mopidy/rpc",
                                     data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            reply = json.load(r)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result")

    def icecast_mount_live(self, mount):
        """True when the mount has a source (Icecast's status page lists it). The page is read as
        text: Icecast 2.4 writes it as invalid JSON now and then (an Ogg FLAC source's fields)."""
        url = f"http://{LOOPBACK}:{self.ports['icecast']}/status-json.xsl"
        with urllib.request.urlopen(url, timeout=2) as r:
            text = r.read().decode(errors="replace")
        return f'"listenurl":"http://{LOOPBACK}:{self.ports["icecast"]}{mount}"' in text

    # -- the parts --

    def start_dbus(self):
        self.add(Service("dbus", ["dbus-daemon", "--session", "--nofork", "--nopidfile",
                                  f"--address={self.bus_address}"],
                         env=self.base_env(), log_path=self.logp("dbus"),
                         ready=lambda: os.path.exists(self.path("bus", "socket"))))

    SOUND_SERVERS = ("pulseaudio", "pipewire")

    def sound_runtime(self, kind):
        """Each sound server's own XDG_RUNTIME_DIR (mode 700, as both servers insist)."""
        d = self.path("pulse" if kind == "pulseaudio" else "pipewire")
        os.makedirs(d, mode=0o700, exist_ok=True)
        os.chmod(d, 0o700)
        return d

    def sound_env(self, kind):
        env = self.base_env()
        env.update(XDG_RUNTIME_DIR=self.sound_runtime(kind),
                   PULSE_SERVER=f"unix:{self.sound_runtime(kind)}/pulse/native")
        return env

    def start_sound(self, kind):
        """Starts the sound server `kind` once, and describes where its clients go."""
        if kind not in self.SOUND_SERVERS:
            raise ValueError(f"no sound server {kind!r} (known: {', '.join(self.SOUND_SERVERS)})")
        if kind not in self.sounds:
            (self.start_pulse if kind == "pulseaudio" else self.start_pipewire)()
            runtime = self.sound_runtime(kind)
            self.sounds[kind] = {"kind": kind, "pulse_server": f"unix:{runtime}/pulse/native",
                                 "pulse_runtime": runtime, "sink": self.sink, "monitor": f"{self.sink}.monitor"}
        return self.sounds[kind]

    def start_pipewire(self):
        """PipeWire as desktops run it: the daemon, WirePlumber managing the graph (it needs the
        session bus, the rig's) and pipewire-pulse serving PulseAudio's protocol at
        $XDG_RUNTIME_DIR/pulse/native. The null sink is made through that protocol, as on
        PulseAudio; PipeWire runs it at the graph's rate and converts for its clients. Not
        restarted when it ends: the null sink would not come back with pipewire-pulse."""
        env = self.sound_env("pipewire")
        runtime = self.sound_runtime("pipewire")
        self.add(Service("pipewire", ["pipewire"], env=env, log_path=self.logp("pipewire"),
                         ready=lambda: os.path.exists(os.path.join(runtime, "pipewire-0"))))
        self.add(Service("wireplumber", ["wireplumber"], env=env, log_path=self.logp("wireplumber")))
        pactl = lambda *a: run_child(["pactl", *a], env=env, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL).returncode == 0
        self.add(Service("pipewire-pulse", ["pipewire-pulse"], env=env, log_path=self.logp("pipewire-pulse"),
                         ready=lambda: pactl("info")))
        if not pactl("load-module", "module-null-sink", f"sink_name={self.sink}", f"rate={RATE}",
                     f"channels={CHANNELS}", "sink_properties=device.description=GrooveTest"):
            raise RuntimeError(f"pipewire-pulse made no null sink; see {self.logp('pipewire-pulse')}")
        # Until WirePlumber manages the graph, setting the default sink is "Not supported".
        wait_for("WirePlumber", lambda: pactl("set-default-sink", self.sink))

    def start_system_bus(self):
        """A bus of type system for logind's and NetworkManager's signals: the test owns their
        names (the policy allows those two and no other) and sends the real signals."""
        cfg = self.path("sysbus", "system.conf")
        with open(cfg, "w") as f:
            f.write(f"""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={self.path("sysbus", "socket")}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="org.freedesktop.login1"/>
    <allow own="org.freedesktop.NetworkManager"/>
    <allow send_destination="*"/>
    <allow send_type="signal"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
""")
        self.add(Service("sysbus", ["dbus-daemon", f"--config-file={cfg}", "--nofork", "--nopidfile"],
                         env=self.base_env(), log_path=self.logp("sysbus"),
                         ready=lambda: os.path.exists(self.path("sysbus", "socket"))))

    def start_pulse(self):
        # --no-cpu-limit: PulseAudio's own limiter ends the daemon when it used over 70 % of a
        # core for 10 s, which a busy 2-core test machine can reach.
        argv = ["pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--disallow-exit",
                "--no-cpu-limit", "--use-pid-file=no", "--log-target=stderr",
                "-L", "module-native-protocol-unix auth-anonymous=1",
                "-L", f"module-null-sink sink_name={self.sink} "
                      f"sink_properties=device.description=GrooveTest",
                "-L", "module-always-sink"]
        # Restarted if it ends unasked, so one lost sound server fails one test, not every test
        # after it.
        env = self.sound_env("pulseaudio")
        self.add(Service("pulse", argv, env=env, log_path=self.logp("pulse"), restart=True,
                         ready=lambda: run_child(["pactl", "info"], env=env,
                                                      stdout=subprocess.DEVNULL,
                                                      stderr=subprocess.DEVNULL).returncode == 0))
        run_child(["pactl", "set-default-sink", self.sink], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def write_icecast_config(self):
        d = self.path("icecast")
        htpasswd = os.path.join(d, "listeners")
        with open(htpasswd, "w") as f:
            # Icecast 2.4's htpasswd listener file is user:md5hex(password).
            f.write(f"listener:{hashlib.md5(self.password.encode()).hexdigest()}\n")
        auth = f"""<authentication type="htpasswd">
                <option name="filename" value="{htpasswd}"/>
                <option name="allow_duplicate_users" value="1"/>
            </authentication>"""
        owner = ""
        if self.is_root:
            # Icecast refuses to run as root.
            user = "icecast2"
            group = "icecast"
            owner = f"<security><chroot>0</chroot><changeowner><user>{user}</user>" \
                    f"<group>{group}</group></changeowner></security>"
            shutil.chown(d, user, group)
            shutil.chown(htpasswd, user, group)
        admin = secrets.token_hex(8)
        cfg = f"""<icecast>
  <location>loopback</location><admin>rig@localhost</admin>
  <limits><clients>100</clients><sources>4</sources><queue-size>524288</queue-size>
    <client-timeout>30</client-timeout><header-timeout>15</header-timeout>
    <source-timeout>10</source-timeout><burst-on-connect>1</burst-on-connect>
    <burst-size>65535</burst-size></limits>
  <authentication><source-password>{self.source_password}</source-password>
    <admin-user>admin</admin-user><admin-password>{admin}</admin-password></authentication>
  <hostname>{LOOPBACK}</hostname>
  <listen-socket><port>{self.ports['icecast']}</port><bind-address>{LOOPBACK}</bind-address></listen-socket>
  <mount type="normal"><mount-name>/stream.flac</mount-name>{auth}</mount>
  <mount type="normal"><mount-name>/native.flac</mount-name>{auth}</mount>
  <fileserve>1</fileserve>
  <paths><basedir>/usr/share/icecast2</basedir><logdir>{d}</logdir>
    <webroot>/usr/share/icecast2/web</webroot><adminroot>/usr/share/icecast2/admin</adminroot>
    <pidfile>{d}/icecast.pid</pidfile></paths>
  <logging><accesslog>access.log</accesslog><errorlog>error.log</errorlog><loglevel>3</loglevel>
    <logsize>10000</logsize></logging>
  {owner}
</icecast>
"""
        path = os.path.join(d, "icecast.xml")
        with open(path, "w") as f:
            f.write(cfg)
        if self.is_root:
            shutil.chown(path, "icecast2", "icecast")
        return path

    def icecast_service(self):
        cfg = self.path("icecast", "icecast.xml")
        # Restarted if it ends unasked: Debian's Icecast 2.4.4 now and then dies of a NULL
        # strlen (SIGSEGV) as it starts again during the outage tests, and a real server's
        # service manager would start it again. Its own error.log says what it did last.
        return Service("icecast", ["icecast2", "-c", cfg], log_path=self.logp("icecast"),
                       ready=lambda: tcp_open(self.ports["icecast"]), ready_interval=0.01,
                       restart=True, more_log=self.path("icecast", "error.log"))

    def start_icecast(self):
        self.write_icecast_config()
        self.add(self.icecast_service())

    def start_encoders(self):
        ip, pw = self.ports["icecast"], self.source_password
        caps = f"audio/x-raw,format=S16LE,rate={RATE},channels={CHANNELS},layout=interleaved"
        # Mopidy's PCM mixed with a live silence source: while Mopidy is paused or between tracks
        # the stream carries silence instead of stopping. The same PCM goes on to ffmpeg for the
        # native FLAC mount.
        gst = ["gst-launch-1.0", "-q",
               "udpsrc", f"address={LOOPBACK}", f"port={self.ports['pcm']}", f"caps={caps}",
               "buffer-size=1048576", "!", "queue", "!", "mix.",
               "audiotestsrc", "is-live=true", "wave=silence", "samplesperbuffer=1024", "!",
               caps, "!", "mix.",
               "audiomixer", "name=mix", "latency=100000000", "!", caps, "!",
               "tee", "name=t",
               "t.", "!", "queue", "!", "flacenc", "!", "oggmux", "!",
               "shout2send", f"ip={LOOPBACK}", f"port={ip}", f"password={pw}",
               "mount=/stream.flac", "streamname=Groove Test",
               "t.", "!", "queue", "!", "udpsink", f"host={LOOPBACK}",
               f"port={self.ports['pcm_native']}", f"bind-address={LOOPBACK}", "sync=false"]
        # Like a real source client, an encoder reconnects once Icecast is back.
        icecast_up = lambda: tcp_open(self.ports["icecast"])
        # Stateless: stopped with SIGKILL at the rig's end (ffmpeg lingers for seconds on SIGTERM).
        self.add(Service("encoder", gst, log_path=self.logp("encoder"), restart=icecast_up,
                         ready=lambda: self.icecast_mount_live("/stream.flac"),
                         shutdown_signal=signal.SIGKILL))
        ff = ["ffmpeg", "-nostdin", "-loglevel", "warning",
              "-f", "s16le", "-ar", str(RATE), "-ac", str(CHANNELS),
              "-i", f"udp://{LOOPBACK}:{self.ports['pcm_native']}?localaddr={LOOPBACK}"
                    f"&fifo_size=1000000&overrun_nonfatal=1",
              "-c:a", "flac", "-f", "flac", "-content_type", "audio/flac",
              f"icecast://source:{pw}@{LOOPBACK}:{ip}/native.flac"]
        self.add(Service("encoder_native", ff, log_path=self.logp("encoder_native"), restart=icecast_up,
                         ready=lambda: self.icecast_mount_live("/native.flac"), shutdown_signal=signal.SIGKILL))

    def write_mopidy_config(self):
        d = self.path("mopidy")
        cfg = f"""[core]
cache_dir = {d}/cache
config_dir = {d}/config
data_dir = {d}/data

[logging]
verbosity = 0

[audio]
mixer = software
mixer_volume = 100
output = audioresample ! audioconvert ! {
    f"audio/x-raw,format=S16LE,rate={RATE},channels={CHANNELS},layout=interleaved"} ! udpsink host={LOOPBACK} port={self.ports['pcm']} bind-address={LOOPBACK}

[http]
enabled = true
hostname = {LOOPBACK}
port = {self.ports['mopidy']}

[local]
enabled = true
media_dir = {self.path('music')}
scan_flush_threshold = 100

[file]
enabled = true
media_dirs = {self.path('music')}
show_dotfiles = false

[m3u]
playlists_dir = {d}/playlists

[mpris]
enabled = {'true' if os.environ.get('RIG_MOPIDY_MPRIS') else 'false'}
bus_type = session

[stream]
enabled = true
"""
        path = os.path.join(d, "mopidy.conf")
        with open(path, "w") as f:
            f.write(cfg)
        return path

    def mopidy_service(self):
        cfg = self.path("mopidy", "mopidy.conf")
        return Service("mopidy", ["mopidy", "--config", cfg], env=self.base_env(),
                       log_path=self.logp("mopidy"), ready=lambda: self.rpc("core.get_version"))

    def start_mopidy(self):
        cfg = self.write_mopidy_config()
        r = run_child(["mopidy", "--config", cfg, "local", "scan"], env=self.base_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        with open(self.logp("mopidy-scan"), "wb") as f:
            f.write(r.stdout)
        if r.returncode != 0:
            raise RuntimeError(f"mopidy local scan failed; see {self.logp('mopidy-scan')}")
        self.add(self.mopidy_service())

    def queue_library(self):
        """Fills the tracklist with the library in TRACKS order, repeat on, and starts playing.

        Mopidy-Local keeps one artist per track (its SQLite schema has one artist column), so
        tracks with several artists are queued through Mopidy's file backend, which keeps them
        all; the file backend has no images, which gives the rig a track without art as well."""
        refs = self.rpc("core.library.browse", {"uri": "local:directory?type=track"}) or []
        by_title = {r["name"]: r["uri"] for r in refs}
        uris = []
        for t in TRACKS:
            if len(t["artists"]) > 1:
                path = os.path.join(self.path("music"), t["album"], t["file"])
                uris.append("file://" + urllib.request.pathname2url(path))
            elif t["title"] in by_title:
                uris.append(by_title[t["title"]])
        if len(uris) < len(TRACKS):
            raise RuntimeError(f"Mopidy-Local found {len(refs)} tracks, {len(TRACKS)} expected; "
                               f"see {self.logp('mopidy-scan')}")
        self.rpc("core.tracklist.clear")
        self.rpc("core.tracklist.add", {"uris": uris})
        self.rpc("core.tracklist.set_repeat", {"value": True})
        self.rpc("core.playback.play")
        # play returns before the playback state and the current track are set.
        wait_for("Mopidy playing", lambda: self.rpc("core.playback.get_state") == "playing"
                 and self.rpc("core.playback.get_current_tl_track") is not None
                 and self.rpc("core.playback.get_time_position") > 0)

    def make_tls_files(self):
        """A certificate authority of the rig's own and a certificate for 127.0.0.1 signed by it,
        so https/wss are tested with verification on (clients trust the CA through ca_file)."""
        d = self.path("tls")
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        run_quiet(["openssl", "req", "-x509", *ec, "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem",
                   "-days", "2", "-subj", "/CN=Groove Bridge test rig CA",
                   "-addext", "basicConstraints=critical,CA:TRUE",
                   "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        run_quiet(["openssl", "req", *ec, "-keyout", f"{d}/server.key", "-out", f"{d}/server.csr",
                   "-subj", f"/CN={LOOPBACK}"])
        with open(f"{d}/server.ext", "w") as f:
            f.write(f"subjectAltName=IP:{LOOPBACK}\nbasicConstraints=CA:FALSE\n"
                    "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n")
        run_quiet(["openssl", "x509", "-req", "-in", f"{d}/server.csr", "-CA", f"{d}/ca.pem",
                   "-CAkey", f"{d}/ca.key", "-CAcreateserial", "-out", f"{d}/server.pem", "-days", "2",
                   "-extfile", f"{d}/server.ext"])

    def write_nginx_config(self, name, servers):
        """nginx `name` (its own folder, pid and logs) serving the Groove layout on each of
        `servers`: (port, tls) pairs."""
        d = self.path(name)
        for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        m, i = self.ports["mopidy"], self.ports["icecast"]
        user = "user root;" if self.is_root else ""
        # The Groove URL layout.
        locations = f"""
    location = /api/mopidy/rpc {{ proxy_pass http://{LOOPBACK}:{m}/mopidy/rpc; }}
    location = /ws/mopidy {{
      proxy_pass http://{LOOPBACK}:{m}/mopidy/ws;
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_read_timeout 1d;
    }}
    location = /stream.flac {{
      proxy_pass http://{LOOPBACK}:{i}/stream.flac;
      proxy_buffering off;
      proxy_read_timeout 1h;
    }}
    location /local/ {{ proxy_pass http://{LOOPBACK}:{m}; }}
    location /mopidy/ {{
      proxy_pass http://{LOOPBACK}:{m};
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
    }}"""
        tls = self.path("tls")
        blocks = ""
        for port, secure in servers:
            if secure:
                blocks += f"""
  server {{
    listen {LOOPBACK}:{port} ssl;
    ssl_certificate {tls}/server.pem;
    ssl_certificate_key {tls}/server.key;{locations}
  }}"""
            else:
                blocks += f"""
  server {{
    listen {LOOPBACK}:{port};{locations}
  }}"""
        cfg = f"""{user}
daemon off;
master_process on;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 256; }}
http {{
  access_log {d}/access.log;
  client_body_temp_path {d}/body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  map $http_upgrade $connection_upgrade {{ default upgrade; '' close; }}{blocks}
}}
"""
        path = os.path.join(d, "nginx.conf")
        with open(path, "w") as f:
            f.write(cfg)
        return path

    def nginx_service(self, name="nginx"):
        cfg = self.path(name, "nginx.conf")
        port = self.ports[name]
        return Service(name, ["nginx", "-c", cfg, "-p", self.path(name)], log_path=self.logp(name),
                       ready=lambda: tcp_open(port), ready_interval=0.01, deathsig=False)

    def start_nginx(self):
        self.make_tls_files()
        # The front end every test uses, on plain HTTP and on TLS.
        self.write_nginx_config("nginx", [(self.ports["nginx"], False), (self.ports["nginx_tls"], True)])
        self.add(self.nginx_service("nginx"))
        # The route tests' own pair: home's front end is stopped to leave home.
        self.write_nginx_config("nginx_home", [(self.ports["nginx_home"], False)])
        self.add(self.nginx_service("nginx_home"))
        self.write_nginx_config("nginx_remote", [(self.ports["nginx_remote"], True)])
        self.add(self.nginx_service("nginx_remote"))

    # -- whole rig --

    def start(self):
        make_library(self.path("music"))
        self.start_dbus()
        self.start_system_bus()
        self.start_sound(self.sound)
        self.start_icecast()
        self.start_encoders()
        self.start_mopidy()
        self.start_nginx()
        self.queue_library()
        threading.Thread(target=self._supervise, name="rig-supervisor", daemon=True).start()

    def _supervise(self):
        """Starts again what ended unasked and may restart (see Service), saying so on stderr
        with the end of its log: the encoders when Icecast went away, as a real Groove server's
        source client reconnects, and PulseAudio."""
        while not self.stopping:
            time.sleep(0.2)
            with self.lock:
                for svc in self.services.values():
                    if svc.restart and svc.wanted and svc.proc.poll() is not None:
                        try:
                            if svc.restart is True or svc.restart():
                                print(f"rig: {svc.name} exited with {svc.proc.returncode}, restarting; "
                                      f"its log ends:\n{svc.log_tail()}", file=sys.stderr, flush=True)
                                svc.spawn()
                        except Exception:
                            pass

    STOP_ORDER = ("nginx_remote", "nginx_home", "nginx", "mopidy", "encoder_native", "encoder", "icecast",
                  "pulse", "pipewire-pulse", "wireplumber", "pipewire", "sysbus", "dbus")

    def stop(self, grace=2.5):
        """Stops every service, all at once and without the lock (a command may hold it for a
        while): SIGTERM (the encoders SIGKILL), then SIGKILL to the process group of any still
        running after `grace` seconds."""
        global stopping
        stopping = self.stopping = True
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
            "pids": {n: s.pid for n, s in self.services.items()},
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
                self.queue_library()
            return {}
        if cmd == "rpc":
            return self.rpc(req["method"], req.get("params"))
        raise ValueError(f"unknown command {cmd!r}")


class Child:
    """A rig for a script: `rig.py serve` as a child process that stops when we do. `info` is its
    description; `env` points D-Bus and PulseAudio clients at it."""

    def __init__(self, mopidy_mpris=False):
        env = dict(os.environ)
        if mopidy_mpris:
            env["RIG_MOPIDY_MPRIS"] = "1"
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "serve",
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
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
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


if __name__ == "__main__":
    sys.exit(main())
