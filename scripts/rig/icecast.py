"""Icecast 2 with listener Basic auth, and its two long-lived encoders (gst-launch: Ogg FLAC,
ffmpeg: native FLAC)."""

import hashlib
import os
import secrets
import shutil
import signal
import urllib.request

from .procs import CHANNELS, LOOPBACK, RATE, tcp_open
from .service import Service


class IcecastMixin:
    def icecast_mount_live(self, mount):
        """True when the mount has a source (Icecast's status page lists it). The page is read as
        text: Icecast 2.4 writes it as invalid JSON now and then (an Ogg FLAC source's fields)."""
        url = f"http://{LOOPBACK}:{self.ports['icecast']}/status-json.xsl"
        with urllib.request.urlopen(url, timeout=2) as r:
            text = r.read().decode(errors="replace")
        return f'"listenurl":"http://{LOOPBACK}:{self.ports["icecast"]}{mount}"' in text

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

    def encoder_argv(self, delay_ms=0):
        """The relay encoder. Mopidy's PCM mixed with a live silence source: while Mopidy is
        paused or between tracks the stream carries silence instead of stopping. The same PCM goes
        on to ffmpeg for the native FLAC mount. `delay_ms` makes a slower server: Mopidy's PCM
        leaves the mixer that much later (its pad's running-time offset, with the mixer's latency
        and the queue before it raised to hold it meanwhile)."""
        ip, pw = self.ports["icecast"], self.source_password
        caps = f"audio/x-raw,format=S16LE,rate={RATE},channels={CHANNELS},layout=interleaved"
        delay_ns = delay_ms * 1_000_000
        return ["gst-launch-1.0", "-q",
                "udpsrc", f"address={LOOPBACK}", f"port={self.ports['pcm']}", f"caps={caps}",
                "buffer-size=1048576", "!", "queue", f"max-size-time={1_000_000_000 + delay_ns}",
                "max-size-buffers=0", "max-size-bytes=0", "!", "mix.sink_0",
                "audiotestsrc", "is-live=true", "wave=silence", "samplesperbuffer=1024", "!",
                caps, "!", "mix.sink_1",
                "audiomixer", "name=mix", f"latency={100_000_000 + delay_ns}", f"sink_0::offset={delay_ns}",
                "!", caps, "!",
                "tee", "name=t",
                "t.", "!", "queue", "!", "flacenc", "!", "oggmux", "!",
                "shout2send", f"ip={LOOPBACK}", f"port={ip}", f"password={pw}",
                "mount=/stream.flac", "streamname=Groove Test",
                "t.", "!", "queue", "!", "udpsink", f"host={LOOPBACK}",
                f"port={self.ports['pcm_native']}", f"bind-address={LOOPBACK}", "sync=false"]

    def set_encoder_delay(self, ms):
        """The relay encoder again, `ms` slower than the rig's own (0: as it starts)."""
        if not isinstance(ms, int) or not 0 <= ms <= 10_000:
            raise ValueError(f"encoder delay {ms!r} is not 0..10000 ms")
        svc = self.services["encoder"]
        svc.argv = self.encoder_argv(ms)
        svc.stop(signal.SIGKILL)
        svc.start()
        return {"pid": svc.pid, "ready_at": svc.ready_at}

    def start_encoders(self):
        ip, pw = self.ports["icecast"], self.source_password
        gst = self.encoder_argv()
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
