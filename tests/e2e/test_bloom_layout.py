"""Bloom filters created at low error rates get classic layers
(filters/bloom_math.h ClassicBloomPays): against the real server, such a
filter answers every added item, keeps BF.INFO Size within RedisBloom's bit
array plus our bookkeeping, and survives SCANDUMP/LOADCHUNK, DUMP/RESTORE,
BF.MERGE and a restart (snapshot) unchanged.
"""

import math
import os
import tempfile
import unittest

from harness import PersistentServer, ServerTestCase

SEED = 424242
ITEMS = [f"user:{i}" for i in range(3000)]


def info(r, key):
    reply = r.execute_command("BF.INFO", key)
    return {reply[i].decode() if isinstance(reply[i], bytes) else reply[i]: reply[i + 1]
            for i in range(0, len(reply), 2)}


def redisbloom_size(error_rate, capacity):
    """RedisBloom's BF.INFO Size for BF.RESERVE k error_rate capacity
    (filters/redisbloom_layout.h: chain 32 + link 64 + bits rounded up to 64)."""
    bpe = abs(math.log(error_rate / 2) / 0.480453013918201)
    bits = int(capacity * bpe)
    return 32 + 64 + (bits + 63) // 64 * 8


def chunks(r, key, raw=False):
    """SCANDUMP's chunks; unless raw, without the two fields that name the
    dump rather than the filter (the id at +7 and the trailing checksum),
    as test_bloom_merge.py compares them."""
    out, it = [], 0
    while True:
        it, data = r.execute_command("BF.SCANDUMP", key, it)
        if it == 0:
            return out
        out.append((it, data if raw else data[:7] + data[15:-8]))


def add_all(r, key):
    for at in range(0, len(ITEMS), 1000):
        r.execute_command("BF.MADD", key, *ITEMS[at:at + 1000])


class BloomLayout(ServerTestCase):

    def assertHoldsAll(self, key):
        found = self.r.execute_command("BF.MEXISTS", key, *ITEMS)
        self.assertEqual(sum(found), len(ITEMS), key)

    def test_a_low_rate_filter_is_no_bigger_than_redisblooms_bits(self):
        for rate in ("0.001", "0.000001", "0.000000001"):
            self.r.execute_command("BF.RESERVE", "k", rate, 100000)
            size = info(self.r, "k")["Size"]
            rb = redisbloom_size(float(rate), 100000)
            # Our bits are at most RedisBloom's (the unit tests pin that);
            # Size adds the filter object, layer list and key entry: < 1 KiB.
            self.assertLessEqual(size, rb + 1024, rate)
            self.assertGreater(size, rb - 64, rate)  # classic, not something smaller
            self.r.delete("k")

    def test_classic_filter_moves_and_reloads_unchanged(self):
        self.r.execute_command("BF.RESERVE", "src", "0.0001", 1000, "SEED", SEED)
        add_all(self.r, "src")
        self.assertGreaterEqual(info(self.r, "src")["Number of filters"], 2)
        self.assertHoldsAll("src")
        absent = [f"absent:{i}" for i in range(20000)]
        fps = sum(self.r.execute_command("BF.MEXISTS", "src", *absent))
        self.assertLess(fps, 20)  # 1e-4 of 20,000 expects ~2 (deterministic: fixed seed)

        for it, data in chunks(self.r, "src", raw=True):
            self.r.execute_command("BF.LOADCHUNK", "copy", it, data)
        self.assertHoldsAll("copy")
        self.assertEqual(chunks(self.r, "copy"), chunks(self.r, "src"))

        payload = self.r.dump("src")
        self.r.restore("restored", 0, payload)
        self.assertHoldsAll("restored")
        self.assertEqual(info(self.r, "restored"), info(self.r, "src"))

        # Two shards built apart with one SEED merge into one classic filter
        # (BF.MERGE rebuilds dest in the sources' layout).
        for key, part in (("a", ITEMS[:1500]), ("b", ITEMS[1500:])):
            self.r.execute_command("BF.RESERVE", key, "0.0001", 5000, "SEED", SEED)
            self.r.execute_command("BF.MADD", key, *part)
        self.r.execute_command("BF.MERGE", "merged", "a", "b")
        self.assertHoldsAll("merged")
        self.assertEqual(info(self.r, "merged")["Size"], info(self.r, "a")["Size"])

    def test_a_blocked_and_a_classic_filter_do_not_merge(self):
        self.r.execute_command("BF.RESERVE", "classic", "0.001", 1000, "SEED", SEED)
        self.r.execute_command("BF.RESERVE", "blocked", "0.001", 1000, "SEED", SEED,
                               "NONSCALING")
        with self.assertRaises(Exception):
            self.r.execute_command("BF.MERGE", "d", "classic", "blocked")
        self.assertEqual(self.r.exists("d"), 0)

    def test_restart_loads_the_classic_layers(self):
        tmp = tempfile.TemporaryDirectory(prefix="bloomgate-layout-")
        self.addCleanup(tmp.cleanup)
        data = os.path.join(tmp.name, "data")
        os.mkdir(data)
        args = ("--appendonly", "no", "--save", "")
        server = PersistentServer(data, args, log_path=os.path.join(tmp.name, "1.log")).start()
        self.addCleanup(lambda: server.kill9() if server.alive() else None)
        r = server.client()
        self.addCleanup(r.close)
        r.execute_command("BF.RESERVE", "k", "0.00001", 2000, "SEED", SEED)
        add_all(r, "k")
        before = chunks(r, "k")
        r.execute_command("SAVE")
        server.stop()
        again = PersistentServer(data, args, log_path=os.path.join(tmp.name, "2.log")).start()
        self.addCleanup(lambda: again.kill9() if again.alive() else None)
        r2 = again.client()
        self.addCleanup(r2.close)
        self.assertEqual(chunks(r2, "k"), before)
        self.assertEqual(sum(r2.execute_command("BF.MEXISTS", "k", *ITEMS)), len(ITEMS))


if __name__ == "__main__":
    unittest.main()
