"""An impaired link: a user-space TCP proxy on loopback that tests put between a listener and Icecast
(this kernel has no tc netem). The server → listener direction follows a plan; the other direction
passes as it comes. A plan is an object of optional fields, combined as given ({} is a clean link):

  stall_ms, every_s   every `every_s` seconds from the moment the plan was set, for `stall_ms`,
                      nothing reaches the listener: what Icecast sends meanwhile is read and held,
                      then written at once when the stall ends (a burst), as a Wi-Fi link delivers
                      what its retries held back
  on_read             1: on each connection open at a stall's scheduled start, the stall begins at
                      the first read from Icecast at or after it, which passes, and lasts
                      `stall_ms` from that read; so the listener's gap between reads is the stall
                      itself, not the stall and the wait for the page after it (Icecast sends a
                      page every ~0.4 s). Each connection logs its own "stall" (with
                      "connection", and "from"/"until" from that read), and no "flow"
  rate                at most this many bytes a second (a token bucket of 50 ms)
  jitter_ms, seed     each read from Icecast waits a random 0..jitter_ms ms (uniform, from a
                      generator seeded with `seed` and the connection's number) before it is passed

The link logs its phases with time.monotonic() (CLOCK_MONOTONIC, the tests' clock): {"t", "event"}
with event "plan" (and the plan), "stall" (with the window it starts: "from", "until", as
scheduled; under on_read, as each connection began it), "flow" (the stall ended), "burst" (a
connection wrote what it held: "bytes", "held_since"), "open" and "close" (a connection, by
number)."""

import json
import math
import random
import select
import socket
import threading
import time

from .procs import LOOPBACK, log

LIMITS = {"stall_ms": (1, 60000), "every_s": (0.05, 3600), "on_read": (0, 1), "rate": (1000, 1 << 32),
          "jitter_ms": (0, 10000), "seed": (0, 1 << 63)}


def check_plan(plan):
    """The plan as numbers, each checked against LIMITS; ValueError names what is wrong."""
    if plan in (None, "clean"):
        plan = {}
    if not isinstance(plan, dict):
        raise ValueError(f"a link plan is an object, not {plan!r}")
    unknown = set(plan) - set(LIMITS)
    if unknown:
        raise ValueError(f"unknown link plan fields {sorted(unknown)} (known: {sorted(LIMITS)})")
    out = {}
    for key, value in plan.items():
        low, high = LIMITS[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or not low <= value <= high:
            raise ValueError(f"link plan {key} must be a number from {low} to {high}, not {value!r}")
        out[key] = int(value) if key in ("seed", "on_read") else float(value)
    if ("stall_ms" in out) != ("every_s" in out):
        raise ValueError("a link plan's stalls need both stall_ms and every_s")
    if "stall_ms" in out and out["stall_ms"] / 1000 >= out["every_s"]:
        raise ValueError("a link plan's stall_ms must be shorter than every_s")
    if out.get("on_read", 0) not in (0, 1) or plan.get("on_read", 0) not in (0, 1):
        raise ValueError(f"link plan on_read must be 0 or 1, not {plan['on_read']!r}")
    if out.get("on_read") and "stall_ms" not in out:
        raise ValueError("a link plan's on_read needs stalls (stall_ms and every_s)")
    return out


class Link:
    """The proxy: listens on a free loopback port, forwards each connection to `upstream`."""

    def __init__(self, name, upstream_port, log_path):
        self.name, self.upstream_port, self.log_path = name, upstream_port, log_path
        self.lock = threading.Lock()
        self.events = []
        self.connections = 0
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind((LOOPBACK, 0))
        self.server.listen(16)
        self.port = self.server.getsockname()[1]
        self.set_plan({})
        threading.Thread(target=self._accept, name=f"link-{name}", daemon=True).start()
        threading.Thread(target=self._phases, name=f"link-{name}-phases", daemon=True).start()

    def note(self, event, **fields):
        entry = {"t": time.monotonic(), "event": event, **fields}
        with self.lock:
            self.events.append(entry)
        with open(self.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def set_plan(self, plan):
        plan = check_plan(plan)
        with self.lock:
            self.plan, self.since = plan, time.monotonic()
            self.generation = getattr(self, "generation", 0) + 1
        self.note("plan", plan=plan)
        return self.describe()

    def describe(self):
        with self.lock:
            return {"name": self.name, "port": self.port, "plan": self.plan, "since": self.since,
                    "stream_url": f"http://{LOOPBACK}:{self.port}/stream.flac",
                    "native_stream_url": f"http://{LOOPBACK}:{self.port}/native.flac"}

    def log(self, since=0.0):
        with self.lock:
            return [e for e in self.events if e["t"] >= since]

    def scheduled(self, now):
        """The latest scheduled stall start at or before `now` (None before the first), the plan
        and its generation, as one."""
        with self.lock:
            plan, since, generation = self.plan, self.since, self.generation
        if "stall_ms" not in plan or now < since:
            return None, plan, generation
        k = math.floor((now - since) / plan["every_s"])
        return (since + k * plan["every_s"] if k >= 1 else None), plan, generation

    def holding(self, now, own, opened):
        """What a connection opened at `opened` does with a read at `now`: until when it holds
        what Icecast sends (None: it passes), the plan, and under `on_read` the stall that read
        begins (generation, scheduled start, until), else None. `own`: the stall it began last
        (the same form), else None."""
        start, plan, generation = self.scheduled(now)
        if not plan.get("on_read"):
            until = start + plan["stall_ms"] / 1000 if start is not None else None
            return (until if until is not None and now < until else None), plan, None
        if own and own[0] == generation and now < own[2]:
            return own[2], plan, None
        if start is None or start < opened or (own and own[:2] == (generation, start)):
            return None, plan, None
        return None, plan, (generation, start, now + plan["stall_ms"] / 1000)

    def _phases(self):
        """Logs each stall and its end at the scheduled times (the pumps decide by the same
        formula, so a late log entry changes nothing heard)."""
        while True:
            with self.lock:
                plan, since, generation = self.plan, self.since, self.generation
            if "stall_ms" not in plan or plan.get("on_read"):
                time.sleep(0.05)
                continue
            every, stall = plan["every_s"], plan["stall_ms"] / 1000
            k = math.floor((time.monotonic() - since) / every) + 1
            start = since + k * every
            while time.monotonic() < start and self.generation == generation:
                time.sleep(min(0.01, max(0.0, start - time.monotonic())))
            if self.generation != generation:
                continue
            self.note("stall", **{"from": start, "until": start + stall})
            while time.monotonic() < start + stall:
                time.sleep(min(0.01, max(0.0, start + stall - time.monotonic())))
            self.note("flow")

    def _accept(self):
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
                number = self.connections
            try:
                upstream = socket.create_connection((LOOPBACK, self.upstream_port), timeout=5)
                upstream.settimeout(None)
            except OSError as e:
                log(f"link {self.name}: upstream refused connection {number}: {e}")
                client.close()
                continue
            self.note("open", connection=number)
            threading.Thread(target=self._pass, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._impair, args=(upstream, client, number), daemon=True).start()

    @staticmethod
    def _pass(src, dst):
        """Listener → server, as it comes."""
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _impair(self, src, dst, number):
        """Server → listener, by the plan."""
        held, held_since = [], None
        own, opened = None, time.monotonic()
        rng, seed = None, None
        allowance, last = 0.0, time.monotonic()

        def release():
            nonlocal held, held_since
            dst.sendall(b"".join(held))
            self.note("burst", connection=number, bytes=sum(map(len, held)), held_since=held_since)
            held, held_since = [], None
        try:
            while True:
                now = time.monotonic()
                until, plan, _ = self.holding(now, own, opened)
                if held and until is None:
                    release()
                # Wake when a stall ends even if Icecast sends nothing.
                timeout = (until - now) if until else 0.5
                if not select.select([src], [], [], max(0.0, timeout))[0]:
                    continue
                data = src.recv(65536)
                if not data:
                    break
                if plan.get("jitter_ms"):
                    if rng is None or seed != plan.get("seed", 0):
                        seed = plan.get("seed", 0)
                        rng = random.Random(seed * 1000003 + number)
                    time.sleep(rng.uniform(0, plan["jitter_ms"]) / 1000)
                now = time.monotonic()
                until, plan, begins = self.holding(now, own, opened)
                if begins:
                    # This read passes; the stall begins after it.
                    own = begins
                    self.note("stall", connection=number, **{"from": now, "until": own[2]})
                elif until is not None:
                    held.append(data)
                    held_since = held_since or time.monotonic()
                    continue
                # The stall ended (or a new plan cut it short) while this read waited: what was
                # held goes first, or the listener would get the stream out of order.
                if held:
                    release()
                if "rate" in plan:
                    now = time.monotonic()
                    allowance = min(plan["rate"] * 0.05, allowance + (now - last) * plan["rate"])
                    last = now
                    allowance -= len(data)
                    if allowance < 0:
                        time.sleep(-allowance / plan["rate"])
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass
            self.note("close", connection=number)


class LinksMixin:
    """The rig's links by name, each to Icecast; made on first use."""

    def link(self, req):
        name = str(req.get("name", "link"))
        links = self.links
        if name not in links:
            links[name] = Link(name, self.ports["icecast"], self.logp(f"link-{name}"))
        if "plan" in req:
            return links[name].set_plan(req["plan"])
        return links[name].describe()

    def link_log(self, req):
        name = str(req.get("name", "link"))
        link = self.links.get(name)
        if link is None:
            raise ValueError(f"no link {name!r}")
        since = req.get("since", 0.0)
        if isinstance(since, bool) or not isinstance(since, (int, float)) or not math.isfinite(since):
            raise ValueError(f"since must be a number, not {since!r}")
        return {"events": link.log(float(since))}
