#!/usr/bin/env python3
"""A misbehaving Mopidy, for what a real one cannot be made to do. Serves on 127.0.0.1, a free
port printed on stdout; exits when its parent does. Counts connections per path (GET /count/PATH).

POST /rpc/MODE    ok | html502 | notjson | error | wrongid | huge | badutf8 | slow | nullresult
GET  /art/MODE    404 | endless (a JPEG that never ends) | huge (50 MB) | html | ok (a small JPEG)
GET  /ws/MODE     (WebSocket) fragmented | pingflood | garbage | oversize | badaccept |
                  nohandshake | close | binary | invalidjson
"""
import json
import os
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ of fixturelib in the source tree
import fixturelib
from fixturelib import frame

EVENT = json.dumps({"event": "volume_changed", "volume": 42}).encode()
counts = {}
lock = threading.Lock()


class Handler(fixturelib.RequestHandler):
    def serve(self, s, method, path, headers, body):
        with lock:
            counts[path] = counts.get(path, 0) + 1
        if path.startswith("/count/"):
            return self.reply(s, 200, str(counts.get(path[6:], 0)).encode(), "text/plain")
        if method == "POST" and path.startswith("/rpc/"):
            length = int(headers.get("content-length", 0))
            while len(body) < length:
                body += s.recv(65536)
            return self.rpc(s, path[5:], json.loads(body))
        if path.startswith("/ws/"):
            return self.ws(s, path[4:], headers)
        if path.startswith("/art/"):
            return self.art(s, path[5:])
        self.reply(s, 404, b"no", "text/plain")

    def reply(self, s, status, body, ctype):
        fixturelib.reply(s, status, body, ctype)

    def rpc(self, s, mode, req):
        rid = req.get("id")
        if mode == "ok":
            return self.reply(s, 200, json.dumps({"jsonrpc": "2.0", "id": rid, "result": "3.4.1"}).encode(), "application/json")
        if mode == "nullresult":
            return self.reply(s, 200, json.dumps({"jsonrpc": "2.0", "id": rid, "result": None}).encode(), "application/json")
        if mode == "html502":
            return self.reply(s, 502, b"<html><head><title>502 Bad Gateway</title></head></html>", "text/html")
        if mode == "notjson":
            return self.reply(s, 200, b"Mopidy is starting, please wait", "text/plain")
        if mode == "error":
            err = {"code": -32601, "message": "Method not found", "data": {"message": "no such method"}}
            return self.reply(s, 200, json.dumps({"jsonrpc": "2.0", "id": rid, "error": err}).encode(), "application/json")
        if mode == "wrongid":
            return self.reply(s, 200, json.dumps({"jsonrpc": "2.0", "id": 999999, "result": 1}).encode(), "application/json")
        if mode == "huge":
            return self.reply(s, 200, b'{"jsonrpc":"2.0","id":1,"result":"' + b"x" * (20 << 20) + b'"}', "application/json")
        if mode == "badutf8":
            return self.reply(s, 200, b'{"jsonrpc":"2.0","id":%d,"result":"\xc3\x28"}' % rid, "application/json")
        if mode == "slow":
            time.sleep(30)
        s.close()

    def art(self, s, mode):
        jpeg = b"\xff\xd8\xff\xe0" + b"\0" * 1000
        if mode == "404":
            return self.reply(s, 404, b"<html>not found</html>", "text/html")
        if mode == "html":
            return self.reply(s, 200, b"<html>login</html>", "text/html")
        if mode == "ok":
            return self.reply(s, 200, jpeg, "image/jpeg")
        if mode == "huge":
            return self.reply(s, 200, jpeg + b"\0" * (50 << 20), "image/jpeg")
        if mode == "endless":
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\n\r\n" + jpeg)
            try:
                while True:
                    s.sendall(b"\0" * 1024)
                    time.sleep(0.05)
            except OSError:
                return

    def ws(self, s, mode, headers):
        if mode == "nohandshake":
            time.sleep(30)
            return
        accept = fixturelib.ws_accept(headers)
        fixturelib.ws_handshake(s, headers, "AAAA" + accept[4:] if mode == "badaccept" else accept)
        if mode == "fragmented":
            s.sendall(frame(1, EVENT[:10], fin=False) + frame(9, b"hi") + frame(0, EVENT[10:20], fin=False))
            time.sleep(0.2)
            s.sendall(frame(0, EVENT[20:], fin=True))
        elif mode == "pingflood":
            s.sendall(b"".join(frame(9, str(i).encode()) for i in range(2000)) + frame(1, EVENT))
        elif mode == "garbage":
            # Reserved bits set in the first byte: never a valid frame, whatever follows.
            s.sendall(b"\xf3" + os.urandom(63))
        elif mode == "oversize":
            s.sendall(bytes([0x81, 127]) + (64 << 20).to_bytes(8, "big") + b"x" * 1000)
        elif mode == "close":
            s.sendall(frame(8, (1001).to_bytes(2, "big") + b"going away"))
        elif mode == "binary":
            s.sendall(frame(2, b"\x00\x01") + frame(1, EVENT))
        elif mode == "invalidjson":
            s.sendall(frame(1, b"{not json") + frame(1, b'{"event": "volume_changed", "volume": "loud"}') + frame(1, EVENT))
        # Keep the connection until the client goes (pongs and close frames are read and dropped).
        fixturelib.drain(s)


fixturelib.serve(Handler)
