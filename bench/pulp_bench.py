"""Scenario 7 (issue 16, must-show 2): examples/pulp upgraded from stream 3.121 to 3.122 with
pulpcore's real migrations, by refit (`refit.containers.upgrade`) and by the foremanctl way
(bench/baselines/foremanctl/pulp_upgrade.yml: stop pulp.target, pull, deploy with the migration
one-shot), each from a fresh deploy of 3.121 with data written through Pulp's REST API (file
repositories, and a file uploaded, published and distributed). During the upgrade a probe asks
the API and the content app every 20 ms for a path each answers from its router alone (PROBE_PATH);
the workers, which listen on no port, are
down from their old container's exit to the new one's start (podman events; InvocationIDs say
whether they were restarted). Afterwards the API must report core 3.122, every repository must be there and
the file must download through the content app. One run each: a run is two to three minutes.
Run by bench.py (--only pulp)."""
import base64
import json
import os
import secrets
import statistics
import threading
import time
import urllib.error
import urllib.request

import benchlib as b

FROM, TO = "3.121", "3.122"
WORKERS = ("pulp-worker@1", "pulp-worker@2")
UNITS = ("pulp-db", "pulp-api", "pulp-content", *WORKERS)
# What the probe asks each app for: a path no route has, which Django's and aiohttp's routers
# answer (404) in about 1.5 ms with no database query. The API's status view takes about 11 ms and
# queries the database: asked every 20 ms, it kept most of a core busy for as long as the API
# served, which slows whatever starts beside it, and so weighs on the flow that keeps the API up.
PROBE_PATH = "/"
REPOS = 20
FILE_TEXT = b"refit keeps Pulp's data"


class HttpProbe:
    """A thread asking each (name, url) every `interval` s, at most `max_s` s: up is an HTTP
    answer below 500 (a 404 from the app's router too), within 1 s."""

    def __init__(self, targets, interval=0.02, max_s=900):
        self.targets, self.interval, self.max_s = targets, interval, max_s
        self.rows, self.done = [], threading.Event()
        self.t0 = time.monotonic()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @staticmethod
    def _up(url):
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                return r.status < 500
        except urllib.error.HTTPError as e:
            return e.code < 500
        except OSError:
            return False

    def _run(self):
        for _ in range(int(self.max_s / self.interval) + 1):
            t = time.monotonic()
            if self.done.is_set() or t - self.t0 > self.max_s:
                return
            self.rows.append((t, [self._up(u) for _, u in self.targets]))
            time.sleep(max(0.0, self.interval - (time.monotonic() - t)))

    def up_now(self):
        return bool(self.rows) and all(self.rows[-1][1])

    def stop(self, t_flow):
        """Per target: down ms, gaps, and when (ms after t_flow) it last came back."""
        self.done.set()
        self.thread.join(timeout=5)
        out = {}
        for i, (name, _) in enumerate(self.targets):
            down, gaps, since, back = 0, 0, None, None
            for t, ups in self.rows:
                if not ups[i] and since is None:
                    since, gaps = t, gaps + 1
                elif ups[i] and since is not None:
                    down += t - since
                    since, back = None, int((t - t_flow) * 1000)
            if since is not None:
                down += self.rows[-1][0] - since
            out[name] = {"down_ms": int(down * 1000), "gaps": gaps, "back_ms": back}
        return out


class Api:
    """Pulp's REST API as admin."""

    def __init__(self, base_url, password):
        self.base = base_url
        self.auth = "Basic " + base64.b64encode(f"admin:{password}".encode()).decode()

    def call(self, path, body=None, content_type="application/json"):
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        req = urllib.request.Request(self.base + path, data=data, headers={"Authorization": self.auth})
        if data is not None:
            req.add_header("Content-Type", content_type)
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read() or b"{}")

    def upload(self, repo_href, name, text):
        """One file into a repository (multipart, as Pulp's upload takes it)."""
        bnd = secrets.token_hex(12)
        parts = [f'--{bnd}\r\nContent-Disposition: form-data; name="relative_path"\r\n\r\n{name}\r\n',
                 f'--{bnd}\r\nContent-Disposition: form-data; name="repository"\r\n\r\n{repo_href}\r\n',
                 f'--{bnd}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
                 "Content-Type: text/plain\r\n\r\n"]
        body = "".join(parts).encode() + text + f"\r\n--{bnd}--\r\n".encode()
        self.task("the upload", "/pulp/api/v3/content/file/files/", body, f"multipart/form-data; boundary={bnd}")


    def task(self, what, path, body=None, content_type="application/json"):
        """A call that dispatches a task, and the wait for it (at most 60 s). Retried twice when
        the task fails: a worker that dies takes its task with it (before the workers had names
        of their own, each removed the other's working directory)."""
        for _ in range(3):
            href = self.call(path, body, content_type)["task"]
            for _ in range(120):
                state = self.call(href)["state"]
                if state in ("completed", "failed", "canceled"):
                    break
                time.sleep(0.5)
            if state == "completed":
                return
        raise RuntimeError(f"scenario 7: {what}: its task ended {state} three times")


def _urls():
    base = b.BASE
    return (f"http://127.0.0.1:{base + 30}", f"http://127.0.0.1:{base + 31}", base + 32)


def _until(what, check, tries, delay):
    """Bounded wait: `check` until it returns a true value, `tries` times `delay` s apart."""
    for _ in range(tries):
        try:
            got = check()
            if got:
                return got
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(delay)
    raise RuntimeError(f"scenario 7: {what} did not happen within {tries * delay:.0f} s")


def _core_version(api_url):
    with urllib.request.urlopen(api_url + "/pulp/api/v3/status/", timeout=5) as r:
        versions = json.loads(r.read())["versions"]
    return next(v["version"] for v in versions if v["component"] == "core")


def _download(content_url):
    with urllib.request.urlopen(content_url + "/pulp/content/seeded/seeded.txt", timeout=5) as r:
        return r.read() == FILE_TEXT


def _write_data(api_url, content_url, db_port):
    """An admin password for this run, REPOS repositories, and a file in a published and
    distributed one that downloads through the content app."""
    _until("the API answering after the deploy", lambda: _core_version(api_url), 120, 1)
    password = secrets.token_hex(16)  # no leading "-", which the command would take for an option
    b.host(f"podman run --rm --network host -e PGPORT={db_port} -v pulp-data:/var/lib/pulp "
           f"{b.REGISTRY}/pulp:{FROM} pulpcore-manager reset-admin-password --password {password} > /dev/null")
    api = Api(api_url, password)
    for i in range(REPOS):
        api.call("/pulp/api/v3/repositories/file/file/", {"name": f"bench-{i}"})
    repo = api.call("/pulp/api/v3/repositories/file/file/", {"name": "seeded", "autopublish": True})
    api.upload(repo["pulp_href"], "seeded.txt", FILE_TEXT)
    api.task("the distribution", "/pulp/api/v3/distributions/file/file/",
             {"name": "seeded", "base_path": "seeded", "repository": repo["pulp_href"]})
    _until("the seeded file downloading through the content app", lambda: _download(content_url), 60, 1)
    return api


def _check_data(api, content_url):
    """Every repository written before the upgrade is there and the file downloads."""
    got = api.call(f"/pulp/api/v3/repositories/file/file/?name__startswith=bench-&limit={REPOS * 2}")
    names = sorted(r["name"] for r in got["results"])
    want = sorted(f"bench-{i}" for i in range(REPOS))
    if names != want:
        raise RuntimeError(f"scenario 7: after the upgrade the repositories are {names}, not {want}")
    _until("the seeded file downloading after the upgrade", lambda: _download(content_url), 60, 1)
    return {"repositories": len(names) + 1, "file_downloads": True}


def _show(unit, props):
    out = b.host(f"systemctl show {' '.join('--property=' + p for p in props)} {unit}")
    return dict(line.split("=", 1) for line in out.split())


def _worker_down(since, before, after):
    """Per worker restarted: from its old container's exit to its new one's start, in ms (podman
    events: systemd forgets a stopped unit's timestamps at the daemon-reload (a)'s deploy does)."""
    out = {}
    for w in WORKERS:
        if before[w] == after[w]:
            out[w] = {"down_ms": 0, "restarted": False}
            continue
        events = b.host(f"podman events --stream=false --since {since} --filter label=PODMAN_SYSTEMD_UNIT={w}.service "
                        "--filter event=start --filter event=died --format json")
        died = start = None
        for line in events.splitlines():
            if line.strip().startswith("{"):
                e = json.loads(line)
                if e.get("Status") == "died" and died is None:
                    died = e["timeNano"]
                elif e.get("Status") == "start" and died is not None:
                    start = e["timeNano"]
        ms = (start - died) // 1_000_000 if died and start else None
        out[w] = {"down_ms": ms, "restarted": True}
    return out


def _migration_runs(since):
    """refit's one-off containers for pulp-api's migration (the check, the migration) since a
    timestamp: their durations in ms, start to died, from podman events."""
    events = b.host(f"podman events --stream=false --since {since} --filter label=io.refit.migration=pulp-api.service "
                    "--filter event=start --filter event=died --format json")
    starts, runs = {}, []
    for line in events.splitlines():
        if line.strip().startswith("{"):
            e = json.loads(line)
            if e.get("Status") == "start":
                starts[e["ID"]] = e["timeNano"]
            elif e.get("Status") == "died" and e["ID"] in starts:
                runs.append((e["timeNano"] - starts.pop(e["ID"])) // 1_000_000)
    return runs


def _timeline(since, t_flow):
    """Every container that died or started since a timestamp, by its systemd unit or, for
    refit's one-off containers, the migration it ran for: [(event, ms after the flow's start)],
    in order (podman events: systemd forgets a stopped unit's timestamps at a daemon-reload)."""
    shift = time.time() - time.monotonic()
    events = b.host(f"podman events --stream=false --since {since} --filter event=start --filter event=died "
                    "--format json")
    out = {}
    for line in events.splitlines():
        if not line.strip().startswith("{"):
            continue
        e = json.loads(line)
        labels = e.get("Attributes") or {}
        who = (f"one-off for {labels['io.refit.migration']}" if "io.refit.migration" in labels
               else labels.get("PODMAN_SYSTEMD_UNIT"))
        if who:
            ms = int((e["timeNano"] / 1e9 - shift - t_flow) * 1000)
            out.setdefault(who.removesuffix(".service"), []).append((e["Status"], ms))
    return out


def _every_answers(out):
    """When every service answered the new release, ms after the flow's start: the API and the
    content app back (the probe), each worker's new container started (podman events)."""
    worker_starts = [max((ms for ev, ms in out["timeline"].get(w, []) if ev == "start"), default=None)
                     for w in WORKERS]
    moments = [out["down"][n]["back_ms"] for n in ("pulp-api", "pulp-content")] + worker_starts
    return None if None in moments else max(moments)


# How many times pulp-api's own restart is measured: one restart varied by more than a second
# from run to run on the bench's 2 cores, more than what it is compared against.
OWN_RESTARTS = 3


def _own_restarts():
    """pulp-api's own restart alone, OWN_RESTARTS times, on the release it now runs, each
    under the probe: stop, start, until the API answers (at most 120 s)."""
    api_url = _urls()[0]
    runs = []
    for _ in range(OWN_RESTARTS):
        probe = HttpProbe([("pulp-api", api_url + PROBE_PATH)])
        time.sleep(0.2)
        t = time.monotonic()
        b.host("systemctl stop pulp-api.service && systemctl start pulp-api.service")
        _until("the API answering after its own restart", probe.up_now, 240, 0.5)
        time.sleep(0.3)
        runs.append(probe.stop(t)["pulp-api"]["down_ms"])
    return runs


def _play(*args):
    t0 = time.monotonic()
    b.sh(["ansible-playbook", *args, "-e", f"refit_hosts={b.HOST}", "-e", f"fm_hosts={b.HOST}"], timeout=1200)
    return time.monotonic() - t0


def _cleanup():
    b.sh(["ansible-playbook", os.path.join(b.PLAYBOOKS, "pulp_cleanup.yml"), "-e", f"refit_repo={b.REPO}",
          "-e", f"refit_hosts={b.HOST}"])


def _flow(label, deploy_db, deploy, upgrade, migrations):
    """A fresh deploy of FROM with data written, then the upgrade to TO under the probe."""
    api_url, content_url, db_port = _urls()
    b.log(f"scenario 7, {label}: fresh deploy of Pulp {FROM}")
    _cleanup()
    out = {"deploy_db_s": deploy_db(), "deploy_s": deploy()}
    api = _write_data(api_url, content_url, db_port)
    before = b.invocations(list(UNITS))
    since = b.host_now()
    probe = HttpProbe([("pulp-api", api_url + PROBE_PATH), ("pulp-content", content_url + PROBE_PATH)])
    time.sleep(0.2)
    b.log(f"scenario 7, {label}: upgrade to {TO}")
    t_flow = time.monotonic()
    out["wall_s"] = upgrade()
    # The foremanctl way returns once systemd started the services, not once they answer: the
    # probe runs until both answer (at most 180 s), so the downtime is what clients see.
    _until("the API and the content app answering after the upgrade", probe.up_now, 360, 0.5)
    out["answering_s"] = time.monotonic() - t_flow
    time.sleep(0.5)
    out["down"] = probe.stop(t_flow)
    after = b.invocations(list(UNITS))
    out["down"].update(_worker_down(since, before, after))
    out["restarted"] = b.restarted(before, after)
    out["core"] = _until("the API reporting core " + TO, lambda: (v := _core_version(api_url)).startswith(TO + ".") and v,
                         60, 1)
    out["data"] = _check_data(api, content_url)
    out["migration"] = migrations(since)
    out["timeline"] = _timeline(since, t_flow)
    out["every_answers_ms"] = _every_answers(out)
    return out


def _backup():
    """The record of the newest backup refit took (its size and duration)."""
    rec = b.host("cat \"$(find /var/lib/refit/backups -name record.json | sort | tail -n 1)\"")
    r = json.loads(rec)
    return {"size_bytes": r["size_bytes"], "duration_ms": r["duration_ms"]}


def pulp_contrast():
    deployment = os.path.join(b.REPO, "examples/pulp/deployment.yml")
    fm = os.path.join(b.BASELINES, "foremanctl")

    def refit(playbook, *args):
        return lambda: _play(playbook, "-e", f"@{deployment}", *args)

    def oneshot(_since):
        v = _show("pulp-migrate.service", ("ExecMainStartTimestampMonotonic", "ExecMainExitTimestampMonotonic"))
        return [(int(v["ExecMainExitTimestampMonotonic"]) - int(v["ExecMainStartTimestampMonotonic"])) // 1000]

    out = {}
    try:
        out["refit"] = _flow("refit", refit("refit.containers.deploy", "-e", "pulp_app=false"),
                             refit("refit.containers.deploy"),
                             refit("refit.containers.upgrade", "-e", f"refit_stream={TO}"), _migration_runs)
        out["refit"]["backup"] = _backup()
        out["refit"]["own_restart_ms"] = _own_restarts()
        out["fm"] = _flow("the foremanctl way",
                          lambda: _play(os.path.join(fm, "pulp.yml"), "-e", "pulp_fm_app=false"),
                          lambda: _play(os.path.join(fm, "pulp.yml"), "-e", f"pulp_fm_stream={FROM}"),
                          lambda: _play(os.path.join(fm, "pulp_upgrade.yml"), "-e", f"pulp_fm_stream={TO}"),
                          oneshot)
    finally:
        _cleanup()
    return out


def render_pulp(p):
    """The markdown section of scenario 7."""
    r, f = p["refit"], p["fm"]

    def down(x, n):
        d = x["down"][n]
        extra = f", {d['gaps']} gap{'s' if d['gaps'] != 1 else ''}" if "gaps" in d else \
            ("" if d["restarted"] else ", not restarted")
        return ("–" if d["down_ms"] is None else f"{d['down_ms']:,} ms") + extra

    rows = [("wall time of the upgrade", f"{r['wall_s']:.1f} s", f"{f['wall_s']:.1f} s"),
            ("API and content answering again, after the flow's start", f"{r['answering_s']:.1f} s",
             f"{f['answering_s']:.1f} s"),
            ("pulp-api's downtime", down(r, "pulp-api"), down(f, "pulp-api")),
            ("pulp-content's downtime", down(r, "pulp-content"), down(f, "pulp-content")),
            *[(f"{w}'s downtime (old container's exit to the new one's start)", down(r, w), down(f, w)) for w in WORKERS],
            ("pulp-api's migration: refit's one-off containers (an upgrade runs no check first), (a)'s one-shot",
             ", ".join(f"{m:,} ms" for m in r["migration"]) or "–", ", ".join(f"{m:,} ms" for m in f["migration"])),
            ("every service answering the new release (the API and content app back, each worker's new "
             "container started), after the flow's start", _ms(r["every_answers_ms"]), _ms(f["every_answers_ms"])),
            (f"pulp-api's own restart alone, after the upgrade (stop, start, until it answers), median of "
             f"{len(r['own_restart_ms'])}", f"{_ms(statistics.median(r['own_restart_ms']))} "
             f"({', '.join(f'{x:,}' for x in r['own_restart_ms'])})", "–"),
            ("backup before the migration", f"{r['backup']['size_bytes'] / 1024:,.0f} KB in "
             f"{r['backup']['duration_ms']:,} ms", "none"),
            ("restarted", ", ".join(r["restarted"]), ", ".join(f["restarted"])),
            ("after: core, data", f"{r['core']}, {r['data']['repositories']} repositories, file downloads",
             f"{f['core']}, {f['data']['repositories']} repositories, file downloads"),
            ("fresh deploy of 3.121 before it (database, then Pulp)", f"{r['deploy_db_s']:.1f} s + {r['deploy_s']:.1f} s",
             f"{f['deploy_db_s']:.1f} s + {f['deploy_s']:.1f} s")]
    lines = ["", f"## 7. Pulp upgraded from {FROM} to {TO} with its real migrations, one run each", "",
             f"Each from a fresh deploy of {FROM} with data written through the REST API ({REPOS + 1} file "
             "repositories, one file uploaded, published and distributed). A probe asks the API and the "
             "content app every 20 ms for a path their routers answer alone (404, about 1.5 ms, no database "
             "query; the API's status view queries the database and, asked that often, kept most of a core "
             "busy while the API served); afterwards the API's status must report the new core. The workers listen on no port, so theirs is from the old container's "
             "exit to the new one's start (podman events). (a) stops pulp.target (the database keeps running, "
             "as in refit's flow), pulls, and deploys with the `pulpcore-manager migrate` one-shot "
             "(bench/baselines/foremanctl/pulp_upgrade.yml). One run each: a run, deploy included, is "
             "minutes.", "",
             "| | refit upgrade | (a) the foremanctl way |", "| --- | --- | --- |"]
    lines += [f"| {a} | {x} | {y} |" for a, x, y in rows]
    api_r, api_f = r["down"]["pulp-api"]["down_ms"], f["down"]["pulp-api"]["down_ms"]
    lines += ["", f"refit's upgrade took {r['wall_s']:.1f} s against {f['wall_s']:.1f} s "
              f"({f['wall_s'] / r['wall_s']:.2f} times as long the foremanctl way); pulp-api was down "
              f"{api_r / 1000:.1f} s against {api_f / 1000:.1f} s ({api_f / max(api_r, 1):.2f} times)."]
    if r["every_answers_ms"] and f["every_answers_ms"] and r["migration"]:
        own = r["migration"][-1] + statistics.median(r["own_restart_ms"])
        lines[-1] += (f" Every service answered the new release {r['every_answers_ms'] / 1000:.1f} s after the flow's "
                      f"start against {f['every_answers_ms'] / 1000:.1f} s "
                      f"({r['every_answers_ms'] / f['every_answers_ms']:.2f} times as long). pulp-api's own migration "
                      f"(its container's run in the upgrade) and own restart come to {own:,} ms; it was down "
                      f"{api_r - own:+,} ms beyond them.")
    lines += ["", "Where the time went: each container's exit (died) and start after the flow's start, in ms "
              "(podman events; a one-off for pulp-api is refit's check or migration, the backup's is its "
              "pg_dump), and when the probe first heard the API and the content app again.", "",
              "| container | refit | (a) the foremanctl way |", "| --- | --- | --- |"]
    whos = sorted(set(r["timeline"]) | set(f["timeline"]))
    lines += [f"| {w} | {_events(r['timeline'].get(w))} | {_events(f['timeline'].get(w))} |" for w in whos]
    lines += [f"| {n}: answers again (probe) | {_ms(r['down'][n]['back_ms'])} | {_ms(f['down'][n]['back_ms'])} |"
              for n in ("pulp-api", "pulp-content")]
    return lines


def _ms(x):
    return "–" if x is None else f"{x:,} ms"


def _events(evs):
    return ", ".join(f"{ev} {ms:,}" for ev, ms in evs) if evs else "–"
