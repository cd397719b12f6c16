"""MIGRATE in chunks (RESTORE-CHUNK): a payload over the chunk threshold goes
to a Bloomgate target as ordered chunks it stages and commits at the last.
By default a payload over 4 MiB goes in 4 MiB chunks (a 5 MB filter: two,
also into a cluster node importing the slot, each chunk after ASKING); the
source of most tests runs with BLOOMGATE_TEST_MIGRATE_CHUNK_BYTES=1048576
(the test-only setting that lowers the chunk size and so the threshold to
1 MiB), so a few-MB filter goes in several chunks: two families under a
writer each (no acknowledged write lost), the TTL, BUSYKEY then REPLACE,
the log replaying the committed key whole; a target that is not a Bloomgate
gets one RESTORE-ASKING instead. RESTORE-CHUNK's own refusals (order,
repeats, an unfinished COMMIT, damage, the memory limit, MULTI) change
nothing."""

import os
import shutil
import socket
import tempfile
import threading
import unittest

import redis

from cluster_support import LocalCluster, key_in_slot
from harness import (BloomgateServer, PersistentServer, TwoServersTestCase, wait_until,
                     write_until)

CHUNK = 1 << 20


def start_chunking_source(args=()):
    os.environ["BLOOMGATE_TEST_MIGRATE_CHUNK_BYTES"] = str(CHUNK)
    try:
        return BloomgateServer(args).start()
    finally:
        del os.environ["BLOOMGATE_TEST_MIGRATE_CHUNK_BYTES"]


def chunk_calls(r):
    return r.info("commandstats").get("cmdstat_restore-chunk", {}).get("calls", 0)


class MigrateChunksTest(TwoServersTestCase):
    server_args = ("--enable-debug-command", "local")
    other_args = ("--enable-debug-command", "local")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.source = start_chunking_source(["--enable-debug-command", "local"])

    @classmethod
    def tearDownClass(cls):
        cls.source.stop()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.s = self.source.client()
        self.addCleanup(self.s.close)
        self.s.flushall()

    def migrate(self, *args):
        return self.s.execute_command("MIGRATE", "127.0.0.1", self.other.port, *args)

    def test_two_families_move_in_chunks_under_writers_losing_no_acknowledged_write(self):
        self.s.execute_command("BF.RESERVE", "hot", "0.001", "2000000")  # ~3.6 MB
        self.s.execute_command("CMS.INITBYDIM", "hotc", "200000", "4")  # 3.2 MB
        acked = {"hot": [], "hotc": []}
        stop = threading.Event()
        errors = []

        threads = [threading.Thread(target=write_until, args=(
                       stop, self.source.client(), "hot", "BF.ADD", acked["hot"], errors)),
                   threading.Thread(target=write_until, args=(
                       stop, self.source.client(), "hotc", "CMS.INCRBY", acked["hotc"], errors,
                       1))]
        for t in threads:
            t.start()
        calls = chunk_calls(self.o)
        try:
            wait_until(lambda: len(acked["hot"]) > 200 and len(acked["hotc"]) > 200, 20,
                       what="writers under way")
            self.assertEqual(self.migrate("", 0, 10000, "KEYS", "hot", "hotc"), b"OK")
            wait_until(lambda: self.s.exists("hot") and errors, 20,
                       what="writes after the move: BF.ADD re-creating its key on the "
                            "source, CMS.INCRBY refused")
        finally:
            stop.set()
            for t in threads:
                t.join()
        # ~3.6 MB and 3.2 MB in 1 MiB chunks: at least 4 each.
        self.assertGreaterEqual(chunk_calls(self.o) - calls, 8)
        # CMS.INCRBY does not create its key: after the move it is refused
        # (never acknowledged, so never lost).
        errors = [e for e in errors if "does not exist" not in e and "missing" not in e]
        self.assertEqual(errors, [])
        missing = [item for item in acked["hot"]
                   if not self.o.execute_command("BF.EXISTS", "hot", item)
                   and not self.s.execute_command("BF.EXISTS", "hot", item)]
        self.assertEqual(missing, [], "hot: acknowledged adds lost")
        counts = dict(zip(acked["hotc"], self.o.execute_command("CMS.QUERY", "hotc",
                                                                *acked["hotc"])))
        missing = [item for item in acked["hotc"] if counts[item] < 1]
        self.assertEqual(missing, [], "hotc: acknowledged increments lost")

    def test_the_ttl_busykey_and_replace_carry_over(self):
        self.s.execute_command("CF.RESERVE", "cf", "2000000")  # ~2 MB of buckets
        self.s.execute_command("CF.ADD", "cf", "a")
        self.s.pexpire("cf", 100_000)
        digest = self.s.execute_command("DEBUG", "DIGEST-VALUE", "cf")[0]
        self.o.execute_command("CF.ADD", "cf", "other")
        with self.assertRaisesRegex(redis.ResponseError,
                                    "^Target instance replied with error: BUSYKEY"):
            self.migrate("cf", 0, 5000)
        self.assertEqual(self.s.exists("cf"), 1)
        self.assertEqual(self.o.execute_command("CF.EXISTS", "cf", "a"), 0)
        calls = chunk_calls(self.o)
        self.assertEqual(self.migrate("cf", 0, 5000, "REPLACE"), b"OK")
        self.assertGreaterEqual(chunk_calls(self.o) - calls, 2)
        self.assertEqual(self.s.exists("cf"), 0)
        self.assertEqual(self.o.execute_command("DEBUG", "DIGEST-VALUE", "cf")[0], digest)
        self.assertTrue(90_000 < self.o.pttl("cf") <= 100_000, self.o.pttl("cf"))

    def test_a_small_payload_still_goes_as_one_restore_asking(self):
        self.s.execute_command("BF.ADD", "small", "a")
        calls = chunk_calls(self.o)
        self.assertEqual(self.migrate("small", 0, 5000), b"OK")
        self.assertEqual(chunk_calls(self.o), calls)
        self.assertEqual(self.o.execute_command("BF.EXISTS", "small", "a"), 1)


    def test_by_default_a_payload_over_4_mib_goes_in_chunks(self):
        self.r.execute_command("BF.RESERVE", "big", "0.001", "2800000")  # ~5 MB
        self.r.execute_command("BF.ADD", "big", "a")
        calls = chunk_calls(self.o)
        self.assertEqual(self.r.execute_command("MIGRATE", "127.0.0.1", self.other.port, "big",
                                                0, 5000), b"OK")
        self.assertEqual(chunk_calls(self.o) - calls, 2)
        self.assertEqual(self.o.execute_command("BF.EXISTS", "big", "a"), 1)


@unittest.skipUnless(shutil.which("redis-cli"), "redis-cli is not installed")
class ChunksIntoAnImportingSlotTest(unittest.TestCase):
    """A cluster node importing the slot takes the chunks (each after an
    ASKING, as RESTORE-ASKING implies one) and the source answers -ASK."""

    def test_a_chunked_key_moves_into_an_importing_slot(self):
        tmp = tempfile.TemporaryDirectory(prefix="bloomgate-chunks-cluster-")
        self.addCleanup(tmp.cleanup)
        cluster = LocalCluster(tmp.name, nodes=3)
        self.addCleanup(cluster.stop)
        cluster.create()
        cluster.wait_agreement()
        source_node, target_node = cluster.nodes[0], cluster.nodes[1]
        source = source_node.client(decode_responses=True)
        target = target_node.client(decode_responses=True)
        self.addCleanup(source.close)
        self.addCleanup(target.close)
        slot = int(next(r for r in source.execute_command("CLUSTER", "SLOTS")
                        if int(r[2][1]) == source_node.port)[0])
        key = key_in_slot(slot)
        source.execute_command("BF.RESERVE", key, "0.001", "2800000")  # ~5 MB
        source.execute_command("BF.ADD", key, "x")
        source_id = source.execute_command("CLUSTER", "MYID")
        target_id = target.execute_command("CLUSTER", "MYID")
        target.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
        source.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
        self.assertEqual(source.execute_command(
            "MIGRATE", "127.0.0.1", target_node.port, "", 0, 10000, "KEYS", key), "OK")
        stats = target.info("commandstats")
        self.assertEqual(stats["cmdstat_restore-chunk"]["calls"], 2)
        self.assertGreaterEqual(stats["cmdstat_asking"]["calls"], 2)
        with self.assertRaisesRegex(redis.ResponseError, f"^ASK {slot} "):
            source.execute_command("BF.EXISTS", key, "x")
        target.execute_command("ASKING")
        self.assertEqual(target.execute_command("BF.EXISTS", key, "x"), 1)


class ChunkedKeyInTheLogTest(unittest.TestCase):
    """The committed key is journaled whole: a restart replays it, TTL too."""

    def test_the_log_replays_a_chunked_key(self):
        tmp = tempfile.TemporaryDirectory(prefix="bloomgate-chunks-")
        self.addCleanup(tmp.cleanup)
        data = os.path.join(tmp.name, "data")
        os.mkdir(data)
        args = ("--appendonly", "yes", "--appendfsync", "always", "--save", "",
                "--enable-debug-command", "local")
        target = PersistentServer(data, args, log_path=os.path.join(tmp.name, "1.log")).start()
        self.addCleanup(lambda: target.kill9() if target.alive() else None)
        source = start_chunking_source(["--enable-debug-command", "local"])
        self.addCleanup(source.stop)
        s = source.client()
        s.execute_command("BF.RESERVE", "k", "0.001", "2000000")
        s.execute_command("BF.ADD", "k", "a")
        s.pexpire("k", 1_000_000)
        digest = s.execute_command("DEBUG", "DIGEST-VALUE", "k")[0]
        self.assertEqual(s.execute_command("MIGRATE", "127.0.0.1", target.port, "k", 0, 5000),
                         b"OK")
        self.assertGreaterEqual(chunk_calls(target.client()), 4)
        target.kill9()  # the log alone: no snapshot at shutdown
        again = PersistentServer(data, args, log_path=os.path.join(tmp.name, "2.log")).start()
        self.addCleanup(lambda: again.kill9() if again.alive() else None)
        r = again.client()
        self.assertEqual(r.execute_command("DEBUG", "DIGEST-VALUE", "k")[0], digest)
        self.assertTrue(0 < r.pttl("k") <= 1_000_000, r.pttl("k"))


class NotBloomgateTarget:
    """A RESP target that is not a Bloomgate: INFO without bloomgate_version,
    +OK to everything else; records the commands it got."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.port = self.listener.getsockname()[1]
        self.commands = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        conn, _ = self.listener.accept()
        f = conn.makefile("rb")
        try:
            while True:
                line = f.readline()
                if not line:
                    return
                args = []
                for _ in range(int(line[1:])):
                    n = int(f.readline()[1:])
                    args.append(f.read(n + 2)[:-2])
                self.commands.append(args[0].upper())
                if args[0].upper() == b"INFO":
                    body = b"# Server\r\nredis_version:7.2.4\r\nredis_mode:standalone\r\n"
                    conn.sendall(b"$%d\r\n%s\r\n" % (len(body), body))
                else:
                    conn.sendall(b"+OK\r\n")
        finally:
            conn.close()

    def close(self):
        self.listener.close()
        self.thread.join(10)


class NotBloomgateTargetTest(unittest.TestCase):
    def test_a_payload_over_the_threshold_goes_whole_to_another_server(self):
        target = NotBloomgateTarget()
        self.addCleanup(target.close)
        source = start_chunking_source()
        self.addCleanup(source.stop)
        s = source.client()
        s.execute_command("BF.RESERVE", "k", "0.001", "2000000")
        self.assertEqual(s.execute_command("MIGRATE", "127.0.0.1", target.port, "k", 0, 5000),
                         b"OK")
        self.assertEqual(target.commands, [b"SELECT", b"INFO", b"RESTORE-ASKING"])
        self.assertEqual(s.exists("k"), 0)


class RestoreChunkTest(TwoServersTestCase):
    """RESTORE-CHUNK sent by hand: every refusal is a clear error that leaves
    the keyspace, and the staging, as they were."""

    def setUp(self):
        super().setUp()
        self.o.execute_command("BF.RESERVE", "src", "0.001", "200000")  # ~360 KB
        self.o.execute_command("BF.ADD", "src", "a")
        payload = self.o.dump("src")
        self.pieces = [payload[i:i + 100_000] for i in range(0, len(payload), 100_000)]
        self.offsets = [i * 100_000 for i in range(len(self.pieces))]

    def chunk(self, i, *extra, r=None):
        return (r or self.r).execute_command("RESTORE-CHUNK", "k", self.offsets[i],
                                             self.pieces[i], *extra)

    def test_in_order_with_commit_creates_the_key_only_at_the_end(self):
        for i in range(len(self.pieces) - 1):
            self.assertEqual(self.chunk(i), b"OK")
            self.assertEqual(self.r.exists("k"), 0)
        self.assertEqual(self.chunk(len(self.pieces) - 1, "COMMIT", 0), b"OK")
        self.assertEqual(self.r.execute_command("BF.EXISTS", "k", "a"), 1)
        self.assertEqual(self.r.pttl("k"), -1)

    def test_repeats_gaps_and_other_connections_are_refused_and_change_nothing(self):
        with self.assertRaisesRegex(redis.ResponseError, "no payload staged"):
            self.chunk(1)
        self.assertEqual(self.chunk(0), b"OK")
        with self.assertRaisesRegex(redis.ResponseError,
                                    "out of order: offset 200000, expected 100000"):
            self.chunk(2)
        self.assertEqual(self.chunk(1), b"OK")
        with self.assertRaisesRegex(redis.ResponseError, "out of order: offset 100000, "
                                                         "expected 200000"):
            self.chunk(1)  # a repeat
        other = self.server.client()
        self.addCleanup(other.close)
        with self.assertRaisesRegex(redis.ResponseError, "no payload staged"):
            self.chunk(2, r=other)
        with self.assertRaisesRegex(redis.ResponseError, "COMMIT before the payload's last "
                                                         "byte"):
            self.chunk(2, "COMMIT", 0)
        self.assertEqual(self.r.exists("k"), 0)
        # The unfinished COMMIT kept its chunk: the rest completes the key.
        for i in range(3, len(self.pieces) - 1):
            self.assertEqual(self.chunk(i), b"OK")
        self.assertEqual(self.chunk(len(self.pieces) - 1, "COMMIT", 50_000), b"OK")
        self.assertEqual(self.r.execute_command("BF.EXISTS", "k", "a"), 1)
        self.assertTrue(0 < self.r.pttl("k") <= 50_000)

    def test_reset_drops_the_staging(self):
        self.assertEqual(self.chunk(0), b"OK")
        self.assertIn(self.r.execute_command("RESET"), ("RESET", b"RESET"))
        with self.assertRaisesRegex(redis.ResponseError, "no payload staged"):
            self.chunk(1)

    def test_bad_arguments_damage_and_busykey_are_refused(self):
        for args, error in (
                (("k", "x", b"B"), "not an integer"),
                (("k", -1, b"B"), "not an integer"),
                (("k", 0, b"B", "COMMIT"), "syntax error"),
                (("k", 0, b"B", "COMMIT", 0, "NOPE"), "syntax error"),
                (("k", 0, b"B", "COMMIT", -5), "Invalid TTL"),
                (("k", 0, b"RDB not ours"), "DUMP payload version or checksum are wrong")):
            with self.assertRaisesRegex(redis.ResponseError, error, msg=str(args)):
                self.r.execute_command("RESTORE-CHUNK", *args)
        last = len(self.pieces) - 1
        damaged = bytearray(self.pieces[last])
        damaged[-3] ^= 0x10
        self.pieces[last] = bytes(damaged)
        for i in range(last):
            self.chunk(i)
        with self.assertRaisesRegex(redis.ResponseError, "checksum are wrong"):
            self.chunk(last, "COMMIT", 0)
        self.assertEqual(self.r.exists("k"), 0)
        self.r.execute_command("BF.ADD", "k", "x")
        self.pieces[last] = self.o.dump("src")[self.offsets[last]:]
        for i in range(last):
            self.chunk(i)
        with self.assertRaisesRegex(redis.ResponseError, "^BUSYKEY"):
            self.chunk(last, "COMMIT", 0)
        # BUSYKEY left the staging: REPLACE commits it.
        self.assertEqual(self.chunk(last, "COMMIT", 0, "REPLACE"), b"OK")
        self.assertEqual(self.r.execute_command("BF.EXISTS", "k", "a"), 1)
        self.assertEqual(self.r.execute_command("BF.EXISTS", "k", "x"), 0)

    def test_the_memory_limit_refuses_the_first_chunk_and_multi_refuses_it(self):
        self.r.config_set("maxmemory", str(100_000))
        self.addCleanup(lambda: self.r.config_set("maxmemory", "0"))
        with self.assertRaisesRegex(redis.ResponseError, "^OOM"):
            self.chunk(0)
        self.r.config_set("maxmemory", "0")
        with self.assertRaisesRegex(redis.ResponseError, "no payload staged"):
            self.chunk(1)
        p = self.r.pipeline(transaction=True)
        p.execute_command("RESTORE-CHUNK", "k", 0, self.pieces[0])
        with self.assertRaisesRegex(redis.ResponseError, "not allowed in MULTI"):
            p.execute()
        self.assertEqual(self.r.exists("k"), 0)


if __name__ == "__main__":
    unittest.main()
