"""Debian's prometheus-redis-exporter against the real binary: every scrape
sends CLIENT SETNAME, CONFIG GET *, INFO ALL, LATENCY LATEST, SLOWLOG LEN and
SLOWLOG GET 1 (seen on the wire with 1.45.0), and logs any command that fails.
The standard metrics must appear and the exporter's log must hold no error."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest
import urllib.request

from harness import ServerTestCase, free_port, stop_process, wait_until

EXPORTER = shutil.which("prometheus-redis-exporter")


def metric_values(text):
    """Prometheus text -> {metric name with labels: float}."""
    values = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        values[name] = float(value)
    return values


@unittest.skipUnless(EXPORTER, "prometheus-redis-exporter is not installed "
                     "(scripts/install-deps.sh --test)")
class ExporterTest(ServerTestCase):
    # Every command enters SLOWLOG; a 1 ms LATENCY threshold and one big
    # filter creation give LATENCY LATEST a "command" event (see below).
    server_args = ("--slowlog-log-slower-than", "0", "--latency-monitor-threshold", "1")

    def start_exporter(self):
        port = free_port()
        tmp = tempfile.TemporaryDirectory(prefix="bloomgate-exporter-")
        self.addCleanup(tmp.cleanup)
        log_path = os.path.join(tmp.name, "exporter.log")
        log = open(log_path, "wb")
        self.addCleanup(log.close)
        proc = subprocess.Popen(
            [EXPORTER, "--redis.addr", f"redis://127.0.0.1:{self.port}",
             "--web.listen-address", f"127.0.0.1:{port}", "--log-format", "txt"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

        self.addCleanup(stop_process, proc, 10)
        return port, log_path

    def scrape(self, port):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            return response.read().decode()

    def first_scrape(self, port):
        """The first scrape that answers, once the exporter is up."""
        def scraped():
            try:
                return self.scrape(port)
            except OSError:
                return None
        return wait_until(scraped, 10, interval_s=0.05, what="the exporter's /metrics")

    def test_a_scrape_reports_the_standard_metrics_and_logs_no_error(self):
        self.r.execute_command("BF.ADD", "k", "a")
        self.r.execute_command("CF.ADD", "c", "a")
        # A latency event: 100,000 adds in one command, each touching a random
        # line of an 18 MB filter, take 10 ms or more, well over the 1 ms
        # threshold. (Creating the filter no longer does: big arrays are
        # fresh pages the kernel zeroes on first touch.)
        self.r.execute_command("BF.RESERVE", "big", "0.001", "10000000")
        self.r.execute_command("BF.MADD", "big", *(f"item-{i}" for i in range(100000)))
        try:
            self.r.execute_command("BF.RESERVE", "k", "0.01", "10")
        except Exception:
            pass  # "ERR item exists": an error for errorstats
        port, log_path = self.start_exporter()
        self.first_scrape(port)
        text = self.scrape(port)  # a second scrape: every per-scrape command ran twice
        values = metric_values(text)
        expected = [
            "redis_up", "redis_connected_clients", "redis_memory_used_bytes",
            "redis_memory_max_bytes", "redis_config_maxmemory", "redis_commands_processed_total",
            'redis_db_keys{db="db0"}', "redis_slowlog_length", "redis_slowlog_last_id",
            "redis_rdb_last_save_timestamp_seconds", "redis_rdb_last_bgsave_status",
            "redis_aof_enabled", "redis_mem_fragmentation_ratio",
            "redis_memory_used_peak_bytes",
            'redis_errors_total{err="ERR"}', 'redis_commands_total{cmd="bf.add"}',
            'redis_latency_spike_duration_seconds{event_name="command"}',
        ]
        missing = [name for name in expected if name not in values]
        self.assertEqual(missing, [], f"metrics missing from the scrape:\n{text}")
        self.assertEqual(values["redis_up"], 1)
        self.assertEqual(values['redis_db_keys{db="db0"}'], 3)
        self.assertGreater(values["redis_slowlog_length"], 0)
        self.assertEqual(values["redis_config_maxmemory"], values["redis_memory_max_bytes"])
        self.assertGreaterEqual(values['redis_errors_total{err="ERR"}'], 1)
        self.assertEqual(values.get('redis_exporter_last_scrape_error{err=""}'), 0, text)
        # The exporter leaves rates to Prometheus; INFO has Redis's own.
        info = self.r.info("stats")
        for field in ("instantaneous_ops_per_sec", "instantaneous_input_kbps",
                      "instantaneous_output_kbps", "total_error_replies"):
            self.assertIn(field, info)
        with open(log_path) as f:
            log = f.read()
        errors = [line for line in log.splitlines()
                  if re.search(r"level=(error|warning)", line)]
        self.assertEqual(errors, [], f"the exporter logged errors:\n{log}")


if __name__ == "__main__":
    unittest.main()
