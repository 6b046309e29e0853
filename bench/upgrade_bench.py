"""Scenario 6 (issue 15, must-show 2): examples/foreman-like upgraded from stream 1.0 to 1.1 by
refit (`refit.containers.upgrade`) and by the foremanctl way (bench/baselines/foremanctl/
upgrade.yml: stop foreman.target, pull the new stream's images, deploy, whose migration
one-shots run before the services start), each from a fresh deploy of 1.0, under bench/probe.py
(every 20 ms). Per service: the probe's downtime, its migration's run in the upgrade (podman
events of refit's migration containers; the one-shots' systemd timestamps), whether it was
restarted (InvocationIDs). For refit, each migrated service's own migration and own restart are
measured alone after the upgrade, on the same host and image, as the migration does them, so the
table can say how long a service was down beyond them. A third flow upgrades a variant of the
example whose workers keep their 1.0 image: in 1.1 every image changes, the workers' too.
Run by bench.py (--only upgrade)."""
import http.client
import json
import os
import socket
import tempfile
import time

FROM, TO = "1.0", "1.1"
NEW_VERSION = "1.1.0"
MIGRATED = ("api", "content")


def _probe_log(probe):
    with open(probe.log) as f:
        return [line.split() for line in f if len(line.split()) > 3]


def _first_new(rows, names, expect, t_flow_ms):
    """Per service, the time after the flow's start it first stopped answering, and first answered
    the version expected of it after the upgrade; and when every service did (None: never, in
    the probe's window)."""
    first, down = {}, {}
    every = None
    for parts in rows:
        t = int(parts[0]) - t_flow_ms
        answers = parts[3:3 + len(names)]
        for n, v in zip(names, answers):
            if v == expect[n] and n not in first:
                first[n] = t
            if v == "-" and t >= 0 and n not in down:
                down[n] = t
        if every is None and all(v == expect[n] for n, v in zip(names, answers)):
            every = t
    return first, down, every


# The test hosts are nspawn containers on this kernel: their CLOCK_MONOTONIC is this process's
# time.monotonic(), so systemd's *TimestampMonotonic values and the probe's ticks share one axis.
def _since_flow_ms(mono_us, t_flow):
    """A host monotonic timestamp (µs, 0 for never) as ms after the flow's start, or None."""
    return None if int(mono_us) == 0 else int(int(mono_us) / 1000 - t_flow * 1000)


def _refit_migrations(b, since, t_flow):
    """Per migrated service, the runs of the migration containers refit started since a
    timestamp: (start, died) in ms after the flow's start, from podman events (wall clock,
    brought onto the monotonic axis)."""
    shift = time.time() - time.monotonic()
    out = {}
    for unit in MIGRATED:
        events = b.host(f"podman events --stream=false --since {since} --filter label=io.refit.migration={unit}.service "
                        "--filter event=start --filter event=died --format json")
        starts, runs = {}, []
        for line in events.splitlines():
            if not line.strip().startswith("{"):
                continue
            e = json.loads(line)
            ms = int((e["timeNano"] / 1e9 - shift - t_flow) * 1000)
            if e.get("Status") == "start":
                starts[e["ID"]] = ms
            elif e.get("Status") == "died" and e["ID"] in starts:
                runs.append((starts.pop(e["ID"]), ms))
        out[unit] = runs
    return out


def _fm_migrations(b, since, t_flow):
    """Per service with a one-shot, its last run: (start, exit) of its main process, systemd's."""
    out = {}
    for n in ("app", *MIGRATED):
        v = _show(b, f"{n}-migrate.service", ("ExecMainStartTimestampMonotonic", "ExecMainExitTimestampMonotonic"))
        out[n] = [(_since_flow_ms(v["ExecMainStartTimestampMonotonic"], t_flow),
                   _since_flow_ms(v["ExecMainExitTimestampMonotonic"], t_flow))]
    return out


def _show(b, unit, props):
    out = b.host(f"systemctl show {' '.join('--property=' + p for p in props)} {unit}")
    return dict(line.split("=", 1) for line in out.split())


STATES = (("stop", "ActiveExitTimestampMonotonic"), ("stopped", "InactiveEnterTimestampMonotonic"),
          ("start", "InactiveExitTimestampMonotonic"), ("active", "ActiveEnterTimestampMonotonic"))


def _timeline(b, t_flow, first, first_down):
    """Per service, when (ms after the flow's start) its stop began and ended, its start began
    and systemd saw it active (a daemon-reload while it is stopped forgets the stop's times), and
    when the probe first missed it and first heard the new stream; None for before the flow."""
    out = {}
    for n in b.SERVICES:
        v = _show(b, f"{n}.service", [p for _, p in STATES])
        marks = {k: _since_flow_ms(v[p], t_flow) for k, p in STATES}
        out[n] = {k: (t if t is not None and t >= 0 else None) for k, t in marks.items()}
        out[n]["answers"] = first.get(n)
        out[n]["down"] = first_down.get(n)
    return out


def _answers(b):
    return {n: b.version_of(p) for n, p in zip(b.SERVICES, b.PORTS)}


def _check_answers(b, label, expect):
    """A row whose flow left a service on the wrong version compares nothing: the bench stops."""
    wrong = {n: v for n, v in _answers(b).items() if v != expect[n]}
    if wrong:
        raise RuntimeError(f"{label}: after the upgrade these answer otherwise than {expect}: {wrong}")


def _wait_answering(b, label):
    """The foremanctl way's deploy returns once systemd started the services, not once they
    answer: the upgrade starts from a stack that answers, as refit's does. At most 60 s."""
    for _ in range(120):
        if "-" not in _answers(b).values():
            return
        time.sleep(0.5)
    raise RuntimeError(f"{label}: not every service answers 60 s after it: {_answers(b)}")


def _upgrade_once(b, label, run, migrations, keep=()):
    """One upgrade under the probe: its wall time, per-service downtime and gaps, when each
    service first answered the new stream (or, for those in `keep`, the version it answered
    before), and which services were restarted."""
    expect = {n: (v if n in keep else NEW_VERSION) for n, v in _answers(b).items()}
    before = b.invocations(b.SERVICES)
    since = b.host_now()
    probe = b.Probe(f"up-{label}")
    t_flow = time.monotonic()
    t_flow_ms = int((t_flow - probe.t0) * 1000)
    wall = run()
    time.sleep(0.5)
    seen = probe.stop()
    rows = _probe_log(probe)
    first, first_down, every = _first_new(rows, b.SERVICES, expect, t_flow_ms)
    gaps = dict(zip(b.SERVICES, [g for _, g in b.downtime([" ".join(r) for r in rows], len(b.SERVICES))]))
    after = b.invocations(b.SERVICES)
    _check_answers(b, label, expect)
    runs = migrations(b, since, t_flow) if migrations else {}
    return {"wall_s": wall, "down_ms": seen["down_ms"], "gaps": gaps, "first_new_ms": first,
            "every_new_ms": every, "restarted": b.restarted(before, after),
            "timeline": _timeline(b, t_flow, first, first_down), "migrations": runs,
            "migration_ms": {n: [e - s for s, e in rs if s is not None and e is not None] for n, rs in runs.items()}}


def _own_restarts(b):
    """Each service's own restart, under the probe, on the image it now runs: for api and
    content as their migration does it (the socket with the service, so clients are refused, not
    queued), for the others a plain restart."""
    out = {}
    for n in ("db", "app", *MIGRATED):
        probe = b.Probe(f"own-{n}")
        if n in MIGRATED:
            b.host(f"systemctl stop {n}.socket {n}.service && systemctl start {n}.service")
        else:
            b.host(f"systemctl restart {n}.service")
        # Bounded: the probe ends at its own limit; 0.1 s ticks until the service answers again.
        for _ in range(100):
            if b.version_of(b.PORTS[b.SERVICES.index(n)]) != "-":
                break
            time.sleep(0.1)
        time.sleep(0.3)
        out[n] = probe.stop()["down_ms"][n]
    return out


class _UnixHTTP(http.client.HTTPConnection):
    """HTTP over the test host's podman socket, reached through its root in /proc."""

    def __init__(self, path):
        super().__init__("localhost", timeout=60)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(self.path)


def _api(path, call):
    conn = _UnixHTTP(path)
    try:
        conn.request("POST", call)
        r = conn.getresponse()
        body = r.read()
        if r.status >= 300:
            raise RuntimeError(f"podman API {call}: HTTP {r.status} {body[:200]!r}")
        return body
    finally:
        conn.close()


def _own_migrations(b):
    """Each migration's own run as refit runs it, but alone: a container of the service's image,
    data volume and environment, created and initialized beforehand (untimed), then started and
    waited for through the podman API, timed from here. The same API calls refit makes between
    its stop and its start; the schema is the new one already, so the migration writes it again."""
    sock = f"/proc/{b.host_setting('refit_testhost_pid')}/root/run/podman/podman.sock"
    out = {}
    for n in MIGRATED:
        cid = b.host(f"podman create -q --network host -v foreman-{n}-data:/data -e SCHEMA_FILE=/data/schema "
                     f"{b.REGISTRY}/foreman-{n}:{TO} /bin/migrate").strip().splitlines()[-1]
        b.host(f"podman init {cid} > /dev/null")
        t0 = time.monotonic()
        _api(sock, f"/v4.0.0/containers/{cid}/start")
        code = json.loads(_api(sock, f"/v4.0.0/containers/{cid}/wait"))["StatusCode"]
        out[n] = round((time.monotonic() - t0) * 1000)
        b.host(f"podman rm -f {cid} > /dev/null")
        if code != 0:
            raise RuntimeError(f"{n}'s migration, run alone, exited {code}")
    return out


def _variant_deployment(b):
    """examples/foreman-like with the workers' image pinned to 1.0: their unit text and image do
    not change in the upgrade, app's does."""
    with open(b.DEPLOYMENT) as f:
        text = f.read()
    pinned = text.replace("foreman-worker:{{ refit_stream }}", f"foreman-worker:{FROM}")
    if pinned == text:
        raise RuntimeError("examples/foreman-like no longer names foreman-worker:{{ refit_stream }}; update the variant")
    fd, path = tempfile.mkstemp(prefix="deployment-pinned-", suffix=".yml", dir=b.RUN)
    with os.fdopen(fd, "w") as f:
        f.write(pinned)
    return path


def _refit_play(b, deployment, name, *args):
    t0 = time.monotonic()
    b.sh(["ansible-playbook", name, "-e", f"@{deployment}", "-e", "refit_hosts=th1", *args])
    return time.monotonic() - t0


def upgrade_contrast(b, reps):
    """`reps` upgrades 1.0 -> 1.1 by each flow, each from a fresh deploy of 1.0."""
    streams = f"{FROM},{TO}"
    out = {"refit": [], "refit_pinned": [], "fm": []}
    pinned = _variant_deployment(b)
    for i in range(reps):
        b.log(f"scenario 6, rep {i + 1}/{reps}: refit upgrade {FROM} -> {TO}")
        b.prepare(streams)
        _refit_play(b, b.DEPLOYMENT, "refit.containers.deploy")
        r = _upgrade_once(b, "refit", lambda: _refit_play(b, b.DEPLOYMENT, "refit.containers.upgrade",
                                                          "-e", f"refit_stream={TO}"), _refit_migrations)
        r["own_restart_ms"] = _own_restarts(b)
        r["own_migration_ms"] = _own_migrations(b)
        out["refit"].append(r)

        b.log(f"scenario 6, rep {i + 1}/{reps}: refit upgrade, workers' image unchanged")
        b.prepare(streams)
        _refit_play(b, pinned, "refit.containers.deploy")
        r = _upgrade_once(b, "refit-pinned", lambda: _refit_play(b, pinned, "refit.containers.upgrade",
                                                                 "-e", f"refit_stream={TO}"),
                          None, keep=("worker@1", "worker@2", "worker@3"))
        out["refit_pinned"].append(r)

        b.log(f"scenario 6, rep {i + 1}/{reps}: the foremanctl way's upgrade")
        b.prepare(streams)
        b.fm_deploy("-e", f"fm_stream={FROM}")
        _wait_answering(b, "the foremanctl way's deploy")
        r = _upgrade_once(b, "fm", lambda: b.playbook(os.path.join(b.BASELINES, "foremanctl/upgrade.yml"),
                                                       "-e", f"fm_stream={TO}"), _fm_migrations)
        out["fm"].append(r)
    os.unlink(pinned)
    b.prepare()
    return out


def _med(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def _ms(x):
    return "–" if x is None else f"{x:,.0f} ms"


def _runs(xs):
    """The median, with each run in brackets when there are several."""
    m = _med(xs)
    return _ms(m) + (f" ({', '.join(_ms(x)[:-3] for x in xs)})" if len(xs) > 1 else "")


def render_upgrade(u):
    """The markdown section of scenario 6."""
    refit, pinned, fm = u["refit"], u["refit_pinned"], u["fm"]
    n = len(refit)

    def wall(rows):
        return _med([r["wall_s"] for r in rows])

    def every(rows):
        return _med([r["every_new_ms"] for r in rows])

    def total_down(rows):
        return _med([sum(r["down_ms"].values()) for r in rows])

    lines = ["", f"## 6. Upgrade of examples/foreman-like, {FROM} to {TO}, each from a fresh deploy of {FROM}; "
             f"median of {n} run{'s' if n > 1 else ''}", "",
             f"In {TO} every image changes (every service answers {NEW_VERSION}, api's, content's and app's schema "
             "goes 1 to 2); the third row pins the workers' image to 1.0, so of what they depend on only app "
             "(and db) changes. The foremanctl way: stop foreman.target, pull the new images, deploy "
             "(bench/baselines/foremanctl/upgrade.yml; its one-shots migrate before the services start). "
             f"Every flow ended with every service answering {NEW_VERSION}, checked in the run.", "",
             "| flow | wall time | every service answers the new stream, after the flow's start | "
             "restarted | downtime, all services |", "| --- | --- | --- | --- | --- |"]
    for name, rows in (("refit upgrade", refit), ("refit upgrade, workers' image unchanged", pinned),
                       ("(a) the foremanctl way: stop, pull, deploy", fm)):
        restarted = sorted({s for r in rows for s in r["restarted"]})
        lines.append(f"| {name} | {wall(rows):.2f} s | {_ms(every(rows))} | {len(restarted)} "
                     f"({', '.join(restarted) or 'none'}) | {_ms(total_down(rows))} |")
    lines += ["", f"refit's upgrade took {wall(refit):.2f} s against {wall(fm):.2f} s the foremanctl way "
              f"({wall(fm) / wall(refit):.1f} times as long), and left its services down "
              f"{_ms(total_down(refit))} in all against {_ms(total_down(fm))} "
              f"({(total_down(fm) or 0) / max(total_down(refit) or 1, 1):.1f} times).", "",
              "Per service (medians; each run in brackets). Each migrated service's own migration and own restart "
              "are measured after the upgrade, alone, on the image it now runs. The own migration: a container of "
              "its image, data volume and environment, created and initialized beforehand as refit prepares one, "
              "then started and waited for through the podman API (the calls refit makes while the service is "
              "down), timed from the controller. The own restart, under the same probe: `systemctl stop NAME.socket "
              "NAME.service; systemctl start NAME.service` for api and content (as their migration stops them), "
              "`systemctl restart` for db and app; app migrates in its entrypoint, so its migration is part of its "
              "restart. Beyond them is refit's downtime less the two: what refit's own steps in between cost (its "
              "systemctl calls and looks); no other service stops or starts in that window (the timeline below). "
              "The migration container's run in the upgrade is its start..died (podman events); (a)'s one-shot "
              "is its main process (systemd), `podman run` whole.", "",
              "| service | refit: downtime (gaps) | own migration | own restart | migration + restart | beyond them | "
              "the migration container's run in the upgrade | refit, workers unchanged: downtime (restarted?) | "
              "(a): downtime | (a): one-shot |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for s in refit[0]["down_ms"]:
        down = [r["down_ms"][s] for r in refit]
        gaps = _med([r["gaps"][s] for r in refit])
        ran_in = [sum(r["migration_ms"][s]) for r in refit] if s in MIGRATED else None
        mig = [r["own_migration_ms"][s] for r in refit] if s in MIGRATED else None
        own = [r["own_restart_ms"][s] for r in refit] if s in refit[0]["own_restart_ms"] else None
        both = [(m or 0) + o for m, o in zip(mig or [0] * n, own)] if own else None
        beyond = [d - b for d, b in zip(down, both)] if both else None
        p_restarted = sum(s in r["restarted"] for r in pinned)
        fm_mig = [sum(r["migration_ms"][s]) for r in fm] if s in fm[0]["migration_ms"] else None
        lines.append(f"| {s} | {_runs(down)} ({gaps:g}) | {_runs(mig) if mig else '–'} | "
                     f"{_runs(own) if own else '–'} | {_runs(both) if both else '–'} | "
                     f"{_runs(beyond) if beyond else '–'} | {_runs(ran_in) if ran_in else '–'} | "
                     f"{_runs([r['down_ms'][s] for r in pinned])} "
                     f"({p_restarted} of {len(pinned)} runs) | {_runs([r['down_ms'][s] for r in fm])} | "
                     f"{_runs(fm_mig) if fm_mig else '–'} |")
    lines += ["", "Where the time went, in the last run of each flow: ms after the flow's start (systemd's monotonic "
              "timestamps, the migration containers' podman events, the probe's first answer of the new stream; "
              "– for not in this flow).", "",
              "| service | refit: stop began | stopped | migration ran | start began | active | answers | "
              "(a): first missed | one-shot ran | start began | answers |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    rt, ft = refit[-1], fm[-1]

    def at(x):
        return "–" if x is None else f"{x:,}"

    def ran(runs):
        return ", ".join(f"{at(s_)}–{at(e)}" for s_, e in runs) or "–"
    for s in rt["timeline"]:
        a, f = rt["timeline"][s], ft["timeline"][s]
        lines.append(f"| {s} | {at(a['stop'])} | {at(a['stopped'])} | {ran(rt['migrations'].get(s, []))} | "
                     f"{at(a['start'])} | {at(a['active'])} | {at(a['answers'])} | {at(f['down'])} | "
                     f"{ran(ft['migrations'].get(s, []))} | {at(f['start'])} | {at(f['answers'])} |")
    return lines
