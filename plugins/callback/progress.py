# Copyright: refit contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""refit's stdout callback: one line per phase and service, with elapsed times."""

from __future__ import annotations

DOCUMENTATION = r"""
name: progress
type: stdout
short_description: One line per refit phase and service, with elapsed times
description:
  - Prints what each phase of a refit flow did for each host and service (pulled, written,
    restarted, migrated, converged, rolled back), with the time it took, and a line when a phase
    starts, so a long pull or health wait shows.
  - A task's phase is the C(refit_phase_NAME) tag its phase's C(import_tasks) gives it in the
    flow role (C(refit_phase_preflight), C(refit_phase_migrate), C(refit_phase_start),
    C(refit_phase_verify), C(refit_phase_recover)); a task without one is in phase C(task).
  - Tasks that are not refit modules print only when they fail, or at C(-v).
  - With C(--diff), each changed file's unified diff follows its task, as the modules returned
    it (refit's modules mask the secrets in it, the unit texts included).
  - It can also write every refit module result as JSON lines, for C(refitctl), and with them
    each progress event of a long module call as the call's action shows it.
author: refit developers (@refit)
version_added: "0.1.0"
options:
  events_file:
    description:
      - A file to write each refit task result, each progress event of a long refit module
        call (an object with a C(progress) key) as it comes, and the closing stats to, one
        JSON object per line.
    type: path
    env:
      - name: REFIT_EVENTS_FILE
    ini:
      - section: refit_progress
        key: events_file
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase

from ansible_collections.refit.containers.plugins.plugin_utils import progress_poll

REFIT = "refit.containers."


def phase_of(task):
    """The flow phase a task belongs to (progress_poll.phase_of), as the action's lines say it."""
    return progress_poll.phase_of(task.tags)


def title(task):
    """The task's own name, without its role's."""
    return (task.name or task.action).strip()


def seconds(ms):
    return "%.1f s" % (ms / 1000.0)


def unit_lines(result):
    """One line per unit of a container_unit result: what was done and why."""
    units = result.get("units")
    if units is None:
        units = [result] if "service" in result else []
    for u in units:
        actions = u.get("actions") or []
        reasons = u.get("reasons") or []
        durations = u.get("duration_ms") or {}
        took = durations.get("converge") or (durations.get("fetch") if "pull" in (u.get("actions") or []) else None)
        if u.get("rolled_back"):
            what = "rolled back"
        elif actions:
            what = ", ".join(actions)
            if reasons:
                what += " (%s)" % ", ".join(reasons)
        elif u.get("restart_needed"):
            what = "restart needed (%s)" % ", ".join(reasons)
        else:
            what = "converged"
        if (u.get("image") or {}).get("newer_available"):
            what += "; a newer image waits"
        yield u.get("service", "?"), what + ("  %s" % seconds(took) if took else "")


def migration_lines(result):
    for m in result.get("migrations") or []:
        unit = m.get("unit") or m.get("source") or "migration"
        if "pending" in m:
            # The preflight's judgement: nothing has run yet.
            yield unit, "migration pending" if m["pending"] else "nothing pending"
        elif m.get("ran"):
            yield unit, "migrated  %s" % seconds(m.get("duration_ms") or 0)
        else:
            yield unit, m.get("skipped_reason") or "nothing pending"


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "refit.containers.progress"

    def __init__(self):
        super().__init__()
        self._started = time.monotonic()
        self._task_started = {}
        self._events = None

    def set_options(self, task_keys=None, var_options=None, direct=None):
        super().set_options(task_keys=task_keys, var_options=var_options, direct=direct)
        path = self.get_option("events_file")
        if path:
            self._events = open(path, "a", encoding="utf-8")
            # The task workers fork from this process: refit's actions add their progress
            # events to the same file (plugin_utils/progress_poll.py), however it was named.
            os.environ[progress_poll.EVENTS_ENV] = path

    def _line(self, host, phase, subject, text, color=None):
        elapsed = time.monotonic() - self._started
        self._display.display(
            "%7.1fs  %-8s %-9s %-22s %s" % (elapsed, host, phase, subject, text), color=color
        )

    def _event(self, **fields):
        if self._events:
            self._events.write(json.dumps(fields, default=str) + "\n")
            self._events.flush()

    def v2_playbook_on_play_start(self, play):
        self._display.display("refit: %s" % play.get_name().strip())

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._task_started[task._uuid] = time.monotonic()
        if task.action.startswith(REFIT):
            self._line("*", phase_of(task), "", title(task), color="bright blue")

    def _took(self, task):
        start = self._task_started.get(task._uuid, time.monotonic())
        return time.monotonic() - start

    def _report(self, result, status, ignored=False):
        task = result._task
        host = result._host.get_name()
        phase = phase_of(task)
        res = dict(result._result)
        res.pop("invocation", None)
        refit = task.action.startswith(REFIT)
        if refit or status in ("failed", "unreachable"):
            self._event(
                host=host,
                task=title(task),
                phase=phase,
                action=task.action,
                status=status,
                ignored=ignored,
                seconds=round(self._took(task), 3),
                result=res,
            )
        if status == "skipped" and not self._display.verbosity:
            return
        if status in ("failed", "unreachable"):
            msg = res.get("msg") or res.get("stderr") or "failed"
            color = "yellow" if ignored else "red"
            self._line(host, phase, "FAILED" if status == "failed" else "UNREACHABLE", "", color)
            for line in str(msg).rstrip().splitlines():
                self._display.display("           " + line, color=color)
            return
        if not refit:
            if self._display.verbosity:
                self._line(host, phase, status, title(task))
            return
        # The preflight's plan holds the units it fetched and wrote.
        plan = res.get("plan") if isinstance(res.get("plan"), dict) else res
        lines = list(unit_lines(plan)) + list(migration_lines(res))
        if not lines or self._display.verbosity:
            lines.append(("", res.get("msg", status)))
        color = "yellow" if status == "changed" else None
        for subject, text in lines:
            self._line(host, phase, subject, text, color)
        self._line(host, phase, "", "done in %.1f s" % self._took(task))
        for w in res.get("warnings") or []:
            self._display.warning(w)

    def v2_runner_on_ok(self, result):
        self._report(result, "changed" if result._result.get("changed") else "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):  # pylint: disable=unused-argument
        # ignore_errors here is also true for a failure a rescue section will handle; only
        # the task's own ignore_errors makes a failure one refitctl may disregard.
        self._report(result, "failed", ignored=bool(result._task.ignore_errors))

    def v2_runner_on_skipped(self, result):
        self._report(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._report(result, "unreachable")

    def v2_on_file_diff(self, result):
        """--diff: the unified diff of each file the task changed, or (check mode) would."""
        res = result._result
        if result._task.loop and "results" in res:
            diffs = [r["diff"] for r in res["results"] if r.get("diff") and r.get("changed")]
        else:
            diffs = [res["diff"]] if res.get("diff") else []
        for diff in diffs:
            text = self._get_diff(diff)
            if text.strip():
                self._display.display(text.rstrip("\n"))

    def v2_playbook_on_stats(self, stats):
        summary = {}
        for host in sorted(stats.processed.keys()):
            s = stats.summarize(host)
            summary[host] = s
            self._display.display(
                "%-8s ok=%d changed=%d failed=%d unreachable=%d rescued=%d"
                % (host, s["ok"], s["changed"], s["failures"], s["unreachable"], s["rescued"])
            )
        self._display.display("took %.1f s" % (time.monotonic() - self._started))
        self._event(stats=summary)
        if self._events:
            self._events.close()
            self._events = None
