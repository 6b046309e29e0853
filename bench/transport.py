#!/usr/bin/env python3
"""The no-op update over real SSH and over the local connection, refit beside the foremanctl way.

Reuses bench.py's scenario pieces on test host th1: each way deploys the example, then runs its
no-op update `runs` times over each transport (wall time, services restarted, downtime from a
20 ms probe); over SSH one more run with multiplexing off and each connection's closing
`Transferred: sent N, received M bytes` line (ssh -E) summed: the bytes sent to the host per run,
with Ansible's default compression (-C). The local connection is the testbed's nsenter plugin,
which moves files through /proc/PID/root, so nothing crosses a network there.

    bench/transport.py OUT.md          needs a bed up (th1), the collection and the bench venv
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (bench.py beside this file: the no-op scenario)
import benchlib as b  # noqa: E402

TRANSPORTS = {"local": os.path.join(b.RUN, "inventory.ini"), "ssh": os.path.join(b.RUN, "inventory-ssh.ini")}
TRANSFERRED = re.compile(r"Transferred: sent (\d+), received (\d+) bytes")


def over(transport):
    os.environ["ANSIBLE_INVENTORY"] = TRANSPORTS[transport]


def bytes_sent(run):
    """Bytes sent to and received from th1 in one run over SSH, from ssh's own counters."""
    fd, log = tempfile.mkstemp(prefix="ssh-bytes-", dir=b.RUN)
    os.close(fd)
    over("ssh")
    os.environ["ANSIBLE_SSH_ARGS"] = f"-C -o ControlMaster=no -o LogLevel=VERBOSE -E {log}"
    try:
        run()
    finally:
        del os.environ["ANSIBLE_SSH_ARGS"]
    with open(log, encoding="utf-8", errors="replace") as f:
        counts = [tuple(map(int, m.groups())) for m in TRANSFERRED.finditer(f.read())]
    os.unlink(log)
    return {"sent": sum(c[0] for c in counts), "received": sum(c[1] for c in counts), "connections": len(counts)}


def way(label, deploy, update, runs):
    b.prepare()
    over("local")
    deploy()
    out = {}
    for t in TRANSPORTS:
        over(t)
        b.log(f"{label}: {runs} no-op runs over {t}")
        out[t] = bench.noop(runs, update, f"{label}-{t}")
    out["ssh_bytes"] = bytes_sent(update)
    return out


def render(r):
    mb = lambda n: f"{n / 1e6:.1f} MB"  # noqa: E731
    rows = ["| no-op update of the example (median of %d) | refit | (a) foremanctl way |" % r["runs"],
            "| --- | --- | --- |"]
    for t in TRANSPORTS:
        rows.append(f"| wall, {t} | {r['refit'][t]['wall_s']:.2f} s | {r['fm'][t]['wall_s']:.2f} s |")
    for t in TRANSPORTS:
        rows.append(f"| services restarted per run, {t} | {r['refit'][t]['restarted_per_run']:g} "
                    f"| {r['fm'][t]['restarted_per_run']:g} |")
    rb, fb = r["refit"]["ssh_bytes"], r["fm"]["ssh_bytes"]
    rows.append(f"| bytes sent to the host per run, ssh | {mb(rb['sent'])} | {mb(fb['sent'])} |")
    rows.append(f"| bytes received from it, ssh | {mb(rb['received'])} | {mb(fb['received'])} |")
    rows.append(f"| ssh connections per run (multiplexing off) | {rb['connections']} | {fb['connections']} |")
    rows.append("| bytes sent per run, local | none: files move through /proc/PID/root | same |")
    return "\n".join(rows) + "\n"


def main():
    out_path = sys.argv[-1]
    runs = 3
    r = {"runs": runs,
         "refit": way("refit", lambda: b.playbook("refit.containers.deploy"), bench.refit_update, runs),
         "fm": way("fm", b.fm_deploy, b.fm_deploy, runs)}
    b.prepare()
    head = (f"# The no-op update over SSH and over the local connection\n\n`bench/transport.py` on one test "
            f"host ({b.host('podman --version').strip()}, "
            f"{b.sh(['ansible-playbook', '--version']).stdout.splitlines()[0]}), sshd on 127.0.0.1; "
            "bytes from ssh's own counters, with Ansible's default compression.\n\n")
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(head + render(r))
    with open(os.path.splitext(out_path)[0] + ".json", "w", encoding="utf-8") as f:
        json.dump(r, f, indent=1, default=str)
    print(head + render(r))


if __name__ == "__main__":
    main()
