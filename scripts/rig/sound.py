"""The sound servers: PulseAudio, or PipeWire + WirePlumber + pipewire-pulse, each with the null sink
"groove_test"."""

import os
import subprocess

from .procs import CHANNELS, RATE, run_child, wait_for
from .service import Service


class SoundMixin:
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
