"""refit's module action (plugins/plugin_utils/cached_binary.py): a call goes to the copy the
host keeps, its arguments on standard input, through a real /bin/sh against a real kept copy in
a temporary dir; and every case that must take Ansible's own path does, with the name to keep
the copy under. Ansible's transport is replaced by running the command here; the rest of the
action (argument encoding, result parsing) is Ansible's own. Needs ansible-core (make check's
venv), no root."""

import hashlib
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

from repo_paths import load

kept_copy = load(
    "plugins/plugin_utils/kept_copy.py",
    "ansible_collections.refit.containers.plugins.plugin_utils.kept_copy",
)
cached_binary = load("plugins/plugin_utils/cached_binary.py", "refit_cached_binary")

# A stand-in for a module binary: answers with the arguments it read on standard input.
MODULE = b'#!/bin/sh\nread -r args\necho "{\\"changed\\": false, \\"args\\": $args}"\n'
FALLBACK = {"changed": True, "via": "ansible"}


class Shell:
    """Ansible's connection, as the action sees it: pipelining, become, and a /bin/sh here."""

    SHELL_FAMILY = "sh"

    def __init__(self, pipelining=True, become=False):
        self.has_pipelining = pipelining
        self.become = become
        self.tmpdir = None
        self._shell = self
        self.commands = []

    def run(self, cmd, sudoable=True, in_data=None):
        self.commands.append((cmd, in_data))
        out = subprocess.run(cmd, shell=True, input=in_data, capture_output=True, timeout=30, check=False)
        return {"rc": out.returncode, "stdout": out.stdout.decode(), "stderr": out.stderr.decode()}


class Task:
    def __init__(self, args):
        self.args = args
        self.action = self.resolved_action = "refit.containers.container_unit"
        self.collections = []
        self.async_val = 0
        self.check_mode = False


class CachedBinary(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.cache = os.path.join(self.tmp.name, "modules")
        os.mkdir(self.cache, 0o700)
        self.binary = os.path.join(self.tmp.name, "container_unit")
        with open(self.binary, "wb") as f:
            f.write(MODULE)
        self.digest = hashlib.sha256(MODULE).hexdigest()
        self.kept = os.path.join(self.cache, "container_unit-" + self.digest)
        # The snippet the host runs, pointed at the temporary cache.
        patch = mock.patch.object(
            cached_binary,
            "kept_script",
            lambda b, d: kept_copy.kept_script(b, d, cache_dir=self.cache),
        )
        patch.start()
        self.addCleanup(patch.stop)
        self.addCleanup(self.tmp.cleanup)

    def keep(self, data=MODULE):
        with open(self.kept, "wb") as f:
            f.write(data)
        os.chmod(self.kept, 0o700)

    def run_action(self, shell=None, task_vars=None, pipelining_setting=True):
        shell = shell or Shell()
        action = cached_binary.CachedBinaryAction.__new__(cached_binary.CachedBinaryAction)
        action._task = Task({"name": "app", "state": "present"})
        action._connection = shell
        action._play_context = mock.Mock(remote_addr="th1")
        action._used_interpreter = None
        action._module_path = lambda module: self.binary
        action._update_module_args = lambda module, args, tv: args.update(_ansible_check_mode=False)
        action._compute_environment_string = lambda: "LC_ALL=C"
        action._is_pipelining_enabled = lambda style: pipelining_setting
        action._low_level_execute_command = shell.run
        action._execute_module = mock.Mock(return_value=dict(FALLBACK))
        action._remove_tmp_path = mock.Mock()
        return action, action.run(task_vars=task_vars or {})

    def test_a_sound_kept_copy_runs_with_the_arguments_on_standard_input(self):
        self.keep()
        shell = Shell()
        action, result = self.run_action(shell)
        # The action asks for live progress (refit_progress, on unless a play turns it off).
        wanted = {"name": "app", "state": "present", "_refit_progress": True}
        self.assertEqual(result["args"], dict(wanted, _ansible_check_mode=False))
        self.assertFalse(result["changed"])
        action._execute_module.assert_not_called()
        (cmd, stdin), = shell.commands
        self.assertTrue(cmd.startswith("LC_ALL=C /bin/sh -c "), cmd)
        self.assertIn(shlex.quote(self.kept)[1:-1], cmd)
        self.assertEqual(json.loads(stdin)["name"], "app")

    def test_no_kept_copy_takes_ansibles_path_naming_the_copy_to_keep(self):
        action, result = self.run_action()
        self.assertEqual(result, FALLBACK)
        args = action._execute_module.call_args.kwargs["module_args"]
        self.assertEqual(args["_refit_keep_as"], "container_unit-" + self.digest)
        self.assertEqual(args["name"], "app")
        action._remove_tmp_path.assert_called_once()

    def test_the_copy_is_named_by_the_binarys_own_hash(self):
        self.assertEqual(cached_binary.binary_digest(self.binary), self.digest)

    def test_a_binary_is_hashed_once_until_it_changes(self):
        rebuilt = MODULE + b"# rebuilt\n"
        rebuilt_digest = hashlib.sha256(rebuilt).hexdigest()
        with mock.patch.object(cached_binary.hashlib, "sha256", wraps=hashlib.sha256) as sha:
            for call in range(3):
                self.assertEqual(cached_binary.binary_digest(self.binary), self.digest, call)
            self.assertEqual(sha.call_count, 1)
            with open(self.binary, "wb") as f:
                f.write(rebuilt)
            self.assertEqual(cached_binary.binary_digest(self.binary), rebuilt_digest)
            self.assertEqual(sha.call_count, 2)

    def test_an_action_class_hashes_its_binary_where_it_is_defined(self):
        # As in a collection: plugins/action/NAME.py beside plugins/modules/NAME. Ansible's
        # strategy defines the class in the main process, so the workers it forks have the digest.
        plugins = os.path.join(self.tmp.name, "plugins")
        os.makedirs(os.path.join(plugins, "action"))
        os.makedirs(os.path.join(plugins, "modules"))
        binary = os.path.join(plugins, "modules", "stand_in")
        with open(binary, "wb") as f:
            f.write(MODULE)
        source = os.path.join(plugins, "action", "stand_in.py")
        with open(source, "w") as f:
            f.write("from refit_cached_binary import CachedBinaryAction\n\n\n"
                    "class ActionModule(CachedBinaryAction):\n    pass\n")
        spec = importlib.util.spec_from_file_location("refit_test_action_stand_in", source)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        self.addCleanup(sys.modules.pop, spec.name)
        with mock.patch.object(cached_binary.hashlib, "sha256", wraps=hashlib.sha256) as sha:
            spec.loader.exec_module(module)
            self.assertEqual(sha.call_count, 1)
            self.assertEqual(cached_binary.binary_digest(binary), self.digest)
            self.assertEqual(sha.call_count, 1)

    def test_a_copy_that_is_not_the_binary_is_refused_and_said_at_v(self):
        self.keep(b'#!/bin/sh\necho \'{"planted": true}\'\n')
        with mock.patch.object(cached_binary.display, "v") as v:
            action, result = self.run_action()
        self.assertEqual(result, FALLBACK)
        self.assertIn("SHA-256", v.call_args.args[0])
        self.assertNotIn("planted", result)

    def test_refit_kept_modules_false_never_asks_the_host(self):
        self.keep()
        shell = Shell()
        action, result = self.run_action(shell, task_vars={"refit_kept_modules": "false"})
        self.assertEqual(result, FALLBACK)
        self.assertEqual(shell.commands, [])

    def test_without_pipelining_the_arguments_cannot_go_on_standard_input(self):
        self.keep()
        for shell, setting in [
            (Shell(pipelining=False), True),
            (Shell(become=True), False),
        ]:
            action, result = self.run_action(shell, pipelining_setting=setting)
            self.assertEqual(result, FALLBACK)
            self.assertEqual(shell.commands, [])
        action, result = self.run_action(Shell(become=True), pipelining_setting=True)
        self.assertIn("args", result)

    def test_a_host_whose_shell_never_ran_takes_ansibles_path(self):
        self.keep()
        shell = Shell()
        shell.run = lambda cmd, sudoable=True, in_data=None: {"rc": 255, "stdout": "", "stderr": "gone"}
        action, result = self.run_action(shell)
        self.assertEqual(result, FALLBACK)


if __name__ == "__main__":
    unittest.main()
