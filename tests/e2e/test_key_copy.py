"""Copying keys: DUMP / RESTORE between two servers (redis-py and redis-cli),
COPY, OBJECT IDLETIME, MEMORY STATS / DOCTOR, and a restart that replays
RESTORE and COPY from the append-only log."""

import os
import subprocess
import tempfile
import time
import unittest

import redis

from harness import Map, PersistentServer, ServerTestCase, TwoServersTestCase, wait_until


def fill_every_family(r):
    """One key of each family with a few items; returns their names."""
    r.bf().add("bf", "a")
    r.bf().add("bf", "b")
    r.cf().add("cf", "a")
    r.execute_command("CBF.ADD", "cbf", "a")
    r.cms().initbydim("cms", 20, 3)
    r.cms().incrby("cms", ["a"], [7])
    r.topk().reserve("topk", 3, 8, 7, 0.9)
    r.topk().add("topk", "a", "a", "b")
    return ["bf", "cf", "cbf", "cms", "topk"]


class DumpRestoreAcrossServersTest(TwoServersTestCase):

    def test_redis_py_dump_restore_copies_every_family_to_another_server(self):
        for key in fill_every_family(self.r):
            payload = self.r.dump(key)
            self.assertTrue(self.o.restore(key, 0, payload))
            self.assertEqual(self.o.type(key), self.r.type(key))
            self.assertEqual(self.o.dump(key), payload, key)
        self.assertEqual(self.o.bf().exists("bf", "b"), 1)
        self.assertEqual(self.o.cf().exists("cf", "a"), 1)
        self.assertEqual(self.o.execute_command("CBF.EXISTS", "cbf", "a"), 1)
        self.assertEqual(self.o.cms().query("cms", "a"), [7])
        self.assertEqual(self.o.topk().list("topk"), self.r.topk().list("topk"))

    def test_redis_cli_copies_a_key_with_dump_and_restore(self):
        self.r.bf().add("f", "item")
        # redis-cli's own way: DUMP's raw bytes piped into RESTORE with -x.
        dumped = subprocess.run(["redis-cli", "-p", str(self.port), "--no-raw", "DUMP", "f"],
                                capture_output=True, timeout=10, check=True)
        self.assertTrue(dumped.stdout.startswith(b'"BGDP'), dumped.stdout[:20])
        raw = subprocess.run(["redis-cli", "-p", str(self.port), "--raw", "DUMP", "f"],
                             capture_output=True, timeout=10, check=True).stdout
        restored = subprocess.run(["redis-cli", "-p", str(self.other.port), "-x", "RESTORE",
                                   "f", "0"], input=raw[:-1], capture_output=True, timeout=10)
        self.assertEqual(restored.stdout.strip(), b"OK", restored)
        self.assertEqual(self.o.bf().exists("f", "item"), 1)

    def test_ttl_replace_absttl_and_busykey_as_redis(self):
        self.r.bf().add("f", "x")
        payload = self.r.dump("f")
        self.assertTrue(self.o.restore("t", 60_000, payload))
        self.assertTrue(50_000 < self.o.pttl("t") <= 60_000)
        self.assertRaisesText("BUSYKEY Target key name already exists.",
                              self.o.restore, "t", 0, payload)
        self.assertTrue(self.o.restore("t", 0, payload, replace=True))
        self.assertEqual(self.o.ttl("t"), -1)
        at = int(time.time() * 1000) + 100_000
        self.assertTrue(self.o.restore("a", at, payload, absttl=True))
        self.assertEqual(self.o.pexpiretime("a"), at)
        # A deadline already past: the key is not created, a replaced one is gone.
        self.assertTrue(self.o.restore("gone", 1, payload, absttl=True))
        self.assertEqual(self.o.exists("gone"), 0)
        self.assertTrue(self.o.restore("a", 1, payload, absttl=True, replace=True))
        self.assertEqual(self.o.exists("a"), 0)
        self.assertIsNone(self.o.dump("missing"))

    def test_bad_payloads_and_options_are_refused_and_change_nothing(self):
        self.r.bf().add("f", "x")
        payload = self.r.dump("f")
        damaged = bytearray(payload)
        damaged[len(damaged) // 2] ^= 0x01
        for bad in (bytes(damaged), payload[:-1], payload[:10], b"", b"\x00\x05hello"):
            self.assertRaisesText("DUMP payload version or checksum are wrong",
                                  self.o.restore, "k", 0, bad)
        self.assertEqual(self.o.dbsize(), 0)
        cases = [(["-1", payload], "Invalid TTL value, must be >= 0"),
                 (["x", payload], "value is not an integer or out of range"),
                 (["0", payload, "FREQ", "256"], "Invalid FREQ value, must be >= 0 and <= 255"),
                 (["0", payload, "IDLETIME", "-1"], "Invalid IDLETIME value, must be >= 0"),
                 (["0", payload, "IDLETIME", "1", "FREQ", "1"], "syntax error"),
                 (["0", payload, "BOGUS"], "syntax error")]
        for args, text in cases:
            self.assertRaisesText(text, self.o.execute_command, "RESTORE", "k", *args)
        self.assertEqual(self.o.dbsize(), 0)
        self.assertTrue(self.o.execute_command("RESTORE", "k", "0", payload, "FREQ", "5"))

    def test_restore_is_refused_with_oom_when_maxmemory_cannot_hold_it(self):
        self.r.bf().create("big", 0.001, 200_000)
        payload = self.r.dump("big")
        limit = self.o.config_get("maxmemory")["maxmemory"]
        self.o.config_set("maxmemory", 100_000)
        self.addCleanup(self.o.config_set, "maxmemory", limit)
        self.assertRaisesText("OOM command not allowed when used memory > 'maxmemory'.",
                              self.o.restore, "big", 0, payload)
        self.assertEqual(self.o.exists("big"), 0)


class CopyAndIdleTimeTest(ServerTestCase):

    def test_copy_is_a_deep_copy_of_every_family_with_its_ttl(self):
        for key in fill_every_family(self.r):
            self.assertEqual(self.r.copy(key, key + ".copy"), True)
            self.assertEqual(self.r.dump(key + ".copy"), self.r.dump(key), key)
        self.r.bf().add("bf", "later")
        self.r.cf().add("cf", "later")
        self.assertEqual(self.r.bf().exists("bf.copy", "later"), 0)
        self.assertEqual(self.r.cf().exists("cf.copy", "later"), 0)
        self.r.pexpire("bf", 50_000)
        self.assertTrue(self.r.copy("bf", "bf.ttl"))
        self.assertTrue(40_000 < self.r.pttl("bf.ttl") <= 50_000)

    def test_copy_replies_and_errors_as_redis(self):
        self.r.bf().add("a", "x")
        self.r.bf().add("b", "y")
        self.assertFalse(self.r.copy("missing", "c"))
        self.assertFalse(self.r.copy("a", "b"), "the destination exists")
        self.assertEqual(self.r.bf().exists("b", "x"), 0)
        self.assertTrue(self.r.copy("a", "b", replace=True))
        self.assertEqual(self.r.bf().exists("b", "x"), 1)
        self.assertTrue(self.r.copy("a", "d", destination_db=0))
        self.assertRaisesText("DB index is out of range", self.r.copy, "a", "e",
                              destination_db=1)
        self.assertRaisesText("source and destination objects are the same",
                              self.r.copy, "a", "a")
        self.assertRaisesText("syntax error", self.r.execute_command, "COPY", "a", "f", "NOPE")

    def idle(self, key):
        # redis-py's OBJECT reply callback fails on IDLETIME; read it raw.
        if not hasattr(self, "conn"):
            self.conn = self.raw()
        return self.conn.call("OBJECT", "IDLETIME", key)

    def test_object_idletime_grows_and_an_access_resets_it(self):
        self.r.bf().add("f", "x")
        payload = self.r.dump("f")
        self.assertTrue(self.r.execute_command("RESTORE", "idle", "0", payload, "IDLETIME",
                                               "1000"))
        self.assertGreaterEqual(self.idle("idle"), 1000)
        self.assertGreaterEqual(self.idle("idle"), 1000,
                                "OBJECT IDLETIME itself is not an access")
        self.assertEqual(self.r.touch("idle"), 1)
        self.assertLessEqual(self.idle("idle"), 1)
        self.r.execute_command("RESTORE", "idle2", "0", payload, "IDLETIME", "1000")
        self.r.bf().exists("idle2", "x")
        self.assertLessEqual(self.idle("idle2"), 1, "a read is an access")
        wait_until(lambda: self.idle("f") >= 2, 10, 0.2,
                   "OBJECT IDLETIME to grow to 2 s")
        self.assertIsNone(self.idle("missing"))
        self.assertIn("IDLETIME <key>", self.conn.call("OBJECT", "HELP"))


class MemoryReportTest(ServerTestCase):

    def test_memory_stats_has_redis_fields_in_redis_order_with_real_values(self):
        fill_every_family(self.r)
        stats = self.r.execute_command("MEMORY", "STATS")
        names = [stats[i].decode() for i in range(0, len(stats), 2)]
        self.assertEqual(names, [
            "peak.allocated", "total.allocated", "startup.allocated", "replication.backlog",
            "clients.slaves", "clients.normal", "cluster.links", "aof.buffer", "lua.caches",
            "functions.caches", "db.0", "overhead.total", "keys.count", "keys.bytes-per-key",
            "dataset.bytes", "dataset.percentage", "peak.percentage", "fragmentation",
            "fragmentation.bytes"])
        s = self.r.memory_stats()
        self.assertEqual(s["keys.count"], 5)
        info = self.r.info("memory")
        self.assertEqual(s["dataset.bytes"], info["used_memory"])
        self.assertGreater(s["startup.allocated"], 0)
        self.assertEqual(s["total.allocated"], s["overhead.total"] + s["dataset.bytes"])
        self.assertGreaterEqual(s["peak.allocated"], s["total.allocated"])
        self.assertGreater(s["db.0"]["overhead.hashtable.main"], 5 * 64)
        self.assertGreater(float(s["fragmentation"]), 0)
        conn = self.raw()
        conn.call("HELLO", "3")
        reply = conn.call("MEMORY", "STATS")
        self.assertIsInstance(reply, Map, "RESP3 MEMORY STATS is a map")
        self.assertEqual(reply[b"keys.count"], 5)

    def test_memory_doctor_reports_no_problem_on_a_healthy_server(self):
        self.r.bf().add("f", "x")
        text = self.r.execute_command("MEMORY", "DOCTOR")
        self.assertIn(b"No memory problem found", text)
        self.assertIn(b"1 key(s)", text)
        help_lines = self.r.execute_command("MEMORY", "HELP")
        for sub in (b"DOCTOR", b"STATS", b"USAGE <key> [SAMPLES <count>]", b"HELP"):
            self.assertIn(sub, help_lines)


class RestartReplaysRestoreAndCopyTest(unittest.TestCase):

    def test_restore_and_copy_survive_a_kill_and_restart(self):
        tmp = tempfile.TemporaryDirectory(prefix="bloomgate-keycopy-")
        self.addCleanup(tmp.cleanup)
        data = os.path.join(tmp.name, "data")
        os.mkdir(data)
        server = PersistentServer(data, ["--save", ""]).start()
        r = server.client()
        fill_every_family(r)
        payloads = {}
        for key in ["bf", "cf", "cbf", "cms", "topk"]:
            payloads[key] = r.dump(key)
            self.assertTrue(r.restore(key + ".r", 600_000, payloads[key]))
            self.assertTrue(r.copy(key, key + ".c"))
        r.bf().add("bf", "after")
        deadline = r.pexpiretime("bf.r")
        r.close()
        server.kill9()
        server = PersistentServer(data, ["--save", ""]).start()
        self.addCleanup(server.stop)
        r = server.client()
        self.addCleanup(r.close)
        for key, payload in payloads.items():
            self.assertEqual(r.dump(key + ".r"), payload, key)
            self.assertEqual(r.dump(key + ".c"), payload, key)
        self.assertEqual(r.pexpiretime("bf.r"), deadline, "RESTORE replays its absolute TTL")
        self.assertEqual(r.bf().exists("bf.c", "after"), 0)
        self.assertEqual(r.bf().exists("bf", "after"), 1)


if __name__ == "__main__":
    unittest.main()
