"""Scenario 5 (issue 15): z-stream updates of one service with a socket and one without, side
by side in the same run, under tools/probes/clients.py (a new connection and one request every 10 ms
per service): refused connections, failed requests, p99 and max latency, and the outage a
client sees (first failure to next success). Run by bench.py (--only socket)."""
import json
import os
import subprocess
import sys
import tempfile
import time

from benchlib import PLAYBOOKS, PROBES, REGISTRY, RUN, TB, host, sh
import benchlib as b

PLAY = os.path.join(PLAYBOOKS, "socket.yml")
UNITS = ("bench-sock", "bench-bare")


def clients_during(ports, action):
    """tools/probes/clients.py around `action`: its summaries by name, and the action's wall time."""
    d = tempfile.mkdtemp(prefix="clients-", dir=RUN)
    out, stop = os.path.join(d, "clients.json"), os.path.join(d, "stop")
    proc = subprocess.Popen([sys.executable, os.path.join(PROBES, "clients.py"), out, stop, "10", "300",
                             *(str(ports[u]) for u in UNITS)])
    time.sleep(0.3)
    t0 = time.monotonic()
    action()
    wall = time.monotonic() - t0
    time.sleep(0.5)
    open(stop, "w").close()
    proc.wait(timeout=30)
    with open(out) as f:
        seen = json.load(f)
    return {"wall_s": wall, **dict(zip(UNITS, seen))}


def socket_contrast(reps):
    """`reps` refit updates of both, then `reps` bare `systemctl restart`s (the limit, image
    already local), each under the client probe."""
    ports = {"bench-sock": b.BASE + 160, "bench-bare": b.BASE + 161}

    def publish(version, pull=False):
        for u in UNITS:
            sh([TB, "publish", f"{REGISTRY}/{u}:1.0", version])
            if pull:
                host(f"podman pull -q {REGISTRY}/{u}:1.0 > /dev/null")

    def check(version, row):
        for u in UNITS:
            if row[u]["last_version"] != version:
                raise RuntimeError(f"{u} answered {row[u]['last_version']!r} last, not the published {version}")
        return row

    publish("1.0.0")
    sh(["ansible-playbook", PLAY])
    out = {"refit": [], "limit": []}
    for i in range(reps):
        v = f"1.0.7{i}"
        publish(v)
        out["refit"].append(check(v, clients_during(ports, lambda: sh(["ansible-playbook", PLAY]))))
    for i in range(reps):
        v = f"1.0.8{i}"
        publish(v, pull=True)
        restart = "systemctl restart bench-bare.service && systemctl restart bench-sock.service"
        out["limit"].append(check(v, clients_during(ports, lambda: host(restart))))
    sh(["ansible-playbook", PLAY, "-e", "bench_state=absent"])
    return out


def render_socket(s):
    """The markdown section of scenario 5."""
    outages = sorted(r["bench-bare"]["outage_ms"] for r in s["limit"])
    limit = outages[len(outages) // 2] or 1

    def cells(rows, u, key):
        return ", ".join(f"{r[u][key]:g}" for r in rows)

    lines = ["", "## 5. z-stream with and without a socket (issue 15), same image, same run", "",
             "Clients: a new TCP connection and one GET /version every 10 ms per service (tools/probes/clients.py). "
             "One figure per run. The outage is the time from a client's first failed request to the next "
             "success; with a socket, requests wait in the backlog instead, and their latency shows it.", "",
             "| flow | service | refused | failed | p99 latency | max latency | outage | worst max latency / the bare restart's median outage |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for flow, rows in (("refit update", s["refit"]), ("bare systemctl restart (the limit)", s["limit"])):
        for u, label in (("bench-sock", "with a socket"), ("bench-bare", "without")):
            # The ratio is the bound for the socket; without one, the outage is the figure.
            ratio = f"{max(r[u]['max_ms'] for r in rows) / limit:.2f}" if u == "bench-sock" else "–"
            lines.append(f"| {flow} | {label} | {cells(rows, u, 'refused')} | {cells(rows, u, 'failed')} | "
                         f"{cells(rows, u, 'p99_ms')} ms | {cells(rows, u, 'max_ms')} ms | "
                         f"{cells(rows, u, 'outage_ms')} ms | {ratio} |")
    return lines
