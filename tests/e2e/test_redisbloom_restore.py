"""RESTORE of RedisBloom's DUMP payloads (Redis 7.0.15 + RedisBloom 2.4.23,
tests/data/redisbloom-sketches/dump-payloads.json): every one of its five
types is RESTOREd and answers its probe exactly as the copy RedisBloom made
of it; sent as Redis's MIGRATE sends it (SELECT 0, then RESTORE or, from a
cluster node, RESTORE-ASKING, with the remaining TTL and REPLACE);
damaged payloads are refused with Redis's texts and change nothing. A real
redis-server (Debian's, no module) drives MIGRATE into Bloomgate: a plain
key is refused as Redis's own target refuses a type it cannot load, the
refusal reaches MIGRATE's caller, and the source keeps the key.
"""

import os
import signal
import tempfile
import unittest

import redis

from harness import (BloomgateServer, PersistentServer, RawConnection, ServerTestCase,
                     encode_command)
from redis_dump_support import dump_body, payloads, probe, sign_dump
from test_resp3_shapes import RedisServer, redis7_binary

TYPE_NAMES = {"MBbloom--", "MBbloomCF", "CMSk-TYPE", "TopK-TYPE", "TDIS-TYPE"}
VERSION_OR_CHECKSUM = "DUMP payload version or checksum are wrong"
BAD_DATA = "Bad data format"


class RestoreRedisBloomPayloads(ServerTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.payloads = payloads()

    def test_every_type_restores_with_redisbloom_answers(self):
        self.assertEqual({p[0] for p in self.payloads.values()}, TYPE_NAMES)
        for name, (module_type, payload, _pttl, command, expected) in self.payloads.items():
            with self.subTest(name=name):
                self.assertTrue(self.r.restore(f"{name}:copy", 0, payload))
                self.assertEqual(self.r.pttl(f"{name}:copy"), -1)
                probe(self, self.r, f"{name}:copy", command, expected)

    def test_migrate_wire_select_restore_replace_and_restore_asking(self):
        # What MIGRATE host port "" 0 5000 KEYS ... writes on its socket: a
        # SELECT of the source's db, then one RESTORE per key with its
        # remaining TTL (0 for none), REPLACE when given; a cluster node
        # sends RESTORE-ASKING. Pipelined, replies read in order.
        conn = self.raw()
        for verb, replace in (("RESTORE", False), ("RESTORE", True), ("RESTORE-ASKING", True)):
            out = encode_command("SELECT", "0")
            for name, (_t, payload, pttl, _c, _e) in self.payloads.items():
                ttl = pttl if pttl > 0 else 0
                args = [verb, f"m:{name}", str(ttl), payload] + (["REPLACE"] if replace else [])
                out += encode_command(*args)
            conn.send(out)
            self.assertEqual(conn.read_reply(), "OK")
            for name in self.payloads:
                self.assertEqual(conn.read_reply(), "OK", f"{verb} m:{name}")
        for name, (module_type, _p, pttl, command, expected) in self.payloads.items():
            with self.subTest(name=name):
                if pttl > 0:
                    self.assertTrue(0 < self.r.pttl(f"m:{name}") <= pttl)
                else:
                    self.assertEqual(self.r.pttl(f"m:{name}"), -1)
                probe(self, self.r, f"m:{name}", command, expected)
        # Without REPLACE an existing key is Redis's BUSYKEY.
        payload = self.payloads["cms"][1]
        with self.assertRaisesRegex(redis.ResponseError, "BUSYKEY"):
            self.r.execute_command("RESTORE", "m:cms", "0", payload)

    def test_every_flipped_byte_and_truncation_is_refused_with_redis_text(self):
        _t, payload, _pttl, command, expected = self.payloads["topk"]
        conn = self.raw()
        out = b""
        cases = 0
        for i in range(len(payload)):
            bad = bytearray(payload)
            bad[i] ^= 0x40
            out += encode_command("RESTORE", "t", "0", bytes(bad))
            cases += 1
        for n in range(0, len(payload), 7):
            out += encode_command("RESTORE", "t", "0", payload[:n])
            cases += 1
        conn.send(out)
        for _ in range(cases):
            reply = conn.read_reply()
            self.assertEqual(reply, "ERR " + VERSION_OR_CHECKSUM)
        self.assertEqual(self.r.exists("t"), 0)

    def test_other_versions_types_and_contents_are_refused(self):
        _t, payload, *_ = self.payloads["cms"]
        body = dump_body(payload)
        for version in (9, 13):
            with self.assertRaisesRegex(redis.ResponseError, VERSION_OR_CHECKSUM):
                self.r.restore("c", 0, sign_dump(body, version))
        for version in (10, 11, 12):
            self.assertTrue(self.r.restore(f"c{version}", 0, sign_dump(body, version)))
        # A Redis string value, a value cut short behind a valid checksum,
        # bytes after the value: Bad data format, nothing created.
        for bad in (b"\x00\x05hello", body[:-20], body + b"\x00"):
            with self.assertRaisesRegex(redis.ResponseError, BAD_DATA):
                self.r.restore("c", 0, sign_dump(bad))
        self.assertEqual(self.r.exists("c"), 0)

    def test_dump_of_a_restored_key_is_our_payload_and_round_trips(self):
        for name, (_t, payload, *_rest) in self.payloads.items():
            self.assertTrue(self.r.restore(name, 0, payload))
        # DUMP of a restored key is our own payload, and it round-trips.
        for name, (_t, _p, _pttl, command, expected) in self.payloads.items():
            ours = self.r.dump(name)
            self.assertTrue(ours.startswith(b"BGDP"))
            self.assertTrue(self.r.restore(f"{name}:again", 0, ours))
            probe(self, self.r, f"{name}:again", command, expected)


class RestoredKeysSurviveKill9(unittest.TestCase):
    """RESTORE of a RedisBloom payload is logged (with ABSTTL for a TTL) and
    replayed after kill -9 into the same filters."""

    def test_replay_after_kill9_gives_the_same_answers(self):
        tmp = tempfile.TemporaryDirectory(prefix="bloomgate-rb-restore-")
        self.addCleanup(tmp.cleanup)
        data_dir = os.path.join(tmp.name, "data")
        os.mkdir(data_dir)
        args = ("--appendonly", "yes", "--appendfsync", "always", "--save", "")
        fixtures = payloads()
        server = PersistentServer(data_dir, args).start()
        try:
            client = server.client()
            for name, (_t, payload, pttl, _c, _e) in fixtures.items():
                self.assertTrue(client.restore(name, max(pttl, 0), payload))
            client.close()
            self.assertEqual(server.kill9(), -signal.SIGKILL)
        finally:
            server.kill9()
        again = PersistentServer(data_dir, args).start()
        try:
            client = again.client()
            for name, (module_type, _p, pttl, command, expected) in fixtures.items():
                with self.subTest(key=name):
                    self.assertEqual(client.type(name).decode(), module_type)
                    probe(self, client, name, command, expected)
                    if pttl > 0:
                        self.assertTrue(0 < client.pttl(name) <= pttl)
            client.close()
        finally:
            again.kill9()


class RedisMigrateIntoBloomgate(unittest.TestCase):
    """A real redis-server's MIGRATE, with AUTH, into a Bloomgate."""

    @classmethod
    def setUpClass(cls):
        cls.redis = RedisServer(redis7_binary("MIGRATE's wire is checked against")).start()
        cls.bloomgate = BloomgateServer(("--save", "", "--appendonly", "no", "--requirepass",
                                         "pw"), password="pw").start()

    @classmethod
    def tearDownClass(cls):
        cls.bloomgate.stop()
        cls.redis.stop()

    def test_migrate_reaches_restore_and_relays_its_refusal(self):
        source = redis.Redis(port=self.redis.port)
        self.addCleanup(source.close)
        source.set("plain", "a Redis string")
        with RawConnection(self.redis.port) as c:
            reply = c.call("MIGRATE", "127.0.0.1", str(self.bloomgate.port), "", "0", "5000",
                           "AUTH", "pw", "KEYS", "plain")
        # Redis's MIGRATE relays its target's error: ours is RESTORE's, so
        # MIGRATE authenticated, selected and sent RESTORE with the payload.
        self.assertIn("Target instance replied with error", reply)
        self.assertIn(BAD_DATA, reply)
        self.assertEqual(source.get("plain"), b"a Redis string")
        with RawConnection(self.redis.port) as c:
            reply = c.call("MIGRATE", "127.0.0.1", str(self.bloomgate.port), "", "0", "5000",
                           "AUTH", "wrong", "KEYS", "plain")
        self.assertIn("WRONGPASS", reply)
        target = self.bloomgate.client()
        self.addCleanup(target.close)
        self.assertEqual(target.dbsize(), 0)


if __name__ == "__main__":
    unittest.main()
