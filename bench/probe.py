#!/usr/bin/env python3
"""Asks every port for /version every INTERVAL ms and logs one line per tick:
`<ms since start> <answering> <total> <version per port, - for none>`.

Bounded: it stops after MAX_S seconds or when STOP_FILE appears, whichever comes first.
usage: probe.py LOG STOP_FILE INTERVAL_MS MAX_S PORT...
"""
import sys
import time
import urllib.request


def version(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/version", timeout=0.2) as r:
            return r.read().decode().strip() or "?"
    except Exception:
        return "-"


def main() -> None:
    log, stop_file, interval_ms, max_s = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    ports = [int(p) for p in sys.argv[5:]]
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
            versions = [version(p) for p in ports]
            ok = sum(v != "-" for v in versions)
            out.write(f"{int(t * 1000)} {ok} {len(ports)} {' '.join(versions)}\n")
            time.sleep(max(0.0, interval_ms / 1000 - (time.monotonic() - start - t)))


if __name__ == "__main__":
    main()
