"""Lists what every task of the collection's roles and playbooks runs, for test_no_python.

Run on the controller with the Python that runs Ansible (ansible_playbook_python):
    python3 task_actions.py REPO
It prints JSON: `tasks`, each task's file, name, action (the task's one key that is no task
keyword of this ansible-core, or what `action`/`local_action` names) and delegate_to
(`localhost` for a local_action); and `gathering`, the plays that gather facts (which needs
Python on the host).
"""

import glob
import json
import os
import sys

import yaml
from ansible.playbook.task import Task

# The sections of a play, and of a block, that hold tasks.
PLAY_SECTIONS = ("pre_tasks", "tasks", "post_tasks", "handlers")
BLOCK_SECTIONS = ("block", "rescue", "always")


def walk(tasks, path, out):
    for task in tasks or []:
        if any(k in task for k in BLOCK_SECTIONS):
            for section in BLOCK_SECTIONS:
                walk(task.get(section), path, out)
            continue
        out.append({"file": path, "name": task.get("name", ""), **action(task)})


def action(task):
    """What a task runs, and where; a task with no module or with two names them all."""
    for key, delegate_to in (("local_action", "localhost"), ("action", task.get("delegate_to"))):
        if key in task:
            value = task[key]
            name = value.get("module", "") if isinstance(value, dict) else str(value).split()[0]
            return {"action": name, "delegate_to": delegate_to}
    names = [k for k in task if k not in Task.fattributes and not k.startswith("with_")]
    return {"action": " ".join(names) or "(none)", "delegate_to": task.get("delegate_to")}


def main() -> int:
    repo = sys.argv[1]
    tasks, gathering = [], []
    for path in sorted(glob.glob(os.path.join(repo, "roles", "*", "tasks", "*.yml"))):
        with open(path, encoding="utf-8") as f:
            walk(yaml.safe_load(f), os.path.relpath(path, repo), tasks)
    for path in sorted(glob.glob(os.path.join(repo, "playbooks", "*.yml"))):
        with open(path, encoding="utf-8") as f:
            plays = yaml.safe_load(f) or []
        for play in plays:
            # An imported playbook is no play of its own: its plays are read from its own file.
            if "ansible.builtin.import_playbook" in play or "import_playbook" in play:
                continue
            # Ansible gathers facts unless a play says not to.
            if play.get("gather_facts", True) is not False:
                gathering.append(f"{os.path.relpath(path, repo)}: {play.get('name', '')}")
            for section in PLAY_SECTIONS:
                walk(play.get(section), os.path.relpath(path, repo), tasks)
    json.dump({"tasks": tasks, "gathering": gathering}, sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
