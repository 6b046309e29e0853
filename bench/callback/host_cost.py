# Copyright: refit contributors
# Apache-2.0 (see LICENSE)
"""A bench-only aggregate callback: what a run cost each host, for bench/fleet_bench.py.

For every host, the module calls made on it (task results that were not skipped and not of
a controller-side action; a loop's items each count, as each is a module run) and the seconds
its tasks took, from the task's
start to the host's result. Written as JSON to $REFIT_HOST_COST_FILE when the play ends.
Enabled with ANSIBLE_CALLBACK_PLUGINS=bench/callback ANSIBLE_CALLBACKS_ENABLED=host_cost.
"""

from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: host_cost
    type: aggregate
    short_description: module calls and task seconds per host, for refit's fleet bench
    description: Writes them to the file REFIT_HOST_COST_FILE names, as JSON.
    requirements: [enabled in ANSIBLE_CALLBACKS_ENABLED]
"""


# Actions that run on the controller alone: no module reaches the host.
CONTROLLER_ACTIONS = {
    f"{prefix}{name}"
    for prefix in ("", "ansible.builtin.", "ansible.legacy.")
    for name in ("validate_argument_spec", "set_fact", "assert", "debug", "fail", "meta",
                 "include_tasks", "include_role", "import_tasks", "import_role", "include_vars")
}


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "host_cost"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._started = {}
        self._hosts = {}

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._started[task._uuid] = time.monotonic()

    def _count(self, result, ignore_errors=False):  # pylint: disable=unused-argument
        took = time.monotonic() - self._started.get(result._task._uuid, time.monotonic())
        h = self._hosts.setdefault(result._host.get_name(), {"calls": 0, "task_seconds": 0.0})
        h["task_seconds"] = round(h["task_seconds"] + took, 3)
        if result._task.action in CONTROLLER_ACTIONS:
            return
        items = result._result.get("results")
        h["calls"] += sum(1 for i in items if not i.get("skipped")) if isinstance(items, list) else 1

    v2_runner_on_ok = v2_runner_on_failed = v2_runner_on_unreachable = _count

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("REFIT_HOST_COST_FILE")
        if path:
            with open(path, "w", encoding="utf-8") as f:
                json.dump(self._hosts, f)
