"""Music-like tracks, for finding where a track change is heard in the music (heard-now's
learned server delay): changes that are clear and changes that are not, all at one level.

Queued on request ({"cmd":"queue","set":"music"}), in this order, repeating; the tones of
library.py stay the default queue that the other tests listen for.

  Noise Wash → Chord Field       noise, then a chord at the same level: the sound jumps (clear)
  Chord Field → Gapless Part 1   one chord, then another in the same register at the same level:
                                 level and brightness hardly move (not found; honest)
  Gapless Part 1 → Part 2        one chord split across two files: no boundary at all
  Gapless Part 2 → Crossfade Out another chord in the same register (as the second)
  Crossfade Out → Crossfade In   Out fades into In's sound over its last 4 s: nothing at the cut
  Crossfade In → Quiet Passages  a chord, then noise that drops to quiet 0.5 s later: two
                                 candidates
  Quiet Passages → Late Start    a quiet passage, then 1.5 s of silence and a tone
  Late Start → Noise Wash        a tone, then noise: clear

Each is made by sox, every sounding part at one RMS level, once per user (a cache)."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import urllib.request

from .procs import CHANNELS, RATE, run_child, run_quiet

SECONDS = 30
LEVEL_DB = -14  # RMS of every sounding part, dBFS
ALBUM = "Rig Music"

MUSIC = [
    dict(file="m1-noise.flac", title="Noise Wash", kind="noise"),
    dict(file="m2-chord.flac", title="Chord Field", kind="chord C E G"),
    dict(file="m3-gapless1.flac", title="Gapless Part 1", kind="chord A C# E, continued in the next"),
    dict(file="m4-gapless2.flac", title="Gapless Part 2", kind="chord A C# E, continuing the last"),
    dict(file="m5-xfade-out.flac", title="Crossfade Out", kind="chord D F# A fading into the next's chord"),
    dict(file="m6-xfade-in.flac", title="Crossfade In", kind="chord E G# B"),
    dict(file="m7-quiet.flac", title="Quiet Passages", kind="noise with quiet passages"),
    dict(file="m8-late.flac", title="Late Start", kind="1.5 s of silence, then a tone"),
]

CHORDS = {"C E G": [261.63, 329.63, 392.00], "A C# E": [220.00, 277.18, 329.63],
          "D F# A": [293.66, 369.99, 440.00], "E G# B": [329.63, 415.30, 493.88]}

MONO = ["-r", str(RATE), "-c", "1", "-b", "16"]


def sox(*args):
    run_quiet(["sox", *[str(a) for a in args]])


def rms_db(path):
    r = run_child(["sox", path, "-n", "stats"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    m = re.search(r"RMS lev dB\s+(-?[\d.]+)", r.stderr.decode(errors="replace"))
    if not m:
        raise RuntimeError(f"sox stats: no RMS level for {path}")
    return float(m.group(1))


def leveled(src, dst):
    """`src` at LEVEL_DB RMS."""
    sox(src, dst, "gain", f"{LEVEL_DB - rms_db(src):.2f}")


def chord(tmp, name, seconds, dst):
    """The chord's notes mixed, `seconds` long, leveled."""
    notes = []
    for k, f in enumerate(CHORDS[name]):
        n = os.path.join(tmp, f"note{k}.wav")
        sox("-n", *MONO, n, "synth", seconds, "sine", f, "vol", 0.3)
        notes += ["-v", 1, n]
    raw = os.path.join(tmp, "chord.wav")
    sox("-m", *notes, raw)
    leveled(raw, dst)


def noise(tmp, seconds, dst):
    raw = os.path.join(tmp, "noise.wav")
    sox("-n", *MONO, raw, "synth", seconds, "pinknoise", "vol", 0.5)
    leveled(raw, dst)


def render(tmp, title, dst):
    """One track as a mono WAV at `dst`."""
    w = lambda name: os.path.join(tmp, name)
    if title == "Noise Wash":
        noise(tmp, SECONDS, dst)
    elif title == "Chord Field":
        chord(tmp, "C E G", SECONDS, dst)
    elif title in ("Gapless Part 1", "Gapless Part 2"):
        # One chord of twice the length, cut in two: the second file goes on where the first ends.
        chord(tmp, "A C# E", 2 * SECONDS, w("both.wav"))
        sox(w("both.wav"), dst, "trim", *((0, SECONDS) if title.endswith("1") else (SECONDS,)))
    elif title in ("Crossfade Out", "Crossfade In"):
        # Out's last 4 s fade (equal power) into In's chord, which In goes on with from there.
        chord(tmp, "E G# B", SECONDS + 4, w("in.wav"))
        if title.endswith("In"):
            sox(w("in.wav"), dst, "trim", 4)
        else:
            chord(tmp, "D F# A", SECONDS, w("out.wav"))
            sox(w("out.wav"), w("out-fading.wav"), "fade", "q", 0, SECONDS, 4)
            sox(w("in.wav"), w("in-rising.wav"), "trim", 0, 4, "fade", "q", 4, "pad", SECONDS - 4, 0)
            sox("-m", "-v", 1, w("out-fading.wav"), "-v", 1, w("in-rising.wav"), dst)
    elif title == "Quiet Passages":
        # 0.8 s at -30 dB every 3 s from 0.5 s on, and the last 0.8 s: passages near both ends.
        noise(tmp, SECONDS, w("loud.wav"))
        cuts, t = [], 0.0
        for a in [0.5 + 3 * k for k in range(SECONDS // 3 - 1)] + [SECONDS - 0.8]:
            cuts += [(t, a, 0), (a, min(SECONDS, a + 0.8), -30)]
            t = a + 0.8
        parts = []
        for k, (a, b, gain) in enumerate(cuts):
            if b <= a:
                continue
            part = w(f"part{k}.wav")
            sox(w("loud.wav"), part, "trim", f"{a:.3f}", f"={b:.3f}", "gain", gain)
            parts.append(part)
        sox(*parts, dst)
    elif title == "Late Start":
        sox("-n", *MONO, w("tone.wav"), "synth", SECONDS - 1.5, "sine", 550)
        leveled(w("tone.wav"), w("tone-leveled.wav"))
        sox(w("tone-leveled.wav"), dst, "pad", 1.5, 0)
    else:
        raise ValueError(title)


def make_music(music_dir):
    """The tracks in `music_dir`/Rig Music, stereo FLAC: made once per user into a cache (a stamp
    says what was made; a new set is made aside and renamed into place), then copied."""
    want = json.dumps([MUSIC, SECONDS, LEVEL_DB], sort_keys=True)
    cache_root = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "groove-rig")
    cache = os.path.join(cache_root, "music-" + hashlib.sha256(want.encode()).hexdigest()[:16])
    if not os.path.isdir(cache):
        os.makedirs(cache_root, exist_ok=True)
        aside = tempfile.mkdtemp(dir=cache_root, prefix=".making-")
        try:
            for t in MUSIC:
                with tempfile.TemporaryDirectory(dir=aside) as tmp:
                    mono = os.path.join(tmp, "track.wav")
                    render(tmp, t["title"], mono)
                    path = os.path.join(aside, t["file"])
                    sox(mono, "-c", CHANNELS, path)
                run_quiet(["metaflac", "--remove-all-tags", f"--set-tag=TITLE={t['title']}",
                           f"--set-tag=ALBUM={ALBUM}", "--set-tag=ARTIST=Groove Test Band", path])
            try:
                os.rename(aside, cache)
            except OSError:
                pass  # another rig made it meanwhile
        finally:
            shutil.rmtree(aside, ignore_errors=True)
    sub = os.path.join(music_dir, ALBUM)
    os.makedirs(sub, exist_ok=True)
    for t in MUSIC:
        shutil.copyfile(os.path.join(cache, t["file"]), os.path.join(sub, t["file"]))


class MusicMixin:
    def queue_music(self):
        """The tracklist: the music-like tracks in MUSIC's order (through Mopidy's file backend),
        repeat on, playing."""
        uris = ["file://" + urllib.request.pathname2url(os.path.join(self.path("music"), ALBUM, t["file"]))
                for t in MUSIC]
        self.rpc("core.tracklist.clear")
        self.rpc("core.tracklist.add", {"uris": uris})
        self.rpc("core.tracklist.set_repeat", {"value": True})
        self.rpc("core.playback.play")
