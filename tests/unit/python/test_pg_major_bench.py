"""bench/pg_major_bench.py's section 8: rendered from the records alone, saying how many runs
each row holds and where the sizes ran, and put in place of RESULTS.md's section 8 only."""

import unittest

from repo_paths import load

pg = load("bench/pg_major_bench.py", "refit_pg_major_bench")


def record(mb, host, way, downs):
    """One way at one size: a run per database downtime in `downs` (ms)."""
    runs = [{"wall_s": 10.0, "answering_s": 12.0, "db_down_ms": d, "api_down_ms": 2 * d, "load": [1.0, 3.0],
             "peak_kb": 2048, "new_kb": 1024, "old_kb": 1024} for d in downs]
    return {"db_mb": mb, "rows": 1, "host": host, "method": way, "runs": runs}


class Section(unittest.TestCase):
    def test_rows_hold_the_medians_and_the_heading_the_counts_of_runs(self):
        lines = pg.render_pg_major({"40/a": record(41, "th1", "a", [1000, 3000, 2000]),
                                    "300/a": record(301, "th2", "a", [5000, 7000])})
        self.assertIn("median of 2 to 3 runs", lines[1])
        self.assertIn("each on its own test host of one bed (th1, th2)", lines[3])
        self.assertIn("| 41 MB | a | 2.0 s (1.0, 3.0, 2.0) | 4.0 s (2.0, 6.0, 4.0) |", lines[-2])
        self.assertIn("| 301 MB | a | 6.0 s (5.0, 7.0) |", lines[-1])

    def test_one_host_and_one_count_say_neither(self):
        lines = pg.render_pg_major({"40/a": record(41, "th1", "a", [1000])})
        self.assertIn("median of 1 runs", lines[1])
        self.assertNotIn("own test host", lines[3])

    def test_splice_replaces_section_8_only(self):
        text = "# t\n\n## 7. seven\n\nold 7\n\n## 8. eight\n\nold 8\n\n## The no-op\n\nkept\n"
        new = pg.splice(text, ["", "## 8. new", "", "new 8"])
        self.assertEqual(new, "# t\n\n## 7. seven\n\nold 7\n\n## 8. new\n\nnew 8\n\n## The no-op\n\nkept\n")

    def test_splice_of_a_last_section(self):
        new = pg.splice("# t\n\n## 8. eight\n\nold\n", ["", "## 8. new", "", "row"])
        self.assertEqual(new, "# t\n\n## 8. new\n\nrow\n")


if __name__ == "__main__":
    unittest.main()
