#!/usr/bin/env python3
"""A plain HTTP listener that notes when each piece of a stream arrives.

  arrivals.py URL SECONDS      (stdin: one line, user:password, for Basic auth; never in argv)

GETs URL (http, 127.0.0.1 only), reads its body for SECONDS and prints one JSON object:
  {"status": HTTP status, "start": time.monotonic() at connect,
   "reads": [[time.monotonic(), body bytes], ...]}
time.monotonic() is CLOCK_MONOTONIC, the clock of the rig's logs and of the tests."""
import base64
import json
import socket
import sys
import time
import urllib.parse


def main():
    url, seconds = sys.argv[1], float(sys.argv[2])
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or parts.hostname != "127.0.0.1" or not parts.port:
        sys.exit(f"arrivals.py: {url} is not http://127.0.0.1:PORT/…")
    credentials = sys.stdin.readline().rstrip("\n")
    auth = base64.b64encode(credentials.encode()).decode()
    start = time.monotonic()
    sock = socket.create_connection((parts.hostname, parts.port), timeout=5)
    sock.sendall(f"GET {parts.path or '/'} HTTP/1.0\r\nHost: {parts.netloc}\r\n"
                 f"Authorization: Basic {auth}\r\nUser-Agent: arrivals.py\r\n\r\n".encode())
    head, reads, status = b"", [], None
    deadline = start + seconds
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            data = sock.recv(1 << 20)
        except socket.timeout:
            break
        now = time.monotonic()
        if not data:
            break
        if status is None:
            head += data
            if b"\r\n\r\n" not in head:
                continue
            head, body = head.split(b"\r\n\r\n", 1)
            status = int(head.split(b" ", 2)[1])
            data = body
        if data:
            reads.append([now, len(data)])
    sock.close()
    print(json.dumps({"status": status, "start": start, "reads": reads}))


if __name__ == "__main__":
    main()
