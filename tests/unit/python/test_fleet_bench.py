"""bench/fleet_bench.py's table: written from the figures alone, so bench/FLEET.md is what its
own FLEET.json renders to, and the growth it states is the arithmetic of those figures."""

import json
import os
import unittest

from repo_paths import REPO, load

fleet = load("bench/fleet_bench.py", "refit_fleet_bench")


def cost(wall, host_cpu, controller, sent, host_cpu_run=None):
    """One way's no-op cost at one fleet size: a run's figures, each a one-element list; with
    `host_cpu_run`, the run's share of the host CPU, as measured since the idle window."""
    figures = {
        "wall": [wall],
        "calls": [2],
        "task_seconds": [0.5],
        "host_cpu": [host_cpu],
        "controller_cpu_per_host": [controller],
        "ssh": {"sent": sent, "connections": 4},
    }
    if host_cpu_run is not None:
        figures["host_cpu_run"] = [host_cpu_run]
    return figures


def figures_with(cost_of):
    """A fleet run's figures whose no-op costs are `cost_of(way, hosts)`."""
    return {
        "noop": {"1/5": [2.0, 4.0, 3.0], "1/1": [3.0], "10/5": [6.0], "10/10": [6.0], "30/5": [9.0], "30/30": [7.5]},
        "floor": {"1": [1.0], "10": [2.0], "30": [4.0]},
        "zstream": {"1/waves of 3": [4.0], "10/waves of 3": [12.0], "30/waves of 3": [40.0],
                    "30/canary 1, then waves of 3": [44.0]},
        "deploy": 41.25,
        "memory_mb": {"fl1": 30.0, "fl2": 50.0, "fl3": 40.0},
        "load": [1.5, 2.25],
        "cores": 2,
        "cost": {way: {n: cost_of(way, n) for n in ("1", "10", "30")} for way in ("refit", "fm")},
    }


class FleetTable(unittest.TestCase):
    def test_the_committed_table_is_what_its_figures_render_to(self):
        with open(os.path.join(REPO, "bench/FLEET.json")) as f:
            figures = json.load(f)
        with open(os.path.join(REPO, "bench/FLEET.md")) as f:
            self.assertEqual(fleet.render(figures), f.read())

    def test_growth_is_the_ratio_of_the_medians_to_1_host_and_per_host_cost_from_10_to_30(self):
        costs = {
            "refit": {"1": cost(3.0, 0.5, 1.0, 20000), "10": cost(6.0, 1.0, 0.5, 300000),
                      "30": cost(7.0, 1.0, 0.4, 900000)},
            "fm": {"1": cost(9.0, 2.0, 4.0, 90000), "10": cost(30.0, 8.0, 3.0, 1500000),
                   "30": cost(90.0, 8.0, 3.0, 4500000)},
        }
        figures = figures_with(lambda way, n: costs[way][n])
        text = fleet.render(figures)
        self.assertIn("median of 3 runs", text)
        self.assertIn("Hosts fl1..fl3 beside the bed", text)
        self.assertIn("took 40 MB (median; 30 to 50 MB, 0.12 GB in all", text)
        self.assertIn("as the run began and ended: 1.5 and 2.2", text)
        self.assertIn("| no-op update | 1 | 5 | 3.00 s | 1.00 |", text)
        self.assertIn("| no-op update | 30 | 30 | 7.50 s | 2.50 |", text)
        self.assertIn("| z-stream of one service, waves of 3 | 30 | 30 | 40.00 s | 10.00 |", text)
        self.assertIn("3.00x at forks 5, 2.50x at forks 30 (1 host: 3.00 s)", text)
        self.assertIn("The deploy of the 30 hosts took 41.2 s", text)
        self.assertIn("| Ansible's floor: one task, one round trip per host (`raw: true`) | 30 | 30 | 4.00 s | 4.00 |", text)
        self.assertIn("Ansible's floor grew 4.00x from 1 to 30 hosts; refit's no-op (forks = hosts) took 3.50 s "
                      "beyond it over 30 hosts and 2.00 s over 1.", text)
        self.assertIn("From 10 to 30 hosts, refit's host CPU per host went 1.00 s to 1.00 s (1.00x)", text)
        self.assertIn("its controller CPU per host 0.50 s to 0.40 s (0.80x)", text)
        self.assertIn("the foremanctl way's 8.00 s to 8.00 s (1.00x)", text)
        self.assertIn("refit sent 30.0 KB per host against 150.0 KB", text)
        self.assertIn("| 10 | (a) foremanctl way | 30.00 s | 2 | 8.00 s | 3.00 s | 0.50 s | 150.0 KB | 0.4 |", text)

    def test_a_runs_host_cpu_is_its_share_beside_the_cgroups_use_and_its_growth_is_of_that_share(self):
        run = {"1": 0.1, "10": 0.2, "30": 0.1}
        text = fleet.render(figures_with(lambda way, n: cost(6.0, 0.5, 0.4, 9000, host_cpu_run=run[n])))
        self.assertIn("less what the host used per second over a minute of doing nothing", text)
        self.assertIn("| 30 | refit | 6.00 s | 2 | 0.10 s (0.50 s) | 0.40 s |", text)
        self.assertIn("refit's host CPU per host for the run went 0.20 s to 0.10 s (0.50x)", text)


if __name__ == "__main__":
    unittest.main()
