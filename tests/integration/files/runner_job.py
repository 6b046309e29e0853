"""Runs a refit playbook the way AWX runs a job: ansible-runner's Python API, a private data dir
holding a project playbook, an inventory, env vars and extra vars, and the job's events read back.

    runner_job.py PDD PLAYBOOK HOSTS DEPLOYMENT_YML

PDD is a scratch private data dir; PLAYBOOK a refit.containers playbook (update, deploy, ...).
Prints one JSON object: rc, status, the per-host stats, and per host the services each
container_unit task restarted, and each run_migrations task started again after its migration
(from the job events, as AWX's job output shows them).
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import ansible_runner
import yaml


def main() -> int:
    pdd, playbook, hosts, deployment = sys.argv[1:5]
    run = os.environ["REFIT_TESTBED_RUN"]
    repo = os.environ["REFIT_REPO"]
    os.makedirs(os.path.join(pdd, "project"), exist_ok=True)
    os.makedirs(os.path.join(pdd, "inventory"), exist_ok=True)
    # A job template runs a playbook of its project; this one imports the collection's.
    with open(os.path.join(pdd, "project", "job.yml"), "w", encoding="utf-8") as f:
        f.write(f"---\n- name: Job\n  ansible.builtin.import_playbook: refit.containers.{playbook}\n")
    shutil.copy(os.path.join(run, "inventory.ini"), os.path.join(pdd, "inventory", "hosts"))
    with open(deployment, encoding="utf-8") as f:
        extravars = yaml.safe_load(f)
    extravars["refit_hosts"] = hosts
    # Only what the job is given counts, not the testbed's ansible.cfg.
    os.environ.pop("ANSIBLE_CONFIG", None)
    envvars = {
        "ANSIBLE_COLLECTIONS_PATH": os.path.join(run, "collections"),
        "ANSIBLE_CONNECTION_PLUGINS": os.path.join(repo, "tests", "ansible", "connection_plugins"),
        "ANSIBLE_HOST_KEY_CHECKING": "False",
        "ANSIBLE_FORKS": "10",
    }
    r = ansible_runner.run(
        private_data_dir=pdd,
        playbook="job.yml",
        ident="job",
        envvars=envvars,
        extravars=extravars,
        quiet=True,
        timeout=900,
    )
    restarted: dict[str, list[str]] = {}
    for e in r.events:
        data = e.get("event_data", {})
        if e.get("event") != "runner_on_ok":
            continue
        res, action = data.get("res", {}), data.get("task_action")
        if action == "refit.containers.container_unit":
            restarted.setdefault(data["host"], []).extend(res.get("restarted_services", []))
        elif action == "refit.containers.run_migrations":
            # start_after: a migrated service is restarted by its migration's call.
            started = [s for m in res.get("migrations", []) for s in m.get("started", [])]
            restarted.setdefault(data["host"], []).extend(s for s in started if s.endswith(".service"))
    print(json.dumps({"rc": r.rc, "status": r.status, "stats": r.stats, "restarted": restarted,
                      "stdout_tail": r.stdout.read().splitlines()[-30:]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
