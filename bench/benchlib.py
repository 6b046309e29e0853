"""The bench's shared pieces, which every scenario script imports (`import benchlib as b`): the
testbed's paths, logging, the shell and playbook runners, the host's units and answers, and the
probe (tools/probes/probe.py in the background, read back with tools/probes/downtime.py).

Nothing here needs the bed at import: the port base of the host is read from the bed's inventory
on first use of BASE or PORTS, so the unit tests (tests/unit/python/test_benchlib.py) import it
without one.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TB = os.path.join(REPO, "tests/testbed/testbed.sh")
RUN = os.environ.get("REFIT_TESTBED_RUN", "/var/tmp/refit-testbed")
REGISTRY = "127.0.0.1:5000"
PROBES = os.path.join(REPO, "tools/probes")
DEPLOYMENT = os.path.join(REPO, "examples/foreman-like/deployment.yml")
BASELINES = os.path.join(REPO, "bench/baselines")
PLAYBOOKS = os.path.join(REPO, "bench/playbooks")
SERVICES = ["db", "app", "api", "content", "worker@1", "worker@2", "worker@3"]
# The test host the scenarios run on; scenario 8 runs on another host of the bed as well
# (REFIT_BENCH_HOST=th2), beside a scenario on th1.
HOST = os.environ.get("REFIT_BENCH_HOST", "th1")

sys.path.insert(0, PROBES)
from downtime import downtime  # noqa: E402,F401  (re-exported: the scenarios read probe logs)


def log(msg):
    """A line on stderr, stamped and named by the script that runs."""
    name = os.path.splitext(os.path.basename(sys.argv[0] or "bench"))[0]
    print(f"[{name} {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sh(args, timeout=600, check=True, env=None):
    """Runs `args` (bounded by `timeout`); with `check`, a failure raises with its output's end."""
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def host(cmd, timeout=300, name=None):
    """`cmd` in bash on a test host (HOST unless named); its stdout."""
    return sh([TB, "exec", name or HOST, "bash", "-c", cmd], timeout=timeout).stdout


def playbook_args(name, *args, hosts=None, deployment=DEPLOYMENT):
    """ansible-playbook's command line: a playbook by its path or its collection name, or one of
    refit's by its short name (`update`), over `hosts` (HOST unless given), as refit_hosts and as
    the baselines' fm_hosts."""
    pattern = ":".join(hosts or [HOST])
    if "." not in name and "/" not in name:
        name = f"refit.containers.{name}"
    return ["ansible-playbook", name, "-e", f"@{deployment}", "-e", f"refit_hosts={pattern}",
            "-e", f"fm_hosts={pattern}", *args]


def playbook(name, *args, hosts=None, deployment=DEPLOYMENT, forks=None, env=None, check=True, timeout=600):
    """Runs a playbook (see playbook_args); returns its wall time in seconds."""
    env = dict(os.environ, **(env or {}))
    if forks:
        env["ANSIBLE_FORKS"] = str(forks)
    t0 = time.monotonic()
    sh(playbook_args(name, *args, hosts=hosts, deployment=deployment), timeout=timeout, check=check, env=env)
    return time.monotonic() - t0


def host_setting(key, name=None, inventory=None):
    """A variable of a host's line in the bed's inventory (refit_port_base, refit_testhost_pid)."""
    name = name or HOST
    with open(inventory or os.path.join(RUN, "inventory.ini")) as f:
        for line in f:
            if line.startswith(f"{name} ") and f" {key}=" in line:
                return line.split(f" {key}=")[1].split()[0]
    raise RuntimeError(f"{name} has no {key} in the testbed inventory; run: tests/testbed/testbed.sh up {name}")


def example_ports(base):
    """The example's ports (SERVICES' order) for a host's refit_port_base."""
    return [base + 1, base + 2, base + 3, base + 4] + [int(f"{(base + 10) // 10}{i}") for i in (1, 2, 3)]


def __getattr__(name):
    # BASE and PORTS on first use, from the bed's inventory (module attributes, PEP 562).
    if name == "BASE":
        return int(host_setting("refit_port_base"))
    if name == "PORTS":
        return example_ports(int(host_setting("refit_port_base")))
    raise AttributeError(name)


def median(xs):
    return statistics.median(xs) if xs else 0.0


def invocations(units):
    """Each unit's systemd InvocationID on the host."""
    out = host("systemctl show --property=InvocationID --value " + " ".join(f"{u}.service" for u in units))
    return dict(zip(units, [b.strip() for b in out.strip().split("\n\n")]))


def restarted(before, after):
    """The units whose InvocationID changed."""
    return [u for u in before if before[u] != after.get(u)]


def host_now():
    return host("date --iso-8601=seconds").strip()


def version_of(port):
    """What a service answers on /version now (the probe's own question), or - for nothing."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/version", timeout=2) as r:
            return r.read().decode().strip()
    except OSError:
        return "-"


def prepare(streams="1.0"):
    """The example's images published for `streams` (bench/playbooks/prepare.yml)."""
    sh(["ansible-playbook", os.path.join(PLAYBOOKS, "prepare.yml"), "-e", f"refit_repo={REPO}",
        "-e", json.dumps({"example_streams": streams.split(",")})])


def publish_content(version):
    sh([TB, "publish", f"{REGISTRY}/foreman-content:1.0", version])


def fm_deploy(*extra):
    """The foremanctl way's deploy of the example (bench/baselines/foremanctl/deploy.yml)."""
    return playbook(os.path.join(BASELINES, "foremanctl/deploy.yml"), *extra)


def module_calls(run):
    """Runs `run` under refit's progress callback; returns its result and the refit module calls
    it made (task results that were not skipped), from the callback's events."""
    fd, events = tempfile.mkstemp(prefix="events-", suffix=".jsonl", dir=RUN)
    os.close(fd)
    saved = {k: os.environ.get(k) for k in ("ANSIBLE_STDOUT_CALLBACK", "REFIT_EVENTS_FILE")}
    os.environ.update(ANSIBLE_STDOUT_CALLBACK="refit.containers.progress", REFIT_EVENTS_FILE=events)
    try:
        out = run()
        with open(events) as f:
            lines = [json.loads(x) for x in f if x.strip()]
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        os.unlink(events)
    calls = [e["action"] for e in lines if "action" in e and e.get("status") != "skipped"]
    return out, calls


class Probe:
    """tools/probes/probe.py in the background, every `interval_ms` (20), at most 600 s."""

    def __init__(self, name, ports=None, names=None, interval_ms=20, run_dir=None):
        self.dir = tempfile.mkdtemp(prefix=f"probe-{name}-", dir=run_dir or RUN)
        self.log = os.path.join(self.dir, "probe.log")
        self.stop_file = os.path.join(self.dir, "stop")
        self.names = names or SERVICES
        ports = ports or example_ports(int(host_setting("refit_port_base")))
        self.proc = subprocess.Popen([sys.executable, os.path.join(PROBES, "probe.py"), self.log, self.stop_file,
                                      str(interval_ms), "600", *map(str, ports)])
        # Its ticks count from its start, which creates the log: noted within 5 ms (at most
        # 10 s), so other timestamps can be put on the probe's axis (upgrade_bench's timeline).
        for _ in range(2000):
            if os.path.exists(self.log):
                break
            time.sleep(0.005)
        self.t0 = time.monotonic()
        time.sleep(0.2)

    def stop(self):
        """Stops the probe; each name's downtime, the fewest answering at once, and the ticks."""
        open(self.stop_file, "w").close()
        self.proc.wait(timeout=10)
        with open(self.log) as f:
            lines = f.readlines()
        down = downtime(lines, len(self.names))
        answering = [int(line.split()[1]) for line in lines if len(line.split()) > 2]
        return {"down_ms": {n: d for n, (d, _) in zip(self.names, down)},
                "min_answering": min(answering) if answering else 0, "ticks": len(answering)}
