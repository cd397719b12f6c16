"""BLOOMGATE.HEALTH, INFO filterhealth and the log warning when a
non-scaling filter reaches its capacity (docs/operating/monitoring.md, "Filter health"), against
the real server. BF.INFO's RedisBloom reply stays as it was."""

import unittest

from harness import RespError, ServerTestCase, parse_info


def as_dict(reply):
    """A RESP2 flat [name, value, ...] reply as a dict of str -> value."""
    return {(k.decode() if isinstance(k, bytes) else str(k)): v
            for k, v in zip(reply[0::2], reply[1::2])}


class HealthTest(ServerTestCase):
    def health(self, key):
        reply = self.raw().call("BLOOMGATE.HEALTH", key)
        self.assertNotIsInstance(reply, RespError, reply)
        health = as_dict(reply)
        health["Layers"] = [as_dict(layer) for layer in health["Layers"]]
        return health

    def fill_non_scaling(self, key, capacity):
        c = self.raw()
        self.assertEqual(c.call("BF.RESERVE", key, "0.01", capacity, "NONSCALING"), "OK")
        i = 0
        while True:
            reply = c.call("BF.ADD", key, f"item:{i}")
            if isinstance(reply, RespError):
                self.assertEqual(reply, "ERR non scaling filter is full")
                return
            i += 1

    def test_a_full_non_scaling_filter_reports_its_fill_and_rate_and_warns_once(self):
        self.fill_non_scaling("ns", 2000)
        h = self.health("ns")
        self.assertEqual(h["Type"], "MBbloom--")
        self.assertEqual((h["Capacity"], h["Items"], h["Scaling"], h["Full"]), (2000, 2000, 0, 1))
        self.assertEqual(float(h["Error rate"]), 0.01)
        layer, = h["Layers"]
        self.assertEqual(layer["Sampled"], 0)
        fill = float(layer["Fill ratio"])
        self.assertAlmostEqual(fill, layer["Cells set"] / layer["Cells"], places=9)
        self.assertTrue(0.35 < fill < 0.65, f"fill {fill} of a Bloom filter at its capacity")
        now = float(h["Estimated error rate"])
        self.assertTrue(0.004 < now < 0.02, f"estimated error rate {now} at the design load")
        log = self.server.log()
        self.assertEqual(log.count("the non-scaling filter 'ns' reached its capacity of 2000"), 1,
                         log[-2000:])

    def test_a_filter_over_the_scan_budget_is_sampled(self):
        c = self.raw()
        # ~24 MB of bits, over the 16 MiB a request may read.
        self.assertEqual(c.call("BF.RESERVE", "big", "0.01", "20000000"), "OK")
        h = self.health("big")
        self.assertEqual(h["Layers"][0]["Sampled"], 1)
        self.assertLessEqual(h["Bytes scanned"], 16 << 20)
        self.assertEqual(h["Layers"][0]["Cells set"], 0)

    def test_counting_and_cuckoo_filters_report_counters_and_load(self):
        c = self.raw()
        for _ in range(16):  # 4-bit counters saturate at 15
            self.assertNotIsInstance(c.call("CBF.ADD", "cbf", "hot"), RespError)
        h = self.health("cbf")
        self.assertGreater(h["Saturated counters"], 0)
        self.assertEqual(h["Saturated counters"], h["Layers"][0]["Saturated counters"])
        self.assertEqual(c.call("CF.RESERVE", "cf", "1024", "BUCKETSIZE", "2"), "OK")
        for i in range(256):
            self.assertEqual(c.call("CF.ADD", "cf", f"i{i}"), 1)
        h = self.health("cf")
        self.assertEqual(h["Type"], "MBbloomCF")
        self.assertEqual(float(h["Layers"][0]["Fill ratio"]), 0.25)
        self.assertAlmostEqual(float(h["Estimated error rate"]), 0.25 * 4 / 255, places=9)

    def test_a_t_digest_reports_its_centroid_slots_and_rank_error_bounds(self):
        c = self.raw()
        self.assertEqual(c.call("TDIGEST.CREATE", "td", "COMPRESSION", "100"), "OK")
        n = 20000
        values = [(i * 7919) % n for i in range(n)]  # 0..n-1, shuffled
        for start in range(0, n, 1000):
            self.assertEqual(c.call("TDIGEST.ADD", "td", *values[start:start + 1000]), "OK")
        answers = c.call("TDIGEST.QUANTILE", "td", "0.5", "0.9", "0.99")  # compresses
        h = self.health("td")
        self.assertEqual(h["Type"], "TDIS-TYPE")
        self.assertEqual((h["Capacity"], h["Scaling"], h["Full"]), (610, 1, 0))
        layer, = h["Layers"]
        self.assertEqual(layer["Cells"], 610)
        self.assertEqual(layer["Cells set"], h["Items"], "compressed: every slot in use is merged")
        self.assertLess(h["Items"], 610)
        bound = float(h["Estimated error rate"])
        design = float(h["Error rate"])
        self.assertGreater(bound, 0)
        self.assertLessEqual(bound, design, "no centroid wider than the compression allows")
        # Each answer's rank (the values are 0..n-1: a value's rank is itself)
        # is within the bound of the quantile asked.
        for q, answer in zip((0.5, 0.9, 0.99), answers):
            self.assertLessEqual(abs(float(answer) / n - q), bound, (q, answer, bound))
        info = parse_info(c.call("INFO", "filterhealth"))
        self.assertEqual(info["filters"], "1")
        self.assertEqual(info["capacity"], "0", "INFO reads nothing of a digest (no key lock)")

    def test_info_filterhealth_totals_every_filter(self):
        self.fill_non_scaling("ns", 100)
        c = self.raw()
        self.assertEqual(c.call("BF.ADD", "scaling", "x"), 1)
        self.assertEqual(c.call("CF.ADD", "cf", "x"), 1)
        info = parse_info(c.call("INFO", "filterhealth"))
        self.assertEqual(info["filters"], "3")
        self.assertEqual(info["filters_non_scaling"], "1")
        self.assertEqual(info["filters_full"], "1")
        self.assertEqual(info["filters_over_capacity"], "0")
        self.assertEqual(info["max_items_per_capacity"], "1.0000")
        self.assertNotIn("filters", parse_info(c.call("INFO")), "not in INFO's default set")

    def test_bad_input_gets_redisbloom_style_errors(self):
        c = self.raw()
        self.assertEqual(c.call("BLOOMGATE.HEALTH", "missing"), "ERR not found")
        self.assertEqual(c.call("BLOOMGATE.HEALTH"),
                         "ERR wrong number of arguments for 'bloomgate.health' command")
        self.assertEqual(c.call("BLOOMGATE.HEALTH", "a", "b"),
                         "ERR wrong number of arguments for 'bloomgate.health' command")

    def test_bf_info_keeps_its_redisbloom_reply(self):
        c = self.raw()
        self.assertEqual(c.call("BF.RESERVE", "f", "0.01", "1000"), "OK")
        names = [k.decode() if isinstance(k, bytes) else str(k) for k in c.call("BF.INFO", "f")[0::2]]
        self.assertEqual(names, ["Capacity", "Size", "Number of filters",
                                 "Number of items inserted", "Expansion rate"])


if __name__ == "__main__":
    unittest.main()
