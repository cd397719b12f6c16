"""BF.MERGE and SEED against the real server (redis-py and redis-cli): shards
built apart with one SEED merge into a filter that misses none of their
items and keeps the target FP rate; mismatches are refused and change
nothing; a restart replays the merge from the log; one seed and one set of
items give byte-identical filters.
"""

import os
import subprocess
import tempfile
import unittest

import redis

from harness import PersistentServer, ServerTestCase

SEED = 1234567890123


def cli(port, *args):
    done = subprocess.run(["redis-cli", "-p", str(port), *map(str, args)],
                          capture_output=True, text=True, timeout=10, check=True)
    return done.stdout.strip()


def dump(r, key):
    """The filter's SCANDUMP chunks, in order, without the two fields that
    name the dump rather than the filter (persistence/dump_chunk.h): the
    header id at +7 (8 bytes, seeded with the key entry's identity) and the
    trailing checksum over it."""
    chunks, it = [], 0
    while True:
        it, data = r.execute_command("BF.SCANDUMP", key, it)
        if it == 0:
            return chunks
        chunks.append((it, data[:7] + data[15:-8]))


def build_shards(r, shards, per_shard, capacity, seed=SEED):
    items = []
    for s in range(shards):
        key = f"shard{s}"
        r.execute_command("BF.RESERVE", key, "0.01", capacity, "SEED", seed)
        mine = [f"url:{s}:{i}" for i in range(per_shard)]
        for at in range(0, len(mine), 1000):
            r.execute_command("BF.MADD", key, *mine[at:at + 1000])
        items.extend(mine)
    return items


class BloomMerge(ServerTestCase):

    def assertRefused(self, expected, *args):
        with self.assertRaises(redis.ResponseError) as ctx:
            self.r.execute_command(*args)
        self.assertEqual(str(ctx.exception), expected)

    def test_sharded_builders_merge_without_false_negatives(self):
        items = build_shards(self.r, shards=5, per_shard=8000, capacity=50000)
        self.assertEqual(self.r.execute_command("BF.MERGE", "all", *[f"shard{s}" for s in range(5)]),
                         b"OK")
        for at in range(0, len(items), 2000):
            self.assertEqual(self.r.execute_command("BF.MEXISTS", "all", *items[at:at + 2000]),
                             [1] * len(items[at:at + 2000]))
        probes = [f"probe:{i}" for i in range(50000)]
        positives = 0
        for at in range(0, len(probes), 5000):
            positives += sum(self.r.execute_command("BF.MEXISTS", "all", *probes[at:at + 5000]))
        self.assertLessEqual(positives / len(probes), 0.01)
        # The union estimate: 40k distinct items, within a few percent.
        card = self.r.execute_command("BF.CARD", "all")
        self.assertGreaterEqual(card, 8000)
        self.assertLessEqual(card, 40000)
        self.assertAlmostEqual(card, 40000, delta=2000)
        self.assertEqual(self.r.type("all"), b"MBbloom--")

    def test_merge_counts_duplicates_once_and_dest_may_be_a_source(self):
        for key in ("a", "b"):
            self.r.execute_command("BF.RESERVE", key, "0.01", "10000", "SEED", SEED)
        same = [f"x{i}" for i in range(3000)]
        self.r.execute_command("BF.MADD", "a", *same)
        self.r.execute_command("BF.MADD", "b", *same)
        self.r.execute_command("BF.MERGE", "a", "a", "b")
        # Sum would say 6000; the bits say 3000 (and never under one input's 3000).
        self.assertEqual(self.r.execute_command("BF.CARD", "a"), 3000)
        self.assertEqual(self.r.execute_command("BF.MEXISTS", "a", "x0", "x2999"), [1, 1])

    def test_mismatches_are_refused_and_change_nothing(self):
        self.r.execute_command("BF.RESERVE", "dest", "0.01", "100", "SEED", SEED)
        self.r.execute_command("BF.ADD", "dest", "kept")
        self.r.execute_command("BF.RESERVE", "seed2", "0.01", "100", "SEED", SEED + 1)
        self.r.execute_command("BF.RESERVE", "rate", "0.001", "100", "SEED", SEED)
        self.r.execute_command("BF.RESERVE", "cap", "0.01", "200", "SEED", SEED)
        self.r.execute_command("BF.RESERVE", "exp", "0.01", "100", "EXPANSION", "4", "SEED", SEED)
        self.r.execute_command("BF.RESERVE", "grown", "0.01", "100", "SEED", SEED)
        self.r.execute_command("BF.MADD", "grown", *[f"g{i}" for i in range(300)])
        self.r.execute_command("BF.RESERVE", "w", "0.01", "100", "WINDOW", "10")
        self.r.execute_command("CF.RESERVE", "str", "100")
        before = dump(self.r, "dest")
        card = self.r.execute_command("BF.CARD", "dest")
        self.assertRefused("BF.MERGE: seed2 has another seed, dest has its own",
                           "BF.MERGE", "dest", "seed2")
        self.assertRefused("BF.MERGE: rate has error rate 0.001, dest has 0.01",
                           "BF.MERGE", "dest", "rate")
        self.assertRefused("BF.MERGE: cap has capacity 200, dest has 100",
                           "BF.MERGE", "dest", "cap")
        self.assertRefused("BF.MERGE: exp has expansion 4, dest has 2",
                           "BF.MERGE", "dest", "exp")
        layers = self.r.execute_command("BF.INFO", "grown", "FILTERS")[0]
        self.assertRefused(f"BF.MERGE: grown has {layers} layers, dest has 1",
                           "BF.MERGE", "dest", "grown")
        self.assertRefused("BF.MERGE: w has a window, dest has none",
                           "BF.MERGE", "dest", "w")
        self.assertRefused("not found", "BF.MERGE", "dest", "missing")
        with self.assertRaises(redis.ResponseError) as ctx:
            self.r.execute_command("BF.MERGE", "dest", "str")
        self.assertTrue(str(ctx.exception).startswith("WRONGTYPE"))
        # A later source's refusal leaves the earlier ones unmerged too.
        self.r.execute_command("BF.RESERVE", "ok", "0.01", "100", "SEED", SEED)
        self.r.execute_command("BF.ADD", "ok", "new")
        self.assertRefused("BF.MERGE: seed2 has another seed, dest has its own",
                           "BF.MERGE", "dest", "ok", "seed2")
        self.assertEqual(dump(self.r, "dest"), before)
        self.assertEqual(self.r.execute_command("BF.CARD", "dest"), card)
        # A missing dest is not created by a refused merge.
        self.assertRefused("not found", "BF.MERGE", "fresh", "ok", "missing")
        self.assertEqual(self.r.exists("fresh"), 0)

    def test_seed_gives_identical_bits(self):
        for key in ("p", "q"):
            self.r.execute_command("BF.RESERVE", key, "0.01", "1000", "SEED", "42")
            self.r.execute_command("BF.MADD", key, "a", "b", "c")
        self.r.execute_command("BF.INSERT", "i", "CAPACITY", "1000", "ERROR", "0.01",
                               "SEED", "42", "ITEMS", "a", "b", "c")
        self.assertEqual(dump(self.r, "p"), dump(self.r, "q"))
        self.assertEqual(dump(self.r, "p"), dump(self.r, "i"))
        self.r.execute_command("BF.RESERVE", "other", "0.01", "1000", "SEED", "43")
        self.r.execute_command("BF.MADD", "other", "a", "b", "c")
        self.assertNotEqual(dump(self.r, "p"), dump(self.r, "other"))
        # BF.INFO stays RedisBloom's: no seed in it.
        self.assertEqual(len(self.r.execute_command("BF.INFO", "p")), 10)

    def test_bad_seeds_are_refused(self):
        text = "invalid seed"  # valkey-bloom's text: neither its 32 bytes nor our integer
        for seed in ("0", "-1", "abc", "18446744073709551616", "x" * 31, "x" * 33):
            self.assertRefused(text, "BF.RESERVE", "k", "0.01", "100", "SEED", seed)
            self.assertRefused(text, "BF.INSERT", "k", "SEED", seed, "ITEMS", "a")
            self.assertRefused(text, "CBF.RESERVE", "k", "0.01", "100", "SEED", seed)
        self.assertRefused("option given more than once",
                           "BF.RESERVE", "k", "0.01", "100", "SEED", "1", "SEED", "2")
        self.assertRefused("NOCREATE cannot be combined with SEED",
                           "BF.INSERT", "k", "NOCREATE", "SEED", "1", "ITEMS", "a")
        self.assertEqual(self.r.exists("k"), 0)
        self.assertEqual(self.r.execute_command("BF.RESERVE", "k", "0.01", "100", "SEED",
                                                "18446744073709551615"), b"OK")

    def test_redis_cli_and_key_spec(self):
        self.assertEqual(cli(self.port, "BF.RESERVE", "c1", "0.01", "100", "SEED", "7"), "OK")
        self.assertEqual(cli(self.port, "BF.RESERVE", "c2", "0.01", "100", "SEED", "7"), "OK")
        self.assertEqual(cli(self.port, "BF.ADD", "c2", "hello"), "1")
        self.assertEqual(cli(self.port, "BF.MERGE", "c1", "c2"), "OK")
        self.assertEqual(cli(self.port, "BF.EXISTS", "c1", "hello"), "1")
        self.assertEqual(cli(self.port, "COMMAND", "GETKEYS", "BF.MERGE", "d", "s1", "s2"),
                         "d\ns1\ns2")


class CountingMerge(ServerTestCase):

    def test_counters_add_and_mismatches_are_refused(self):
        for key in ("c1", "c2"):
            self.r.execute_command("CBF.RESERVE", key, "0.01", "1000", "SEED", SEED)
        self.r.execute_command("CBF.MADD", "c1", "x", "x", "y")
        self.r.execute_command("CBF.MADD", "c2", "x", "z")
        self.assertEqual(self.r.execute_command("CBF.MERGE", "all", "c1", "c2"), b"OK")
        self.assertGreaterEqual(self.r.execute_command("CBF.COUNT", "all", "x"), 3)
        self.assertEqual(self.r.execute_command("CBF.MEXISTS", "all", "x", "y", "z"), [1, 1, 1])
        self.assertEqual(self.r.execute_command("CBF.CARD", "all"), 5)
        self.r.execute_command("CBF.RESERVE", "wide", "0.01", "1000", "COUNTERBITS", "8",
                               "SEED", SEED)
        with self.assertRaises(redis.ResponseError) as ctx:
            self.r.execute_command("CBF.MERGE", "all", "wide")
        self.assertEqual(str(ctx.exception), "CBF.MERGE: wide has counter bits 8, all has 4")
        self.assertEqual(self.r.execute_command("CBF.CARD", "all"), 5)


class BloomMergeRestart(unittest.TestCase):
    """The log replays the merge: same bits and count after kill -9."""

    def test_restart_replays_merge(self):
        tmp = tempfile.TemporaryDirectory(prefix="bloomgate-merge-")
        self.addCleanup(tmp.cleanup)
        data = os.path.join(tmp.name, "data")
        os.mkdir(data)
        args = ("--appendonly", "yes", "--save", "")
        server = PersistentServer(data, args, log_path=os.path.join(tmp.name, "1.log")).start()
        self.addCleanup(lambda: server.kill9() if server.alive() else None)
        r = server.client()
        self.addCleanup(r.close)
        items = build_shards(r, shards=2, per_shard=500, capacity=2000)
        r.execute_command("BF.MERGE", "all", "shard0", "shard1")
        r.execute_command("BF.ADD", "shard0", "after")  # not in the merge
        for key in ("c1", "c2"):
            r.execute_command("CBF.RESERVE", key, "0.01", "1000", "SEED", SEED)
            r.execute_command("CBF.MADD", key, "x", "y")
        r.execute_command("CBF.MERGE", "c1", "c2")
        r.execute_command("CBF.ADD", "c2", "x")  # after the merge: not in c1
        before, card = dump(r, "all"), r.execute_command("BF.CARD", "all")
        counts = r.execute_command("CBF.COUNT", "c1", "x"), r.execute_command("CBF.CARD", "c1")
        server.kill9()
        again = PersistentServer(data, args, log_path=os.path.join(tmp.name, "2.log")).start()
        self.addCleanup(lambda: again.kill9() if again.alive() else None)
        r2 = again.client()
        self.addCleanup(r2.close)
        self.assertEqual(dump(r2, "all"), before)
        self.assertEqual(r2.execute_command("BF.CARD", "all"), card)
        self.assertEqual(r2.execute_command("BF.MEXISTS", "all", *items), [1] * len(items))
        self.assertEqual((r2.execute_command("CBF.COUNT", "c1", "x"),
                          r2.execute_command("CBF.CARD", "c1")), counts)
        self.assertEqual(counts[1], 4)


if __name__ == "__main__":
    unittest.main()
