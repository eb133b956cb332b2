"""What the test fixture servers share: serve on a free 127.0.0.1 port, print it, and exit when
the test process that started the server is gone (it may die without stopping it); read an HTTP
request head; answer a WebSocket handshake and build frames (RFC 6455), well-formed or not."""
import base64
import hashlib
import os
import socketserver
import threading
import time

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # clients hanging up mid-reply is what the tests do


def _exit_with_parent():
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


def serve(handler, server_class=Server):
    threading.Thread(target=_exit_with_parent, daemon=True).start()
    srv = server_class(("127.0.0.1", 0), handler)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


def read_request(s):
    """(method, path, headers, body so far) of the request on socket s; None if it hangs up."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
    return method, path, headers, body


class RequestHandler(socketserver.BaseRequestHandler):
    """Reads one request head and hands it to `serve(s, method, path, headers, body so far)`."""

    def handle(self):
        request = read_request(self.request)
        if request is not None:
            self.serve(self.request, *request)


def reply(s, status, body, ctype):
    s.sendall(f"HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
              f"Connection: close\r\n\r\n".encode() + body)


def ws_accept(headers):
    return base64.b64encode(hashlib.sha1(headers.get("sec-websocket-key", "").encode() + GUID).digest()).decode()


def ws_handshake(s, headers, accept=None):
    s.sendall(f"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              f"Sec-WebSocket-Accept: {accept or ws_accept(headers)}\r\n\r\n".encode())


def frame(op, payload, fin=True, length=None):
    """A server frame (unmasked); `length` claims another payload length than the real one."""
    n = len(payload) if length is None else length
    head = bytes([(0x80 if fin else 0) | op])
    if n < 126:
        head += bytes([n])
    elif n < 65536:
        head += bytes([126]) + n.to_bytes(2, "big")
    else:
        head += bytes([127]) + n.to_bytes(8, "big")
    return head + payload


def drain(s, seconds=10):
    """Reads and drops what the client sends (pongs, close frames) until it goes or `seconds` pass."""
    s.settimeout(seconds)
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass
