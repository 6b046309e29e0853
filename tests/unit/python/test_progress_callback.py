"""refit.containers.progress (plugins/callback/progress.py): the lines it prints per phase and
service, and the JSON lines refitctl reads its tables from."""

import json
import os
import tempfile
import unittest

from repo_paths import load

progress = load("plugins/callback/progress.py", "refit_progress")


class Task:
    def __init__(self, action, name=None, tags=(), ignore_errors=False, loop=None):
        self.action = action
        self.name = name
        self.tags = None if tags is None else list(tags)
        self.ignore_errors = ignore_errors
        self.loop = loop
        self._uuid = "uuid-%s-%s" % (action, name)


class Host:
    def __init__(self, name):
        self.name = name

    def get_name(self):
        return self.name


class Result:
    def __init__(self, task, host, result):
        self._task = task
        self._host = Host(host)
        self._result = result


class Display:
    """Ansible's Display as the callback uses it: lines and warnings kept, a verbosity."""

    def __init__(self, verbosity=0):
        self.verbosity = verbosity
        self.lines = []
        self.warnings = []

    def display(self, msg, color=None):
        self.lines.append((msg, color))

    def warning(self, msg):
        self.warnings.append(msg)

    def text(self):
        return "\n".join(m for m, _color in self.lines)


class Stats:
    def __init__(self, per_host):
        self.processed = dict.fromkeys(per_host, 1)
        self.per_host = per_host

    def summarize(self, host):
        return self.per_host[host]


START = Task("refit.containers.container_unit", "Start", tags=["refit_phase_start"])


class PhaseAndTitle(unittest.TestCase):
    def test_phase_comes_from_the_phase_tag(self):
        self.assertEqual(progress.phase_of(START), "start")

    def test_a_task_without_a_phase_tag_is_in_phase_task(self):
        self.assertEqual(progress.phase_of(Task("ansible.builtin.assert", tags=["always"])), "task")
        self.assertEqual(progress.phase_of(Task("ansible.builtin.assert", tags=None)), "task")

    def test_title_falls_back_to_the_action(self):
        self.assertEqual(progress.title(Task("refit.containers.flow_state", "  Begin ")), "Begin")
        self.assertEqual(progress.title(Task("refit.containers.flow_state")), "refit.containers.flow_state")


class UnitLines(unittest.TestCase):
    def test_actions_with_their_reasons_and_the_converge_time(self):
        result = {"units": [{
            "service": "app.service",
            "actions": ["pull", "restart"],
            "reasons": ["image_changed"],
            "duration_ms": {"converge": 1600, "fetch": 300},
        }]}
        self.assertEqual(list(progress.unit_lines(result)),
                         [("app.service", "pull, restart (image_changed)  1.6 s")])

    def test_a_pull_alone_shows_the_fetch_time(self):
        result = {"units": [{"service": "db.service", "actions": ["pull"], "duration_ms": {"fetch": 250}}]}
        self.assertEqual(list(progress.unit_lines(result)), [("db.service", "pull  0.2 s")])

    def test_a_rollback_wins_over_the_actions(self):
        result = {"units": [{"service": "api.service", "actions": ["restart"], "rolled_back": True}]}
        self.assertEqual(list(progress.unit_lines(result)), [("api.service", "rolled back")])

    def test_check_mode_says_a_restart_is_needed_and_a_newer_image_waits(self):
        result = {"units": [{
            "service": "content.service",
            "restart_needed": True,
            "reasons": ["image_changed"],
            "image": {"newer_available": True},
        }]}
        self.assertEqual(list(progress.unit_lines(result)),
                         [("content.service", "restart needed (image_changed); a newer image waits")])

    def test_a_single_unit_result_is_one_line_and_no_service_is_none(self):
        self.assertEqual(list(progress.unit_lines({"service": "db.service"})), [("db.service", "converged")])
        self.assertEqual(list(progress.unit_lines({"changed": False})), [])


class MigrationLines(unittest.TestCase):
    def test_the_preflight_judgement_ran_and_skipped(self):
        result = {"migrations": [
            {"unit": "api", "pending": True},
            {"unit": "db", "pending": False},
            {"source": "content", "ran": True, "duration_ms": 500},
            {"unit": "app", "ran": False, "skipped_reason": "already migrated for image 15ff171b4422"},
            {"ran": False},
        ]}
        self.assertEqual(list(progress.migration_lines(result)), [
            ("api", "migration pending"),
            ("db", "nothing pending"),
            ("content", "migrated  0.5 s"),
            ("app", "already migrated for image 15ff171b4422"),
            ("migration", "nothing pending"),
        ])


class Callback(unittest.TestCase):
    def setUp(self):
        self.callback = progress.CallbackModule()
        self.display = Display()
        self.callback._display = self.display
        fd, self.events_path = tempfile.mkstemp(suffix=".jsonl")
        os.close(fd)
        self.addCleanup(os.unlink, self.events_path)
        # What set_options does with events_file, without a plugin loader to read the option.
        self.callback._events = open(self.events_path, "a", encoding="utf-8")
        self.addCleanup(lambda: self.callback._events and self.callback._events.close())

    def events(self):
        self.callback._events.flush()
        with open(self.events_path, encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    def test_a_refit_result_prints_its_units_and_writes_an_event(self):
        self.callback.v2_playbook_on_task_start(START, False)
        self.callback.v2_runner_on_ok(Result(START, "th1", {
            "changed": True,
            "invocation": {"module_args": {"secret_env": {"K": "v"}}},
            "units": [{"service": "app.service", "actions": ["restart"], "reasons": ["unit_changed"]}],
            "warnings": ["a warning"],
        }))
        text = self.display.text()
        self.assertIn("th1      start     app.service", text)
        self.assertIn("restart (unit_changed)", text)
        self.assertIn("done in", text)
        self.assertEqual(self.display.warnings, ["a warning"])
        [event] = self.events()
        self.assertEqual((event["host"], event["phase"], event["status"], event["action"]),
                         ("th1", "start", "changed", "refit.containers.container_unit"))
        self.assertNotIn("invocation", event["result"], "the module's arguments are no event's business")

    def test_the_preflight_plan_is_what_its_lines_show(self):
        begin = Task("refit.containers.flow_state", "Preflight", tags=["refit_phase_preflight"])
        self.callback.v2_runner_on_ok(Result(begin, "th1", {
            "changed": False,
            "plan": {"units": [{"service": "db.service"}]},
            "migrations": [{"unit": "content", "pending": True}],
        }))
        text = self.display.text()
        self.assertIn("db.service", text)
        self.assertIn("converged", text)
        self.assertIn("migration pending", text)

    def test_other_tasks_print_only_at_verbosity(self):
        other = Task("ansible.builtin.assert", "Check the inputs")
        self.callback.v2_runner_on_ok(Result(other, "th1", {"changed": False}))
        self.assertEqual(self.display.lines, [])
        self.assertEqual(self.events(), [], "only refit results and failures are events")
        self.display.verbosity = 1
        self.callback.v2_runner_on_ok(Result(other, "th1", {"changed": False}))
        self.assertIn("Check the inputs", self.display.text())

    def test_a_skipped_refit_task_is_an_event_but_no_line(self):
        self.callback.v2_runner_on_skipped(Result(START, "th1", {"skipped": True}))
        self.assertEqual(self.display.lines, [])
        self.assertEqual([e["status"] for e in self.events()], ["skipped"])

    def test_a_failure_prints_every_line_of_its_message(self):
        other = Task("ansible.builtin.fail", "Refuse", ignore_errors=True)
        self.callback.v2_runner_on_failed(Result(other, "th2", {"msg": "first\nsecond"}), ignore_errors=True)
        self.assertEqual(self.display.lines[0][1], "yellow", "an ignored failure is no red line")
        self.assertIn("FAILED", self.display.lines[0][0])
        self.assertEqual([m.strip() for m, _color in self.display.lines[1:]], ["first", "second"])
        [event] = self.events()
        self.assertEqual((event["status"], event["ignored"]), ("failed", True))

    def test_a_failure_a_rescue_handles_is_not_ignored(self):
        self.callback.v2_runner_on_failed(Result(START, "th1", {"msg": "no"}), ignore_errors=True)
        self.assertEqual(self.display.lines[0][1], "red")
        self.assertFalse(self.events()[0]["ignored"])

    def test_unreachable(self):
        self.callback.v2_runner_on_unreachable(Result(START, "th3", {"msg": "ssh: connect refused"}))
        self.assertIn("UNREACHABLE", self.display.text())
        self.assertEqual(self.events()[0]["status"], "unreachable")

    def test_stats_close_the_events_with_the_summary(self):
        counts = {"ok": 3, "changed": 1, "failures": 0, "unreachable": 0, "rescued": 0, "skipped": 1}
        self.callback.v2_playbook_on_stats(Stats({"th2": counts, "th1": counts}))
        self.assertIsNone(self.callback._events)
        with open(self.events_path, encoding="utf-8") as f:
            [event] = [json.loads(line) for line in f]
        self.assertEqual(event["stats"]["th1"]["changed"], 1)
        host_lines = [m for m, _color in self.display.lines if m.startswith("th")]
        self.assertEqual(host_lines[0], "th1      ok=3 changed=1 failed=0 unreachable=0 rescued=0")

    def test_diffs_of_changed_loop_items_only(self):
        looped = Task("refit.containers.container_unit", "Loop", loop=["a", "b"])
        shown = []
        self.callback._get_diff = lambda diff: shown.append(diff) or diff["text"]
        self.callback.v2_on_file_diff(Result(looped, "th1", {"results": [
            {"changed": True, "diff": {"text": "+new\n"}},
            {"changed": False, "diff": {"text": "+unchanged\n"}},
        ]}))
        self.assertEqual(shown, [{"text": "+new\n"}])
        self.assertEqual(self.display.lines, [("+new", None)])


if __name__ == "__main__":
    unittest.main()
