# Copyright: refit contributors
# Apache-2.0 (see LICENSE)
"""The controller's reading of a detached call (plugins/plugin_utils/progress_poll.py): its
poll script run by a real /bin/sh against a real run dir, as the module's worker leaves it
(core/src/ansible/detach.rs): events read once each and a line still being written left for the
next look; a worker that holds `live` is running, one that let go without a result is gone, and
a result is returned whole. Plain Python, no Ansible, no root."""

import json
import os
import pathlib
import subprocess
import tempfile
import time
import unittest

from repo_paths import load

poll = load("plugins/plugin_utils/progress_poll.py", "refit_progress_poll")


def event(line, kind="tick"):
    return json.dumps({"at_ms": 1, "kind": kind, "step": line, "elapsed_s": 0, "line": line}) + "\n"


class PollScript(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name) / "state" / "runs" / "container_unit-42"
        self.dir.mkdir(parents=True)
        (self.dir / "live").touch()
        self.holder = None

    def tearDown(self):
        if self.holder:
            self.holder.kill()
            self.holder.wait()
        self.tmp.cleanup()

    def hold_live(self):
        """A worker at work: a process that holds `live` locked, as detach.rs does."""
        self.holder = subprocess.Popen(["flock", str(self.dir / "live"), "sleep", "30"])
        for _try in range(100):
            if subprocess.run(["flock", "-n", str(self.dir / "live"), "true"], check=False).returncode != 0:
                return
            time.sleep(0.02)
        self.fail("the lock was never taken")

    def look(self, offset):
        out = subprocess.run(
            # As a connection runs it: the command, and something appended (ssh: && sleep 0).
            ["/bin/sh", "-c", poll.poll_script(str(self.dir), self.holder.pid if self.holder else 1, offset) + " && true"],
            capture_output=True, text=True, check=True,
        ).stdout
        return poll.read_poll(out)

    def test_each_event_is_read_once_and_a_half_line_waits(self):
        self.hold_live()
        with open(self.dir / "events", "w") as f:
            f.write(event("pulling app:1.1", "begin") + event("pulling app:1.1 (3 s)")[:20])
        events, read, state, result = self.look(0)
        self.assertEqual(([e["line"] for e in events], state, result), (["pulling app:1.1"], "running", None))
        with open(self.dir / "events", "w") as f:
            f.write(event("pulling app:1.1", "begin") + event("pulling app:1.1 (3 s)"))
        events, more, state, _result = self.look(read)
        self.assertEqual([e["line"] for e in events], ["pulling app:1.1 (3 s)"])
        self.assertEqual(read + more, os.path.getsize(self.dir / "events"))
        self.assertEqual(self.look(read + more)[:3], ([], 0, "running"))

    def test_a_result_is_returned_whole_even_after_the_worker_ended(self):
        (self.dir / "events").write_text(event("migrating api: done in 4.0 s", "end"))
        result = {"changed": True, "failed": False, "msg": "two\nlines"}
        (self.dir / "result").write_text(json.dumps(result) + "\n")
        events, _read, state, text = self.look(0)
        self.assertEqual((len(events), state, json.loads(text)), (1, "done", result))

    def test_a_worker_that_let_go_without_a_result_is_gone(self):
        (self.dir / "events").write_text(event("migrating api", "begin"))
        self.assertEqual(self.look(0)[2], "gone")

    def test_a_terminal_s_crlf_reads_as_newlines_with_the_same_offsets(self):
        out = event("a") + event("b") + "\n" + poll.MARK + "running\n"
        events, read, state, _result = poll.read_poll(out.replace("\n", "\r\n"))
        self.assertEqual((len(events), read, state), (2, len(event("a") + event("b")), "running"))

    def test_output_that_is_not_a_look_has_no_state(self):
        self.assertEqual(poll.read_poll("bash: sh: not found\n"), ([], 0, None, None))


class Names(unittest.TestCase):
    def test_only_a_run_dir_as_the_module_names_it_is_removed(self):
        self.assertTrue(poll.is_run_dir("/var/lib/refit/runs/container_unit-42"))
        for bad in ["/", "/var/lib/refit", "/var/lib/refit/runs/../x-1", "runs/x-1", "/var/lib/refit/runs/x-1/..", None, 3]:
            self.assertFalse(poll.is_run_dir(bad), bad)
        self.assertIn("'/a b/runs/x-1'", poll.remove_script("/a b/runs/x-1"))

    def test_phase_and_line(self):
        self.assertEqual(poll.phase_of(["refit_phase_migrate", "x"]), "migrate")
        self.assertEqual(poll.phase_of(None), "task")
        line = poll.event_line("th1", "start", {"line": "waiting (3 s of 60)"})
        # The callback's columns: no elapsed time, then host, phase, an empty subject, the text.
        self.assertEqual(line.index("th1"), 10)
        self.assertEqual(line.index("waiting"), 10 + 9 + 10 + 23)


class EventsFile(unittest.TestCase):
    def test_each_event_is_a_progress_line_beside_the_callback_s_lines(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "events")
            with open(path, "w", encoding="utf-8") as f:
                f.write('{"host": "th1", "status": "ok", "result": {}}\n')
            steps = [{"kind": "begin", "line": "migrating api"}, {"kind": "end", "line": "migrating api: done in 6.1 s"}]
            poll.record_events(path, "th1", "migrate", "refit.containers.run_migrations", steps)
            poll.record_events(path, "th1", "migrate", "refit.containers.run_migrations", [])
            poll.record_events(None, "th1", "migrate", "refit.containers.run_migrations", steps)
            with open(path, encoding="utf-8") as f:
                lines = [json.loads(line) for line in f]
        self.assertEqual(len(lines), 3)
        self.assertEqual(lines[0]["status"], "ok")
        self.assertEqual([line["progress"] for line in lines[1:]], steps)
        self.assertEqual({(line["host"], line["phase"], line["action"]) for line in lines[1:]},
                         {("th1", "migrate", "refit.containers.run_migrations")})
        # refitctl reads a line with a status and a result as a task's result: a progress line has neither.
        self.assertFalse({"status", "result"} & set(lines[1]))


if __name__ == "__main__":
    unittest.main()
