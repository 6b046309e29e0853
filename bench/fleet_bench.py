"""refit over a fleet (issues 20 and 43): how wall time and each host's cost grow with hosts.

Run by bench/run.sh on the bed it brought up: boots fl1..fl30 beside it (testbed.sh add),
deploys two light services on each (bench/vars/fleet_deployment.yml: the fleet scenario's
services with their health check every 60 s, so 30 hosts' checks do not load the 2 cores the
bench measures on), notes each host's memory, and times, with ansible-playbook's wall clock:
  - a no-op update of 1, 10 and 30 hosts, at forks 5 (Ansible's default) and forks = hosts;
  - a z-stream image of one service rolled over 1, 10 and 30 hosts in waves of 3
    (refit_serial=3), and over 30 behind a canary wave of 1 with no soak;
  - what a no-op costs each host, refit beside the foremanctl way (bench/baselines/foremanctl/
    fleet.yml, deployed on the same hosts after refit's runs), over 1, 10 and 30 hosts: the
    module calls and task seconds of each host (bench/callback/host_cost.py), the CPU its
    cgroup and the controller used and, over SSH, the bytes sent to it (ssh's own counters,
    multiplexing off, divided by the hosts);
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
import time
from concurrent.futures import ThreadPoolExecutor

from benchlib import REGISTRY, REPO, RUN, TB, log, sh
import benchlib as b

DEPLOYMENT = os.path.join(REPO, "bench/vars/fleet_deployment.yml")
HOSTS = [f"fl{i}" for i in range(1, 31)]
SIZES = [1, 10, 30]
# The foremanctl way's health checks as light as refit's on these hosts (fleet_deployment.yml).
FM_LIGHT = ("-e", "fm_health_interval=60s")
FM_FLEET = os.path.join(REPO, "bench/baselines/foremanctl/fleet.yml")
FLOOR = os.path.join(REPO, "bench/playbooks/one_round_trip.yml")
TRANSFERRED = re.compile(r"Transferred: sent (\d+), received (\d+) bytes")


def cgroup(h):
    return f"/sys/fs/cgroup/unified/{os.path.basename(RUN)}.{h}"


def host_memory_mb(h):
    """The proportional set size of every process in a host's cgroup tree, in MB: what the host
    costs the machine's memory, its share of pages it maps with other hosts counted once."""
    kb = 0
    for d, _, _ in os.walk(cgroup(h)):
        with open(os.path.join(d, "cgroup.procs")) as f:
            pids = f.read().split()
        for pid in pids:
            try:
                with open(f"/proc/{pid}/smaps_rollup") as f:
                    kb += next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
            except (OSError, StopIteration):
                pass  # the process ended meanwhile
    return kb / 1024


def host_cpu_seconds(hosts):
    """CPU seconds each host's cgroup has used (the guest's every process: refit's module, the
    systemctl and podman it calls, and the host's own background, such as health checks)."""
    out = {}
    for h in hosts:
        with open(f"{cgroup(h)}/cpu.stat") as f:
            usage = next(line for line in f if line.startswith("usage_usec"))
        out[h] = int(usage.split()[1]) / 1e6
    return out


# How long each host is watched doing nothing before a way's no-op runs: the services' health
# checks (every 60 s) and the guest's own background land in a window of this length often
# enough for a rate. The watch begins once the work before it (a deploy, a z-stream) has had
# one health interval to settle: its starts and their first checks are not the background.
IDLE_SECONDS = 60
SETTLE_SECONDS = 60


def idle_cpu_rates(hosts):
    """CPU seconds per second each host's cgroup uses while no playbook runs: its services'
    health checks and its own background, which a run's window holds too."""
    time.sleep(SETTLE_SECONDS)
    before = host_cpu_seconds(hosts)
    time.sleep(IDLE_SECONDS)
    after = host_cpu_seconds(hosts)
    return {h: (after[h] - before[h]) / IDLE_SECONDS for h in hosts}


def podman_asleep(hosts):
    """Stops podman's API service on each host, its socket listening on: a no-op run finds it
    as one run now and then does (it exits 5 s after its last call), and its start is part of
    the run's cost. Without this a run's cost hung on whether the run before it reached that
    host within those 5 s: runs over 30 hosts are further apart per host than runs over 10."""
    with ThreadPoolExecutor(max_workers=10) as pool:
        list(pool.map(lambda h: sh([TB, "exec", h, "systemctl", "stop", "podman.service"]), hosts))


def costed(name, hosts, idle, *args):
    """One run under bench/callback/host_cost.py: its wall time; per host its module calls and
    task seconds, the CPU seconds its cgroup used during the run, and those less what the host
    uses idle (`idle`, per second) over the run's wall time: the run's own; and the
    controller's CPU seconds (ansible-playbook and its workers)."""
    fd, path = tempfile.mkstemp(prefix="host-cost-", suffix=".json", dir=RUN)
    os.close(fd)
    env = {"ANSIBLE_CALLBACK_PLUGINS": os.path.join(REPO, "bench/callback"),
           "ANSIBLE_CALLBACKS_ENABLED": "host_cost", "REFIT_HOST_COST_FILE": path}
    podman_asleep(hosts)
    cpu0, ctl0 = host_cpu_seconds(hosts), os.times()
    try:
        wall = b.playbook(name, *args, hosts=hosts, deployment=DEPLOYMENT, forks=len(hosts), env=env)
        cpu1, ctl1 = host_cpu_seconds(hosts), os.times()
        with open(path) as f:
            per_host = json.load(f)
    finally:
        os.unlink(path)
    for h in per_host:
        per_host[h]["host_cpu"] = cpu1[h] - cpu0[h]
        per_host[h]["host_cpu_run"] = per_host[h]["host_cpu"] - idle[h] * wall
    controller = (ctl1.children_user + ctl1.children_system) - (ctl0.children_user + ctl0.children_system)
    return wall, per_host, controller


def ssh_bytes(name, hosts, *args):
    """One run over SSH (the bed's inventory-ssh.ini), multiplexing off: the bytes sent to the
    hosts and the connections, from each connection's closing line (ssh -E)."""
    fd, path = tempfile.mkstemp(prefix="ssh-bytes-", dir=RUN)
    os.close(fd)
    env = {"ANSIBLE_INVENTORY": os.path.join(RUN, "inventory-ssh.ini"),
           "ANSIBLE_SSH_ARGS": f"-C -o ControlMaster=no -o LogLevel=VERBOSE -E {path}"}
    try:
        b.playbook(name, *args, hosts=hosts, deployment=DEPLOYMENT, forks=len(hosts), env=env)
        with open(path, encoding="utf-8", errors="replace") as f:
            counts = [int(m.group(1)) for m in TRANSFERRED.finditer(f.read())]
    finally:
        os.unlink(path)
    return {"sent": sum(counts), "connections": len(counts)}


def per_host_cost(name, reps, *args):
    """A no-op of `name` over each of SIZES hosts, forks = hosts: wall, each host's calls, task
    seconds and CPU seconds (every run's), the controller's CPU seconds per host, and the bytes
    sent per host over SSH."""
    out = {}
    idle = idle_cpu_rates(HOSTS)
    for n in SIZES:
        runs = [costed(name, HOSTS[:n], idle, *args) for _ in range(reps)]
        hosts = [h for _, ph, _ in runs for h in ph.values()]
        out[str(n)] = {"wall": [w for w, _, _ in runs],
                       "calls": [h["calls"] for h in hosts],
                       "task_seconds": [h["task_seconds"] for h in hosts],
                       "host_cpu": [h["host_cpu"] for h in hosts],
                       "host_cpu_run": [h["host_cpu_run"] for h in hosts],
                       "idle_cpu_per_s": [idle[h] for h in HOSTS[:n]],
                       "controller_cpu_per_host": [c / n for _, _, c in runs],
                       "ssh": ssh_bytes(name, HOSTS[:n], *args)}
        c = out[str(n)]
        log(f"no-op cost, {name}, {n} hosts: {statistics.median(c['wall']):.2f} s, "
            f"{statistics.median(c['host_cpu_run']):.2f} CPU s per host "
            f"({statistics.median(c['host_cpu']):.2f} with the idle background), "
            f"{statistics.median(c['controller_cpu_per_host']):.2f} controller CPU s per host")
    return out


def copy_image(src, dest):
    sh(["skopeo", "copy", "--quiet", "--src-tls-verify=false", "--dest-tls-verify=false",
        f"docker://{REGISTRY}/{src}", f"docker://{REGISTRY}/{dest}"])


def measure(reps):
    figures = {"noop": {}, "floor": {}, "zstream": {}, "load": [os.getloadavg()[0]], "cores": os.cpu_count(),
               "podman_asleep": True}
    copy_image("svc:1.0", "fleet-web:1.0")
    copy_image("svc:1.0", "fleet-api:1.0")
    log(f"deploy over {len(HOSTS)} hosts")
    figures["deploy"] = b.playbook("deploy", hosts=HOSTS, deployment=DEPLOYMENT, forks=len(HOSTS))
    figures["memory_mb"] = {h: host_memory_mb(h) for h in HOSTS}
    log(f"memory per host: {statistics.median(figures['memory_mb'].values()):.0f} MB (median)")
    for n in SIZES:
        for forks in sorted({5, n}):
            times = []
            for _ in range(reps):
                podman_asleep(HOSTS[:n])
                times.append(b.playbook("update", hosts=HOSTS[:n], deployment=DEPLOYMENT, forks=forks))
            figures["noop"][f"{n}/{forks}"] = times
            log(f"no-op update, {n} hosts, forks {forks}: {statistics.median(times):.2f} s")
        # Ansible's own floor over the same hosts, forks = hosts: one round trip each.
        times = [b.playbook(FLOOR, hosts=HOSTS[:n], deployment=DEPLOYMENT, forks=n) for _ in range(reps)]
        figures["floor"][str(n)] = times
        log(f"one round trip, {n} hosts: {statistics.median(times):.2f} s")
    release = 20
    canary = ["-e", "refit_canary_hosts=1", "-e", "refit_canary_soak=0"]
    for n, label, extra in [*((n, "waves of 3", []) for n in SIZES),
                            (len(HOSTS), "canary 1, then waves of 3", canary)]:
        times = []
        for _ in range(reps):
            # A new image under the same tag each time: every host restarts web, api stays.
            release += 1
            sh([TB, "publish", f"{REGISTRY}/fleet-web:1.0", f"1.0.{release}"])
            times.append(b.playbook("update", "-e", "refit_serial=3", *extra, hosts=HOSTS[:n],
                                    deployment=DEPLOYMENT, forks=n))
        figures["zstream"][f"{n}/{label}"] = times
        log(f"z-stream of web over {n} hosts, {label}: {statistics.median(times):.2f} s")
    # A no-op needs every host on the newest fleet-web: the last z-stream went over them all.
    # refit's no-op, then the foremanctl way's on the same hosts (its deploy replaces refit's
    # units, which is why it comes last).
    figures["cost"] = {"refit": per_host_cost("update", reps)}
    log(f"deploy the foremanctl way over {len(HOSTS)} hosts")
    figures["deploy_fm"] = b.playbook(FM_FLEET, *FM_LIGHT, hosts=HOSTS, deployment=DEPLOYMENT, forks=len(HOSTS))
    figures["cost"]["fm"] = per_host_cost(FM_FLEET, reps, *FM_LIGHT)
    figures["load"].append(os.getloadavg()[0])
    return figures


def render(f):
    med = statistics.median
    noop = f["noop"]
    most = max(SIZES)
    mem = list(f["memory_mb"].values())
    lines = [
        "# A fleet: wall time against hosts (issues 20 and 43)",
        "",
        f"Hosts fl1..fl{len(mem)} beside the bed (systemd-nspawn over one overlay rootfs, "
        f"{f['cores']} CPU cores shared with the controller), each running two light services "
        "(bench/vars/fleet_deployment.yml: the fleet scenario's web and api on the testbed's svc "
        "image, health-checked every 60 s). Each host's processes took "
        f"{med(mem):.0f} MB (median; {min(mem):.0f} to {max(mem):.0f} MB, {sum(mem) / 1024:.2f} GB in all, "
        "proportional set size). Wall time of `ansible-playbook refit.containers.update`, median of "
        f"{len(next(iter(noop.values())))} runs. "
        + ("Before each no-op run, podman's API service is stopped on its hosts (its socket "
           "listens on), as a run now and then finds it: it exits 5 s after its last call. "
           if f.get("podman_asleep") else "")
        + f"The machine's load average (1 min) as the run began and ended: {f['load'][0]:.1f} and "
        f"{f['load'][-1]:.1f}.",
        "",
        "| run | hosts | forks | wall time | × 1 host |",
        "|---|---:|---:|---:|---:|",
    ]
    one = med(noop["1/5"])
    for key, times in noop.items():
        n, forks = key.split("/")
        lines.append(f"| no-op update | {n} | {forks} | {med(times):.2f} s | {med(times) / one:.2f} |")
    for n, times in f.get("floor", {}).items():
        lines.append(f"| Ansible's floor: one task, one round trip per host (`raw: true`) | {n} | {n} | "
                     f"{med(times):.2f} s | {med(times) / med(f['floor']['1']):.2f} |")
    zone = med(f["zstream"]["1/waves of 3"])
    for key, times in f["zstream"].items():
        n, label = key.split("/", 1)
        lines.append(f"| z-stream of one service, {label} | {n} | {n} | {med(times):.2f} s | {med(times) / zone:.2f} |")
    growth = [f"{med(noop[f'{most}/{forks}']) / one:.2f}x at forks {forks}" for forks in (5, most)]
    lines += [
        "",
        f"Growth of the no-op update from 1 to {most} hosts: {', '.join(growth)} "
        f"(1 host: {one:.2f} s); the z-stream's \"× 1 host\" is against its own run over 1 host "
        f"({zone:.2f} s). The deploy of the {most} hosts took {f['deploy']:.1f} s.",
        "",
    ]
    if f.get("floor"):
        floor, top = f["floor"], str(most)
        lines += [
            f"Ansible's floor grew {med(floor[top]) / med(floor['1']):.2f}x from 1 to {most} hosts; refit's no-op "
            f"(forks = hosts) took {med(noop[f'{most}/{most}']) - med(floor[top]):.2f} s beyond it over {most} hosts "
            f"and {med(noop['1/1']) - med(floor['1']):.2f} s over 1.",
            "",
        ]
    return "\n".join(lines + render_cost(f["cost"]))


def render_cost(cost):
    """The per-host cost of a no-op, refit beside the foremanctl way, and its growth."""
    med = statistics.median
    kb = lambda n: f"{n / 1e3:,.1f} KB"  # noqa: E731
    # Figures measured before the idle window was watched have the cgroup's use alone.
    netted = all("host_cpu_run" in c for way in cost.values() for c in way.values())
    run_cpu = "host_cpu_run" if netted else "host_cpu"

    def host_cpu(c):
        return statistics.mean(c[run_cpu]) if netted else med(c[run_cpu])

    used = ("for it (the module and every systemctl and podman it ran: the cgroup's use during "
            "the run, less what the host used per second over a minute of doing nothing before "
            "the way's runs, its services' health checks and its own background, times the run's "
            "wall time; a mean, not a median: the background comes in spikes a median of the "
            "runs would mostly miss while the rate takes them all off; in brackets, the "
            "cgroup's use as it was, a median)") if netted else (
            "(the module and every systemctl and podman it ran, plus the host's own health checks)")
    lines = [
        "### What a no-op costs each host, refit beside the foremanctl way",
        "",
        "The same fleet hosts and services; forks = hosts. The foremanctl way is "
        "bench/baselines/foremanctl/fleet.yml (a containers.podman quadlet per service, restart "
        "what changed, start all), deployed after refit's runs; its no-op is its deploy again. "
        "Per host, medians over hosts and runs: the module calls that ran on it "
        "(bench/callback/host_cost.py; controller-side actions such as the role's argument "
        f"check are not counted), the CPU seconds its cgroup used during the run {used}, the "
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
    for n in map(str, SIZES):
        for way, label in (("refit", "refit"), ("fm", "(a) foremanctl way")):
            c = cost[way][n]
            as_it_was = f" ({med(c['host_cpu']):.2f} s)" if netted else ""
            lines.append(f"| {n} | {label} | {med(c['wall']):.2f} s | {med(c['calls']):g} | "
                         f"{host_cpu(c):.2f} s{as_it_was} | "
                         f"{med(c['controller_cpu_per_host']):.2f} s | "
                         f"{med(c['task_seconds']):.2f} s | {kb(c['ssh']['sent'] / int(n))} | "
                         f"{c['ssh']['connections'] / int(n):g} |")

    def growth(way, key, a, z):
        of = host_cpu if key == run_cpu else (lambda c: med(c[key]))
        one, ten = of(cost[way][a]), of(cost[way][z])
        return f"{one:.2f} s to {ten:.2f} s ({ten / one:.2f}x)"

    most = str(max(SIZES))
    top, fm_top = cost["refit"][most], cost["fm"][most]
    lines += [
        "",
        f"From 10 to {most} hosts, refit's host CPU per host{' for the run' if netted else ''} went {growth('refit', run_cpu, '10', most)} and "
        f"its controller CPU per host {growth('refit', 'controller_cpu_per_host', '10', most)}; the "
        f"foremanctl way's {growth('fm', run_cpu, '10', most)} and "
        f"{growth('fm', 'controller_cpu_per_host', '10', most)}. From 1 to 10 hosts, refit's went "
        f"{growth('refit', run_cpu, '1', '10')} and {growth('refit', 'controller_cpu_per_host', '1', '10')}. "
        f"Over {most} hosts refit sent {kb(top['ssh']['sent'] / int(most))} per host against "
        f"{kb(fm_top['ssh']['sent'] / int(most))}.",
        "",
    ]
    return lines


# Each host's systemd holds inotify instances, counted against root's limit with every other
# bed's and host's on the machine: at the kernel's default of 128, the 18th host of this
# machine's beds failed to boot ("Failed to create control group inotify object: Too many open
# files").
INOTIFY_INSTANCES = 4096
INOTIFY_LIMIT = "/proc/sys/fs/inotify/max_user_instances"


def inotify_room():
    """Raises the machine's inotify instances per user to INOTIFY_INSTANCES where it is lower."""
    with open(INOTIFY_LIMIT) as f:
        have = int(f.read())
    if have < INOTIFY_INSTANCES:
        log(f"raising fs.inotify.max_user_instances from {have} to {INOTIFY_INSTANCES} for {len(HOSTS)} hosts")
        with open(INOTIFY_LIMIT, "w") as f:
            f.write(str(INOTIFY_INSTANCES))


def main():
    args = sys.argv[1:]
    quick = "--quick" in args
    args = [a for a in args if a != "--quick"]
    if len(args) != 1:
        sys.exit(__doc__)
    out = args[0]
    reps = 1 if quick else 3
    inotify_room()
    log(f"booting fl1..fl{len(HOSTS)}")
    try:
        sh([TB, "add", *HOSTS], timeout=900)
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
