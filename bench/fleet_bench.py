"""refit over a fleet (issue 20): how wall time grows with hosts.

Run by bench/run.sh on the bed it brought up: boots fl1..fl10 beside it (testbed.sh add),
deploys the fleet scenario's two light services on them (tests/integration/vars/
fleet_deployment.yml), and times, with ansible-playbook's wall clock:
  - a no-op update of 1, 5 and 10 hosts, at forks 5 (Ansible's default) and forks = hosts;
  - a z-stream image of one service rolled over the 10 hosts in waves of 3 (refit_serial=3),
    and the same behind a canary wave of 1 with no soak;
then removes the fleet hosts. Each figure is the median of REPS runs; every wait is bounded
(subprocess timeouts). Nothing is typed by hand.

usage: python3 bench/fleet_bench.py [--quick] OUT.md   (the raw figures go to OUT.json)
"""
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TB = os.path.join(REPO, "tests/testbed/testbed.sh")
REGISTRY = "127.0.0.1:5000"
DEPLOYMENT = os.path.join(REPO, "tests/integration/vars/fleet_deployment.yml")
HOSTS = [f"fl{i}" for i in range(1, 11)]
SIZES = [1, 5, 10]


def log(msg):
    print(f"[fleet-bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sh(args, timeout=600, env=None):
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def playbook(name, hosts, *args, forks=None):
    """Runs a refit playbook over `hosts`; returns its wall time in seconds."""
    env = dict(os.environ)
    if forks:
        env["ANSIBLE_FORKS"] = str(forks)
    t0 = time.monotonic()
    sh(["ansible-playbook", f"refit.containers.{name}", "-e", f"@{DEPLOYMENT}",
        "-e", "refit_hosts=" + ":".join(hosts), *args], env=env)
    return time.monotonic() - t0


def copy_image(src, dest):
    sh(["skopeo", "copy", "--quiet", "--src-tls-verify=false", "--dest-tls-verify=false",
        f"docker://{REGISTRY}/{src}", f"docker://{REGISTRY}/{dest}"])


def measure(reps):
    figures = {"noop": {}, "zstream": {}}
    copy_image("svc:1.0", "fleet-web:1.0")
    copy_image("svc:1.0", "fleet-api:1.0")
    log("deploy over 10 hosts")
    figures["deploy_10"] = playbook("deploy", HOSTS)
    for n in SIZES:
        for forks in sorted({5, n}):
            times = [playbook("update", HOSTS[:n], forks=forks) for _ in range(reps)]
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
            times.append(playbook("update", HOSTS, "-e", "refit_serial=3", *extra, forks=10))
        figures["zstream"][label] = times
        log(f"z-stream of web over 10 hosts, {label}: {statistics.median(times):.2f} s")
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
    return "\n".join(lines)


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
