"""A real Groove Audio server on loopback, for tests, benchmarks and the demo (scripts/rig.py runs
it; `from rig import Child` gives a script one of its own).

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
                                             {"cmd":"link","plan":{"stall_ms":500,"every_s":5}}
                                               (an impaired link to Icecast, made on first use, its
                                               plan set or changed: answers its port and URLs; see
                                               link.py; "name" for more than one)
                                             {"cmd":"link_log","since":T}  (its phases, monotonic)
                                           and answer each with one JSON line. EOF on stdin, SIGTERM,
                                           SIGINT or the owner process dying stops every process.
  rig.py run [--dir DIR]                   the same, for a person: prints the endpoints, runs until
                                           Ctrl-C.
  rig.py library DIR                       only generate the test library into DIR.

Only the standard library is used. Every process is started by this supervisor, recorded by pid
and stopped by pid; a reaper (reaper.py) stops them too when the supervisor ends in any other way,
SIGKILL included.

One file per job: procs (how a child is started and known to the reaper), service (one child
process), library (the generated music), buses (the session and the stand-in system bus), sound
(PulseAudio, PipeWire), icecast (Icecast and its encoders), mopidy, routes (the nginx front ends),
link (the impaired link), core (the whole rig and its commands), cli (the command line), reaper.
"""

from .cli import Child, main  # noqa: E402,F401
