"""The generated library: distinct tones so that a recording tells which track is heard."""

import json
import os
import urllib.request

from .procs import CHANNELS, RATE, run_quiet, wait_for

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



class LibraryMixin:
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
