# Copyright: refit contributors
# Apache-2.0 (see LICENSE)
"""The kept-copy snippet (plugins/plugin_utils/kept_copy.py, run by cached_binary.py) run by a
real /bin/sh against real files: only a sound copy runs; a planted symlink, a copy with the
wrong hash, one in a dir others can write and one others can write are each refused with a
reason. Plain Python, no Ansible, no root: `python3 -m unittest discover -s tests/unit/python`.
"""

import hashlib
import importlib.util
import os
import pathlib
import subprocess
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[3]
SPEC = importlib.util.spec_from_file_location("kept_copy", ROOT / "plugins/plugin_utils/kept_copy.py")
kept_copy = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(kept_copy)

# A stand-in module: reads its arguments from standard input, as a kept copy is run, and says so.
MODULE = b'#!/bin/sh\nread -r args\necho "{\\"ran\\": true, \\"args\\": $args}"\n'
PLANTED = b'#!/bin/sh\necho "{\\"planted\\": true}"\n'


class KeptCopySnippet(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name) / "modules"
        self.dir.mkdir(mode=0o700)
        os.chmod(self.dir, 0o700)
        self.digest = hashlib.sha256(MODULE).hexdigest()
        self.copy = self.dir / ("mod-" + self.digest)

    def tearDown(self):
        os.chmod(self.dir, 0o700)
        self.tmp.cleanup()

    def put(self, path, data, mode=0o700):
        path.write_bytes(data)
        os.chmod(path, mode)

    def host_says(self):
        script = kept_copy.kept_script("mod", self.digest, cache_dir=str(self.dir))
        out = subprocess.run(
            ["/bin/sh", "-c", script], input=b'{"a": 1}\n', capture_output=True, timeout=30, check=True
        )
        return kept_copy.answer(out.stdout.decode())

    def assert_refused(self, because):
        said, reason = self.host_says()
        self.assertEqual(said, "refused", reason)
        self.assertIn(because, reason)
        self.assertTrue(reason.startswith(str(self.copy)), reason)

    def test_no_copy_is_told_apart(self):
        self.assertEqual(self.host_says(), ("not_kept", None))

    def test_a_sound_copy_runs_with_the_arguments_on_standard_input(self):
        self.put(self.copy, MODULE)
        said, out = self.host_says()
        self.assertEqual(said, "ran")
        self.assertEqual(out.strip(), '{"ran": true, "args": {"a": 1}}')

    def test_a_planted_symlink_is_not_run(self):
        target = pathlib.Path(self.tmp.name) / "planted"
        self.put(target, PLANTED)
        os.symlink(target, self.copy)
        self.assert_refused("it is a symlink")

    def test_a_symlink_to_the_very_binary_is_not_run_either(self):
        target = pathlib.Path(self.tmp.name) / "same"
        self.put(target, MODULE)
        os.symlink(target, self.copy)
        self.assert_refused("it is a symlink")

    def test_a_copy_with_the_wrong_hash_is_not_run(self):
        self.put(self.copy, PLANTED)
        self.assert_refused("its SHA-256 is not the one its name says")

    def test_a_copy_in_a_dir_others_can_write_is_not_run(self):
        self.put(self.copy, MODULE)
        os.chmod(self.dir, 0o777)
        self.assert_refused("writable by others")

    def test_a_copy_its_group_can_write_is_not_run(self):
        self.put(self.copy, MODULE, mode=0o770)
        self.assert_refused("writable by others")

    def test_a_dir_in_place_of_the_copy_is_not_run(self):
        self.copy.mkdir()
        self.assert_refused("not a regular file")

    @unittest.skipUnless(os.geteuid() == 0, "a file of another user needs root to make")
    def test_a_copy_of_another_user_is_not_run(self):
        self.put(self.copy, MODULE)
        os.chown(self.copy, 65534, 65534)
        self.assert_refused("not owned by the user")


class Answers(unittest.TestCase):
    def test_output_without_the_lookup_line_never_reached_the_shell(self):
        self.assertEqual(kept_copy.answer("ssh: connect refused"), ("unreached", None))

    def test_a_module_s_output_is_passed_on(self):
        said, out = kept_copy.answer(kept_copy.STARTED + "\n{\"changed\": false}\n")
        self.assertEqual((said, out), ("ran", '{"changed": false}\n'))

    def test_the_script_quotes_what_it_is_given(self):
        script = kept_copy.kept_script("mod", "ab", cache_dir="/x y/$(id)")
        self.assertIn("d='/x y/$(id)'", script)


if __name__ == "__main__":
    unittest.main()
