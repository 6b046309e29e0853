"""The probes (tools/probes/downtime.py, probe.py, clients.py), which the bench, the demo and the
integration tests measure downtime with: their arithmetic, and what they make of a real server
on loopback that answers, answers wrongly, or is not there."""

import http.server
import socket
import threading
import unittest

from repo_paths import load

downtime = load("tools/probes/downtime.py", "refit_probe_downtime")
probe = load("tools/probes/probe.py", "refit_probe_probe")
clients = load("tools/probes/clients.py", "refit_probe_clients")


class Downtime(unittest.TestCase):
    def test_a_gap_runs_from_the_first_miss_to_the_next_answer(self):
        log = [
            "0 2 2 1.0 1.0",
            "20 1 2 - 1.0",
            "40 1 2 - 1.0",
            "60 2 2 1.1 1.0",
        ]
        self.assertEqual(downtime.downtime(log, 2), [(40, 1), (0, 0)])

    def test_gaps_add_up_and_an_open_gap_ends_with_the_log(self):
        log = [
            "0 1 1 1.0",
            "20 0 1 -",
            "40 1 1 1.0",
            "60 0 1 -",
            "100 0 1 -",
        ]
        self.assertEqual(downtime.downtime(log, 1), [(20 + 40, 2)])

    def test_a_torn_line_is_skipped(self):
        # The bench reads the log while the probe writes it: the last line may be cut short.
        self.assertEqual(downtime.downtime(["0 1 2 1.0 1.0", "20 1 2 -"], 2), [(0, 0), (0, 0)])


class Handler(http.server.BaseHTTPRequestHandler):
    status = 200
    body = b"1.0.5\n"

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(self.status if self.path == "/version" else 404)
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


def serve(testcase, status=200):
    """An HTTP server on a free loopback port, answering /version; stopped at the test's end."""
    handler = type("H", (Handler,), {"status": status})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    testcase.addCleanup(thread.join, 5)
    testcase.addCleanup(server.server_close)
    testcase.addCleanup(server.shutdown)
    return server.server_address[1]


def closed_port():
    """A loopback port nothing listens on: bound, then released."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ProbeVersion(unittest.TestCase):
    def test_an_answer_is_the_version_it_serves(self):
        self.assertEqual(probe.version(serve(self), 1.0), "1.0.5")

    def test_no_listener_and_an_error_status_are_no_answer(self):
        self.assertEqual(probe.version(closed_port(), 1.0), "-")
        self.assertEqual(probe.version(serve(self, status=503), 1.0), "-")


class ClientsRequest(unittest.TestCase):
    def test_ok_with_the_version(self):
        outcome, ms, version = clients.request(serve(self))
        self.assertEqual((outcome, version), ("ok", "1.0.5"))
        self.assertGreaterEqual(ms, 0)

    def test_refused_when_nothing_listens(self):
        self.assertEqual(clients.request(closed_port())[0], "refused")

    def test_an_error_status_is_a_failure_that_says_so(self):
        outcome, _latency, why = clients.request(serve(self, status=500))
        self.assertEqual((outcome, why), ("failed", "not a 200"))


class ClientsSummary(unittest.TestCase):
    def test_counts_percentiles_and_the_longest_outage(self):
        port = clients.Port(8080)
        port.results = [
            (0, "ok", 2.0, "1.0"),
            (10, "refused", 0.1, ""),
            (20, "failed", 5.0, "ConnectionResetError"),
            (30, "ok", 4.0, "1.1"),
            (40, "ok", 3.0, "1.1"),
        ]
        summary = clients.Port.summary(port)
        self.assertEqual((summary["requests"], summary["ok"], summary["refused"], summary["failed"]), (5, 3, 1, 1))
        self.assertEqual(summary["failures"], {"ConnectionResetError": 1})
        self.assertEqual(summary["versions"], {"1.0": 1, "1.1": 2})
        self.assertEqual(summary["last_version"], "1.1")
        # From the first request that did not succeed (10 ms) to the end of the next success
        # (started at 30 ms, 4 ms long).
        self.assertEqual(summary["outage_ms"], 24.0)
        self.assertEqual((summary["p50_ms"], summary["max_ms"]), (3.0, 4.0))

    def test_no_success_gives_zeros_not_an_error(self):
        port = clients.Port(8080)
        port.results = [(0, "refused", 0.1, "")]
        summary = port.summary()
        self.assertEqual((summary["p50_ms"], summary["max_ms"], summary["last_version"]), (0.0, 0.0, ""))


if __name__ == "__main__":
    unittest.main()
