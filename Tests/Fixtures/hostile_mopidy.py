#!/usr/bin/env python3
"""A Mopidy look-alike that sends what no Mopidy should, until it is told to turn sane. Serves on
127.0.0.1, a free port printed on stdout; exits when its parent does.

POST /mopidy/rpc   JSON-RPC. Hostile: each method answers in turn with numbers written as
                   strings or beyond int64 in every field the bridge reads, wrong shapes, a
                   file:// cover and one with credentials in its URL, and, between them, a
                   20 MiB reply (said and unsaid in Content-Length), 100 000-deep nesting, invalid
                   UTF-8, a near-limit reply shaped to blow up when parsed, a mismatched id.
                   Sane: a track "Sane Track" playing.
GET  /mopidy/ws    WebSocket. Hostile: each connection gets one well-formed event, then the next
                   scenario of SCENARIOS (numbers, shapes, deep nesting, a burst of 25 000
                   events, a near-limit message, invalid UTF-8, a reserved opcode, RSV bits, a
                   20 MiB message, a frame claiming 2^62 bytes), and is closed. Sane: the sane
                   track's track_playback_started, then the connection stays open.
GET  /art/x.jpg    not an image (a cover that fails, so its URL is logged)
GET  /control/sane turns sane
GET  /control/progress   {"scenarios": WS scenarios sent, "total": len(SCENARIOS), "rpc": hostile RPC replies}
"""
import json
import os
import sys
import threading

sys.dont_write_bytecode = True  # no __pycache__ of fixturelib in the source tree
import fixturelib
from fixturelib import frame

state = {"sane": False, "connections": 0, "scenarios": 0, "rpc": 0}
lock = threading.Lock()
conns = []

BIG = 2**63                       # one past int64
HUGE = 2**70
ESC_TITLE = "\x1b]0;pwned\x07\x1b[2J\x1b[31mHostile\nTitle"
SANE = {"__model__": "TlTrack", "tlid": 7, "track": {
    "__model__": "Track", "uri": "hostile:sane", "name": "Sane Track", "artists": [{"name": "Sane Artist"}],
    "album": {"name": "Sane Album"}, "length": 180000, "track_no": 3, "disc_no": 1}}


def track(tlid, **fields):
    t = {"__model__": "Track", "uri": "hostile:track", "name": ESC_TITLE, "artists": [{"name": "A"}],
         "album": {"name": "B"}, "length": 30000, "track_no": 1, "disc_no": 1}
    t.update(fields)
    return {"__model__": "TlTrack", "tlid": tlid, "track": t}


# Every number field of a track, as a string and beyond int64, and shapes where objects belong.
HOSTILE_TRACKS = [
    track(1, length="9223372036854775807", track_no="7", disc_no=str(BIG)),
    track(2, length=BIG, track_no=HUGE, disc_no=-BIG),
    track(3, length=1e300, track_no=1.5, disc_no=-1, name=12345),
    track(4, length=-1, artists="not a list", album=[1, 2]),
    track(5, length=2**53, artists=[1, None, {"name": 5}], album={"name": {"x": 1}}),
    track("9223372036854775807"),
    track(BIG),
    track(-1),
    track(1e300),
    {"tlid": 6, "track": "not a track"},
    {"tlid": 6, "track": [track(6)]},
    [track(8)],
    "a string",
    5,
]


def rpc_values(method):
    """What `method` answers in turn, while hostile."""
    if method == "core.playback.get_current_tl_track":
        return HOSTILE_TRACKS + [track(9)]
    if method == "core.playback.get_state":
        return ["playing", 5, "dancing", None, ["playing"], "paused"]
    if method == "core.playback.get_time_position":
        return ["9223372036854775807", BIG, -BIG, 1e300, -5, 2**53 + 1, 86400001, [1], {"a": 1}, None, 1000]
    if method == "core.mixer.get_volume":
        return ["50", 2**64, 101, -1, -1e300, 1.5, None, 42]
    if method.startswith("core.tracklist.get_") and method.endswith("_tlid"):
        return [BIG, "3", -1, 1.5, 2**53, -BIG, None, 4]
    if method.startswith("core.tracklist.get_"):
        return ["true", 1, None, [True], True]
    if method == "core.get_uri_schemes":
        return [["file", 5, None, {"a": 1}], "file", None, ["hostile"] * 100000]
    if method == "core.library.get_images":
        return [{"hostile:track": [{"uri": "file:///etc/passwd", "width": 2**62, "height": 2**62},
                                   {"uri": "FILE:/etc/shadow", "width": "100000", "height": BIG},
                                   {"uri": "/art/x.jpg", "width": str(2**62), "height": str(2**62)},
                                   {"uri": "/art/x.jpg", "width": 2**31, "height": 2**31}]},
                {"hostile:track": [{"uri": f"http://user:pw@127.0.0.1:{PORT}/art/x.jpg", "width": 1e300,
                                    "height": -1}]},
                {"hostile:track": "not a list"}, []]
    return [None, "9223372036854775807", [BIG]]


# Between the values above, every fourth reply is one of these, whatever the method.
def blowup(size):
    """About `size` bytes of nested lists that escape a cut of lists to their first 256."""
    inner = "[" + ",".join(["0"] * 256) + "]"
    mid = "[" + ",".join([inner] * 256) + "]"
    n = max(1, size // (len(mid) + 1))
    return "[" + ",".join([mid] * n) + "]"


GENERIC = ["huge", "huge-unsaid", "deep", "badutf8", "nearlimit", "wrongid", "noresult"]
served = {}


def answer_rpc(s, req):
    rid = req.get("id") if isinstance(req, dict) else None
    method = req.get("method", "") if isinstance(req, dict) else ""
    with lock:
        sane = state["sane"]
        n = served.get(method, 0)
        served[method] = n + 1
        if not sane:
            state["rpc"] += 1
    if sane:
        result = {"core.playback.get_current_tl_track": SANE, "core.playback.get_state": "playing",
                  "core.playback.get_time_position": 1000, "core.mixer.get_volume": 50,
                  "core.get_uri_schemes": ["hostile"], "core.get_version": "3.4.1",
                  "core.library.get_images": {}}.get(method, False if method.startswith("core.tracklist.get_") and
                                                      not method.endswith("_tlid") else None)
        return fixturelib.reply(s, 200, json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode(),
                                "application/json")
    if n % 4 == 3 and GENERIC:
        kind = GENERIC[(n // 4) % len(GENERIC)]
        if kind == "huge":
            return fixturelib.reply(s, 200, b'{"jsonrpc":"2.0","id":1,"result":"' + b"x" * (20 << 20) + b'"}',
                                    "application/json")
        if kind == "huge-unsaid":
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
                      b'{"jsonrpc":"2.0","id":1,"result":"')
            try:
                for _ in range(20):
                    s.sendall(b"x" * (1 << 20))
            except OSError:
                pass
            return
        body = {"deep": lambda: ('{"jsonrpc":"2.0","id":%d,"result":' % rid + "[" * 100000 + "]" * 100000 + "}").encode(),
                "badutf8": lambda: b'{"jsonrpc":"2.0","id":%d,"result":"\xc3\x28\xff"}' % rid,
                "nearlimit": lambda: ('{"jsonrpc":"2.0","id":%d,"result":' % rid + blowup((6 << 20) - 4096) + "}").encode(),
                "wrongid": lambda: json.dumps({"jsonrpc": "2.0", "id": BIG, "result": 1}).encode(),
                "noresult": lambda: json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": BIG, "message": 5}}).encode(),
                }[kind]()
        return fixturelib.reply(s, 200, body, "application/json")
    values = rpc_values(method)
    result = values[(n - n // 4) % len(values)]
    fixturelib.reply(s, 200, json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode(), "application/json")


def event(name, **fields):
    return frame(1, json.dumps(dict(event=name, **fields)).encode())


def numbers():
    out = [event("track_playback_started", tl_track=t) for t in HOSTILE_TRACKS]
    for v in ["9223372036854775807", BIG, -BIG, HUGE, 1e300, -1e300, 2**53, -5, None, [1], {"a": 1}, 86400001]:
        out += [event("seeked", time_position=v), event("volume_changed", volume=v),
                event("track_playback_paused", tl_track=track(9), time_position=v),
                event("track_playback_resumed", tl_track=None, time_position=v),
                event("track_playback_ended", tl_track=track(BIG), time_position=v),
                event("mute_changed", mute=v), event("stream_title_changed", title=v),
                event("playback_state_changed", old_state=v, new_state=v)]
    out.append(event("track_playback_started", tl_track=track(9)))
    return b"".join(out)


def shapes():
    texts = ["5", "[]", "null", '"event"', '{"event":5}', '{"event":null}', '{"event":["seeked"]}',
             '{"event":"track_playback_started","tl_track":[1]}', '{"event":"track_playback_started","tl_track":"x"}',
             '{"event":"seeked"}', '{"event":"volume_changed","volume":{"v":1}}',
             '{"event":"playback_state_changed","new_state":{"state":"playing"}}',
             '{"jsonrpc":"2.0","id":1,"result":[1,2,3]}', '{"event":"stream_title_changed","title":"' + "t" * 100000 + '"}',
             '{"event":"playlist_changed","playlist":' + json.dumps({"tracks": [track(i) for i in range(3000)]}) + "}",
             '{"event":"options_changed","extra":' + blowup(1 << 20) + "}", "{" * 10 + "}" * 9]
    return b"".join(frame(1, t.encode()) for t in texts)


def burst():
    kinds = [event("tracklist_changed"), event("options_changed"), event("volume_changed", volume=BIG),
             event("seeked", time_position="9223372036854775807"), event("track_playback_started", tl_track=track(11))]
    return b"".join(kinds[i % len(kinds)] for i in range(25000))


SCENARIOS = [
    ("numbers", numbers),
    ("shapes", shapes),
    ("deep", lambda: frame(1, ("[" * 100000 + "]" * 100000).encode()) + frame(1, ('{"a":' * 100000 + "1" + "}" * 100000).encode())),
    ("burst", burst),
    ("nearlimit", lambda: frame(1, ('{"event":"options_changed","x":' + blowup((1 << 20) - 4096) + "}").encode())),
    ("badutf8", lambda: frame(1, b'{"event":"volume_changed","volume":\xc3\x28}')),
    ("opcode", lambda: frame(0x3, b"reserved")),
    ("rsv", lambda: bytes([0x80 | 0x40 | 0x1, 2]) + b"{}"),
    ("huge", lambda: frame(1, b"x" * (20 << 20))),
    ("claim", lambda: frame(1, b"x" * 1000, length=2**62)),
]

# For a look at one of them alone: HOSTILE_SCENARIOS=burst,nearlimit HOSTILE_RPC=huge (names as above;
# HOSTILE_RPC= leaves only the per-method values).
if os.environ.get("HOSTILE_SCENARIOS") is not None:
    SCENARIOS = [x for x in SCENARIOS if x[0] in os.environ["HOSTILE_SCENARIOS"].split(",")]
if os.environ.get("HOSTILE_RPC") is not None:
    GENERIC = [x for x in GENERIC if x in os.environ["HOSTILE_RPC"].split(",")]


class Handler(fixturelib.RequestHandler):
    def serve(self, s, method, path, headers, body):
        if path == "/control/sane":
            with lock:
                state["sane"] = True
                open_now = list(conns)
            for c in open_now:  # the sane track at once on the sockets still open
                try:
                    c.sendall(event("track_playback_started", tl_track=SANE))
                except OSError:
                    pass
            return fixturelib.reply(s, 200, b"sane", "text/plain")
        if path == "/control/progress":
            with lock:
                p = {"scenarios": state["scenarios"], "total": len(SCENARIOS), "rpc": state["rpc"]}
            return fixturelib.reply(s, 200, json.dumps(p).encode(), "application/json")
        if method == "POST" and path == "/mopidy/rpc":
            length = int(headers.get("content-length", 0))
            while len(body) < length:
                chunk = s.recv(65536)
                if not chunk:
                    return
                body += chunk
            try:
                req = json.loads(body)
            except ValueError:
                req = {}
            return answer_rpc(s, req)
        if path == "/mopidy/ws":
            return self.ws(s, headers)
        fixturelib.reply(s, 404 if not path.startswith("/art/") else 200, b"<html>not an image</html>", "text/html")

    def ws(self, s, headers):
        fixturelib.ws_handshake(s, headers)
        with lock:
            sane = state["sane"]
            n = state["connections"]
            state["connections"] += 1
            conns.append(s)
        try:
            if sane:
                s.sendall(event("track_playback_started", tl_track=SANE))
                fixturelib.drain(s, 3600)
                return
            # A well-formed event first: the bridge sees a healthy connection and retries soon.
            _, scenario = SCENARIOS[n % len(SCENARIOS)]
            s.sendall(event("volume_changed", volume=42) + scenario())
        except OSError:
            pass
        finally:
            with lock:
                if not sane:
                    state["scenarios"] += 1
                conns.remove(s)
        fixturelib.drain(s, 0.5)


PORT = 0


class Server(fixturelib.Server):
    def server_activate(self):
        global PORT
        PORT = self.server_address[1]
        super().server_activate()


fixturelib.serve(Handler, Server)
