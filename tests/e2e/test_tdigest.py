"""TDIGEST.* against the real server: RedisBloom v2.4.23's own command
sequences replayed reply for reply (tests/data/redisbloom-sketches, its
README.md), RESP3 shapes, ACL @tdigest, COMMAND DOCS, TYPE, MEMORY USAGE,
and durability: a digest survives SAVE, DUMP/RESTORE and a kill -9 with the
append-only log, including the compressions its reads made
(docs/commands/tdigest.md).
"""

import json
import math
import os
import unittest

from harness import (BloomgateServer, Map, RespError, RestartAgainstTwinCase, ServerTestCase,
                     Simple)

SKETCHES = os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "redisbloom-sketches"))


def as_fixture(reply):
    """A raw RESP2 reply in the fixtures' terms: strings, integers, lists, and
    {"error": text} without the "ERR " code (as redis-py raises it)."""
    if isinstance(reply, RespError):
        return {"error": reply[4:] if reply.startswith("ERR ") else str(reply)}
    if isinstance(reply, (Simple, str)):
        return str(reply)
    if isinstance(reply, bytes):
        return reply.decode()
    if isinstance(reply, list):
        return [as_fixture(x) for x in reply]
    return reply


class RedisBloomSequenceTest(unittest.TestCase):
    """Each sequence on a fresh server, every reply compared exactly."""

    def run_sequence(self, name):
        with open(os.path.join(SKETCHES, name)) as f:
            steps = json.load(f)["steps"]
        server = BloomgateServer(["--save", "", "--appendonly", "no"]).start()
        self.addCleanup(lambda: server.stop(check=False) if server.alive() else None)
        c = server.raw()
        self.addCleanup(c.close)
        for i, step in enumerate(steps):
            got = as_fixture(c.call(*step["command"]))
            self.assertEqual(got, step["reply"], f"step {i}: {step['command'][:4]}")
        return len(steps)

    def test_lognormal_sequence_answers_as_redisbloom(self):
        self.assertEqual(self.run_sequence("tdigest-lognormal.json"), 31)

    def test_merge_reset_and_errors_answer_as_redisbloom(self):
        self.assertEqual(self.run_sequence("tdigest-merge-reset-errors.json"), 19)


class TDigestTest(ServerTestCase):

    def cmd(self, *args):
        return self.r.execute_command(*args)

    def resp3(self):
        c = self.raw()
        self.addCleanup(c.close)
        self.assertIsInstance(c.call("HELLO", "3"), Map)
        return c

    def test_resp3_replies_doubles_and_an_info_map(self):
        self.cmd("TDIGEST.CREATE", "d", "COMPRESSION", "50")
        c = self.resp3()
        self.assertTrue(math.isnan(c.call("TDIGEST.MIN", "d")))
        self.assertTrue(math.isnan(c.call("TDIGEST.QUANTILE", "d", "0.5")[0]))
        self.assertEqual(c.call("TDIGEST.ADD", "d", *range(1, 101)), Simple("OK"))
        self.assertEqual(c.call("TDIGEST.MIN", "d"), 1.0)
        self.assertEqual(c.call("TDIGEST.MAX", "d"), 100.0)
        self.assertEqual(c.call("TDIGEST.BYRANK", "d", 0, 100), [1.0, math.inf])
        self.assertEqual(c.call("TDIGEST.BYREVRANK", "d", 0, 100), [100.0, -math.inf])
        q = c.call("TDIGEST.QUANTILE", "d", "0.5")
        self.assertIsInstance(q[0], float)
        self.assertAlmostEqual(q[0], 50.5, delta=1)
        self.assertEqual(c.call("TDIGEST.RANK", "d", 0, 1000), [-1, 100])
        info = c.call("TDIGEST.INFO", "d")
        self.assertIsInstance(info, Map)
        self.assertEqual(list(info), ["Compression", "Capacity", "Merged nodes", "Unmerged nodes",
                                      "Merged weight", "Unmerged weight", "Observations",
                                      "Total compressions", "Memory usage"])
        self.assertEqual((info["Compression"], info["Capacity"], info["Observations"]),
                         (50, 310, 100))
        self.assertEqual(info["Memory usage"], 8 + 16 * 310)

    def test_type_memory_usage_and_the_nan_and_inf_refusals(self):
        self.cmd("TDIGEST.CREATE", "d")
        self.assertEqual(self.r.type("d"), b"TDIS-TYPE")
        self.assertGreaterEqual(self.r.memory_usage("d"), 16 * 610)
        c = self.raw()
        self.addCleanup(c.close)
        self.assertEqual(c.call("TDIGEST.ADD", "d", "nan"),
                         RespError("ERR T-Digest: error parsing val parameter"))
        self.assertEqual(c.call("TDIGEST.ADD", "d", "1", "inf"),
                         RespError("ERR T-Digest: val parameter needs to be a finite number"))
        self.assertEqual(self.cmd("TDIGEST.INFO", "d")[13], 0, "a refused ADD adds nothing")
        self.assertEqual(c.call("TDIGEST.CREATE", "e", "COMPRESSION", "400000000"),
                         RespError("ERR T-Digest: allocation failed"))
        self.assertEqual(c.call("TDIGEST.CREATE", "e", "WRONG", "4"),
                         RespError("ERR T-Digest: wrong keyword"))
        self.assertEqual(c.call("TDIGEST.MERGE", "m", "1", "d", "BOGUS"),
                         RespError("ERR T-Digest: wrong keyword"))
        self.assertEqual(c.call("TDIGEST.BYRANK", "d", "-1"),
                         RespError("ERR T-Digest: rank needs to be non negative"))
        self.assertEqual(c.call("TDIGEST.CDF", "d", "nan"), RespError("ERR T-Digest: error parsing cdf"))
        # Each argument is checked before the next is read, as RedisBloom does.
        self.assertEqual(c.call("TDIGEST.BYRANK", "d", "-1", "x"),
                         RespError("ERR T-Digest: rank needs to be non negative"))
        self.assertEqual(c.call("TDIGEST.QUANTILE", "d", "1.5", "x"),
                         RespError("ERR T-Digest: quantile should be in [0,1]"))
        self.assertEqual(c.call("TDIGEST.RANK", "d", "1"), [-2])
        self.cmd("CMS.INITBYDIM", "cms", 10, 2)
        self.assertEqual(c.call("TDIGEST.CREATE", "cms"),
                         RespError("WRONGTYPE Operation against a key holding the wrong kind of value"))
        self.assertEqual(c.call("TDIGEST.MERGE", "cms", "1", "d")[:9], "WRONGTYPE")

    def test_command_docs_and_acl_category(self):
        docs = self.raw().call("COMMAND", "DOCS", "tdigest.merge")
        self.assertEqual(docs[0], b"tdigest.merge")
        fields = dict(zip(docs[1][::2], docs[1][1::2]))
        self.assertEqual(fields[b"group"], b"module")  # as Redis 8 shows a module's rows
        self.assertTrue(fields[b"arguments"])
        self.assertIn(b"tdigest", self.cmd("ACL", "CAT"))
        self.assertIn(b"tdigest.quantile", self.cmd("ACL", "CAT", "tdigest"))
        self.cmd("ACL", "SETUSER", "lat", "on", ">pw", "~*", "+@tdigest")
        u = self.server.client(username="lat", password="pw")
        self.addCleanup(u.close)
        self.assertEqual(u.execute_command("TDIGEST.CREATE", "p"), b"OK")
        self.assertEqual(u.execute_command("TDIGEST.ADD", "p", 1, 2, 3), b"OK")
        with self.assertRaises(Exception) as caught:
            u.execute_command("BF.ADD", "b", "x")
        self.assertIn("no permissions to run the 'bf.add' command", str(caught.exception))

    def test_dump_restore_gives_the_same_digest(self):
        self.cmd("TDIGEST.CREATE", "d", "COMPRESSION", "20")
        self.cmd("TDIGEST.ADD", "d", *[i * 1.5 for i in range(300)])
        payload = self.r.dump("d")
        self.assertTrue(self.r.restore("copy", 0, payload))
        self.assertEqual(self.cmd("TDIGEST.INFO", "copy"), self.cmd("TDIGEST.INFO", "d"))
        qs = ["0.01", "0.5", "0.99"]
        self.assertEqual(self.cmd("TDIGEST.QUANTILE", "copy", *qs),
                         self.cmd("TDIGEST.QUANTILE", "d", *qs))


class DurabilityTest(RestartAgainstTwinCase):
    """A digest after a kill -9 (log replay) or a SAVE answers, and goes on
    answering, as a never-restarted twin: the reads that compressed were
    journaled, so the centroids are the same."""

    def feed(self, clients, start, n):
        for r in clients:
            for i in range(start, start + n, 250):
                r.execute_command("TDIGEST.ADD", "d",
                                  *[math.exp((j * 7919 % 1000) / 150) for j in range(i, i + 250)])
                # A read in between compresses: replay must compress here too.
                r.execute_command("TDIGEST.QUANTILE", "d", "0.5")

    def run_case(self, via_snapshot):
        tr, data, args = self.twin_and_data(via_snapshot, "bloomgate-tdigest-")
        server, r = self.start(data, args, 1)
        for client in (tr, r):
            client.execute_command("TDIGEST.CREATE", "d", "COMPRESSION", "30")
            client.execute_command("TDIGEST.CREATE", "e")
        self.feed([tr, r], 0, 1700)
        for client in (tr, r):
            client.execute_command("TDIGEST.ADD", "e", 1, 2, 3)
            client.execute_command("TDIGEST.MERGE", "m", "2", "d", "e")
            client.execute_command("TDIGEST.ADD", "d", 5, 6)  # left unmerged
        if via_snapshot:
            self.assertTrue(r.execute_command("SAVE"))
        self.assertEqual(server.kill9(), -9)
        _, r = self.start(data, args, 2)
        for key in ("d", "e", "m"):
            self.assertEqual(r.execute_command("TDIGEST.INFO", key),
                             tr.execute_command("TDIGEST.INFO", key), key)
        self.feed([tr, r], 1700, 1000)
        probes = [str(p) for p in (0, 0.001, 0.1, 0.5, 0.9, 0.99, 1)]
        self.assertEqual(r.execute_command("TDIGEST.QUANTILE", "d", *probes),
                         tr.execute_command("TDIGEST.QUANTILE", "d", *probes))
        self.assertEqual(r.execute_command("TDIGEST.INFO", "d"),
                         tr.execute_command("TDIGEST.INFO", "d"))
        self.assertEqual(r.execute_command("TDIGEST.CDF", "m", 1, 10, 100),
                         tr.execute_command("TDIGEST.CDF", "m", 1, 10, 100))

    def test_log_replay_after_kill9_rebuilds_the_same_digest(self):
        self.run_case(via_snapshot=False)

    def test_snapshot_rebuilds_the_same_digest(self):
        self.run_case(via_snapshot=True)


if __name__ == "__main__":
    unittest.main()
