"""`scripts/bench --only link`: groove-bridge and mpv side by side on the rig's impaired link
(issue #24), in one run.

Both players take the stream through the same link (scripts/rig/link.py) in front of Icecast, at
the same time, each on a null sink of its own recorded from that sink's monitor, so every gap is
one player's. The link walks its phases (a clean link, stalls of 500 ms every 5 s, stalls of
1500 ms every 7.5 s, clean again) while the house (another Mopidy client) changes track every
--change-every seconds. A third listener decodes Icecast's stream directly (curl | flac -d, no
link), as the reference for what the server itself sends.

What is measured, from the recordings (mono s16, 44.1 kHz; the rig's tracks are pure sine tones):
  - each 10 ms block's tone by a least-squares estimate of its frequency (a pure sine satisfies
    x[n-1] + x[n+1] = 2 cos(w) x[n]), nearest of the rig's tones within 3 %;
  - a gap: at least 10 ms of samples within ±100 of zero after the player's first audio; "mid-track"
    when the same tone is heard on both sides, else "at a change";
  - a discontinuity (a skip, or a click): a block of a tone whose residual against that tone's exact
    recurrence exceeds 8 LSB rms (the floor is ~1.06 LSB: quantization), with three blocks of the
    same tone on each side;
  - lag behind the server: for each Mopidy `track_playback_started` (read on an independent
    WebSocket on the monotonic clock), the start of the first five blocks of the new track's tone
    on that player's monitor, minus the event's time. Sample times come from parec's chunk
    arrivals by the latest bound (as Tests' Recorder: a chunk arrives no earlier than its last
    sample left). After the phases, TAIL seconds of clean link without changes let the last
    changes be heard;
  - CPU: user+sys of all the player's threads (schedstat), from its start to the end of the tail;
  - Play after a pause of --pause-seconds: from the Play command (dbus-send for the bridge, mpv's
    JSON IPC) to the first sample above 1000 on that player's monitor.
A gap counts in the phase of the stall it follows (it began while that stall lasted or within 0.5 s
of its end: a player runs dry only while the link holds its data, and the last it had is heard
within its output's latency), else in the phase in force when it was heard; a discontinuity in the phase in force
when it was heard. Gaps and discontinuities are also placed on the server's clock (minus the lag
of the last change heard before them) and matched, within 0.8 s, with those of the direct listener:
those the server's own stream holds are not a player's doing (a loaded encoder glitches for every
listener)."""

import array
import base64
import bisect
import json
import math
import operator
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time

RATE = 44100
BLOCK = RATE // 100          # 10 ms: one tone estimate
SILENT = 100                 # |sample| at or below this is silence (the tones peak at 16384)
MIN_GAP = RATE // 100        # 10 ms of silence is a gap
CLICK_RMS = 8.0              # residual rms (LSB) above which a tone block holds a discontinuity
# A small glitch cut in two by the 10 ms blocks can fall under CLICK_RMS in one recording and over
# it in another: whether the server's stream holds a player's discontinuity is asked at this level.
WEAK_CLICK_RMS = 3.0

# A gap that begins this long after a stall ended is not that stall's: the player had the data.
STALL_HEARD_S = 0.5
TAIL = 10.0                  # s of clean link after the phases, without changes: the last ones are heard
PHASES = [("clean", {}), ("500 ms stall every 5 s", {"stall_ms": 500, "every_s": 5}),
          ("1500 ms stall every 7.5 s", {"stall_ms": 1500, "every_s": 7.5}), ("clean again", {})]


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


class Recording:
    """Samples from a pipe (parec, or a decoder), each chunk marked with its arrival time."""

    def __init__(self, proc, stereo=False):
        self.proc, self.stereo = proc, stereo
        self.samples = array.array("h")
        self.marks = []           # (arrival, samples after the chunk)
        self.lock = threading.Lock()
        self.started = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        fd, carry, width = self.proc.stdout.fileno(), b"", 4 if self.stereo else 2
        while True:
            data = os.read(fd, 65536)
            if not data:
                return
            now = time.monotonic()
            data = carry + data
            cut = len(data) - len(data) % width
            chunk, carry = array.array("h", data[:cut]), data[cut:]
            if self.stereo:
                chunk = chunk[0::2]   # the rig's tracks carry the same tone in both channels
            with self.lock:
                self.samples.extend(chunk)
                self.marks.append((now, len(self.samples)))
            self.started.set()

    def snapshot(self):
        with self.lock:
            return self.samples[:], list(self.marks)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class Timeline:
    """A frozen recording: sample ↔ monotonic time."""

    def __init__(self, rec, live=True):
        self.x, self.marks = rec.snapshot()
        self.arrivals = [a for a, _ in self.marks]
        self.counts = [c for _, c in self.marks]
        self.live = live

    def time(self, i):
        """When sample i left the sink: the least bound over the chunks of the next second (a live
        recording); for a stream that may arrive faster than real time, its chunk's arrival."""
        k = bisect.bisect_right(self.counts, i)
        if k >= len(self.marks):
            return self.arrivals[-1] if self.arrivals else float("nan")
        if not self.live:
            return self.arrivals[k]
        best, first = float("inf"), self.arrivals[k]
        for arrival, after in self.marks[k:]:
            if arrival > first + 1.0:
                break
            best = min(best, arrival - (after - 1 - i) / RATE)
        return best

    def index(self, t):
        """The first sample of the first chunk that arrived at or after t."""
        k = bisect.bisect_left(self.arrivals, t)
        return self.counts[k - 1] if k > 0 else 0


def classify(x, tones):
    """Per 10 ms block: ("s",) silence, ("t", freq, residual rms) a tone, or None (neither)."""
    cos = {f: math.cos(2 * math.pi * f / RATE) for f in tones}
    out = []
    for b in range(len(x) // BLOCK):
        w = x[b * BLOCK:(b + 1) * BLOCK]
        if max(w) <= SILENT and -min(w) <= SILENT:
            out.append(("s",))
            continue
        a = w[1:-1]
        s = list(map(operator.add, w[2:], w[:-2]))
        saa = sum(map(operator.mul, a, a))
        sas = sum(map(operator.mul, a, s))
        c = sas / (2 * saa) if saa else 2.0
        if not -1 <= c <= 1:
            out.append(None)
            continue
        f = math.acos(c) * RATE / (2 * math.pi)
        near = min(tones, key=lambda t: abs(t - f))
        if abs(near - f) > 0.03 * near:
            out.append(None)
            continue
        c0 = cos[near]
        sss = sum(map(operator.mul, s, s))
        resid = max(0.0, sss - 4 * c0 * sas + 4 * c0 * c0 * saa) / len(a)
        out.append(("t", near, math.sqrt(resid)))
    return out


def first_loud(x, start, level=SILENT):
    for i in range(max(0, start), len(x)):
        if x[i] > level or x[i] < -level:
            return i
    return None


def gaps(x, start, end):
    """Runs of at least MIN_GAP silent samples within samples [start, end): (first, last + 1)."""
    out, b, half = [], start // (MIN_GAP // 2), MIN_GAP // 2
    # Any run of MIN_GAP covers a whole 5 ms cell; find those cells, then the run's exact edges.
    while (b + 1) * half <= end:
        w = x[b * half:(b + 1) * half]
        if max(w) <= SILENT and -min(w) <= SILENT:
            i = b * half
            while i > start and -SILENT <= x[i - 1] <= SILENT:
                i -= 1
            j = (b + 1) * half
            while j < end and -SILENT <= x[j] <= SILENT:
                j += 1
            if j - i >= MIN_GAP:
                out.append((i, j))
            b = j // half + 1
        else:
            b += 1
    return out


def tone_near(blocks, i, step):
    """The tone of the nearest tone block from sample i going `step` (±1), within 300 ms."""
    b = i // BLOCK
    for _ in range(30):
        if 0 <= b < len(blocks) and blocks[b] and blocks[b][0] == "t":
            return blocks[b][1]
        b += step
    return None


class Analysis:
    """One player's recording, read for gaps, discontinuities and heard changes."""

    def __init__(self, rec, tones, t_from, t_to, live=True):
        self.tl = Timeline(rec, live)
        x = self.tl.x
        self.blocks = classify(x, tones)
        lo = self.tl.index(t_from)
        self.first = first_loud(x, lo)
        hi = min(len(x), self.tl.index(t_to))
        self.gaps = []
        self.clicks, self.weak_clicks = [], []
        if self.first is None:
            return
        for i, j in gaps(x, self.first, hi):
            before, after = tone_near(self.blocks, i - 1, -1), tone_near(self.blocks, j, 1)
            kind = "mid-track" if before is not None and before == after else "at a change"
            self.gaps.append((self.tl.time(i), (j - i) * 1000 / RATE, kind))
        for b in range(self.first // BLOCK + 3, hi // BLOCK - 3):
            blk = self.blocks[b]
            if blk and blk[0] == "t" and blk[2] > WEAK_CLICK_RMS:
                around = self.blocks[b - 3:b] + self.blocks[b + 1:b + 4]
                if all(o and o[0] == "t" and o[1] == blk[1] for o in around):
                    self.weak_clicks.append(self.tl.time(b * BLOCK))
                    if blk[2] > CLICK_RMS:
                        self.clicks.append(self.tl.time(b * BLOCK))

    def heard(self, freq, after, within=20.0):
        """When `freq` was first heard after time `after` (five 10 ms blocks running), or None."""
        b = max(0, self.tl.index(after - 1.0) // BLOCK)
        run = 0
        while b < len(self.blocks):
            blk = self.blocks[b]
            run = run + 1 if blk and blk[0] == "t" and blk[1] == freq else 0
            if run == 5:
                t = self.tl.time((b - 4) * BLOCK)
                if t >= after:
                    return t
                run = 0
            if self.tl.time(b * BLOCK) > after + within:
                return None
            b += 1
        return None


class MopidyEvents:
    """track_playback_started on Mopidy's own WebSocket, on the monotonic clock: (t, title)."""

    def __init__(self, url):
        host, rest = url.split("//", 1)[1].split(":", 1)
        port, path = rest.split("/", 1)
        self.s = socket.create_connection((host, int(port)))
        self.s.sendall(f"GET /{path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       f"Sec-WebSocket-Key: {'A' * 22}==\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            c = self.s.recv(1)
            if not c:
                raise SystemExit("Mopidy closed its WebSocket during the handshake")
            head += c
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise SystemExit(f"Mopidy refused the WebSocket: {head[:80]!r}")
        self.changes = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buf = b""
        while True:
            try:
                data = self.s.recv(65536)
            except OSError:
                return
            if not data:
                return
            now = time.monotonic()
            buf += data
            while len(buf) >= 2:
                n, h = buf[1] & 0x7F, 2
                if n == 126:
                    n, h = int.from_bytes(buf[2:4], "big"), 4
                elif n == 127:
                    n, h = int.from_bytes(buf[2:10], "big"), 10
                if len(buf) < h + n:
                    break
                payload, buf = buf[h:h + n], buf[h + n:]
                try:
                    msg = json.loads(payload)
                except ValueError:
                    continue
                if isinstance(msg, dict) and msg.get("event") == "track_playback_started":
                    track = (msg.get("tl_track") or {}).get("track") or {}
                    self.changes.append((now, track.get("name")))


# ---------------------------------------------------------------------------------------------
# The run

class Side:
    """One player on its own null sink: the recorder starts before the player, so the sink's
    latency is settled before any stream plays into it."""

    def __init__(self, rig, name, sink):
        self.name, self.sink, self.proc = name, sink, None
        r = subprocess.run(["pactl", "load-module", "module-null-sink", f"sink_name={sink}", f"rate={RATE}",
                            "channels=2", "format=s16le", f"sink_properties=device.description={sink}"],
                           env=rig.env, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"pactl could not make the null sink {sink}: {r.stderr.strip()}")
        self.rec = Recording(subprocess.Popen(
            ["parec", "-d", f"{sink}.monitor", "--raw", "--format=s16le", f"--rate={RATE}", "--channels=1",
             "--latency-msec=10"], env=rig.env, stdout=subprocess.PIPE))
        if not self.rec.started.wait(10):
            raise SystemExit(f"parec delivered nothing from {sink}.monitor in 10 s")

    def loud_since(self, t, level=1000):
        """Whether a sample above `level` arrived in a chunk at or after t."""
        with self.rec.lock:
            k = bisect.bisect_left([a for a, _ in self.rec.marks], t)
            start = self.rec.marks[k - 1][1] if 0 < k <= len(self.rec.marks) else 0
            w = self.rec.samples[start:]
        return len(w) > 0 and (max(w) > level or -min(w) > level)

    def quiet_for(self, seconds):
        with self.rec.lock:
            w = self.rec.samples[-int(seconds * RATE):]
        return len(w) >= int(seconds * RATE) and max(w) <= SILENT and -min(w) <= SILENT


def cpu_times():
    """(busy, total) jiffies of all cores, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4], sum(v)


def wait_until(what, cond, timeout, interval=0.01):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return time.monotonic()
        time.sleep(interval)
    raise SystemExit(f"bench: {what} did not happen within {timeout} s")


def sleep_until(t):
    while (d := t - time.monotonic()) > 0:
        time.sleep(min(d, 0.05))


def start_bridge(rig, binary, tmp, url, sink, log_path, verbose=False):
    cfg = os.path.join(tmp, "link-config")
    fd = os.open(cfg, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, (f"rpc_url = {rig.info['groove_rpc_url']}\nws_url = {rig.info['groove_ws_url']}\n"
                  f"stream_url = {url}\npassword = {rig.info['password']}\nsink = {sink}\nautoplay = true\n").encode())
    os.close(fd)
    env = dict(rig.env, XDG_CACHE_HOME=os.path.join(tmp, "link-cache"))
    with open(log_path, "w") as f:
        return subprocess.Popen([binary, "--config", cfg, "--instance"] + (["--verbose"] if verbose else []), env=env,
                                stdout=subprocess.DEVNULL, stderr=f)


def start_mpv(rig, url, sink, ipc):
    auth = base64.b64encode(f"listener:{rig.info['password']}".encode()).decode()
    # A benchmark on loopback with a generated password: the header in mpv's argv is fine here.
    return subprocess.Popen(["mpv", "--no-video", "--ao=pulse", "--really-quiet", "--no-config",
                             f"--audio-device=pulse/{sink}", f"--input-ipc-server={ipc}",
                             f"--http-header-fields=Authorization: Basic {auth}", url], env=rig.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def start_source(rig):
    """Icecast's stream decoded as it arrives, without the link: what the server itself sends."""
    curl = subprocess.Popen(["curl", "-s", "-N", "--config", "-", rig.info["stream_url"]], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    curl.stdin.write(f'user = "listener:{rig.info["password"]}"\n'.encode())
    curl.stdin.close()
    flac = subprocess.Popen(["flac", "-d", "-s", "--ogg", "-c", "--force-raw-format", "--endian=little",
                             "--sign=signed", "-"], stdin=curl.stdout, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    curl.stdout.close()
    return curl, Recording(flac, stereo=True)


class MpvIPC:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        try:
            while self.s.recv(65536):
                pass
        except OSError:
            pass

    def pause(self, on):
        self.s.sendall(json.dumps({"command": ["set_property", "pause", on]}).encode() + b"\n")


def dbus_send(rig, dest, method):
    subprocess.run(["dbus-send", "--session", "--print-reply", f"--dest={dest}", "/org/mpris/MediaPlayer2",
                    f"org.mpris.MediaPlayer2.Player.{method}"], env=rig.env, check=True,
                   stdout=subprocess.DEVNULL)


def bridge_bus_name(rig):
    out = subprocess.run(["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus",
                          "/org/freedesktop/DBus", "org.freedesktop.DBus.ListNames"], env=rig.env,
                         capture_output=True, text=True).stdout
    names = [n for n in re.findall(r'string "([^"]+)"', out) if n.startswith("org.mpris.MediaPlayer2.groove")]
    return names[0] if names else None


def play_after_pause(side, pause, play, seconds):
    """Pause, wait for silence and `seconds`, Play: seconds from the Play command to the first
    sample above 1000 on the side's monitor."""
    t_pause = time.monotonic()
    pause()
    wait_until(f"silence on {side.sink} after the pause", lambda: side.quiet_for(0.3), 10)
    sleep_until(t_pause + seconds)
    t0 = time.monotonic()
    play()
    wait_until(f"audio on {side.sink} after Play", lambda: side.loud_since(t0), 15, 0.005)
    time.sleep(1.2)   # chunks of the next second bound the sample's time
    tl = Timeline(side.rec)
    i = first_loud(tl.x, tl.index(t0 - 0.3), 1000)
    return tl.time(i) - t0


def ping_seconds(rig):
    """dbus-send's own cost: start, a round trip to the bus, exit."""
    t = []
    for _ in range(5):
        t0 = time.monotonic()
        subprocess.run(["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus",
                        "/org/freedesktop/DBus", "org.freedesktop.DBus.Peer.Ping"], env=rig.env,
                       check=True, stdout=subprocess.DEVNULL)
        t.append(time.monotonic() - t0)
    return statistics.median(t)


def keep(folder, recordings, facts):
    """Each recording as raw mono s16le (NAME.raw) with its chunks' arrivals (NAME.marks.json), and
    the run's facts (run.json): to look again at what the figures say (`run` adds the bridge's
    log, groove-bridge.log)."""
    os.makedirs(folder, exist_ok=True)
    for name, rec in recordings.items():
        x, marks = rec.snapshot()
        with open(os.path.join(folder, f"{name}.raw"), "wb") as f:
            f.write(x.tobytes())
        with open(os.path.join(folder, f"{name}.marks.json"), "w") as f:
            json.dump(marks, f)
    with open(os.path.join(folder, "run.json"), "w") as f:
        json.dump(facts, f)


def run(rig, binary, tmp, phase_seconds, change_every, rounds, pause_seconds, cpu_seconds, stop, keep_dir=None):
    """The whole run; returns (figures, link log) for report()."""
    tracks = {t["title"]: t["freq"] for t in rig.info["tracks"]}
    tones = sorted(set(tracks.values()))
    link = rig.cmd(cmd="link", name="bench", plan={})
    if "error" in link:
        raise SystemExit(f"rig link: {link['error']}")
    url = link["ok"]["stream_url"]
    sides = {"groove-bridge": Side(rig, "groove-bridge", "bench_bridge"), "mpv": Side(rig, "mpv", "bench_mpv")}
    curl, source = start_source(rig)
    events = MopidyEvents(rig.info["mopidy_ws_url"])
    ipc = os.path.join(tmp, "mpv.sock")
    bridge_log = os.path.join(tmp, "bridge.log")
    procs = []
    try:
        t_start, machine0 = time.monotonic(), cpu_times()
        sides["groove-bridge"].proc = start_bridge(rig, binary, tmp, url, "bench_bridge", bridge_log,
                                                     verbose=keep_dir is not None)
        sides["mpv"].proc = start_mpv(rig, url, "bench_mpv", ipc)
        procs = [s.proc for s in sides.values()]
        for s in sides.values():
            wait_until(f"{s.name}'s first audio", lambda s=s: s.loud_since(t_start), 30)
        log("both players heard; 5 s to settle")
        time.sleep(5)
        phases, next_change = [], time.monotonic() + 2.5
        for (label, plan), secs in zip(PHASES, phase_seconds):
            reply = rig.cmd(cmd="link", name="bench", plan=plan)
            if "error" in reply:
                raise SystemExit(f"rig link: {reply['error']}")
            since = reply["ok"]["since"]
            phases.append({"label": label, "plan": plan, "since": since, "seconds": secs})
            log(f"phase {label} ({plan or 'clean'}) for {secs} s")
            end = since + secs
            while next_change < end:
                sleep_until(next_change)
                rig.rpc("core.playback.next")
                next_change += change_every
            sleep_until(end)
        t_end = time.monotonic()
        log(f"{TAIL:g} s more, clean, without changes: the last changes reach both players")
        sleep_until(t_end + TAIL)
        cpu = {name: cpu_seconds(s.proc.pid) for name, s in sides.items()}
        machine1 = cpu_times()
        for s in sides.values():
            if s.proc.poll() is not None:
                raise SystemExit(f"{s.name} ended during the run (exit {s.proc.returncode})")
        log(f"play after pause: {rounds} rounds of {pause_seconds} s each")
        name = bridge_bus_name(rig)
        if name is None:
            raise SystemExit("groove-bridge has no name on the rig's bus")
        mpv = MpvIPC(ipc)
        resume = {"groove-bridge": [], "mpv": []}
        for r in range(rounds):
            resume["groove-bridge"].append(play_after_pause(
                sides["groove-bridge"], lambda: dbus_send(rig, name, "Pause"), lambda: dbus_send(rig, name, "Play"),
                pause_seconds))
            resume["mpv"].append(play_after_pause(sides["mpv"], lambda: mpv.pause(True), lambda: mpv.pause(False),
                                                  pause_seconds))
            log(f"round {r + 1}: " + ", ".join(f"{k} {v[-1] * 1000:.0f} ms" for k, v in resume.items()))
        ping = ping_seconds(rig)
        link_log = rig.cmd(cmd="link_log", name="bench", since=t_start).get("ok", {}).get("events", [])
    finally:
        stop(procs)
        for s in sides.values():
            s.rec.close()
        source.close()
        curl.kill()
        curl.wait()
    if keep_dir:
        keep(keep_dir, {"groove-bridge": sides["groove-bridge"].rec, "mpv": sides["mpv"].rec, "source": source},
             {"phases": phases, "changes": events.changes, "link_log": link_log, "t_start": t_start, "t_end": t_end})
        shutil.copyfile(bridge_log, os.path.join(keep_dir, "groove-bridge.log"))
        log(f"recordings kept in {keep_dir}")
    with open(bridge_log, errors="replace") as f:
        said = [line.rstrip() for line in f if "stream:" in line]
    log(f"groove-bridge's log, its stream lines ({len(said)}):\n  " + "\n  ".join(said))
    log("reading the recordings")
    changes = [(t, tracks.get(title)) for t, title in events.changes if phases[0]["since"] <= t < t_end]
    figures = {"phases": phases, "changes": changes, "cpu": cpu, "resume": resume, "ping": ping,
               "span": t_end + TAIL - t_start, "players": {}, "change_every": change_every,
               "busy": (machine1[0] - machine0[0]) / max(1, machine1[1] - machine0[1])}
    for name, s in sides.items():
        a = figures["players"][name] = Analysis(s.rec, tones, t_start, t_end + TAIL)
        floor = [b[2] for b in a.blocks if b and b[0] == "t"]
        log(f"{name}: residual of tone blocks, median {statistics.median(floor):.2f} LSB rms" if floor else f"{name}: no tone")
    figures["source"] = Analysis(source, tones, phases[0]["since"], t_end + TAIL, live=False)
    figures["stalls"] = [e for e in link_log if e.get("event") == "stall"]
    return figures, link_log


# ---------------------------------------------------------------------------------------------
# The report

def plan_text(plan):
    return "clean" if not plan else f"`stall_ms` {plan['stall_ms']:.0f} every {plan['every_s']:g} s"


def phase_index(phases, t):
    """The phase in force at t (-1 before the first)."""
    k = -1
    for i, p in enumerate(phases):
        if t >= p["since"]:
            k = i
    return k


def ms(v):
    return f"{v:.0f}"


def stall_of(fig, t):
    """The stall a gap heard at t follows (it began at most STALL_HEARD_S after that stall ended):
    (phase, its number in the phase from 1), or None."""
    best = None
    for st in fig["stalls"]:
        if st["from"] <= t <= st["until"] + STALL_HEARD_S:
            best = st
    if best is None:
        return None
    k = phase_index(fig["phases"], best["from"])
    return k, 1 + sum(1 for st in fig["stalls"] if phase_index(fig["phases"], st["from"]) == k and st["from"] < best["from"])


def server_time(lags, t):
    """t on the server's clock: t minus the lag of the last change heard before t (a gap adds to
    the lag of a player that resumes where it stopped, so the lag from before it), else of the
    first change."""
    before = [lag for h, lag in lags if h <= t]
    if before:
        return t - before[-1]
    return t - lags[0][1] if lags else None


def per_player(fig, name):
    """Per phase: gaps by kind (t after the phase began, length, the stall it follows),
    discontinuities (heard and server times), lags (t since the phase began, lag s)."""
    a, phases = fig["players"][name], fig["phases"]
    lags, heard = [[] for _ in phases], []
    for t, freq in fig["changes"]:
        h = a.heard(freq, t) if freq else None
        k = phase_index(phases, t)
        if k >= 0:
            lags[k].append((t - phases[k]["since"], None if h is None else h - t))
        if h is not None:
            heard.append((h, h - t))
    heard.sort()
    rows = [{"mid": [], "change": [], "clicks": [], "lags": lags[k]} for k in range(len(phases))]
    early = {"mid": [], "change": [], "clicks": []}
    for t, length, kind in a.gaps:
        cause = stall_of(fig, t)
        k = cause[0] if cause else phase_index(phases, t)
        row = rows[k] if k >= 0 else early
        row["mid" if kind == "mid-track" else "change"].append(
            (t - (phases[k]["since"] if k >= 0 else 0), length, cause[1] if cause else None, server_time(heard, t)))
    for t in a.clicks:
        k = phase_index(phases, t)
        (rows[k] if k >= 0 else early)["clicks"].append((t, server_time(heard, t)))
    return rows, early


def also(server_times, times):
    """How many of `times` (on the server's clock) the server's own stream holds too, within 0.8 s
    (the direct listener's times are an Ogg page, ~0.42 s, coarse)."""
    return sum(1 for st in times if st is not None and any(abs(st - x) <= 0.8 for x in server_times))


def gap_text(g, server_gaps):
    if not g:
        return "0"
    same = also(server_gaps, [x[3] for x in g])
    return (f"{len(g)}: longest {ms(max(x[1] for x in g))}, total {ms(sum(x[1] for x in g))}"
            + (f" ({same} also in the server's stream)" if same else ""))


def click_text(clicks, server_clicks):
    if not clicks:
        return "0"
    return f"{len(clicks)} ({also(server_clicks, [st for _, st in clicks])} also in the server's stream)"


def source_events(fig):
    """The direct listener's discontinuities (down to WEAK_CLICK_RMS) and gaps on the server's
    clock, and its heard changes."""
    src = fig["source"]
    heard = []
    for t, freq in fig["changes"]:
        h = src.heard(freq, t) if freq else None
        if h is not None:
            heard.append((h, h - t))
    heard.sort()
    at = lambda times: [x for x in (server_time(heard, t) for t in times) if x is not None]
    return at(src.weak_clicks), at([g[0] for g in src.gaps]), heard


def lag_text(lags):
    v = [lag for _, lag in lags if lag is not None]
    missed = sum(1 for _, lag in lags if lag is None)
    if not v:
        return "n/a" + (f" ({missed} changes not heard)" if missed else "")
    out = f"{statistics.median(v):.2f} ({', '.join(f'{x:.2f}' for x in v)})"
    return out + (f"; {missed} not heard within 20 s" if missed else "")


def report(fig, link_log, command, loads, commit):
    phases = fig["phases"]
    names = list(fig["players"])
    per = {n: per_player(fig, n) for n in names}
    src = fig["source"]
    server_clicks, server_gaps, src_heard = source_events(fig)
    out = [f"## Wi-Fi link side by side (issue #24): `scripts/bench --only link`", "",
           f"`{command}` — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, release build of commit {commit}, "
           f"{os.cpu_count()} cores, load average {loads[0]:.2f} at the start, {loads[1]:.2f} at the end; the cores were "
           f"{fig['busy'] * 100:.0f} % busy over the run (every process, these players included).", "",
           "Phases of the link (one link for both players; stalls from each phase's start): "
           + "; ".join(f"{p['label']}: {plan_text(p['plan'])}, {p['seconds']:g} s" for p in phases)
           + f"; then {TAIL:g} s clean without changes, so that the last ones are heard. The house changed track "
           f"{len(fig['changes'])} times in the phases (Mopidy's `next` every {fig['change_every']:g} s).", "",
           "| phase | player | gaps mid-track (count: longest, total ms) | silence at track changes (count: longest, total ms) "
           "| discontinuities mid-track | lag behind the server per change, s: median (each) |",
           "| --- | --- | --- | --- | --- | --- |"]
    for k, p in enumerate(phases):
        for n in names:
            row = per[n][0][k]
            out.append(f"| {p['label']} ({plan_text(p['plan'])}) | {n} | {gap_text(row['mid'], server_gaps)} | {gap_text(row['change'], server_gaps)} "
                       f"| {click_text(row['clicks'], server_clicks)} | {lag_text(row['lags'])} |")
    for n in names:
        e = per[n][1]
        if e["mid"] or e["change"] or e["clicks"]:
            out.append(f"| before the first phase | {n} | {gap_text(e['mid'], server_gaps)} | {gap_text(e['change'], server_gaps)} "
                       f"| {click_text(e['clicks'], server_clicks)} | |")
    out += ["", "Each gap (s after its phase began, heard: length ms, the stall it follows): " + "; ".join(
        f"{n}: " + (", ".join(f"{phases[k]['label']} {t:.1f}: {ms(v)}{' at a change' if kind else ''}"
                              + (f" (stall {st}" if st else " (no stall") + (", in the server's stream)" if also(server_gaps, [sv]) else ")")
                              for k in range(len(phases)) for kind in (0, 1)
                              for t, v, st, sv in per[n][0][k]["change" if kind else "mid"]) or "none")
        for n in names) + "."]
    out += ["", "Each discontinuity (s after its phase began, heard): " + "; ".join(
        f"{n}: " + (", ".join(f"{phases[k]['label']} {t - phases[k]['since']:.1f}" for k in range(len(phases))
                              for t, _ in per[n][0][k]["clicks"]) or "none") for n in names) + "."]
    src_mid = [g for g in src.gaps if g[2] == "mid-track"]
    src_change = [g for g in src.gaps if g[2] != "mid-track"]
    out += ["", f"The server's own stream (Icecast decoded directly, no link, over the same phases): "
                f"{len(src_mid)} gaps mid-track, {len(src_change)} silences at track changes"
                + (f" (longest {ms(max(g[1] for g in src_change))} ms)" if src_change else "")
                + f", {len(src.clicks)} discontinuities; the changes reached it "
                + (f"{statistics.median([lag for _, lag in src_heard]):.2f} s after Mopidy's event (median; "
                   f"the time of the Ogg page that held them, ~0.42 s coarse)" if src_heard else "n/a") + "."]
    cpu = fig["cpu"]
    out += ["", f"CPU, user+sys from each player's start to the end of the phases and the tail ({fig['span']:.0f} s): "
                + ", ".join(f"{n} {cpu[n]:.2f} s" for n in names)
                + (f"; groove-bridge/mpv {cpu['groove-bridge'] / cpu['mpv']:.2f}×" if cpu.get("mpv") else "") + "."]
    res = fig["resume"]
    g, m = statistics.median(res["groove-bridge"]), statistics.median(res["mpv"])
    out += ["", f"Play after a pause, Play command → first audio on the player's monitor ({len(res['mpv'])} rounds "
                f"each, ms: median (each)): groove-bridge over MPRIS (`dbus-send`, whose own start and round trip "
                f"take {fig['ping'] * 1000:.0f} ms, included) {ms(g * 1000)} ({', '.join(ms(v * 1000) for v in res['groove-bridge'])}); "
                f"mpv over its JSON IPC {ms(m * 1000)} ({', '.join(ms(v * 1000) for v in res['mpv'])}) (the null sink renders "
                f"up to a block, ~10 ms here, ahead of the clock: a figure below 0 is at once)"
                + (f"; groove-bridge/mpv {g / m:.2f}×" if m > 0.001 else "")
                + ". mpv resumes from its cache where it paused, each pause putting it that much further "
                  "behind live; the bridge resumes at the live edge."]
    out += ["", f"Lag ratios groove-bridge/mpv by phase (medians): " + ", ".join(
        f"{p['label']} {lag_ratio(per, k)}" for k, p in enumerate(phases)) + "."]
    out += [""] + goals(per, phases, fig, server_gaps, server_clicks)
    stalls = [e for e in link_log if e.get("event") == "stall"]
    bursts = [e for e in link_log if e.get("event") == "burst"]
    opens = [e for e in link_log if e.get("event") == "open"]
    out += ["", f"The link's log: {len(stalls)} stalls, {len(bursts)} bursts (largest "
                f"{max((e['bytes'] for e in bursts), default=0)} bytes), {len(opens)} connections opened (one a player "
                f"at the start)."]
    return out


def lag_ratio(per, k):
    v = {n: [lag for _, lag in per[n][0][k]["lags"] if lag is not None] for n in per}
    if all(v.values()) and statistics.median(v["mpv"]) > 0:
        return f"{statistics.median(v['groove-bridge']) / statistics.median(v['mpv']):.2f}×"
    return "n/a"


def goals(per, phases, fig, server_gaps, server_clicks):
    """Issue #24's goals against this run's figures; gaps and discontinuities the server's own
    stream holds too are not the player's."""
    rows, early = per["groove-bridge"]
    own = lambda gs: [g for g in gs if not also(server_gaps, [g[3]])]
    own_clicks = lambda cs: [c for c in cs if not also(server_clicks, [c[1]])]
    lag = lambda k: [x for _, x in rows[k]["lags"] if x is not None]
    out = ["| goal (issue #24) | groove-bridge in this run (gaps and discontinuities of its own: not in the "
           "server's stream) | met? |", "| --- | --- | --- |"]
    if lag(0):
        c = statistics.median(lag(0))
        out.append(f"| clean link: at most 1.1 s behind the server | {c:.2f} s median, {max(lag(0)):.2f} s worst | "
                   f"{'yes' if max(lag(0)) <= 1.1 else 'no'} |")
    # A silence at a track change that follows no stall is the cushion growing there (the bridge's
    # log says so): said beside the gaps, not counted as a stall heard.
    def broke(row):
        return sorted(own(row["mid"] + [g for g in row["change"] if g[2]]))

    def grew(row):
        gs = [g for g in own(row["change"]) if not g[2]]
        return (f"; {len(gs)} silence(s) at a track change after no stall, the cushion growing there (longest "
                f"{ms(max(g[1] for g in gs))})") if gs else ""
    if len(phases) > 1:
        n = len(broke(rows[1]))
        out.append(f"| 500 ms stalls every 5 s: no gap | {n} gaps{grew(rows[1])} | {'yes' if n == 0 else 'no'} |")
    if len(phases) > 2:
        gs = broke(rows[2])
        first_only = len(gs) == 0 or (len(gs) == 1 and gs[0][2] == 1)
        out.append(f"| 1500 ms stalls every 7.5 s: at most one gap, at the first stall | {len(gs)} gaps"
                   + (" (after stalls " + ", ".join(str(g[2]) if g[2] else "none" for g in gs) + ")" if gs else "")
                   + f"{grew(rows[2])} | {'yes' if first_only else 'no'} |")
    if len(phases) > 3 and lag(0) and lag(3):
        c = statistics.median(lag(0))
        late = [(t, x) for t, x in rows[3]["lags"] if x is not None]
        within = next((t for i, (t, _) in enumerate(late) if all(abs(x - c) <= 0.3 for _, x in late[i:])), None)
        n = len(own(rows[3]["mid"] + rows[3]["change"]))
        clicks = len(own_clicks(rows[3]["clicks"]))
        out.append(f"| clean again: within 0.3 s of the clean lag within 60 s, no gap, no skip | lags "
                   + ", ".join(f"{x:.2f} at {t:.0f} s" for t, x in late)
                   + (f"; within 0.3 s from the change at {within:.0f} s on; " if within is not None else "; never within 0.3 s; ")
                   + f"{n} gaps, {clicks} discontinuities | "
                   + f"{'yes' if within is not None and within <= 60 and n == 0 and not clicks else 'no'} |")
    r = fig["resume"]["groove-bridge"]
    out.append(f"| Play after a pause shorter than `keep_warm`: heard within 100 ms | {max(r) * 1000:.0f} ms worst "
               f"(with dbus-send's {fig['ping'] * 1000:.0f} ms) | {'yes' if max(r) <= 0.1 else 'no'} |")
    mrows = per["mpv"][0]
    mg = sum(len(own(x["mid"] + x["change"])) for x in mrows)
    ml = [x for row in mrows for _, x in row["lags"] if x is not None]
    out.append(f"| mpv on the same link: no gaps at 3.1–3.2 s behind | {mg} gaps; lag "
               + (f"{min(ml):.2f}–{max(ml):.2f} s" if ml else "n/a") + " | for reference |")
    return out
