"""Scenario 8 (issue 40, must-show 2): examples/pulp's database alone (pulp_app=false) moved
from PostgreSQL 15 to 17 by refit's upgrade (stream 3.121-pg15 to 3.121), with pg_upgrade
copying (`transfer: copy`) and with a dump and restore, at two sizes of the database. A probe
opens a PostgreSQL session every 20 ms (a startup packet; up is the server's AuthenticationOk):
the database's downtime is what a client sees, from the data step's stop to the server
answering on 17. The disk cost is the new volume's peak during the step (du every second on the
host) and its size after, beside the old volume's. Each size is filled once on 15; every run
starts from that old volume as its server left it (the new volume and the unit are removed and
15 deployed on the old volume again). Medians of `reps` runs. Run by bench.py (--only pgmajor).
The foremanctl way (stop, pg_upgrade in place, start) is not measured here."""
import json
import os
import socket
import statistics
import struct
import time

import benchlib as b
from pulp_bench import HttpProbe

SIZES_MB = (40, 300)
METHODS = (("pg_upgrade, transfer copy", {"method": "pg_upgrade", "transfer": "copy"}),
           ("dump and restore", {"method": "dump"}))
VOLUMES = "/var/lib/containers/storage/volumes"
# One row of the filler table is about 250 bytes on disk, its index included.
ROW_BYTES = 250


class PgProbe(HttpProbe):
    """HttpProbe's loop and downtime, asking a PostgreSQL port instead of a URL."""

    @staticmethod
    def _up(port):
        startup = b"user\0postgres\0database\0pulp\0\0"
        packet = struct.pack("!ii", 8 + len(startup), 196608) + startup
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.settimeout(1)
                s.sendall(packet)
                head = s.recv(9)
                s.sendall(b"X\0\0\0\4")
        except OSError:
            return False
        # 'R' with code 0: authenticated, the server takes queries; 'E' is "starting up" and
        # the like.
        return len(head) == 9 and head[:1] == b"R" and struct.unpack("!i", head[5:9])[0] == 0


def _play(deployment, playbook, *args):
    """A flow on the database alone; `args` after the deployment file, which they override."""
    t0 = time.monotonic()
    b.sh(["ansible-playbook", playbook, "-e", f"@{deployment}", "-e", f"refit_hosts={b.HOST}",
          "-e", "pulp_app=false", "-e", "flow_timeout=900", *args], timeout=1200)
    return time.monotonic() - t0


def _psql(sql):
    return b.host(f"podman run --rm --network host {b.REGISTRY}/pulp-postgres:15 "
                  f"psql -At -h 127.0.0.1 -p {b.BASE + 32} -U postgres -d pulp -c \"{sql}\"").strip()


def _kb(volume):
    return int(b.host(f"du -sk {VOLUMES}/{volume}/_data | cut -f1").strip())


def _clean(volumes):
    """No database unit, no refit state, no target, and none of `volumes`."""
    b.host("systemctl stop bench-du.service pulp-db.service 2> /dev/null; "
           "rm -f /etc/containers/systemd/pulp-db.container /etc/systemd/system/pulp.target; "
           f"systemctl daemon-reload; rm -rf /var/lib/refit; podman volume rm -f {volumes} > /dev/null; true")


def _on_15(deployment):
    """The database deployed on 15 on the old volume, whatever ran before (its 17 unit, state
    and new volume removed)."""
    _clean("pulp-pgdata")
    return _play(deployment, "refit.containers.deploy", "-e", "refit_stream=3.121-pg15")


def _one(deployment, args):
    """One upgrade under the probe: its figures."""
    b.host("systemd-run -q --unit=bench-du sh -c 'm=0; while sleep 1; do "
           f"s=$(du -sk {VOLUMES}/pulp-pgdata/_data 2> /dev/null | cut -f1); "
           "[ \"${s:-0}\" -gt $m ] && m=$s && echo $m > /run/bench-du-peak; done'")
    load = [os.getloadavg()[0]]
    probe = PgProbe([("pulp-db", b.BASE + 32)], max_s=1200)
    time.sleep(0.2)
    t_flow = time.monotonic()
    # The example's step, counting the filler's rows instead of Pulp's tables (not deployed).
    step = {"unit": "pulp-db", "tables": ["pulp.public.bench_fill"], "keep": 1, **args}
    wall = _play(deployment, "refit.containers.upgrade", "-e", "refit_stream=3.121",
                 "-e", json.dumps({"refit_data_steps": [step]}))
    for _ in range(600):
        if probe.up_now():
            break
        time.sleep(0.1)
    down = probe.stop(t_flow)["pulp-db"]
    b.host("systemctl stop bench-du.service")
    version = _psql("SHOW server_version_num")
    if not version.startswith("17"):
        raise RuntimeError(f"scenario 8: after the upgrade the server is {version}, not 17")
    load.append(os.getloadavg()[0])
    return {"wall_s": wall, "down_ms": down["down_ms"], "gaps": down["gaps"], "load": load,
            "peak_kb": int(b.host("cat /run/bench-du-peak").strip()), "new_kb": _kb("pulp-pgdata")}


def pg_major_contrast(reps):
    deployment = f"{b.REPO}/examples/pulp/deployment.yml"
    out = {}
    try:
        for mb in SIZES_MB:
            b.log(f"scenario 8: the database on 15, filled to {mb} MB")
            _clean("pulp-pgdata pulp-pgdata-15")
            _play(deployment, "refit.containers.deploy", "-e", "refit_stream=3.121-pg15")
            rows = mb * 1024 * 1024 // ROW_BYTES
            _psql("CREATE TABLE bench_fill AS SELECT g AS id, md5(g::text) || repeat('x', 150) AS pad "
                     f"FROM generate_series(1, {rows}) g; CREATE INDEX ON bench_fill (id)")
            size = {"db_mb": int(_psql("SELECT pg_database_size('pulp') / 1048576")),
                    "old_kb": _kb("pulp-pgdata-15")}
            for name, args in METHODS:
                runs = []
                for i in range(reps):
                    if i or name != METHODS[0][0]:
                        _on_15(deployment)
                    b.log(f"scenario 8: {mb} MB, {name}, run {i + 1} of {reps}")
                    runs.append(_one(deployment, args))
                out[f"{mb}/{name}"] = {**size, "method": name, "runs": runs}
    finally:
        _clean("pulp-pgdata pulp-pgdata-15")
    return out


def render_pg_major(r):
    """The markdown section of scenario 8."""
    med = statistics.median
    reps = max(len(x["runs"]) for x in r.values())
    loads = [v for x in r.values() for y in x["runs"] for v in y["load"]]
    lines = ["", f"## 8. PostgreSQL 15 to 17 inside a stream upgrade (issue 40), median of {reps} runs", "",
             f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
             "examples/pulp's database alone (pulp_app=false), stream 3.121-pg15 to 3.121, by refit's upgrade "
             "flow with its data step. A probe opens a PostgreSQL session every 20 ms: the downtime is from the "
             "data step's stop of the database to the server answering on 17. The new volume's peak is "
             "sampled every second during the step (the private copy of the old cluster, the dump, the new "
             "cluster); the old volume stays as it was (keep: 1). Each run starts from the same old cluster. "
             f"Runs in brackets. The machine's load average (1 min) as the runs began and ended: {min(loads):.1f} to "
             f"{max(loads):.1f}, on {os.cpu_count()} cores.", "",
             "| database | method | database downtime | wall time of the upgrade | new volume: peak, after | old volume |",
             "| --- | --- | --- | --- | --- | --- |"]
    for x in r.values():
        downs = [y["down_ms"] for y in x["runs"]]
        walls = [y["wall_s"] for y in x["runs"]]
        lines.append(f"| {x['db_mb']} MB | {x['method']} | {med(downs) / 1000:.1f} s "
                     f"({', '.join(f'{d / 1000:.1f}' for d in downs)}) | {med(walls):.1f} s | "
                     f"{med(y['peak_kb'] for y in x['runs']) / 1024:.0f} MB, "
                     f"{med(y['new_kb'] for y in x['runs']) / 1024:.0f} MB | {x['old_kb'] / 1024:.0f} MB |")
    return lines
