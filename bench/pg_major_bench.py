"""Scenario 8 (issue 40, must-show 2): examples/pulp, Pulp's app and its database, moved from
PostgreSQL 15 to 17 at two sizes of the database, three ways, in the same run:
  - refit's upgrade (stream 3.121-pg15 to 3.121) with pg_upgrade copying (`transfer: copy`);
  - refit's upgrade with a dump and restore;
  - the foremanctl way (bench/baselines/foremanctl/pg_upgrade.yml, as foremanctl's
    roles/postgresql/tasks/upgrade.yaml): stop everything, pg_upgrade --copy in place on the
    live volume in a one-shot holding both majors' binaries, remove the old cluster, start.
Two probes every 20 ms: one opens a PostgreSQL session (a startup packet; up is the server's
AuthenticationOk), one asks pulp-api's status (200 only with its database). Each one's
downtime is what a client sees; "until both answer" is from the flow's start. After every run
the server must be 17, the filler table must hold every row it had on 15, and the API must
answer. The disk cost is the volume's peak during the step (du every second on the host) and
its size after, beside the old volume refit keeps (the foremanctl way keeps none).

Each size is filled once on 15, with Pulp deployed on it; every run starts from that old
cluster as its server left it (refit keeps it untouched; the foremanctl way's run works on a
copy of it, in the volume its deployment names). Medians of `reps` runs. Run by bench.py
(--only pgmajor).
"""
import json
import os
import socket
import statistics
import struct
import sys
import time

import benchlib as b
from pulp_bench import HttpProbe

# REFIT_BENCH_PG_SIZES="40" measures some of them (one host each, beside another host's run).
SIZES_MB = tuple(int(x) for x in os.environ.get("REFIT_BENCH_PG_SIZES", "40 300").split())
METHODS = (("the foremanctl way: stop, pg_upgrade --copy in place, start", None),
           ("refit, pg_upgrade copy", {"method": "pg_upgrade", "transfer": "copy"}),
           ("refit, dump and restore", {"method": "dump"}))
VOLUMES = "/var/lib/containers/storage/volumes"
# refit's 15 cluster, kept untouched by its upgrade; the 17 one (and the foremanctl way's only one).
OLD, NEW = "pulp-pgdata-15", "pulp-pgdata"
TABLES = ["pulp.public.bench_fill", "pulp.public.core_repository", "pulp.public.core_task",
          "pulp.public.core_content"]
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


def _deployment():
    return os.path.join(b.REPO, "examples/pulp/deployment.yml")


def _play(playbook, *args):
    """A playbook over the example's deployment; `args` after it, which they override."""
    return b.playbook(playbook, "-e", "flow_timeout=900", *args, deployment=_deployment(), timeout=1200)


def _fm(name):
    return os.path.join(b.BASELINES, "foremanctl", name)


def _psql(sql):
    return b.host(f"podman run --rm --network host {b.REGISTRY}/pulp-postgres:15 "
                  f"psql -At -h 127.0.0.1 -p {b.BASE + 32} -U postgres -d pulp -c \"{sql}\"").strip()


def _kb(volume):
    return int(b.host(f"du -sk {VOLUMES}/{volume}/_data 2> /dev/null | cut -f1 || echo 0").strip() or 0)


def _clean(volumes):
    """No Pulp unit (refit's or the foremanctl way's), no refit state, no target, and none of
    `volumes`. Each is removed only where its exact name is listed: `podman volume rm` takes a
    name's prefix too, and `rm pulp-pgdata` with no such volume removed pulp-pgdata-15."""
    b.host("systemctl stop bench-du.service pulp.target 'pulp-*.service' 2> /dev/null; "
           "rm -f /etc/containers/systemd/pulp-*.container /etc/systemd/system/pulp.target; "
           f"systemctl daemon-reload; rm -rf /var/lib/refit; for v in {volumes}; do "
           "podman volume ls -q | grep -qx \"$v\" && podman volume rm -f \"$v\" > /dev/null; done; true")


def _refit_on_15():
    """Pulp deployed by refit on 15, on the old volume as its server left it: the database
    first, then the app (a flow migrates before it starts anything)."""
    _clean(NEW)
    _play("refit.containers.deploy", "-e", "refit_stream=3.121-pg15", "-e", "pulp_app=false")
    _play("refit.containers.deploy", "-e", "refit_stream=3.121-pg15")


def _fm_on_15():
    """Pulp deployed the foremanctl way on 15, on a copy of the old cluster in the volume the
    foremanctl way's deployment names."""
    _clean(NEW)
    b.host(f"podman volume create {NEW} > /dev/null && cp -a {VOLUMES}/{OLD}/_data/. {VOLUMES}/{NEW}/_data/")
    _play(_fm("pulp.yml"), "-e", "pulp_fm_db_major=15", "-e", "pulp_fm_app=false")
    _play(_fm("pulp.yml"), "-e", "pulp_fm_db_major=15")


def _until_up(probes, tries=1200, delay=0.1):
    """Bounded: until every probe's last tick was up (at most tries × delay s)."""
    for _ in range(tries):
        if all(p.up_now() for p in probes):
            return True
        time.sleep(delay)
    return False


def _one(args, rows):
    """One upgrade under the probes (refit's with the data step `args`, or the foremanctl way's
    with None): its figures, once the server is 17 with every row of the filler table."""
    b.host("systemd-run -q --unit=bench-du sh -c 'm=0; while sleep 1; do "
           f"s=$(du -sk {VOLUMES}/{NEW}/_data 2> /dev/null | cut -f1); "
           "[ \"${s:-0}\" -gt $m ] && m=$s && echo $m > /run/bench-du-peak; done'")
    load = [os.getloadavg()[0]]
    db = PgProbe([("pulp-db", b.BASE + 32)], max_s=1200)
    api = HttpProbe([("pulp-api", f"http://127.0.0.1:{b.BASE + 30}/pulp/api/v3/status/")], max_s=1200)
    time.sleep(0.2)
    t_flow = time.monotonic()
    if args is None:
        wall = _play(_fm("pg_upgrade.yml"))
    else:
        # The example's step, counting the filler's rows beside Pulp's tables.
        step = {"unit": "pulp-db", "tables": TABLES, "keep": 1, **args}
        wall = _play("refit.containers.upgrade", "-e", "refit_stream=3.121", "-e", json.dumps({"refit_data_steps": [step]}))
    # The foremanctl way returns once systemd started the services, not once they answer.
    if not _until_up([db, api]):
        raise RuntimeError("scenario 8: the database or pulp-api did not answer within 120 s of the upgrade")
    answering = time.monotonic() - t_flow
    time.sleep(0.3)
    down = {**db.stop(t_flow), **api.stop(t_flow)}
    b.host("systemctl stop bench-du.service")
    version = _psql("SHOW server_version_num")
    if not version.startswith("17"):
        raise RuntimeError(f"scenario 8: after the upgrade the server is {version}, not 17")
    have = int(_psql("SELECT count(*) FROM bench_fill"))
    if have != rows:
        raise RuntimeError(f"scenario 8: bench_fill holds {have} rows after the upgrade, {rows} before")
    load.append(os.getloadavg()[0])
    return {"wall_s": wall, "answering_s": answering, "db_down_ms": down["pulp-db"]["down_ms"],
            "api_down_ms": down["pulp-api"]["down_ms"], "gaps": down["pulp-db"]["gaps"], "load": load,
            "rows": have, "peak_kb": int(b.host("cat /run/bench-du-peak 2> /dev/null || echo 0").strip()),
            "new_kb": _kb(NEW), "old_kb": _kb(OLD) if args is not None else 0}


def pg_major_contrast(reps):
    out = {}
    try:
        for mb in SIZES_MB:
            b.log(f"scenario 8: Pulp on 15, the database filled to {mb} MB")
            _clean(f"{NEW} {OLD} pulp-data")
            _refit_on_15()
            rows = mb * 1024 * 1024 // ROW_BYTES
            _psql("CREATE TABLE bench_fill AS SELECT g AS id, md5(g::text) || repeat('x', 150) AS pad "
                  f"FROM generate_series(1, {rows}) g; CREATE INDEX ON bench_fill (id)")
            size = {"db_mb": int(_psql("SELECT pg_database_size('pulp') / 1048576")), "rows": rows,
                    "host": b.HOST}
            # Round by round, each way once a round: runs cut short by a deadline still hold
            # every way, with as many runs each.
            for i in range(reps):
                for name, args in METHODS:
                    # The foremanctl way works on a copy of the fill; refit's ways on refit's 15.
                    if args is None:
                        _fm_on_15()
                    else:
                        _refit_on_15()
                    b.log(f"scenario 8: {mb} MB, {name}, run {i + 1} of {reps}")
                    record = out.setdefault(f"{mb}/{name}", {**size, "method": name, "runs": []})
                    record["runs"].append(_one(args, rows))
                    # What was measured so far, kept should a later run fail.
                    with open(os.path.join(b.RUN, f"pgmajor-partial-{b.HOST}.json"), "w") as f:
                        json.dump(out, f, indent=1)
    finally:
        _clean(f"{NEW} {OLD} pulp-data")
    return out


def render_pg_major(r):
    """The markdown section of scenario 8."""
    med = statistics.median
    counts = sorted({len(x["runs"]) for x in r.values()})
    reps = str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
    hosts = sorted({x.get("host", b.HOST) for x in r.values()})
    beside = (f" The sizes ran at the same time, each on its own test host of one bed ({', '.join(hosts)})."
              if len(hosts) > 1 else "")
    loads = [v for x in r.values() for y in x["runs"] for v in y["load"]]
    s = lambda ms: f"{ms / 1000:.1f}"  # noqa: E731
    lines = ["", f"## 8. PostgreSQL 15 to 17 inside a stream upgrade (issue 40), median of {reps} runs", "",
             f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
             "examples/pulp (Pulp's API, content app and workers on its database), stream 3.121-pg15 to 3.121, "
             "by refit's upgrade flow with its data step, and the same upgrade the foremanctl way "
             "(bench/baselines/foremanctl/pg_upgrade.yml: stop everything, pg_upgrade --copy in place in a one-shot "
             "holding both majors' binaries, the old cluster removed, start). Two probes every 20 ms: a PostgreSQL "
             "session, and pulp-api's status (200 only with its database); each downtime is what that client saw. "
             "\"Until both answer\" runs from the playbook's start. Every run ended on 17 with every row of the "
             "filler table. The volume's peak is sampled every second during the run; refit's old volume stays as "
             "it was (keep: 1), the foremanctl way keeps none. Each run starts from the same old cluster. Runs in "
             f"brackets. The machine's load average (1 min) as the runs began and ended: {min(loads):.1f} to "
             f"{max(loads):.1f}, on {os.cpu_count()} cores, shared with other work.{beside}", "",
             "| database | way | database downtime | pulp-api downtime | until both answer | wall time of the "
             "playbook | volume: peak, after | old cluster kept |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for x in r.values():
        runs = x["runs"]
        dbs, apis = [y["db_down_ms"] for y in runs], [y["api_down_ms"] for y in runs]
        lines.append(f"| {x['db_mb']} MB | {x['method']} | {s(med(dbs))} s ({', '.join(map(s, dbs))}) | "
                     f"{s(med(apis))} s ({', '.join(map(s, apis))}) | {med(y['answering_s'] for y in runs):.1f} s | "
                     f"{med(y['wall_s'] for y in runs):.1f} s | "
                     f"{med(y['peak_kb'] for y in runs) / 1024:.0f} MB, {med(y['new_kb'] for y in runs) / 1024:.0f} MB | "
                     f"{med(y['old_kb'] for y in runs) / 1024:.0f} MB |")
    return lines


def splice(results_md, section):
    """RESULTS.md's text with its section 8 replaced by `section` (lines), the rest kept."""
    lines = results_md.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("## 8. "))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    # The section's own lines begin with the blank line before its heading.
    return "\n".join(lines[:start - 1] + section + [""] + lines[end:])


def main():
    """usage: pg_major_bench.py RESULTS.md PARTIAL.json...: section 8 of RESULTS.md replaced by one
    rendered from the records of runs on several hosts (bench/pg_major.sh), each size once."""
    out, parts = sys.argv[1], sys.argv[2:]
    r = {}
    for part in parts:
        with open(part) as f:
            r.update(json.load(f))
    with open(out) as f:
        text = f.read()
    with open(out, "w") as f:
        f.write(splice(text, render_pg_major(r)))


if __name__ == "__main__":
    main()
