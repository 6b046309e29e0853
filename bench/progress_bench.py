#!/usr/bin/env python3
"""What live progress costs a no-op update (issue 42): the example deployed on th1, then no-op
updates in pairs, one with progress (refit_progress, the default: each module call runs its work
in a worker it may detach) and one without (refit_progress=false: the module works itself),
the order switched every pair so a drift of the machine's load touches both alike. Prints the
medians and each run's wall time, as JSON and as a Markdown table row.

usage: progress_bench.py [PAIRS]   (default 10; a bed that is up, the collection installed)
"""
import json
import sys

import benchlib as b


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    b.prepare()
    b.playbook("refit.containers.deploy")
    walls = {"on": [], "off": []}
    runs = {"on": (), "off": ("-e", "refit_progress=false")}
    for i in range(pairs):
        for way in ("on", "off") if i % 2 == 0 else ("off", "on"):
            walls[way].append(b.playbook("refit.containers.update", *runs[way]))
    on, off = b.median(walls["on"]), b.median(walls["off"])
    print(json.dumps({"pairs": pairs, "median_on_s": on, "median_off_s": off, "walls": walls}))
    print("| %d pairs | %.2f s | %.2f s | %+.0f ms (%+.1f %%) |" % (pairs, on, off, (on - off) * 1000, (on / off - 1) * 100))


if __name__ == "__main__":
    main()
