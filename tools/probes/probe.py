#!/usr/bin/env python3
"""Asks every port for /version every INTERVAL ms and logs one line per tick:
`<ms since start> <answering> <total> <version per port, - for none>`.

Bounded: it stops after MAX_S seconds or when STOP_FILE appears, whichever comes first.
usage: probe.py [--timeout-ms MS] LOG STOP_FILE INTERVAL_MS MAX_S PORT...

A request unanswered within the timeout (200 ms unless given) counts as no answer: the bench
measures downtime by it. A test that asks only which instances are stopped gives a longer one,
since a stopped instance refuses at once, and on a loaded machine a running one can take longer
than 200 ms to answer.
"""
import sys
import time
import urllib.request


def version(port: int, timeout_s: float) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/version", timeout=timeout_s) as r:
            return r.read().decode().strip() or "?"
    except Exception:
        return "-"


def main() -> None:
    args = sys.argv[1:]
    timeout_s = 0.2
    if args[:1] == ["--timeout-ms"]:
        timeout_s, args = int(args[1]) / 1000, args[2:]
    log, stop_file, interval_ms, max_s = args[0], args[1], int(args[2]), float(args[3])
    ports = [int(p) for p in args[4:]]
    start = time.monotonic()
    ticks = int(max_s * 1000 / interval_ms) + 1
    with open(log, "w", buffering=1) as out:
        for _ in range(ticks):
            t = time.monotonic() - start
            if t > max_s:
                break
            try:
                open(stop_file).close()
                break
            except FileNotFoundError:
                pass
            versions = [version(p, timeout_s) for p in ports]
            ok = sum(v != "-" for v in versions)
            out.write(f"{int(t * 1000)} {ok} {len(ports)} {' '.join(versions)}\n")
            time.sleep(max(0.0, interval_ms / 1000 - (time.monotonic() - start - t)))


if __name__ == "__main__":
    main()
