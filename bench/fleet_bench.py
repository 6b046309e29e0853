"""refit over a fleet (issue 20): how wall time grows with hosts.

Run by bench/run.sh on the bed it brought up: boots fl1..fl10 beside it (testbed.sh add),
deploys the fleet scenario's two light services on them (tests/integration/vars/
fleet_deployment.yml), and times, with ansible-playbook's wall clock:
  - a no-op update of 1, 5 and 10 hosts, at forks 5 (Ansible's default) and forks = hosts;
  - a z-stream image of one service rolled over the 10 hosts in waves of 3 (refit_serial=3),
    and the same behind a canary wave of 1 with no soak;
  - what a no-op costs each host, refit beside the foremanctl way (bench/baselines/foremanctl/
    fleet.yml, deployed on the same hosts after refit's runs), over 1 and 10 hosts: the module
    calls and task seconds of each host (bench/callback/host_cost.py) and, over SSH, the bytes
    sent to it (ssh's own counters, multiplexing off, divided by the hosts);
then removes the fleet hosts. Each figure is the median of REPS runs; every wait is bounded
(subprocess timeouts). Nothing is typed by hand.

usage: python3 bench/fleet_bench.py [--quick] OUT.md   (the raw figures go to OUT.json)
"""
import json
import os
import re
import statistics
import sys
import tempfile

from benchlib import REGISTRY, REPO, RUN, TB, log, sh
import benchlib as b

DEPLOYMENT = os.path.join(REPO, "tests/integration/vars/fleet_deployment.yml")
HOSTS = [f"fl{i}" for i in range(1, 11)]
SIZES = [1, 5, 10]
FM_FLEET = os.path.join(REPO, "bench/baselines/foremanctl/fleet.yml")
COST_HOSTS = [1, 10]
TRANSFERRED = re.compile(r"Transferred: sent (\d+), received (\d+) bytes")


def host_cpu_seconds(hosts):
    """CPU seconds each host's cgroup has used (the guest's every process: refit's module, the
    systemctl and podman it calls, and the host's own background, such as health checks)."""
    out = {}
    for h in hosts:
        with open(f"/sys/fs/cgroup/unified/{os.path.basename(RUN)}.{h}/cpu.stat") as f:
            usage = next(line for line in f if line.startswith("usage_usec"))
        out[h] = int(usage.split()[1]) / 1e6
    return out


def costed(name, hosts):
    """One run under bench/callback/host_cost.py: its wall time; per host its module calls and
    task seconds, and the CPU seconds its cgroup used during the run; and the controller's CPU
    seconds (ansible-playbook and its workers)."""
    fd, path = tempfile.mkstemp(prefix="host-cost-", suffix=".json", dir=RUN)
    os.close(fd)
    env = {"ANSIBLE_CALLBACK_PLUGINS": os.path.join(REPO, "bench/callback"),
           "ANSIBLE_CALLBACKS_ENABLED": "host_cost", "REFIT_HOST_COST_FILE": path}
    cpu0, ctl0 = host_cpu_seconds(hosts), os.times()
    try:
        wall = b.playbook(name, hosts=hosts, deployment=DEPLOYMENT, forks=10, env=env)
        cpu1, ctl1 = host_cpu_seconds(hosts), os.times()
        with open(path) as f:
            per_host = json.load(f)
    finally:
        os.unlink(path)
    for h in per_host:
        per_host[h]["host_cpu"] = cpu1[h] - cpu0[h]
    controller = (ctl1.children_user + ctl1.children_system) - (ctl0.children_user + ctl0.children_system)
    return wall, per_host, controller


def ssh_bytes(name, hosts):
    """One run over SSH (the bed's inventory-ssh.ini), multiplexing off: the bytes sent to the
    hosts and the connections, from each connection's closing line (ssh -E)."""
    fd, path = tempfile.mkstemp(prefix="ssh-bytes-", dir=RUN)
    os.close(fd)
    env = {"ANSIBLE_INVENTORY": os.path.join(RUN, "inventory-ssh.ini"),
           "ANSIBLE_SSH_ARGS": f"-C -o ControlMaster=no -o LogLevel=VERBOSE -E {path}"}
    try:
        b.playbook(name, hosts=hosts, deployment=DEPLOYMENT, forks=10, env=env)
        with open(path, encoding="utf-8", errors="replace") as f:
            counts = [int(m.group(1)) for m in TRANSFERRED.finditer(f.read())]
    finally:
        os.unlink(path)
    return {"sent": sum(counts), "connections": len(counts)}


def per_host_cost(name, reps):
    """A no-op of `name` over 1 and 10 hosts: wall, each host's calls, task seconds and CPU
    seconds (every run's), the controller's CPU seconds per host, and the bytes sent per host
    over SSH."""
    out = {}
    for n in COST_HOSTS:
        runs = [costed(name, HOSTS[:n]) for _ in range(reps)]
        hosts = [h for _, ph, _ in runs for h in ph.values()]
        out[str(n)] = {"wall": [w for w, _, _ in runs],
                       "calls": [h["calls"] for h in hosts],
                       "task_seconds": [h["task_seconds"] for h in hosts],
                       "host_cpu": [h["host_cpu"] for h in hosts],
                       "controller_cpu_per_host": [c / n for _, _, c in runs],
                       "ssh": ssh_bytes(name, HOSTS[:n])}
        c = out[str(n)]
        log(f"no-op cost, {name}, {n} hosts: {statistics.median(c['wall']):.2f} s, "
            f"{statistics.median(c['host_cpu']):.2f} CPU s per host, "
            f"{statistics.median(c['controller_cpu_per_host']):.2f} controller CPU s per host")
    return out


def copy_image(src, dest):
    sh(["skopeo", "copy", "--quiet", "--src-tls-verify=false", "--dest-tls-verify=false",
        f"docker://{REGISTRY}/{src}", f"docker://{REGISTRY}/{dest}"])


def measure(reps):
    figures = {"noop": {}, "zstream": {}}
    copy_image("svc:1.0", "fleet-web:1.0")
    copy_image("svc:1.0", "fleet-api:1.0")
    log("deploy over 10 hosts")
    figures["deploy_10"] = b.playbook("deploy", hosts=HOSTS, deployment=DEPLOYMENT)
    for n in SIZES:
        for forks in sorted({5, n}):
            times = [b.playbook("update", hosts=HOSTS[:n], deployment=DEPLOYMENT, forks=forks) for _ in range(reps)]
            figures["noop"][f"{n}/{forks}"] = times
            log(f"no-op update, {n} hosts, forks {forks}: {statistics.median(times):.2f} s")
    release = 20
    for label, extra in [("waves of 3", []),
                         ("canary 1, then waves of 3", ["-e", "refit_canary_hosts=1", "-e", "refit_canary_soak=0"])]:
        times = []
        for _ in range(reps):
            # A new image under the same tag each time: every host restarts web, api stays.
            release += 1
            sh([TB, "publish", f"{REGISTRY}/fleet-web:1.0", f"1.0.{release}"])
            times.append(b.playbook("update", "-e", "refit_serial=3", *extra, hosts=HOSTS,
                                      deployment=DEPLOYMENT, forks=10))
        figures["zstream"][label] = times
        log(f"z-stream of web over 10 hosts, {label}: {statistics.median(times):.2f} s")
    # Every host on the newest fleet-web already: refit's no-op, then the foremanctl way's on
    # the same hosts (its deploy replaces refit's units, which is why it comes last).
    figures["cost"] = {"refit": per_host_cost("update", reps)}
    log("deploy the foremanctl way over 10 hosts")
    figures["deploy_fm_10"] = b.playbook(FM_FLEET, hosts=HOSTS, deployment=DEPLOYMENT, forks=10)
    figures["cost"]["fm"] = per_host_cost(FM_FLEET, reps)
    return figures


def render(f):
    med = statistics.median
    noop = f["noop"]
    lines = [
        "# A fleet: wall time against hosts (issue 20)",
        "",
        "Hosts fl1..fl10 beside the bed (systemd-nspawn over one overlay rootfs, 2 CPU cores), each",
        "running two light services (tests/integration/vars/fleet_deployment.yml). Wall time of",
        "`ansible-playbook refit.containers.update`, median of "
        f"{len(next(iter(noop.values())))} runs.",
        "",
        "| run | hosts | forks | wall time |",
        "|---|---:|---:|---:|",
    ]
    for key, times in noop.items():
        n, forks = key.split("/")
        lines.append(f"| no-op update | {n} | {forks} | {med(times):.2f} s |")
    for label, times in f["zstream"].items():
        lines.append(f"| z-stream of one service, {label} | 10 | 10 | {med(times):.2f} s |")
    one = med(noop["1/5"])
    growth = [f"{med(noop[f'10/{forks}']) / one:.2f}x at forks {forks}" for forks in (5, 10)]
    lines += [
        "",
        f"Growth of the no-op update from 1 to 10 hosts: {', '.join(growth)} "
        f"(1 host: {one:.2f} s). The deploy of the 10 hosts took {f['deploy_10']:.1f} s.",
        "",
    ]
    return "\n".join(lines + render_cost(f["cost"]))


def render_cost(cost):
    """The per-host cost of a no-op, refit beside the foremanctl way, and its growth."""
    med = statistics.median
    kb = lambda n: f"{n / 1e3:,.1f} KB"  # noqa: E731
    lines = [
        "### What a no-op costs each host, refit beside the foremanctl way",
        "",
        "The same fleet hosts and services; forks 10. The foremanctl way is "
        "bench/baselines/foremanctl/fleet.yml (a containers.podman quadlet per service, restart "
        "what changed, start all), deployed after refit's runs; its no-op is its deploy again. "
        "Per host, medians over hosts and runs: the module calls that ran on it "
        "(bench/callback/host_cost.py; controller-side actions such as the role's argument "
        "check are not counted), the CPU seconds its cgroup used during the run (the module "
        "and every systemctl and podman it ran, plus the host's own health checks), the "
        "controller's CPU seconds (ansible-playbook and its workers) divided by the hosts, and "
        "task latency (a task's start to that host's result: it grows with hosts as their "
        "tasks share 2 cores). Bytes are ssh's own counters over one run through each host's "
        "sshd, multiplexing off, divided by the hosts.",
        "",
        "| hosts | way | wall time | module calls per host | host CPU per host | "
        "controller CPU per host | task latency per host | bytes sent per host (ssh) | "
        "ssh connections per host |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in map(str, COST_HOSTS):
        for way, label in (("refit", "refit"), ("fm", "(a) foremanctl way")):
            c = cost[way][n]
            lines.append(f"| {n} | {label} | {med(c['wall']):.2f} s | {med(c['calls']):g} | "
                         f"{med(c['host_cpu']):.2f} s | {med(c['controller_cpu_per_host']):.2f} s | "
                         f"{med(c['task_seconds']):.2f} s | {kb(c['ssh']['sent'] / int(n))} | "
                         f"{c['ssh']['connections'] / int(n):g} |")

    def growth(way, key):
        one, ten = med(cost[way]["1"][key]), med(cost[way]["10"][key])
        return f"{one:.2f} s to {ten:.2f} s ({ten / one:.2f}x)"

    ten, fm_ten = cost["refit"]["10"], cost["fm"]["10"]
    lines += [
        "",
        f"From 1 to 10 hosts, refit's host CPU per host went {growth('refit', 'host_cpu')} and "
        f"its controller CPU per host {growth('refit', 'controller_cpu_per_host')}; the "
        f"foremanctl way's {growth('fm', 'host_cpu')} and {growth('fm', 'controller_cpu_per_host')}. "
        f"Over 10 hosts refit sent {kb(ten['ssh']['sent'] / 10)} per host against "
        f"{kb(fm_ten['ssh']['sent'] / 10)}.",
        "",
    ]
    return lines


def main():
    args = sys.argv[1:]
    quick = "--quick" in args
    args = [a for a in args if a != "--quick"]
    if len(args) != 1:
        sys.exit(__doc__)
    out = args[0]
    reps = 1 if quick else 3
    log("booting fl1..fl10")
    sh([TB, "add", *HOSTS], timeout=900)
    try:
        figures = measure(reps)
    finally:
        sh([TB, "remove", *HOSTS], timeout=900)
    with open(os.path.splitext(out)[0] + ".json", "w") as fh:
        json.dump(figures, fh, indent=1)
    text = render(figures)
    with open(out, "w") as fh:
        fh.write(text)
    print(text)


if __name__ == "__main__":
    main()
