"""The fleet's waves (plugins/filter/waves.py): the play header's hosts and serial."""

import unittest

from ansible.errors import AnsibleFilterError

from repo_paths import load

waves = load("plugins/filter/waves.py", "refit_waves")


class PlayHosts(unittest.TestCase):
    def test_no_canary_or_a_count_keeps_the_hosts(self):
        self.assertEqual(waves.play_hosts("", "all"), "all")
        self.assertEqual(waves.play_hosts(None, "web"), "web")
        self.assertEqual(waves.play_hosts(3, "web"), "web")
        self.assertEqual(waves.play_hosts("3", "web"), "web")

    def test_a_pattern_goes_first(self):
        self.assertEqual(waves.play_hosts("canaries", "all"), "canaries:all")
        self.assertEqual(waves.play_hosts(" th1 ", "all"), "th1:all")


class SerialWaves(unittest.TestCase):
    def test_without_a_canary_the_serial_is_ansibles_own(self):
        self.assertEqual(waves.serial_waves("100%"), "100%")
        self.assertEqual(waves.serial_waves("1"), 1)
        self.assertEqual(waves.serial_waves(3), 3)
        self.assertEqual(waves.serial_waves([1, "50%"]), [1, "50%"])
        self.assertEqual(waves.serial_waves(""), "100%")

    def test_a_counted_canary_is_the_first_wave(self):
        self.assertEqual(waves.serial_waves(3, "1"), [1, 3])
        self.assertEqual(waves.serial_waves("100%", 2), [2, "100%"])
        self.assertEqual(waves.serial_waves([1, "50%"], 2), [2, 1, "50%"])

    def test_a_pattern_canary_counts_the_hosts_it_matched(self):
        self.assertEqual(waves.serial_waves(3, "web", ["th1", "th2"]), [2, 3])

    def test_a_canary_of_no_host_stops_the_run_by_name(self):
        for canary, matched in (("0", []), ("nomatch", []), ("nomatch", None)):
            with self.assertRaisesRegex(AnsibleFilterError, "refit_canary_hosts"):
                waves.serial_waves(3, canary, matched)

    def test_a_serial_that_is_no_batch_size_is_refused_by_name(self):
        for serial in ("0", "-1", "abc", "{{ x }}", "1.5", "[1,2]", ["1", "x"], "0%"):
            with self.assertRaisesRegex(AnsibleFilterError, "refit_serial"):
                waves.serial_waves(serial)


class Canaries(unittest.TestCase):
    def test_the_first_hosts_of_the_play(self):
        hosts = ["th1", "th2", "th3"]
        self.assertEqual(waves.canaries(hosts, "2"), ["th1", "th2"])
        self.assertEqual(waves.canaries(hosts, "web", ["th3"]), ["th1"])
        self.assertEqual(waves.canaries(hosts, ""), [])


if __name__ == "__main__":
    unittest.main()
