#!/usr/bin/env python3
"""Downtime per service, from a probe.py log.

A service is down from the first tick it did not answer to the next tick it did (or the end of
the log). Prints one line per service: `NAME DOWN_MS GAPS`, or with --json one object.
usage: downtime.py LOG NAME... [--json]   (names in the probe's port order)
"""
import json
import sys


def downtime(log_lines, count):
    """[(down_ms, gaps)] per column, from lines `<ms> <ok> <total> <version per port>`."""
    down = [0] * count
    gaps = [0] * count
    since = [None] * count
    last = 0
    for line in log_lines:
        parts = line.split()
        if len(parts) < 3 + count:
            continue
        t = int(parts[0])
        last = t
        for i, v in enumerate(parts[3:3 + count]):
            if v == "-" and since[i] is None:
                since[i] = t
                gaps[i] += 1
            elif v != "-" and since[i] is not None:
                down[i] += t - since[i]
                since[i] = None
    for i in range(count):
        if since[i] is not None:
            down[i] += last - since[i]
    return list(zip(down, gaps))


def main():
    args = [a for a in sys.argv[1:] if a != "--json"]
    log, names = args[0], args[1:]
    with open(log) as f:
        result = downtime(f.readlines(), len(names))
    if "--json" in sys.argv:
        print(json.dumps({n: {"down_ms": d, "gaps": g} for n, (d, g) in zip(names, result)}))
    else:
        for n, (d, g) in zip(names, result):
            print(f"{n} {d} {g}")


if __name__ == "__main__":
    main()
