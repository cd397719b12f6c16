"""CMS.* (count-min sketches) and TOPK.* (top-k) against the real server:
redis-py's r.cms() and r.topk() helpers (Debian python3-redis 4.3.4), raw
RESP2 and RESP3 replies, RedisBloom's error texts, and durability: a sketch
survives SAVE and the append-only log, and a top-k replayed from the log, or
moved by SCANDUMP/LOADCHUNK, goes on deciding its evictions exactly as the
original (docs/commands/count-min.md, topk.md).
"""

import random
import signal
import tempfile
import unittest

import redis

from harness import BloomgateServer, Map, RespError, ServerTestCase, Simple

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
BAD_INCREMENT = ("TopK: increment must be an integer greater or equal to 0"
                 + " " * 28 + "and smaller or equal to 100,000")


def zipf_stream(n_items, draws, seed):
    """A fixed skewed stream: item i drawn with weight 1 / (i + 1)."""
    rng = random.Random(seed)
    weights = [1 / (i + 1) for i in range(n_items)]
    return [f"item:{i}" for i in rng.choices(range(n_items), weights, k=draws)]


class CmsTopkTestCase(ServerTestCase):

    def cmd(self, *args):
        return self.r.execute_command(*args)

    def assertError(self, text, *args):
        with self.assertRaises(redis.ResponseError) as caught:
            self.cmd(*args)
        # redis-py drops the "ERR " code from the messages it raises.
        expected = text[4:] if text.startswith("ERR ") else text
        self.assertEqual(str(caught.exception), expected, args)

    def resp3(self):
        c = self.raw()
        self.assertIsInstance(c.call("HELLO", "3"), Map)
        return c


class CountMinSketchTest(CmsTopkTestCase):

    def test_redis_py_cms_helpers_create_count_merge_and_describe(self):
        cms = self.r.cms()
        self.assertTrue(cms.initbydim("a", 1000, 5))
        self.assertTrue(cms.initbyprob("p", 0.001, 0.01))
        info = cms.info("p")
        self.assertEqual((info.width, info.depth, info.count), (2000, 7, 0))
        self.assertEqual(cms.incrby("a", ["foo", "bar"], [10, 42]), [10, 42])
        self.assertEqual(cms.query("a", "foo", "bar", "never"), [10, 42, 0])
        self.assertTrue(cms.initbydim("b", 1000, 5))
        self.assertTrue(cms.initbydim("dest", 1000, 5))
        cms.incrby("b", ["foo"], [5])
        self.assertTrue(cms.merge("dest", 2, ["a", "b"], [2, 3]))
        self.assertEqual(cms.query("dest", "foo", "bar"), [2 * 10 + 3 * 5, 2 * 42])
        self.assertEqual(cms.info("dest").count, 2 * 52 + 3 * 5)
        self.assertEqual(self.r.type("a"), b"CMSk-TYPE")
        self.assertGreater(self.r.memory_usage("a"), 1000 * 5 * 4)

    def test_redisbloom_overflow_saturates_cells_and_answers_an_error_element(self):
        # RedisBloom's test_overflow, verbatim numbers.
        large = 2 ** 31 - 1
        self.cmd("CMS.INITBYDIM", "cms", 5, 2)
        args = ["a", large, "b", 10, "c", 7, "d", 5]
        first = self.cmd("CMS.INCRBY", "cms", *args)
        self.assertEqual(first[0], large)
        self.cmd("CMS.INCRBY", "cms", *args)
        third = self.cmd("CMS.INCRBY", "cms", *args)
        self.assertIsInstance(third[0], redis.ResponseError)
        self.assertEqual(str(third[0]), "CMS: INCRBY overflow")
        self.assertEqual(self.cmd("CMS.QUERY", "cms", "a")[0], 2 ** 32 - 1)

    def test_errors_use_redisbloom_texts_and_change_nothing(self):
        self.cmd("CMS.INITBYDIM", "s", 100, 5)
        self.cmd("BF.ADD", "bloom", "x")
        self.assertError("CMS: key already exists", "CMS.INITBYDIM", "s", 10, 10)
        self.assertError("CMS: key already exists", "CMS.INITBYPROB", "bloom", 0.1, 0.1)
        self.assertError("CMS: invalid width", "CMS.INITBYDIM", "n", 0, 5)
        self.assertError("CMS: invalid depth", "CMS.INITBYDIM", "n", 5, "x")
        self.assertError("CMS: invalid overestimation value", "CMS.INITBYPROB", "n", 1, 0.5)
        self.assertError("CMS: invalid prob value", "CMS.INITBYPROB", "n", 0.1, 0)
        self.assertError("CMS: invalid init arguments",
                         "CMS.INITBYPROB", "n", 0.9, "0.9999999999999999")
        self.assertError("CMS: Insufficient memory to create the key: needs 4503599627370552 "
                         "bytes, max-filter-memory is 4294967296",
                         "CMS.INITBYDIM", "n", 2 ** 40, 2 ** 10)
        self.assertError("CMS: key does not exist", "CMS.QUERY", "n", "x")
        self.assertError(WRONGTYPE, "CMS.INCRBY", "bloom", "x", 1)
        self.assertError("CMS: Cannot parse number", "CMS.INCRBY", "s", "x", 1, "y", "z")
        self.assertError("CMS: Number cannot be negative", "CMS.INCRBY", "s", "x", 1, "y", -1)
        self.assertEqual(self.cmd("CMS.QUERY", "s", "x"), [0], "a refused INCRBY adds nothing")
        self.assertError("ERR wrong number of arguments for 'cms.incrby' command",
                         "CMS.INCRBY", "s", "x", 1, "y")
        self.cmd("CMS.INITBYDIM", "other", 50, 5)
        self.assertError("CMS: width/depth is not equal", "CMS.MERGE", "s", 1, "other")
        self.assertError("CMS: invalid numkeys", "CMS.MERGE", "s", "two", "other")
        self.assertError("CMS: Number of keys must be positive", "CMS.MERGE", "s", 0, "other")
        self.assertError("CMS: wrong number of keys", "CMS.MERGE", "s", 2, "other")
        self.assertError("CMS: wrong number of keys/weights",
                         "CMS.MERGE", "s", 1, "other", "WEIGHTS", 1, 2)
        self.assertError("CMS: invalid weight value", "CMS.MERGE", "s", 1, "s", "WEIGHTS", "w")
        self.assertError("CMS: key does not exist", "CMS.MERGE", "s", 1, "nope")
        self.cmd("CMS.INCRBY", "s", "x", 3)
        self.assertError("CMS: MERGE overflow", "CMS.MERGE", "s", 1, "s", "WEIGHTS", -1)
        self.assertEqual(self.cmd("CMS.QUERY", "s", "x"), [3], "a refused MERGE changes nothing")

    def test_merge_locks_its_sources_named_by_numkeys(self):
        # Raw: redis-py parses every COMMAND reply as COMMAND INFO.
        c = self.raw()
        self.assertEqual(c.call("COMMAND", "GETKEYS", "CMS.MERGE", "d", 2, "a", "b", "WEIGHTS", 1, 2),
                         [b"d", b"a", b"b"])
        self.assertEqual(c.call("COMMAND", "GETKEYS", "CMS.MERGE", "d", "x", "a"), [b"d"],
                         "a count that is not a number names no sources")

    def test_resp3_info_is_a_map(self):
        self.cmd("CMS.INITBYDIM", "s", 10, 3)
        c = self.resp3()
        self.assertEqual(c.call("CMS.INFO", "s"), {"width": 10, "depth": 3, "count": 0})
        self.assertEqual(c.call("CMS.INCRBY", "s", "a", 2), [2])


class TopKTest(CmsTopkTestCase):

    def test_redis_py_topk_helpers_reserve_add_list_and_describe(self):
        topk = self.r.topk()
        self.assertTrue(topk.reserve("t", 3, 50, 4, 0.9))
        self.assertEqual(topk.add("t", "a", "b", "c"), [None, None, None])
        topk.incrby("t", ["a", "b"], [10, 5])
        self.assertEqual(topk.query("t", "a", "b", "c", "zz"), [1, 1, 1, 0])
        self.assertEqual(topk.count("t", "a", "b", "zz"), [11, 6, 0])
        self.assertEqual(topk.list("t"), ["a", "b", "c"])
        self.assertEqual(topk.list("t", withcount=True), ["a", 11, "b", 6, "c", 1])
        # Enough of a fourth item expels the smallest.
        self.assertEqual(topk.incrby("t", ["d"], [20]), ["c"])
        info = topk.info("t")
        self.assertEqual((info.k, info.width, info.depth, float(info.decay)), (3, 50, 4, 0.9))
        # redis-py 4.3 always sends width, depth and decay; the defaults by hand.
        self.assertTrue(self.cmd("TOPK.RESERVE", "defaults", 2))
        info = topk.info("defaults")
        self.assertEqual((info.width, info.depth, float(info.decay)), (8, 7, 0.9))
        self.assertEqual(self.r.type("t"), b"TopK-TYPE")

    def test_heavy_hitters_of_a_skewed_stream_are_listed(self):
        self.cmd("TOPK.RESERVE", "t", 5, 500, 5, 0.9)
        stream = zipf_stream(2000, 30000, seed=5)
        for i in range(0, len(stream), 500):
            self.cmd("TOPK.ADD", "t", *stream[i:i + 500])
        listed = {x.decode() for x in self.cmd("TOPK.LIST", "t")}
        self.assertGreaterEqual(len(listed & {f"item:{i}" for i in range(5)}), 4, listed)

    def test_errors_use_redisbloom_texts_and_change_nothing(self):
        self.cmd("TOPK.RESERVE", "t", 2)
        self.cmd("CMS.INITBYDIM", "cms", 10, 2)
        self.assertError("TopK: key already exists", "TOPK.RESERVE", "t", 3)
        self.assertError("TopK: key already exists", "TOPK.RESERVE", "cms", 3)
        self.assertError("TopK: invalid k", "TOPK.RESERVE", "n", 0)
        self.assertError("TopK: invalid width", "TOPK.RESERVE", "n", 1, 0, 7, 0.9)
        self.assertError("TopK: invalid depth", "TOPK.RESERVE", "n", 1, 8, "x", 0.9)
        self.assertError("TopK: invalid decay value. must be '<= 1' & '> 0'",
                         "TOPK.RESERVE", "n", 1, 8, 7, 1.5)
        self.assertError("ERR wrong number of arguments for 'topk.reserve' command",
                         "TOPK.RESERVE", "n", 1, 8)
        self.assertError("ERR Insufficient memory to create topk data structure: needs "
                         "17592186046760 bytes, max-filter-memory is 4294967296",
                         "TOPK.RESERVE", "n", 1, 2 ** 31, 2 ** 10, 0.9)
        self.assertError("TopK: key does not exist", "TOPK.ADD", "n", "x")
        self.assertError(WRONGTYPE, "TOPK.QUERY", "cms", "x")
        # RedisBloom's error element at the refused item; the other pairs apply.
        reply = self.cmd("TOPK.INCRBY", "t", "b", 100001, "a", 1, "c", -1)
        self.assertEqual([str(x) if isinstance(x, redis.ResponseError) else x for x in reply],
                         [BAD_INCREMENT, None, BAD_INCREMENT])
        self.assertEqual(self.cmd("TOPK.LIST", "t"), [b"a"], "only the valid pair applied")
        self.assertError("WITHCOUNT keyword expected", "TOPK.LIST", "t", "WITH")
        self.assertEqual(self.r.exists("n"), 0)

    def test_resp3_shapes(self):
        self.cmd("TOPK.RESERVE", "t", 2, 8, 7, 0.5)
        c = self.resp3()
        self.assertEqual(c.call("TOPK.ADD", "t", "a"), [None])
        self.assertEqual(c.call("TOPK.QUERY", "t", "a", "b"), [True, False])
        self.assertEqual(c.call("TOPK.INFO", "t"),
                         {"k": 2, "width": 8, "depth": 7, "decay": 0.5})
        self.assertEqual(c.call("TOPK.LIST", "t", "WITHCOUNT"), [b"a", 1])

    def test_an_item_with_crlf_comes_back_whole(self):
        self.cmd("TOPK.RESERVE", "t", 1)
        self.cmd("TOPK.ADD", "t", "a\r\nb")
        self.assertEqual(self.cmd("TOPK.LIST", "t"), [b"a\r\nb"])
        self.assertEqual(self.cmd("TOPK.INCRBY", "t", "z", 50), [b"a\r\nb"])

    def test_scandump_and_loadchunk_move_both_families_exactly(self):
        self.cmd("CMS.INITBYDIM", "cms", 300, 4)
        self.cmd("TOPK.RESERVE", "t", 10, 64, 4, 0.9)
        stream = zipf_stream(500, 5000, seed=9)
        for i in range(0, len(stream), 500):
            self.cmd("TOPK.ADD", "t", *stream[i:i + 500])
            pairs = [x for item in stream[i:i + 500] for x in (item, 1)]
            self.cmd("CMS.INCRBY", "cms", *pairs)
        for family, src, dst in (("CMS", "cms", "cms2"), ("TOPK", "t", "t2")):
            it = 0
            while True:
                it, data = self.cmd(f"{family}.SCANDUMP", src, it)
                if it == 0:
                    break
                self.assertEqual(self.cmd(f"{family}.LOADCHUNK", dst, it, data), b"OK")
        probes = [f"item:{i}" for i in range(600)]
        self.assertEqual(self.cmd("CMS.QUERY", "cms2", *probes), self.cmd("CMS.QUERY", "cms", *probes))
        self.assertEqual(self.cmd("CMS.INFO", "cms2"), self.cmd("CMS.INFO", "cms"))
        # The PRNG state moved with the filter: the same adds on both copies
        # expel the same items and leave the same list.
        more = zipf_stream(500, 3000, seed=10)
        self.assertEqual(self.cmd("TOPK.ADD", "t2", *more), self.cmd("TOPK.ADD", "t", *more))
        self.assertEqual(self.cmd("TOPK.LIST", "t2", "WITHCOUNT"),
                         self.cmd("TOPK.LIST", "t", "WITHCOUNT"))
        self.assertEqual(self.cmd("TOPK.COUNT", "t2", *probes), self.cmd("TOPK.COUNT", "t", *probes),
                         "every bucket decayed alike")
        self.assertEqual(self.r.type("t2"), b"TopK-TYPE")


class DurabilityTest(unittest.TestCase):
    """A restart replays the log (or loads the snapshot): the sketch answers
    as before, and the top-k goes on as a never-restarted twin does."""

    def start(self, args):
        server = BloomgateServer(args).start()
        self.addCleanup(lambda: server.stop(check=False) if server.alive() else None)
        r = server.client()
        self.addCleanup(r.close)
        return server, r

    def feed(self, r, stream):
        for i in range(0, len(stream), 400):
            batch = stream[i:i + 400]
            r.execute_command("TOPK.ADD", "t", *batch)
            r.execute_command("CMS.INCRBY", "cms", *[x for item in batch for x in (item, 2)])

    def run_case(self, via_snapshot):
        first, second = zipf_stream(800, 6000, seed=1), zipf_stream(800, 4000, seed=2)
        data = tempfile.TemporaryDirectory(prefix="bloomgate-cms-topk-")
        self.addCleanup(data.cleanup)
        _, tr = self.start(["--save", "", "--appendonly", "no"])  # the twin
        args = ["--dir", data.name, "--save", ""] + (["--appendonly", "no"] if via_snapshot else [])
        server, r = self.start(args)
        for client in (tr, r):
            client.execute_command("TOPK.RESERVE", "t", 8, 32, 4, 0.9)
            client.execute_command("CMS.INITBYDIM", "cms", 200, 4)
            self.feed(client, first)
        if via_snapshot:
            self.assertTrue(r.execute_command("SAVE"))
        r.close()
        server.stop()
        _, r = self.start(args)  # the same data directory, a new process
        probes = [f"item:{i}" for i in range(800)]
        self.assertEqual(r.execute_command("CMS.QUERY", "cms", *probes),
                         tr.execute_command("CMS.QUERY", "cms", *probes))
        self.assertEqual(r.execute_command("CMS.INFO", "cms"), tr.execute_command("CMS.INFO", "cms"))
        self.assertEqual(r.execute_command("TOPK.LIST", "t", "WITHCOUNT"),
                         tr.execute_command("TOPK.LIST", "t", "WITHCOUNT"))
        self.feed(r, second)
        self.feed(tr, second)
        self.assertEqual(r.execute_command("TOPK.LIST", "t", "WITHCOUNT"),
                         tr.execute_command("TOPK.LIST", "t", "WITHCOUNT"),
                         "after the restart the decay decides as the twin's does")
        self.assertEqual(r.execute_command("TOPK.COUNT", "t", *probes),
                         tr.execute_command("TOPK.COUNT", "t", *probes))

    def test_log_replay_gives_the_same_sketch_and_the_same_evictions(self):
        self.run_case(via_snapshot=False)

    def test_kill_9_replay_gives_a_decaying_topk_byte_for_byte(self):
        # A narrow sketch with heavy decay: nearly every add flips coins, so
        # a replay that drew from any other generator state would differ.
        data = tempfile.TemporaryDirectory(prefix="bloomgate-topk-kill-")
        self.addCleanup(data.cleanup)
        args = ["--dir", data.name, "--save", "", "--appendonly", "yes"]
        server, r = self.start(args)
        r.execute_command("TOPK.RESERVE", "t", 5, 4, 2, 0.8)
        stream = zipf_stream(60, 3000, seed=3)
        for i in range(0, len(stream), 100):
            r.execute_command("TOPK.ADD", "t", *stream[i:i + 100])
        r.execute_command("TOPK.INCRBY", "t", "heavy", 500, "bad", 100001, "light", 3)
        before = r.dump("t")
        listed = r.execute_command("TOPK.LIST", "t", "WITHCOUNT")
        r.close()
        server.stop(sig=signal.SIGKILL, check=False)
        _, r = self.start(args)
        self.assertEqual(r.dump("t"), before,
                         "the replayed top-k (buckets, heap and rand() state) differs")
        self.assertEqual(r.execute_command("TOPK.LIST", "t", "WITHCOUNT"), listed)

    def test_snapshot_gives_the_same_sketch_and_the_same_evictions(self):
        self.run_case(via_snapshot=True)


if __name__ == "__main__":
    unittest.main()
