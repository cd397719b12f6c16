"""valkey-bloom's BF.* syntax: BF.INSERT's SEED (its 32 raw bytes),
TIGHTENING and VALIDATESCALETO, and BF.INFO's ERROR, TIGHTENING and
MAXSCALEDCAPACITY, with valkey-bloom's error texts; and a filter made with a
SEED and a TIGHTENING answering identically after a restart (snapshot or
log replay), a DUMP/RESTORE and a SCANDUMP/LOADCHUNK copy.
"""

import unittest

from harness import RespError, RestartAgainstTwinCase, ServerTestCase

SEED = b"0123456789abcdef0123456789ABCDEF"  # valkey-bloom's seeds are 32 bytes
PROBES = [f"probe:{i}" for i in range(5000)]


class ValkeyBloomTextsTest(ServerTestCase):

    def test_bad_values_answer_valkey_blooms_texts_and_create_nothing(self):
        c = self.raw()
        cases = [
            (["TIGHTENING", "x"], "ERR bad tightening ratio"),
            (["TIGHTENING", "1"], "ERR (0 < tightening ratio range < 1)"),
            (["TIGHTENING", "0"], "ERR (0 < tightening ratio range < 1)"),
            (["VALIDATESCALETO", "0"], "ERR (capacity should be larger than 0)"),
            (["VALIDATESCALETO", "-3"], "ERR bad capacity"),
            (["VALIDATESCALETO", "many"], "ERR bad capacity"),
            (["NONSCALING", "VALIDATESCALETO", "100"],
             "ERR cannot use NONSCALING and VALIDATESCALETO options together"),
            (["SEED", "abc"], "ERR invalid seed"),
            (["SEED", "x" * 31], "ERR invalid seed"),
            (["CAPACITY", "1000", "VALIDATESCALETO", "999999999999999999"],
             "ERR provided VALIDATESCALETO causes bloom object to exceed memory limit"),
            (["CAPACITY", "1", "EXPANSION", "1", "TIGHTENING", "1e-100",
              "VALIDATESCALETO", "1000"],
             "ERR provided VALIDATESCALETO causes false positive to degrade to 0"),
        ]
        for options, text in cases:
            with self.subTest(options=options):
                self.assertErrorText(c.call("BF.INSERT", "k", *options, "ITEMS", "a"), text)
        self.assertEqual(c.call("EXISTS", "k"), 0)
        self.assertErrorText(c.call("BF.INSERT", "k", "TIGHTENING"),
                             "ERR wrong number of arguments for 'bf.insert' command")

    def test_info_answers_error_tightening_and_max_scaled_capacity_by_name(self):
        c = self.raw()
        self.assertEqual(c.call("BF.INSERT", "k", "ERROR", "0.05", "TIGHTENING", "0.7",
                                "VALIDATESCALETO", "5000", "ITEMS", "a"), [1])
        self.assertEqual(c.call("BF.INFO", "k", "ERROR"), [b"0.05"])
        self.assertEqual(c.call("BF.INFO", "k", "TIGHTENING"), [b"0.7"])
        [maximum] = c.call("BF.INFO", "k", "MAXSCALEDCAPACITY")
        self.assertGreaterEqual(maximum, 5000, "VALIDATESCALETO 5000 was accepted")
        self.assertEqual(len(c.call("BF.INFO", "k")), 10, "the full reply is RedisBloom's")
        self.assertEqual(c.call("BF.RESERVE", "n", "0.01", "100", "NONSCALING"), "OK")
        self.assertErrorText(c.call("BF.INFO", "n", "MAXSCALEDCAPACITY"),
                             "Invalid information value")

    def test_a_scale_out_that_would_reach_a_rate_of_zero_is_refused_in_the_reply(self):
        c = self.raw()
        # Layers sized for 1e-102, 1e-202 and 1e-302; a fourth would need 1e-402.
        self.assertEqual(c.call("BF.INSERT", "k", "CAPACITY", "1", "EXPANSION", "1",
                                "TIGHTENING", "1e-100", "ITEMS", "a"), [1])
        self.assertEqual(c.call("BF.MADD", "k", "b", "c", "d"),
                         [1, 1, RespError("ERR false positive degrades to 0 on scale out")])
        self.assertEqual(c.call("BF.INFO", "k", "FILTERS"), [3])


def fingerprint(r, key):
    """Everything a client can ask of the filter: its answers to 5,000
    probes (false positives included) and its INFO, valkey-bloom's fields too."""
    answers = r.execute_command("BF.MEXISTS", key, *PROBES)
    info = {field: r.execute_command("BF.INFO", key, field)
            for field in ("CAPACITY", "FILTERS", "ITEMS", "EXPANSION", "ERROR", "TIGHTENING",
                          "MAXSCALEDCAPACITY")}
    return answers, info


def make(r, key, items):
    r.execute_command("BF.INSERT", key, "ERROR", "0.1", "CAPACITY", "100", "SEED", SEED,
                      "TIGHTENING", "0.3", "ITEMS", "first")
    for start in range(0, items, 500):
        r.execute_command("BF.MADD", key, *[f"item:{i}" for i in range(start, start + 500)])


class SeedAndTighteningPersistTest(RestartAgainstTwinCase):
    """A filter made with a SEED answers as a twin made with the same SEED on
    a server never restarted, before and after growing on: the seed and the
    ratio came back, not just the bits."""

    def run_case(self, via_snapshot):
        tr, data, args = self.twin_and_data(via_snapshot, "bloomgate-valkey-")
        server, r = self.start(data, args, 1)
        for client in (tr, r):
            make(client, "f", 2000)
        before = fingerprint(r, "f")
        self.assertEqual(before, fingerprint(tr, "f"), "one SEED, one hashing")
        self.assertGreaterEqual(before[1]["FILTERS"], [4])
        self.assertEqual(before[1]["TIGHTENING"], [b"0.3"])
        if via_snapshot:
            self.assertTrue(r.execute_command("SAVE"))
        server.kill9()
        server, r = self.start(data, args, 2)
        self.assertEqual(fingerprint(r, "f"), before)
        for client in (tr, r):
            client.execute_command("BF.MADD", "f", *[f"more:{i}" for i in range(3000)])
        self.assertEqual(fingerprint(r, "f"), fingerprint(tr, "f"),
                         "the restored filter grew its next layers as the twin did")

    def test_a_snapshot_brings_back_the_seed_and_the_ratio(self):
        self.run_case(via_snapshot=True)

    def test_log_replay_after_kill_9_brings_back_the_seed_and_the_ratio(self):
        self.run_case(via_snapshot=False)


class SeedAndTighteningCopyTest(ServerTestCase):

    def test_dump_restore_and_scandump_copies_keep_the_seed_and_the_ratio(self):
        r = self.client()
        make(r, "f", 1500)
        want = fingerprint(r, "f")
        self.assertEqual(r.execute_command("RESTORE", "dumped", 0,
                                           r.execute_command("DUMP", "f")), b"OK")
        self.assertEqual(fingerprint(r, "dumped"), want)
        cursor = 0
        chunks = []
        while True:
            cursor, data = r.execute_command("BF.SCANDUMP", "f", cursor)
            if cursor == 0:
                break
            chunks.append((cursor, data))
        for cursor, data in chunks:
            r.execute_command("BF.LOADCHUNK", "loaded", cursor, data)
        self.assertEqual(fingerprint(r, "loaded"), want)


if __name__ == "__main__":
    unittest.main()
