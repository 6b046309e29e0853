#!/usr/bin/env python3
# Copyright: refit contributors
# Apache-2.0 (see LICENSE)
"""container_unit's check-mode plan of 1,000 and 10,000 units: CPU seconds, the median of a few
runs of the ignored test container_unit::plan_bench (the module's own planning against fake host
seams, so neither podman nor systemd is measured), which prints the CPU seconds of its thread.
Usage: bench/plan_bench.py [RUNS] [N ...]
"""

import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


TEST = ["cargo", "test", "--release", "--locked", "-q", "-p", "refit-core", "--lib", "container_unit::plan_bench"]


def cpu_of(n):
    out = subprocess.run(
        TEST + ["--", "--ignored", "--nocapture"],
        cwd=ROOT,
        env=dict(os.environ, REFIT_PLAN_UNITS=str(n)),
        check=True,
        capture_output=True,
        text=True,
        timeout=3600,
    ).stdout
    found = re.search(r"PLAN units=(\d+) cpu_seconds=([0-9.]+)", out)
    if not found:
        raise SystemExit("no figure in the bench's output:\n" + out)
    return float(found.group(2))


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    sizes = [int(a) for a in sys.argv[2:]] or [1000, 10000]
    # Built once, outside the measured runs.
    subprocess.run(TEST + ["--no-run"], cwd=ROOT, check=True)
    print("units  runs  median CPU s  min  max")
    for n in sizes:
        cpu = [cpu_of(n) for _ in range(runs)]
        print("%5d  %4d  %12.3f  %.3f  %.3f" % (n, runs, statistics.median(cpu), min(cpu), max(cpu)))


if __name__ == "__main__":
    main()
