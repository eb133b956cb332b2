"""Mopidy + Mopidy-Local with a software mixer, sending raw PCM to the encoders over UDP."""

import json
import os
import subprocess
import urllib.request

from .procs import CHANNELS, LOOPBACK, RATE, run_child
from .service import Service


class MopidyMixin:
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

    def write_mopidy_config(self):
        d = self.path("mopidy")
        # Mopidy's m3u backend fails every playlist call while its folder does not exist.
        os.makedirs(os.path.join(d, "playlists"), exist_ok=True)
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
