"""bench/benchlib.py, the helpers every bench script imports: the command lines it builds, what
it reads from a bed's inventory, how a failing command is reported, and its probe against a
real server on loopback that goes away and comes back."""

import contextlib
import io
import os
import shutil
import stat
import tempfile
import time
import unittest

from repo_paths import load
from test_probes import closed_port, serve

b = load("bench/benchlib.py", "benchlib")

INVENTORY = """[testhosts]
th1 ansible_connection=refit_testhost refit_testhost_pid=4242 testbed_port_base=18000 refit_port_base=18200 ansible_port=2201
fl3 ansible_connection=refit_testhost refit_testhost_pid=77 testbed_port_base=20200 refit_port_base=20300 ansible_port=2203
"""


def scratch(testcase):
    d = tempfile.mkdtemp(prefix="benchlib-")
    testcase.addCleanup(shutil.rmtree, d, True)
    return d


class PlaybookArgs(unittest.TestCase):
    def test_a_short_name_is_refits_playbook_over_the_default_host(self):
        args = b.playbook_args("update", "-e", "x=1")
        self.assertEqual(args[:2], ["ansible-playbook", "refit.containers.update"])
        self.assertIn(f"refit_hosts={b.HOST}", args)
        self.assertIn(f"fm_hosts={b.HOST}", args)
        self.assertEqual(args[-2:], ["-e", "x=1"])

    def test_a_path_or_a_collection_name_is_kept_and_hosts_make_one_pattern(self):
        path = b.playbook_args("/x/fleet.yml", hosts=["fl1", "fl2"], deployment="/d.yml")
        self.assertEqual(path[:4], ["ansible-playbook", "/x/fleet.yml", "-e", "@/d.yml"])
        self.assertIn("refit_hosts=fl1:fl2", path)
        self.assertEqual(b.playbook_args("refit.containers.deploy")[1], "refit.containers.deploy")


class Inventory(unittest.TestCase):
    def setUp(self):
        self.run_dir = scratch(self)
        with open(os.path.join(self.run_dir, "inventory.ini"), "w") as f:
            f.write(INVENTORY)
        self.saved = b.RUN
        b.RUN = self.run_dir
        self.addCleanup(setattr, b, "RUN", self.saved)

    def test_a_hosts_setting_is_read_from_its_own_line(self):
        self.assertEqual(b.host_setting("refit_port_base", "fl3"), "20300")
        self.assertEqual(b.host_setting("refit_testhost_pid", "th1"), "4242")

    def test_a_host_not_up_is_an_error_naming_it_and_the_command_to_run(self):
        with self.assertRaisesRegex(RuntimeError, r"fl9 has no refit_port_base.*testbed.sh up fl9"):
            b.host_setting("refit_port_base", "fl9")

    def test_base_and_ports_come_from_the_inventory_on_first_use(self):
        self.assertEqual(b.BASE, 18200)
        self.assertEqual(b.PORTS, [18201, 18202, 18203, 18204, 18211, 18212, 18213])
        with self.assertRaises(AttributeError):
            b.NO_SUCH_NAME  # noqa: B018


class Shell(unittest.TestCase):
    def test_a_failure_names_the_command_its_code_and_its_output(self):
        with self.assertRaisesRegex(RuntimeError, r"sh -c echo out; echo err >&2; exit 3 exited 3:\nout\n\nerr"):
            b.sh(["sh", "-c", "echo out; echo err >&2; exit 3"])
        self.assertEqual(b.sh(["sh", "-c", "exit 4"], check=False).returncode, 4)

    def test_playbook_runs_ansible_playbook_from_path_with_forks_and_returns_its_wall_time(self):
        # A stand-in ansible-playbook (the real one needs a bed): it records what it was given.
        d = scratch(self)
        seen = os.path.join(d, "seen")
        fake = os.path.join(d, "ansible-playbook")
        with open(fake, "w") as f:
            f.write(f'#!/bin/sh\necho "$ANSIBLE_FORKS $*" > {seen}\nsleep 0.2\n')
        os.chmod(fake, stat.S_IRWXU)
        wall = b.playbook("update", hosts=["fl1"], forks=7, env={"PATH": f"{d}:{os.environ['PATH']}"})
        self.assertGreaterEqual(wall, 0.2)
        with open(seen) as f:
            self.assertEqual(f.read().split()[:3], ["7", "refit.containers.update", "-e"])

    def test_log_names_the_script(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            b.log("hello")
        self.assertRegex(err.getvalue(), r"^\[.+ \d\d:\d\d:\d\d\] hello\n$")


class Units(unittest.TestCase):
    def test_restarted_are_the_units_whose_invocation_changed(self):
        self.assertEqual(b.restarted({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "9"}), ["b", "c"])

    def test_median_of_nothing_is_zero(self):
        self.assertEqual(b.median([]), 0.0)
        self.assertEqual(b.median([3, 1, 2]), 2)


class ProbeAround(unittest.TestCase):
    def test_a_server_answering_is_never_down_and_a_missing_one_is_down_throughout(self):
        up, gone = serve(self), closed_port()
        probe = b.Probe("unit", ports=[up, gone], names=["up", "gone"], run_dir=scratch(self))
        time.sleep(0.3)
        seen = probe.stop()
        self.assertEqual(seen["down_ms"]["up"], 0)
        self.assertGreater(seen["down_ms"]["gone"], 200)
        self.assertEqual(seen["min_answering"], 1)
        self.assertGreater(seen["ticks"], 5)


if __name__ == "__main__":
    unittest.main()
