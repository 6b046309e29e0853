#!/usr/bin/env python3
"""What clients see: every INTERVAL ms, for each port, a new TCP connection and one
`GET /version`, each on its own thread so a request waiting in a backlog delays no other.

Each request ends as ok (HTTP 200, with its latency from connect to the last byte), refused
(the connect was refused: nothing listened), or failed (reset, timed out, or not a 200; the
summary counts the failures by cause, so a failed run says what went wrong).
Bounded: it stops starting requests after MAX_S seconds or when STOP_FILE appears, and waits
at most TIMEOUT_S for those in flight. Writes OUT as JSON: one summary per port.

usage: clients.py OUT STOP_FILE INTERVAL_MS MAX_S PORT...
"""
import json
import os
import socket
import sys
import threading
import time

TIMEOUT_S = 10.0
# At most this many requests in flight per port; a tick that finds them all busy is skipped
# (and counted), so a dead service cannot make the probe start threads without end.
MAX_IN_FLIGHT = 1000
REQUEST = b"GET /version HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"


def request(port: int) -> tuple[str, float, str]:
    """(outcome, latency ms, version) of one request; for a failure the version says why."""
    t0 = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
    except ConnectionRefusedError:
        return "refused", (time.monotonic() - t0) * 1000, ""
    except OSError as e:
        return "failed", (time.monotonic() - t0) * 1000, f"connect: {type(e).__name__}"
    try:
        with s:
            s.settimeout(max(0.1, TIMEOUT_S - (time.monotonic() - t0)))
            s.sendall(REQUEST)
            data = b""
            while chunk := s.recv(4096):
                data += chunk
    except OSError as e:
        return "failed", (time.monotonic() - t0) * 1000, type(e).__name__
    ms = (time.monotonic() - t0) * 1000
    head, _, body = data.partition(b"\r\n\r\n")
    if not data:
        return "failed", ms, "closed without an answer"
    if not head.startswith(b"HTTP/1.") or b" 200 " not in head.split(b"\r\n")[0] + b" ":
        return "failed", ms, "not a 200"
    return "ok", ms, body.decode(errors="replace").strip()


class Port:
    def __init__(self, port: int):
        self.port = port
        self.lock = threading.Lock()
        self.in_flight = 0
        self.skipped = 0
        # (start ms since the probe began, outcome, latency ms, version)
        self.results: list[tuple[int, str, float, str]] = []

    def run_one(self, start_ms: int) -> None:
        outcome, ms, version = request(self.port)
        with self.lock:
            self.results.append((start_ms, outcome, ms, version))
            self.in_flight -= 1

    def tick(self, start_ms: int) -> None:
        with self.lock:
            if self.in_flight >= MAX_IN_FLIGHT:
                self.skipped += 1
                return
            self.in_flight += 1
        threading.Thread(target=self.run_one, args=(start_ms,), daemon=True).start()

    def summary(self) -> dict:
        rs = sorted(self.results)
        lat = sorted(ms for _, o, ms, _ in rs if o == "ok")

        def pct(p: float) -> float:
            return round(lat[min(len(lat) - 1, int(p * len(lat)))], 1) if lat else 0.0

        versions: dict[str, int] = {}
        failures: dict[str, int] = {}
        for _, o, _, v in rs:
            if o == "ok":
                versions[v] = versions.get(v, 0) + 1
            elif o == "failed":
                failures[v] = failures.get(v, 0) + 1
        last_ok = [v for _, o, _, v in rs if o == "ok"]
        # The longest run of requests that did not succeed, as the time between its first and
        # the next success: what a client retrying every INTERVAL would call the outage.
        gap, since = 0, None
        for t, o, ms, _ in rs:
            if o != "ok":
                since = t if since is None else since
            elif since is not None:
                gap, since = max(gap, t + ms - since), None
        return {
            "port": self.port,
            "requests": len(rs),
            "ok": len(lat),
            "refused": sum(o == "refused" for _, o, _, _ in rs),
            "failed": sum(o == "failed" for _, o, _, _ in rs),
            "failures": failures,
            "skipped": self.skipped,
            "p50_ms": pct(0.50),
            "p99_ms": pct(0.99),
            "max_ms": round(lat[-1], 1) if lat else 0.0,
            "outage_ms": round(gap, 1),
            "versions": versions,
            "last_version": last_ok[-1] if last_ok else "",
        }


def main() -> None:
    out, stop_file = sys.argv[1], sys.argv[2]
    interval_ms, max_s = int(sys.argv[3]), float(sys.argv[4])
    ports = [Port(int(p)) for p in sys.argv[5:]]
    start = time.monotonic()
    ticks = int(max_s * 1000 / interval_ms) + 1
    for n in range(ticks):
        if os.path.exists(stop_file) or time.monotonic() - start > max_s:
            break
        now_ms = int((time.monotonic() - start) * 1000)
        for p in ports:
            p.tick(now_ms)
        time.sleep(max(0.0, start + (n + 1) * interval_ms / 1000 - time.monotonic()))
    deadline = time.monotonic() + TIMEOUT_S + 1
    while any(p.in_flight for p in ports) and time.monotonic() < deadline:
        time.sleep(0.05)
    with open(out + ".tmp", "w") as f:
        json.dump([p.summary() for p in ports], f, indent=1)
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
