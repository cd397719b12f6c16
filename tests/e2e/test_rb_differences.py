"""The last replies that differed from RedisBloom's (issue 12, section 3),
tried as a new user would, through redis-py and raw RESP: BF.INSERT's
EXPANSION range, CF.INSERT's capacity checked before the key, a damaged
first LOADCHUNK chunk, BF.DEBUG / CF.DEBUG, and the versions INFO and
MODULE LIST report. One server for the whole file.
"""

import re
import unittest

from harness import RespError, ServerTestCase

U64_MAX = "18446744073709551615"
INSERT_CAPACITY_RANGE = f"Capacity must be in the range [cf-bucket-size * 2, {U64_MAX}]"


class RedisBloomDifferences(ServerTestCase):

    # -- BF.INSERT EXPANSION ---------------------------------------------
    def test_bf_insert_refuses_expansion_zero_and_creates_nothing(self):
        c = self.raw()
        for args in (["EXPANSION", "0"], ["NONSCALING", "EXPANSION", "0"],
                     ["EXPANSION", "-1"], ["EXPANSION", "32769"]):
            with self.subTest(args=args):
                reply = c.call("BF.INSERT", "k", *args, "ITEMS", "a")
                self.assertEqual(reply, RespError("Bad expansion"))
                self.assertEqual(c.call("EXISTS", "k"), 0)
        # The range's ends and NONSCALING still work; BF.RESERVE keeps Redis 8's
        # EXPANSION 0 = NONSCALING.
        self.assertEqual(c.call("BF.INSERT", "one", "EXPANSION", "1", "ITEMS", "a"), [1])
        self.assertEqual(c.call("BF.INSERT", "max", "EXPANSION", "32768", "ITEMS", "a"), [1])
        self.assertEqual(c.call("BF.INSERT", "ns", "NONSCALING", "ITEMS", "a"), [1])
        self.assertEqual(c.call("BF.RESERVE", "r", "0.01", "100", "EXPANSION", "0"), "OK")
        self.assertIsNone(self.r.bf().info("ns").expansionRate)

    # -- CF.INSERT CAPACITY ----------------------------------------------
    def test_cf_insert_checks_the_capacity_before_the_key_as_redisbloom(self):
        cf = self.r.cf()
        self.assertTrue(cf.create("f", 1000))
        c = self.raw()
        for command in ("CF.INSERT", "CF.INSERTNX"):
            with self.subTest(command=command):
                # An existing filter would ignore the capacity: still refused.
                self.assertEqual(c.call(command, "f", "CAPACITY", "3", "ITEMS", "a"),
                                 RespError(INSERT_CAPACITY_RANGE))
                # Before NOCREATE's "not found" and a later unknown argument.
                self.assertEqual(c.call(command, "nokey", "CAPACITY", "3", "NOCREATE",
                                        "ITEMS", "a"), RespError(INSERT_CAPACITY_RANGE))
                self.assertEqual(c.call(command, "f", "CAPACITY", "1", "BOGUS", "ITEMS", "a"),
                                 RespError(INSERT_CAPACITY_RANGE))
                self.assertEqual(c.call("CF.EXISTS", "f", "a"), 0, "nothing was added")
                self.assertEqual(c.call(command, "f", "CAPACITY", "4", "ITEMS", "a"), [1])
                c.call("CF.DEL", "f", "a")
        self.assertEqual(c.call("EXISTS", "nokey"), 0)

    def test_cf_insert_capacity_bound_follows_cf_bucket_size(self):
        c = self.raw()
        self.assertEqual(c.call("CONFIG", "SET", "cf-bucket-size", "4"), "OK")
        self.addCleanup(lambda: self.raw().call("CONFIG", "SET", "cf-bucket-size", "2"))
        self.assertEqual(c.call("CF.INSERT", "g", "CAPACITY", "7", "ITEMS", "a"),
                         RespError(INSERT_CAPACITY_RANGE))
        self.assertEqual(c.call("CF.INSERT", "g", "CAPACITY", "8", "ITEMS", "a"), [1])

    # -- a damaged first LOADCHUNK chunk ---------------------------------
    def test_a_first_chunk_with_a_damaged_magic_gets_redisbloom_texts(self):
        texts = {"BF": "ERR received bad data", "CF": "Couldn't create filter!"}
        self.assertTrue(self.r.bf().create("b", 0.01, 100))
        self.r.bf().add("b", "x")
        self.r.cf().add("c", "x")
        c = self.raw()
        for prefix, src in (("BF", "b"), ("CF", "c")):
            with self.subTest(family=prefix):
                it, header = c.call(f"{prefix}.SCANDUMP", src, 0)
                self.assertEqual(it, 1)
                damaged = b"X" + header[1:]
                self.assertEqual(c.call(f"{prefix}.LOADCHUNK", "dst", it, damaged),
                                 RespError(texts[prefix]))
                # Bytes that are not a chunk at all: the same answer.
                self.assertEqual(c.call(f"{prefix}.LOADCHUNK", "dst", 1, "junk"),
                                 RespError(texts[prefix]))
                self.assertEqual(c.call("EXISTS", "dst"), 0)
                # A damaged chunk later in a dump is still a stray chunk.
                self.assertEqual(c.call(f"{prefix}.LOADCHUNK", "dst", 9, "junk"),
                                 RespError("ERR not found"))

    # -- BF.DEBUG / CF.DEBUG ---------------------------------------------
    def test_bf_debug_lists_the_layers_in_redisbloom_format(self):
        bf = self.r.bf()
        self.assertTrue(bf.create("d", 0.01, 10))
        bf.madd("d", *[f"i{n}" for n in range(25)])  # fills layer 0, grows twice
        lines = [line.decode() for line in self.r.execute_command("BF.DEBUG", "d")]
        info = bf.info("d")
        self.assertEqual(lines[0], f"size:{info.insertedNum}")
        self.assertEqual(len(lines) - 1, info.filterNum)
        pattern = re.compile(r"bytes:(\d+) bits:(\d+) hashes:(\d+) hashwidth:64 "
                             r"capacity:(\d+) size:(\d+) ratio:(\S+)$")
        capacities, sizes, ratios = [], [], []
        for line in lines[1:]:
            m = pattern.match(line)
            self.assertIsNotNone(m, line)
            nbytes, bits, hashes, capacity, size = map(int, m.groups()[:5])
            self.assertEqual(bits, nbytes * 8, line)
            self.assertGreater(hashes, 0, line)
            capacities.append(capacity)
            sizes.append(size)
            ratios.append(float(m.group(6)))
        self.assertEqual(capacities, [10, 20, 40][:len(capacities)])
        self.assertEqual(sum(capacities), info.capacity)
        self.assertEqual(sum(sizes), info.insertedNum)
        # Each new layer halves the error rate (RedisBloom's tightening).
        for older, newer in zip(ratios, ratios[1:]):
            self.assertAlmostEqual(newer, older / 2)
        c = self.raw()
        self.assertEqual(c.call("BF.DEBUG", "missing"), RespError("ERR not found"))
        self.r.cf().add("cf", "x")
        self.assertTrue(c.call("BF.DEBUG", "cf").startswith("WRONGTYPE"))
        self.assertTrue(c.call("BF.DEBUG").startswith("ERR wrong number of arguments"))

    def test_cf_debug_is_one_line_in_redisbloom_format(self):
        cf = self.r.cf()
        self.assertTrue(cf.create("c", 1000, bucket_size=1, max_iterations=20, expansion=1))
        for n in range(5):
            cf.add("c", f"i{n}")
        cf.delete("c", "i0")
        c = self.raw()
        self.assertEqual(c.call("CF.DEBUG", "c"),
                         b"bktsize:1 buckets:1024 items:4 deletes:1 filters:1 "
                         b"max_iterations:20 expansion:1")
        self.assertEqual(c.call("CF.DEBUG", "missing"), RespError("ERR not found"))
        self.r.bf().add("b", "x")
        self.assertTrue(c.call("CF.DEBUG", "b").startswith("WRONGTYPE"))

    def test_debug_rows_are_registered_as_redisbloom_registers_them(self):
        for name, category in (("bf.debug", b"@bloom"), ("cf.debug", b"@cuckoo")):
            with self.subTest(command=name):
                info = self.raw().call("COMMAND", "INFO", name)[0]
                self.assertEqual(info[1], 2)
                self.assertEqual(sorted(info[2]), ["fast", "readonly"])
                self.assertEqual(info[3:6], [1, 1, 1])
                self.assertIn(category.decode(), info[6])
                self.assertIn("@read", info[6])

    # -- the versions reported -------------------------------------------
    def test_reported_versions_are_redis_8_and_its_bloom_module(self):
        self.assertEqual(self.r.info("server")["redis_version"], "8.0.0")
        modules = self.r.module_list()
        self.assertEqual([m[b"name"] for m in modules], [b"bf"])
        self.assertEqual(modules[0][b"ver"], 80000)

    def test_every_command_of_redis_8s_bloom_module_is_served(self):
        # Redis 8.0's bf, cf, cms, topk and tdigest groups (its commands.json),
        # plus the module's undocumented BF.DEBUG, CF.DEBUG and CF.COMPACT: what
        # the reported module version (80000) promises, and what
        # docs/redisbloom.md says is all there.
        redis8 = """
            BF.ADD BF.CARD BF.EXISTS BF.INFO BF.INSERT BF.LOADCHUNK BF.MADD BF.MEXISTS
            BF.RESERVE BF.SCANDUMP BF.DEBUG
            CF.ADD CF.ADDNX CF.COUNT CF.DEL CF.EXISTS CF.INFO CF.INSERT CF.INSERTNX
            CF.LOADCHUNK CF.MEXISTS CF.RESERVE CF.SCANDUMP CF.DEBUG CF.COMPACT
            CMS.INCRBY CMS.INFO CMS.INITBYDIM CMS.INITBYPROB CMS.MERGE CMS.QUERY
            TOPK.ADD TOPK.COUNT TOPK.INCRBY TOPK.INFO TOPK.LIST TOPK.QUERY TOPK.RESERVE
            TDIGEST.ADD TDIGEST.BYRANK TDIGEST.BYREVRANK TDIGEST.CDF TDIGEST.CREATE
            TDIGEST.INFO TDIGEST.MAX TDIGEST.MERGE TDIGEST.MIN TDIGEST.QUANTILE TDIGEST.RANK
            TDIGEST.RESET TDIGEST.REVRANK TDIGEST.TRIMMED_MEAN""".split()
        info = self.raw().call("COMMAND", "INFO", *redis8)
        missing = [name for name, row in zip(redis8, info) if row is None]
        self.assertEqual(missing, [])
        # valkey-bloom's BF.LOAD (its own serialized object) is not served: docs/redisbloom.md.
        self.assertEqual(self.raw().call("COMMAND", "INFO", "BF.LOAD"), [None])


if __name__ == "__main__":
    unittest.main()
