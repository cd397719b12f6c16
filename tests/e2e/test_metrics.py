"""The Prometheus endpoint (metrics-port) against the real binary: the page
and its HTTP rules, protected mode and passwords over HTTP Basic auth, a
real Prometheus scraping it, and the shipped Grafana dashboard naming only
metrics the page has."""

import contextlib
import json
import sys
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

from harness import BloomgateServer, free_port, stop_process, wait_until
from metrics_support import basic, families, filter_series, http_get, samples

PROMETHEUS = shutil.which("prometheus")
OTHER_ADDRESS = "127.0.0.2"  # loopback traffic, but not an address protected mode serves
DASHBOARD = os.path.join(os.path.dirname(__file__), "..", "..", "docker",
                         "grafana-bloomgate.json")


def make_filters(r):
    """Filters of every family with health figures, windowed ones included."""
    r.execute_command("BF.RESERVE", "bf", "0.01", "1000")
    r.execute_command("BF.MADD", "bf", *(f"item-{i}" for i in range(300)))
    r.execute_command("CF.RESERVE", "cf", "1000")
    for i in range(50):
        r.execute_command("CF.ADD", "cf", f"item-{i}")
    r.execute_command("CBF.RESERVE", "cbf", "0.01", "1000")
    r.execute_command("CBF.MADD", "cbf", *(f"item-{i}" for i in range(20)))
    r.execute_command("BF.RESERVE", "win", "0.01", "1000", "WINDOW", "3600",
                      "GENERATIONS", "3")
    r.execute_command("BF.MADD", "win", *(f"item-{i}" for i in range(7)))
    r.execute_command("CBF.RESERVE", "cwin", "0.01", "1000", "WINDOW", "3600",
                      "GENERATIONS", "2")
    r.execute_command("CBF.MADD", "cwin", *(f"item-{i}" for i in range(5)))
    r.execute_command("CMS.INITBYDIM", "cms", "100", "4")
    r.execute_command("BF.ADD", 'we"ird\\key\nname', "x")


@contextlib.contextmanager
def running(server):
    """Stops a started server at the block's end, whatever happened in it."""
    try:
        yield server
    except BaseException:
        sys.stderr.write(f"\n--- bloomgate log (port {server.port}) ---\n{server.log()}\n")
        server.stop(check=False)
        raise
    server.stop()


class MetricsServer:
    """A BloomgateServer with a metrics port (retried if the port was taken)."""

    @staticmethod
    def start(args=(), password=None):
        for _attempt in range(3):
            port = free_port()
            server = BloomgateServer(["--metrics-port", port, *args], password=password)
            try:
                server.start()
            except AssertionError as e:
                if "address already in use" in str(e).lower():
                    continue
                raise
            return server, port
        raise AssertionError("no free metrics port in three tries")


class MetricsEndpoint(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server, cls.metrics_port = MetricsServer.start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def setUp(self):
        self.r = self.server.client()
        self.addCleanup(self.r.close)
        self.r.flushall()

    def test_the_page_has_server_and_filter_metrics(self):
        make_filters(self.r)
        status, fields, body = http_get(self.metrics_port)
        self.assertEqual(status, 200, body)
        self.assertEqual(fields["content-type"], "text/plain; version=0.0.4; charset=utf-8")
        self.assertEqual(fields["connection"], "close")
        self.assertEqual(int(fields["content-length"]), len(body.encode()))
        values = samples(body)
        self.assertEqual(values["redis_up"], 1)
        self.assertEqual(values['redis_db_keys{db="db0"}'], 7)
        self.assertGreaterEqual(values['redis_commands_total{cmd="bf.madd"}'], 1)
        self.assertEqual(families(body)["redis_commands_total"], "counter")
        self.assertEqual(values[filter_series("bloomgate_filter_items", "bf", "MBbloom--")], 300)
        self.assertEqual(values[filter_series("bloomgate_filter_capacity", "bf", "MBbloom--")],
                         1000)
        self.assertEqual(values[filter_series("bloomgate_filter_items", "cf", "MBbloomCF")], 50)
        self.assertEqual(values[filter_series("bloomgate_filter_items", "cbf", "BGcountBF")], 20)
        self.assertEqual(values[filter_series("bloomgate_filter_items", "win", "MBbloomW-")], 7)
        self.assertEqual(values[filter_series("bloomgate_filter_items", "cwin", "BGcountWB")], 5)
        self.assertEqual(
            values[filter_series("bloomgate_filter_items", 'we\\"ird\\\\key\\nname',
                                 "MBbloom--")], 1)
        # The same figures as BLOOMGATE.HEALTH.
        health = self.r.execute_command("BLOOMGATE.HEALTH", "bf")
        health = dict(zip(health[::2], health[1::2])) if isinstance(health, list) else health
        fp = values[filter_series("bloomgate_filter_estimated_error_rate", "bf", "MBbloom--")]
        self.assertGreater(fp, 0)
        self.assertAlmostEqual(fp / float(health[b"Estimated error rate"]), 1.0, places=6)
        generations = [name for name in values
                       if name.startswith('bloomgate_filter_generation_fill_ratio{key="win"')]
        self.assertGreaterEqual(len(generations), 1, body)
        usage = self.r.memory_usage("bf")
        self.assertEqual(values[filter_series("bloomgate_filter_memory_bytes", "bf", "MBbloom--")],
                         usage - len("bf"))

    def test_windowed_filters_show_each_live_generation(self):
        # A 0.5 s generation: probes go in until a second one holds items.
        self.r.execute_command("BF.RESERVE", "w", "0.01", "1000", "WINDOW", "1",
                               "GENERATIONS", "2")
        self.r.execute_command("BF.MADD", "w", "a", "b", "c")
        probes = iter(range(1_000_000))

        def two_generations():
            self.r.execute_command("BF.ADD", "w", f"probe-{next(probes)}")
            info = self.r.execute_command("BF.INFO", "w")
            info = dict(zip((k.decode() for k in info[0::2]), info[1::2]))
            live = [n for n in info["Generation items"] if n > 0]
            if len(live) < 2:
                return None
            values = samples(http_get(self.metrics_port)[2])
            series = {name: value for name, value in values.items()
                      if name.startswith('bloomgate_filter_generation_items{key="w",')}
            # Read back, so a generation change between the two reads retries.
            again = self.r.execute_command("BF.INFO", "w")
            again = dict(zip((k.decode() for k in again[0::2]), again[1::2]))
            return (live, series) if again["Generation items"] == info["Generation items"] \
                else None
        live, series = wait_until(two_generations, 10, interval_s=0.05,
                                  what="a windowed filter with two generations holding items")
        self.assertEqual(sorted(series.values()), sorted(float(n) for n in live), series)
        fills = [name for name in samples(http_get(self.metrics_port)[2])
                 if name.startswith('bloomgate_filter_generation_fill_ratio{key="w",')]
        self.assertGreaterEqual(len(fills), 2)

    def test_top_filters_bounds_the_per_filter_series(self):
        make_filters(self.r)
        self.assertEqual(self.r.config_get("metrics-top-filters"), {"metrics-top-filters": "100"})
        self.r.config_set("metrics-top-filters", "1")
        self.addCleanup(self.r.config_set, "metrics-top-filters", "100")
        values = samples(http_get(self.metrics_port)[2])
        items = [name for name in values if name.startswith("bloomgate_filter_items{")]
        self.assertEqual(len(items), 1, items)
        self.assertEqual(values["bloomgate_filters_reported"], 1)

    def test_metrics_port_is_start_up_only(self):
        self.assertEqual(self.r.config_get("metrics-port"),
                         {"metrics-port": str(self.metrics_port)})
        with self.assertRaisesRegex(Exception, "can't set immutable config"):
            self.r.config_set("metrics-port", "1")

    def test_other_paths_are_404_and_other_methods_405(self):
        self.assertEqual(http_get(self.metrics_port, "/")[0], 404)
        self.assertEqual(http_get(self.metrics_port, "/metrics/x")[0], 404)
        status, fields, _ = http_get(self.metrics_port, method="POST")
        self.assertEqual(status, 405)
        self.assertEqual(fields["allow"], "GET, HEAD")
        self.assertEqual(http_get(self.metrics_port, "/metrics?debug=1")[0], 200)

    def test_bad_and_oversized_requests_are_refused(self):
        self.assertEqual(http_get(self.metrics_port, raw=b"NOT HTTP\r\n\r\n")[0], 400)
        huge = b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 9000 + b"\r\n\r\n"
        self.assertEqual(http_get(self.metrics_port, raw=huge)[0], 431)

    def test_a_silent_client_is_closed_after_the_read_deadline(self):
        with socket.create_connection(("127.0.0.1", self.metrics_port), timeout=15) as sock:
            sock.sendall(b"GET /metrics HTTP/1.1\r\n")  # and never the end of the head
            started = time.monotonic()
            self.assertEqual(sock.recv(100), b"")
            waited = time.monotonic() - started
        self.assertGreater(waited, 4.0)
        self.assertLess(waited, 10.0)

    def test_protected_mode_refuses_other_addresses(self):
        status, _, body = http_get(self.metrics_port, source=OTHER_ADDRESS)
        self.assertEqual(status, 403)
        self.assertNotIn("redis_up", body)
        self.assertEqual(http_get(self.metrics_port)[0], 200)


class MetricsAuth(unittest.TestCase):

    def test_requirepass_needs_basic_auth_as_default(self):
        server, port = MetricsServer.start(["--requirepass", "s3cret"], password="s3cret")
        with running(server):
            status, fields, body = http_get(port)
            self.assertEqual(status, 401)
            self.assertEqual(fields["www-authenticate"], 'Basic realm="bloomgate"')
            self.assertNotIn("redis_up", body)
            self.assertEqual(http_get(port, headers=[basic("default", "wrong")])[0], 401)
            status, _, body = http_get(port, headers=[basic("default", "s3cret")])
            self.assertEqual(status, 200)
            self.assertIn("\nredis_up 1\n", body)
            # A password set: other addresses are judged by it, as on the RESP port.
            self.assertEqual(http_get(port, source=OTHER_ADDRESS,
                                      headers=[basic("default", "s3cret")])[0], 200)
            self.assertEqual(http_get(port, source=OTHER_ADDRESS)[0], 401)

    def test_acl_users_authenticate_with_their_own_password(self):
        server, port = MetricsServer.start(["--requirepass", "s3cret"], password="s3cret")
        with running(server):
            r = server.client()
            r.execute_command("ACL", "SETUSER", "prom", "on", ">scrape", "~*", "+info")
            r.execute_command("ACL", "SETUSER", "edge", "on", ">edge", "~edge:*", "+@all")
            r.close()
            self.assertEqual(http_get(port, headers=[basic("prom", "scrape")])[0], 200)
            self.assertEqual(http_get(port, headers=[basic("prom", "s3cret")])[0], 401)
            # Not every key: the page names the largest keys, so no.
            self.assertEqual(http_get(port, headers=[basic("edge", "edge")])[0], 403)


@unittest.skipUnless(PROMETHEUS, "prometheus is not installed (scripts/install-deps.sh --test)")
class PrometheusScrape(unittest.TestCase):
    """Debian's prometheus scrapes the endpoint every second; its HTTP API
    must then answer with our values."""

    def start_prometheus(self, target_port, auth=None):
        tmp = tempfile.TemporaryDirectory(prefix="bloomgate-prometheus-")
        self.addCleanup(tmp.cleanup)
        job = {"job_name": "bloomgate", "scrape_interval": "1s", "scrape_timeout": "1s",
               "static_configs": [{"targets": [f"127.0.0.1:{target_port}"]}]}
        if auth:
            job["basic_auth"] = {"username": auth[0], "password": auth[1]}
        config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                  "scrape_configs": [job]}
        config_path = os.path.join(tmp.name, "prometheus.yml")
        with open(config_path, "w") as f:
            json.dump(config, f)  # JSON is YAML
        log = open(os.path.join(tmp.name, "prometheus.log"), "wb")
        self.addCleanup(log.close)
        port = free_port()
        proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config_path}",
             f"--storage.tsdb.path={os.path.join(tmp.name, 'data')}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

        self.addCleanup(stop_process, proc, 15)
        self.prometheus_log = log.name
        return port

    def query(self, port, expr):
        url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                reply = json.load(response)
        except OSError:
            return None
        if reply.get("status") != "success":
            return None
        return {json.dumps(r["metric"], sort_keys=True): float(r["value"][1])
                for r in reply["data"]["result"]}

    def wait_for(self, port, expr, want):
        def matched():
            result = self.query(port, expr)
            return result if result and sorted(result.values()) == sorted(want) else None
        try:
            return wait_until(matched, 60, interval_s=0.25, what=f"Prometheus to answer {expr}")
        except AssertionError:
            with open(self.prometheus_log, "rb") as f:
                log = f.read()[-4000:].decode("utf-8", "replace")
            raise AssertionError(f"{expr}: last answer {self.query(port, expr)}, wanted {want}"
                                 f"\n--- prometheus log ---\n{log}")

    def test_prometheus_scrapes_the_filter_metrics(self):
        server, metrics_port = MetricsServer.start(["--requirepass", "s3cret"],
                                                   password="s3cret")
        with running(server):
            r = server.client()
            self.addCleanup(r.close)
            make_filters(r)
            port = self.start_prometheus(metrics_port, auth=("default", "s3cret"))
            self.wait_for(port, 'up{job="bloomgate"}', [1])
            self.wait_for(port, 'bloomgate_filter_items{key="bf"}', [300])
            self.wait_for(port, 'bloomgate_filter_items{key="win",type="MBbloomW-"}', [7])
            page = samples(http_get(metrics_port, headers=[basic("default", "s3cret")])[2])
            slots = page[filter_series("bloomgate_filter_capacity", "cf", "MBbloomCF")]
            self.wait_for(port, 'bloomgate_filter_capacity{key="cf"}', [slots])
            self.wait_for(port, 'sum(bloomgate_filter_generation_items{key="win"})', [7])
            self.wait_for(port, 'redis_db_keys{db="db0"}', [7])
            # A later add shows at a later scrape.
            r.execute_command("BF.MADD", "bf", *(f"more-{i}" for i in range(100)))
            self.wait_for(port, 'bloomgate_filter_items{key="bf"}', [400])


class GrafanaDashboard(unittest.TestCase):
    """docker/grafana-bloomgate.json is built only on metrics the endpoint emits."""

    def test_every_metric_the_dashboard_queries_is_on_the_page(self):
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
        exprs = []

        def walk(node):
            if isinstance(node, dict):
                for key, value in node.items():
                    if key in ("expr", "query") and isinstance(value, str):
                        exprs.append(value)
                    else:
                        walk(value)
            elif isinstance(node, list):
                for item in node:
                    walk(item)
        walk(dashboard)
        self.assertGreater(len(exprs), 10)
        names = set()
        for expr in exprs:
            names.update(re.findall(r"\b((?:redis|bloomgate)_[a-z_]+)\b", expr))
        self.assertGreater(len(names), 10)
        server, port = MetricsServer.start()
        with running(server):
            r = server.client()
            make_filters(r)
            r.close()
            body = http_get(port)[2]
        emitted = families(body)
        missing = sorted(names - set(emitted))
        self.assertEqual(missing, [], f"the dashboard queries metrics the page lacks")
        # And each has samples once filters of every family exist.
        present = {name.split("{")[0] for name in samples(body)}
        self.assertEqual(sorted(names - present), [])


if __name__ == "__main__":
    unittest.main()
