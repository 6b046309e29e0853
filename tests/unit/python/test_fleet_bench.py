"""bench/fleet_bench.py's table: written from the figures alone, so bench/FLEET.md is what its
own FLEET.json renders to, and the growth it states is the arithmetic of those figures."""

import json
import os
import unittest

from repo_paths import REPO, load

fleet = load("bench/fleet_bench.py", "refit_fleet_bench")


def cost(wall, host_cpu, controller, sent):
    """One way's no-op cost at one fleet size: a run's figures, each a one-element list."""
    return {
        "wall": [wall],
        "calls": [2],
        "task_seconds": [0.5],
        "host_cpu": [host_cpu],
        "controller_cpu_per_host": [controller],
        "ssh": {"sent": sent, "connections": 4},
    }


class FleetTable(unittest.TestCase):
    def test_the_committed_table_is_what_its_figures_render_to(self):
        with open(os.path.join(REPO, "bench/FLEET.json")) as f:
            figures = json.load(f)
        with open(os.path.join(REPO, "bench/FLEET.md")) as f:
            self.assertEqual(fleet.render(figures), f.read())

    def test_growth_is_the_ratio_of_the_medians_from_1_to_10_hosts(self):
        figures = {
            "noop": {"1/5": [2.0, 4.0, 3.0], "10/5": [9.0], "10/10": [6.0]},
            "zstream": {"waves of 3": [30.0]},
            "deploy_10": 41.25,
            "cost": {
                "refit": {"1": cost(3.0, 0.5, 1.0, 20000), "10": cost(6.0, 1.0, 0.5, 300000)},
                "fm": {"1": cost(9.0, 2.0, 4.0, 90000), "10": cost(30.0, 8.0, 3.0, 1500000)},
            },
        }
        text = fleet.render(figures)
        self.assertIn("median of 3 runs", text)
        self.assertIn("| no-op update | 1 | 5 | 3.00 s |", text)
        self.assertIn("3.00x at forks 5, 2.00x at forks 10 (1 host: 3.00 s)", text)
        self.assertIn("The deploy of the 10 hosts took 41.2 s", text)
        self.assertIn("refit's host CPU per host went 0.50 s to 1.00 s (2.00x)", text)
        self.assertIn("the foremanctl way's 2.00 s to 8.00 s (4.00x)", text)
        self.assertIn("refit sent 30.0 KB per host against 150.0 KB", text)
        self.assertIn("| 10 | (a) foremanctl way | 30.00 s | 2 | 8.00 s | 3.00 s | 0.50 s | 150.0 KB | 0.4 |", text)


if __name__ == "__main__":
    unittest.main()
