#!/usr/bin/env python3
"""A small HTTP server for stream faults a real Icecast cannot be made to produce on demand.

  stream_server.py DIR            serves DIR on 127.0.0.1, a free port, printed on stdout

GET /NAME?seconds=S&pace=N1:S1,N2:S2&type=T&flip=N&every=E&seed=K&burst=B
  sends file NAME with Content-Type T (default by extension): B bytes at once (default 65536,
  like Icecast's burst), the rest paced so the whole file takes S seconds (default: as fast as
  possible) or, with pace, the first N1 bytes over S1 seconds, the next N2 over S2, …; with N
  random bytes flipped per E bytes (default 10240) after the first 8 KB (seeded by K); then closes.
"""
import http.server
import os
import random
import socketserver
import sys
import time
import urllib.parse

sys.dont_write_bytecode = True  # no __pycache__ of fixturelib in the source tree
import fixturelib

ROOT = sys.argv[1]
TYPES = {".flac": "audio/flac", ".oga": "audio/ogg", ".ogg": "application/ogg", ".html": "text/html"}


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        q = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
        path = os.path.join(ROOT, os.path.basename(url.path))
        if not os.path.isfile(path):
            self.send_error(404)
            return
        data = bytearray(open(path, "rb").read())
        flip = int(q.get("flip", 0))
        if flip:
            rng = random.Random(int(q.get("seed", 1)))
            every = int(q.get("every", 10240))
            for start in range(8192, len(data), every):
                for _ in range(flip):
                    i = rng.randrange(start, min(start + every, len(data)))
                    data[i] ^= 1 << rng.randrange(8)
        ext = os.path.splitext(path)[1]
        self.send_response(200)
        self.send_header("Content-Type", q.get("type", TYPES.get(ext, "application/octet-stream")))
        self.end_headers()
        seconds = float(q.get("seconds", 0))
        burst = int(q.get("burst", 65536))
        # The schedule: (byte offset, time) points the sending follows, linearly between them.
        if "pace" in q:
            points, at, t = [(0, 0.0)], 0, 0.0
            for part in q["pace"].split(","):
                n, sec = part.split(":")
                at, t = at + int(n), t + float(sec)
                points.append((at, t))
        elif seconds > 0:
            points = [(0, 0.0), (len(data), seconds)]
        else:
            points = None
        try:
            self.wfile.write(data[:burst])
            self.wfile.flush()
            if points is None:
                self.wfile.write(data[burst:])
                return
            t0 = time.monotonic()
            chunk = 2048
            for i in range(burst, len(data), chunk):
                end = min(i + chunk, len(data))
                due = next((t1 - (b1 - end) * (t1 - t0_) / max(1, b1 - b0)
                            for (b0, t0_), (b1, t1) in zip(points, points[1:]) if end <= b1), points[-1][1])
                delay = t0 + due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                self.wfile.write(data[i:end])
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


fixturelib.serve(Handler, Server)
