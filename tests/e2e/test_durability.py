"""Durability against the real server: snapshots (SAVE, BGSAVE, the final
save at shutdown), the append-only log and its replay after kill -9, damaged
files, save failures, and the offline tools (check-snapshot, build).

Every test owns a fresh temp dir holding a `data` directory that is the
servers' cwd (so --dir's default ./ lands there) and survives restarts; the
servers' logs sit next to it. A restart is a new process on the same data
directory and a new port.
"""

import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
import unittest

import redis

from harness import (PersistentServer, RespError, encode_command, parse_info, run_bloomgate,
                     wait_until)

SNAPSHOT = "dump.bgs"
LOG_PREFIX = "appendonly.bglog."
NO_PERSISTENCE = ("--save", "", "--appendonly", "no")
SNAPSHOT_ONLY = ("--save", "", "--appendonly", "no")  # data only through explicit SAVE
SAVE_DEADLINE_S = 20.0
KILL_DURING_SAVE_ATTEMPTS = 4  # ballast of 24, 48, 96, 192 MB
WRITER_DEADLINE_S = 20.0


def items(prefix, n, start=0):
    return [f"{prefix}:{i}" for i in range(start, start + n)]


def info_pairs(reply):
    """A BF.INFO / CF.INFO / CBF.INFO RESP2 reply ([name, value, ...]) as a dict."""
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in zip(reply[0::2], reply[1::2])}


def log_files(data_dir):
    """The append-only log files in data_dir as [(generation, path)], oldest first."""
    out = []
    for name in os.listdir(data_dir):
        if name.startswith(LOG_PREFIX) and name[len(LOG_PREFIX):].isdigit():
            out.append((int(name[len(LOG_PREFIX):]), os.path.join(data_dir, name)))
    return sorted(out)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


class DurabilityTestCase(unittest.TestCase):
    """A fresh data directory per test, and servers started on it that are
    killed (and their logs shown on failure) when the test ends."""

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.TemporaryDirectory(prefix="bloomgate-durability-")
        self.addCleanup(self.tmp.cleanup)
        self.data_dir = os.path.join(self.tmp.name, "data")
        os.mkdir(self.data_dir)
        self.servers = []

    def start(self, *args, expected_exit_code=0, ready=True):
        """Starts a server on self.data_dir; it is killed when the test ends."""
        n = len(self.servers)
        server = PersistentServer(self.data_dir, args,
                                  log_path=os.path.join(self.tmp.name, f"server-{n}.log"),
                                  expected_exit_code=expected_exit_code, ready=ready)
        self.servers.append(server)
        self.addCleanup(self._reap, server)
        return server.start()

    def _reap(self, server):
        if self._has_failed():
            sys.stderr.write(f"\n--- bloomgate log ({server.log_path}) ---\n"
                             + "\n".join(server.log().splitlines()[-40:]) + "\n")
        if server.alive():
            server.kill9()
        else:
            server._cleanup()  # closes its log file

    def _has_failed(self):
        result = getattr(getattr(self, "_outcome", None), "result", None)
        if result is None:
            return False
        for test, _ in list(result.failures) + list(result.errors):
            if test is self or getattr(test, "test_case", None) is self:
                return True
        return False

    def client(self, server, **kwargs):
        c = server.client(**kwargs)
        self.addCleanup(c.close)
        return c

    def call(self, server, *args):
        """One command over a raw connection: the reply as typed on the wire
        (redis-py would turn SAVE's +OK into True and BF.INFO into an object)."""
        with server.raw() as c:
            return c.call(*args)

    def persistence_info(self, server):
        with server.raw() as c:
            return parse_info(c.call("INFO", "persistence"))

    def wait_for_bgsave(self, server):
        """Polls INFO until no background save runs; returns the INFO fields."""
        return wait_until(
            lambda: (lambda i: i if i["rdb_bgsave_in_progress"] == "0" else None)(
                self.persistence_info(server)),
            SAVE_DEADLINE_S, what="rdb_bgsave_in_progress:0")

    def restart(self, server, *args, how="term"):
        """Stops `server` (SIGTERM and a clean exit, or kill -9) and starts a
        new one on the same data directory with `args` (default: the same)."""
        if how == "term":
            server.stop()
        else:
            self.assertEqual(server.kill9(), -signal.SIGKILL)
        return self.start(*(args or server.args))

    def assertAllPresent(self, r, command, key, wanted, what):
        """command (BF.MEXISTS / CF.MEXISTS / CBF.MEXISTS) answers 1 for every
        item of `wanted`; lists the missing ones otherwise."""
        missing = []
        for i in range(0, len(wanted), 500):
            batch = wanted[i:i + 500]
            flags = r.execute_command(command, key, *batch)
            missing += [x for x, hit in zip(batch, flags) if not hit]
        if missing:
            self.fail(f"{len(missing)} of {len(wanted)} {what} lost, e.g. {missing[:10]}")


class SnapshotRoundTripTest(DurabilityTestCase):
    """SAVE, SIGTERM, start again: with --save "" and --appendonly no nothing
    but the explicit SAVE writes to disk, so what comes back is the snapshot."""

    def test_bloom_filters_come_back_from_a_snapshot_with_the_same_items_and_info(self):
        server = self.start(*SNAPSHOT_ONLY)
        r = self.client(server)
        r.execute_command("BF.RESERVE", "fixed", "0.001", "5000", "EXPANSION", "4")
        r.execute_command("BF.MADD", "fixed", *items("f", 1000))
        r.execute_command("BF.RESERVE", "layers", "0.01", "100", "EXPANSION", "2")
        for i in range(0, 700, 100):
            r.execute_command("BF.MADD", "layers", *items("l", 100, i))
        r.execute_command("BF.RESERVE", "flat", "0.01", "1000", "NONSCALING")
        r.execute_command("BF.ADD", "flat", "only")
        before = {k: r.execute_command("BF.INFO", k) for k in ("fixed", "layers", "flat")}
        self.assertGreater(info_pairs(before["layers"])["Number of filters"], 2,
                           "700 items in a capacity-100 filter must have grown layers")
        self.assertEqual(self.call(server, "SAVE"), "OK")
        r.execute_command("BF.ADD", "after-save", "x")  # not saved: must not come back

        r = self.client(self.restart(server))
        self.assertEqual(sorted(r.keys("*")), [b"fixed", b"flat", b"layers"])
        for key, info in before.items():
            self.assertEqual(r.execute_command("BF.INFO", key), info, key)
            self.assertEqual(r.type(key), b"MBbloom--")
        self.assertAllPresent(r, "BF.MEXISTS", "fixed", items("f", 1000), "items of fixed")
        self.assertAllPresent(r, "BF.MEXISTS", "layers", items("l", 700), "items of layers")
        self.assertEqual(r.execute_command("BF.EXISTS", "flat", "only"), 1)
        # The restored filter keeps working: it still grows and adds.
        self.assertEqual(r.execute_command("BF.ADD", "layers", "new-item"), 1)

    def test_cuckoo_filters_come_back_from_a_snapshot_with_the_same_counts_and_info(self):
        server = self.start(*SNAPSHOT_ONLY)
        r = self.client(server)
        r.execute_command("CF.RESERVE", "c", "1000", "BUCKETSIZE", "4", "EXPANSION", "2")
        added = items("c", 1500)  # past the capacity: a second sub-filter
        for i in range(0, len(added), 250):
            r.execute_command("CF.INSERT", "c", "ITEMS", *added[i:i + 250])
        for item in added[:300]:
            self.assertEqual(r.execute_command("CF.DEL", "c", item), 1)
        for _ in range(3):
            r.execute_command("CF.ADD", "c", "triple")
        r.execute_command("CF.RESERVE", "empty", "500")
        probes = added + ["triple"] + items("absent", 200)
        counts = [r.execute_command("CF.COUNT", "c", x) for x in probes]
        before = {k: r.execute_command("CF.INFO", k) for k in ("c", "empty")}
        self.assertGreater(info_pairs(before["c"])["Number of filters"], 1)
        self.assertEqual(self.call(server, "SAVE"), "OK")

        r = self.client(self.restart(server))
        for key, info in before.items():
            self.assertEqual(r.execute_command("CF.INFO", key), info, key)
            self.assertEqual(r.type(key), b"MBbloomCF")
        self.assertEqual([r.execute_command("CF.COUNT", "c", x) for x in probes], counts,
                         "CF.COUNT must answer exactly as before the restart")
        # Three copies, and more when another item's fingerprint shares one of
        # its buckets (a few percent with 1,200 items and a per-filter seed).
        triple = r.execute_command("CF.COUNT", "c", "triple")
        self.assertGreaterEqual(triple, 3)
        self.assertEqual(r.execute_command("CF.DEL", "c", "triple"), 1)
        self.assertEqual(r.execute_command("CF.COUNT", "c", "triple"), triple - 1)

    def test_counting_filters_come_back_from_a_snapshot_with_the_same_counts_and_info(self):
        server = self.start(*SNAPSHOT_ONLY)
        r = self.client(server)
        r.execute_command("CBF.RESERVE", "n", "0.01", "200", "COUNTERBITS", "4")
        r.execute_command("CBF.RESERVE", "w", "0.001", "100", "COUNTERBITS", "8", "EXPANSION", "3")
        rng = random.Random(7)
        for i, item in enumerate(items("x", 400)):
            times = rng.randint(1, 3)
            for _ in range(times):
                r.execute_command("CBF.ADD", "n", item)
                r.execute_command("CBF.ADD", "w", item)
        for item in items("x", 100):
            r.execute_command("CBF.DEL", "n", item)
            r.execute_command("CBF.DEL", "w", item)
        probes = items("x", 400) + items("absent", 200)
        counts = {k: r.execute_command("CBF.MEXISTS", k, *probes) for k in ("n", "w")}
        exact = {k: [r.execute_command("CBF.COUNT", k, x) for x in probes[:150]]
                 for k in ("n", "w")}
        before = {k: r.execute_command("CBF.INFO", k) for k in ("n", "w")}
        cards = {k: r.execute_command("CBF.CARD", k) for k in ("n", "w")}
        self.assertGreater(info_pairs(before["n"])["Number of filters"], 1)
        self.assertEqual(self.call(server, "SAVE"), "OK")

        r = self.client(self.restart(server))
        for key in ("n", "w"):
            self.assertEqual(r.execute_command("CBF.INFO", key), before[key], key)
            self.assertEqual(r.execute_command("CBF.CARD", key), cards[key], key)
            self.assertEqual(r.execute_command("CBF.MEXISTS", key, *probes), counts[key], key)
            self.assertEqual([r.execute_command("CBF.COUNT", key, x) for x in probes[:150]],
                             exact[key], key)
            self.assertEqual(r.type(key), b"BGcountBF")

    def test_ttls_are_kept_and_keys_that_expired_meanwhile_are_gone(self):
        server = self.start(*SNAPSHOT_ONLY)
        r = self.client(server)
        for key, cmd in (("bf", "BF.ADD"), ("cf", "CF.ADD"), ("cbf", "CBF.ADD")):
            r.execute_command(cmd, key, "x")
            r.execute_command(cmd, key + "-short", "x")
            r.execute_command(cmd, key + "-forever", "x")
            self.assertEqual(r.pexpire(key, 60_000), True)
            self.assertEqual(r.pexpire(key + "-short", 400), True)
        short_set_at = time.time()
        self.assertEqual(self.call(server, "SAVE"), "OK")
        saved_at = time.monotonic()
        server.stop()
        # The short keys are in the snapshot; make sure they have expired
        # (on the wall clock, which expiry times are kept in) before loading.
        wait_until(lambda: time.time() > short_set_at + 0.6, 5.0, what="short TTLs to pass")

        r = self.client(self.start(*SNAPSHOT_ONLY))
        elapsed_ms = (time.monotonic() - saved_at) * 1000
        for key in ("bf", "cf", "cbf"):
            pttl = r.pttl(key)
            self.assertGreater(pttl, 0, f"{key} lost its TTL or expired")
            self.assertLessEqual(pttl, 60_000, f"{key}'s TTL grew")
            self.assertGreater(pttl, 60_000 - elapsed_ms - 5_000,
                               f"{key}'s TTL shrank more than the time that passed")
            self.assertEqual(r.exists(key + "-short"), 0, f"{key}-short expired before loading")
            self.assertEqual(r.pttl(key + "-forever"), -1, f"{key}-forever has no TTL")
        self.assertEqual(r.execute_command("BF.EXISTS", "bf", "x"), 1)
        self.assertEqual(r.execute_command("CF.EXISTS", "cf", "x"), 1)
        self.assertEqual(r.execute_command("CBF.COUNT", "cbf", "x"), 1)


class ShutdownTest(DurabilityTestCase):

    def test_sigterm_without_an_explicit_save_takes_a_final_snapshot(self):
        for args in ((), ("--appendonly", "no")):
            with self.subTest(args=args):
                shutil.rmtree(self.data_dir)
                os.mkdir(self.data_dir)
                server = self.start(*args)
                r = self.client(server)
                r.execute_command("BF.MADD", "bf", *items("b", 100))
                r.execute_command("CF.ADD", "cf", "c")
                r.execute_command("CBF.ADD", "cbf", "k")
                server.stop()
                self.assertTrue(os.path.exists(os.path.join(self.data_dir, SNAPSHOT)),
                                f"no final snapshot: {os.listdir(self.data_dir)}")

                r = self.client(self.start(*args))
                self.assertAllPresent(r, "BF.MEXISTS", "bf", items("b", 100), "bloom items")
                self.assertEqual(r.execute_command("CF.EXISTS", "cf", "c"), 1)
                self.assertEqual(r.execute_command("CBF.COUNT", "cbf", "k"), 1)
                self.assertEqual(self.persistence_info(self.servers[-1])
                                 ["rdb_last_load_keys_loaded"], "3")
                self.servers[-1].stop()

    def test_shutdown_command_saves_and_exits_cleanly(self):
        server = self.start("--appendonly", "no")
        r = self.client(server)
        r.execute_command("BF.ADD", "bf", "x")
        with server.raw() as c:
            c.send(encode_command("SHUTDOWN"))
            self.assertTrue(c.wait_closed(10.0), "SHUTDOWN should close the connection")
        self.assertEqual(server.wait_exit(), 0)
        r = self.client(self.start("--appendonly", "no"))
        self.assertEqual(r.execute_command("BF.EXISTS", "bf", "x"), 1)

    def test_shutdown_nosave_skips_the_final_snapshot(self):
        server = self.start("--appendonly", "no")
        r = self.client(server)
        r.execute_command("BF.ADD", "bf", "x")
        with server.raw() as c:
            c.send(encode_command("SHUTDOWN", "NOSAVE"))
            self.assertTrue(c.wait_closed(10.0), "SHUTDOWN NOSAVE should close the connection")
        self.assertEqual(server.wait_exit(), 0)
        self.assertFalse(os.path.exists(os.path.join(self.data_dir, SNAPSHOT)))
        r = self.client(self.start("--appendonly", "no"))
        self.assertEqual(r.exists("bf"), 0)

    def test_no_save_points_and_no_log_means_a_restart_loses_everything(self):
        server = self.start(*NO_PERSISTENCE)
        r = self.client(server)
        r.execute_command("BF.ADD", "bf", "x")
        r.execute_command("CF.ADD", "cf", "x")
        r.execute_command("CBF.ADD", "cbf", "x")
        info = self.persistence_info(server)
        self.assertEqual(info["aof_enabled"], "0")
        server.stop()
        written = [n for n in os.listdir(self.data_dir)]
        self.assertEqual(written, [], "nothing should be written without persistence")
        r = self.client(self.start(*NO_PERSISTENCE))
        self.assertEqual(r.dbsize(), 0)


class Writer(threading.Thread):
    """Sends `make_command(i)` for i = 0, 1, ... on its own connection and
    records i once the reply is in (acknowledged). Stops at `limit`, at the
    deadline, when told, or when the connection breaks (a killed server)."""

    def __init__(self, server, make_command, limit, check_reply=None):
        super().__init__(daemon=True)
        self.conn = server.raw(timeout=5.0)
        self.make_command = make_command
        self.limit = limit
        self.check_reply = check_reply
        self.acked = []
        self.errors = []
        self.stop_event = threading.Event()

    def run(self):
        deadline = time.monotonic() + WRITER_DEADLINE_S
        try:
            for i in range(self.limit):
                if self.stop_event.is_set() or time.monotonic() > deadline:
                    break
                try:
                    reply = self.conn.call(*self.make_command(i))
                except (OSError, ConnectionError):
                    break  # the server was killed: the in-flight command is unknown
                if isinstance(reply, RespError) or (self.check_reply and
                                                    not self.check_reply(i, reply)):
                    self.errors.append((i, reply))
                    break
                self.acked.append(i)
        finally:
            self.conn.close()


class BackgroundSaveTest(DurabilityTestCase):

    def test_bgsave_under_concurrent_writers_loses_no_acknowledged_item(self):
        server = self.start()
        r = self.client(server)
        r.execute_command("BF.RESERVE", "bf", "0.01", "200000")
        r.execute_command("CF.RESERVE", "cf", "200000")
        r.execute_command("CBF.RESERVE", "cbf", "0.01", "100000")
        # Ballast so that each snapshot takes a while to write.
        r.execute_command("BF.RESERVE", "ballast", "0.0001", "3000000")
        writers = {
            "bf": Writer(server, lambda i: ["BF.MADD", "bf", *items(f"b{i}", 10)], 100_000),
            "cf": Writer(server, lambda i: ["CF.ADD", "cf", f"c:{i}"], 100_000),
            "cbf": Writer(server, lambda i: ["CBF.ADD", "cbf", f"k:{i}"], 100_000),
        }
        for w in writers.values():
            w.start()
        try:
            def progressed(n):
                return lambda: all(len(w.acked) >= n for w in writers.values())
            wait_until(progressed(100), WRITER_DEADLINE_S, what="writers to start")
            saves_before = int(self.persistence_info(server)["rdb_saves"])
            for round_ in range(2):
                self.assertEqual(self.call(server, "BGSAVE"), "Background saving started")
                info = self.wait_for_bgsave(server)
                self.assertEqual(info["rdb_last_bgsave_status"], "ok", info)
                self.assertEqual(info["last_bgsave_status"], "ok", info)
                marks = min(len(w.acked) for w in writers.values())
                wait_until(progressed(marks + 100), WRITER_DEADLINE_S,
                           what="writers to go on after the background save")
            self.assertEqual(int(self.persistence_info(server)["rdb_saves"]), saves_before + 2)
            # Killed with the writers still running.
            self.assertEqual(server.kill9(), -signal.SIGKILL)
        finally:
            for w in writers.values():
                w.stop_event.set()
            for w in writers.values():
                w.join(10.0)
        for name, w in writers.items():
            self.assertEqual(w.errors, [], f"{name} writer got an error reply")

        r = self.client(self.start())
        bf_items = [x for i in writers["bf"].acked for x in items(f"b{i}", 10)]
        self.assertAllPresent(r, "BF.MEXISTS", "bf", bf_items, "acknowledged BF.MADD items")
        self.assertAllPresent(r, "CF.MEXISTS", "cf", [f"c:{i}" for i in writers["cf"].acked],
                              "acknowledged CF.ADD items")
        self.assertAllPresent(r, "CBF.MEXISTS", "cbf", [f"k:{i}" for i in writers["cbf"].acked],
                              "acknowledged CBF.ADD items")
        # Cuckoo and counting filters are exact about their item counts: each
        # acknowledged add is there once, plus at most the one in flight.
        cf_items = info_pairs(r.execute_command("CF.INFO", "cf"))["Number of items inserted"]
        self.assertIn(cf_items - len(writers["cf"].acked), (0, 1), "CF items after restart")
        cbf_card = r.execute_command("CBF.CARD", "cbf")
        self.assertIn(cbf_card - len(writers["cbf"].acked), (0, 1), "CBF.CARD after restart")

    def test_kill_9_during_a_background_save_loses_nothing_acknowledged(self):
        # The kill must land while the save writes its temporary file: the
        # file left behind proves it (it exists only between its creation
        # and the rename). A save that ended first, or had not begun
        # writing, proves nothing, so that attempt is run again on a fresh
        # data directory with twice the ballast, a bounded number of times.
        attempts = []
        for attempt in range(KILL_DURING_SAVE_ATTEMPTS):
            if attempt:
                self.data_dir = os.path.join(self.tmp.name, f"data-{attempt}")
                os.mkdir(self.data_dir)
            # ~24 MB of ballast, then twice that each attempt: the snapshot
            # takes a noticeable time to write.
            ballast_capacity = 10_000_000 << attempt
            server = self.start()
            r = self.client(server)
            r.execute_command("BF.RESERVE", "ballast", "0.0001", str(ballast_capacity))
            r.execute_command("BF.MADD", "bf", *items("before", 200))
            for _ in range(3):
                r.execute_command("CBF.ADD", "cbf", "x")
            self.assertEqual(self.call(server, "SAVE"), "OK")
            snapshot = read_bytes(os.path.join(self.data_dir, SNAPSHOT))
            r.execute_command("BF.MADD", "bf", *items("between", 200))
            self.assertEqual(self.call(server, "BGSAVE"), "Background saving started")
            during = items("during", 200)
            r.execute_command("BF.MADD", "bf", *during)
            self.assertEqual(r.execute_command("CBF.DEL", "cbf", "x"), 1)
            in_progress = self.persistence_info(server)["rdb_bgsave_in_progress"]
            self.assertEqual(server.kill9(), -signal.SIGKILL)
            temporaries = [n for n in os.listdir(self.data_dir) if n.startswith(SNAPSHOT + ".tmp.")]
            attempts.append(f"ballast {ballast_capacity}: in progress {in_progress}, "
                            f"temporaries {temporaries}")
            if temporaries:
                break
        self.assertTrue(temporaries, "the kill never landed while the save was writing, in "
                                     f"{len(attempts)} attempts: {attempts}")
        self.assertEqual(in_progress, "1", attempts)
        self.assertEqual(read_bytes(os.path.join(self.data_dir, SNAPSHOT)), snapshot,
                         "a save killed midway must not have replaced the snapshot")

        for _ in range(2):  # and once more, after the restarted server's own logging
            server = self.start()
            r = self.client(server)
            self.assertAllPresent(r, "BF.MEXISTS", "bf", items("before", 200) +
                                  items("between", 200) + during, "acknowledged items")
            self.assertEqual(r.execute_command("CBF.COUNT", "cbf", "x"), 2)
            self.assertEqual(r.execute_command("BF.EXISTS", "ballast", "x"), 0)
            self.assertEqual(server.kill9(), -signal.SIGKILL)
        server = self.start()
        self.assertEqual(self.call(server, "SAVE"), "OK", "a leftover temp file must not block saves")

    def test_bgsave_schedule_and_bgrewriteaof_reply_like_redis(self):
        server = self.start()
        r = self.client(server)
        r.execute_command("BF.ADD", "bf", "x")
        self.assertEqual(self.call(server, "BGREWRITEAOF"),
                         "Background append only file rewriting started")
        self.wait_for_bgsave(server)
        reply = self.call(server, "BGSAVE", "SCHEDULE")
        self.assertIn(reply, ("Background saving started", "Background saving scheduled"))
        info = self.wait_for_bgsave(server)
        self.assertEqual(info["rdb_last_bgsave_status"], "ok")
        self.assertTrue(os.path.exists(os.path.join(self.data_dir, SNAPSHOT)))


class CrashTest(DurabilityTestCase):
    """kill -9 at a moment chosen by a fixed seed, with --appendfsync always."""

    def test_every_acknowledged_write_survives_kill_9_mid_stream(self):
        args = ("--appendfsync", "always")
        server = self.start(*args)
        r = self.client(server)
        self.assertEqual(self.persistence_info(server)["aof_fsync"], "always")
        r.execute_command("BF.RESERVE", "bf", "0.01", "20000")
        r.execute_command("CBF.RESERVE", "cbf", "0.01", "20000")
        r.execute_command("CF.RESERVE", "cf", "20000")
        r.execute_command("CF.RESERVE", "cfdel", "20000")
        r.execute_command("CBF.RESERVE", "cbfdel", "0.001", "20000")
        # One step = 7 commands; each is recorded once acknowledged.
        steps = [
            ("BF.ADD", "bf", "a"), ("CF.ADD", "cf", "a"), ("CBF.ADD", "cbf", "a"),
            ("CF.ADD", "cfdel", "d"), ("CF.DEL", "cfdel", "d"),
            ("CBF.ADD", "cbfdel", "d"), ("CBF.DEL", "cbfdel", "d"),
        ]

        def command(n):
            cmd, key, prefix = steps[n % len(steps)]
            return [cmd, key, f"{prefix}:{n // len(steps)}"]

        def expected_reply(n, reply):
            # Adds answer 0 for a false positive; deletes of an item just
            # added must find it.
            return reply == 1 if steps[n % len(steps)][0].endswith(".DEL") else reply in (0, 1)

        writer = Writer(server, command, limit=len(steps) * 3000,
                        check_reply=expected_reply)
        target = random.Random(20240).randint(200, 1200)
        writer.start()
        try:
            wait_until(lambda: len(writer.acked) >= target or not writer.is_alive(),
                       WRITER_DEADLINE_S, what=f"{target} acknowledged writes")
            self.assertEqual(server.kill9(), -signal.SIGKILL)
        finally:
            writer.stop_event.set()
            writer.join(10.0)
        self.assertEqual(writer.errors, [])
        self.assertGreaterEqual(len(writer.acked), target)

        acked = {}
        for n in writer.acked:
            cmd, key, prefix = steps[n % len(steps)]
            acked.setdefault((cmd, key), []).append(f"{prefix}:{n // len(steps)}")
        r = self.client(self.start(*args))
        self.assertAllPresent(r, "BF.MEXISTS", "bf", acked[("BF.ADD", "bf")], "BF.ADD items")
        self.assertAllPresent(r, "CF.MEXISTS", "cf", acked[("CF.ADD", "cf")], "CF.ADD items")
        self.assertAllPresent(r, "CBF.MEXISTS", "cbf", acked[("CBF.ADD", "cbf")],
                              "CBF.ADD items")

        # The delete filters: every item was added once and deleted once, so
        # at most the one in-flight item may remain. Counts are exact.
        cf_deleted = acked.get(("CF.DEL", "cfdel"), [])
        cf_info = info_pairs(r.execute_command("CF.INFO", "cfdel"))
        self.assertIn(cf_info["Number of items inserted"], (0, 1), cf_info)
        self.assertIn(cf_info["Number of items deleted"] - len(cf_deleted), (0, 1), cf_info)
        cbf_deleted = acked.get(("CBF.DEL", "cbfdel"), [])
        self.assertIn(r.execute_command("CBF.CARD", "cbfdel"), (0, 1))
        # A deleted item counts again only by sharing fingerprint and bucket
        # (cuckoo) or all its counters (counting Bloom) with that one
        # remaining item: < 1e-3 over these few hundred items, so none may.
        still = [x for x in cf_deleted if r.execute_command("CF.COUNT", "cfdel", x) != 0]
        self.assertEqual(still, [], "acknowledged CF.DELs undone by the restart")
        still = [x for x in cbf_deleted if r.execute_command("CBF.COUNT", "cbfdel", x) != 0]
        self.assertEqual(still, [], "acknowledged CBF.DELs undone by the restart")

    def test_keyspace_commands_are_replayed_after_kill_9(self):
        server = self.start()
        r = self.client(server)
        for key in ("gone", "old", "ttl", "cf-old", "persisted"):
            r.execute_command("BF.ADD", key, key)
        r.delete("cf-old")  # then the name is reused for another family
        r.execute_command("CF.ADD", "cf-old", "c")
        r.delete("gone")
        r.rename("old", "new")
        r.rename("cf-old", "cf-new")
        r.pexpire("ttl", 60_000)
        r.pexpire("persisted", 60_000)
        r.persist("persisted")
        r.execute_command("CBF.ADD", "short", "x")
        r.pexpire("short", 300)
        short_set_at = time.time()
        self.assertEqual(server.kill9(), -signal.SIGKILL)
        wait_until(lambda: time.time() > short_set_at + 0.5, 5.0, what="the short TTL to pass")

        r = self.client(self.start())
        self.assertEqual(sorted(r.keys("*")), [b"cf-new", b"new", b"persisted", b"ttl"])
        self.assertEqual(r.execute_command("BF.EXISTS", "new", "old"), 1)
        self.assertEqual(r.execute_command("CF.EXISTS", "cf-new", "c"), 1)
        self.assertEqual(r.type("cf-new"), b"MBbloomCF")
        self.assertTrue(0 < r.pttl("ttl") <= 60_000, r.pttl("ttl"))
        self.assertEqual(r.pttl("persisted"), -1)

    def test_a_filter_restored_with_loadchunk_survives_kill_9(self):
        server = self.start()
        r = self.client(server)
        r.execute_command("BF.MADD", "src", *items("s", 300))
        chunks, it = [], 0
        while True:
            it, data = r.bf().scandump("src", it)
            if it == 0:
                break
            chunks.append((it, data))
        for it, data in chunks:
            r.bf().loadchunk("copy", it, data)
        copy_info = self.call(server, "BF.INFO", "copy")
        self.assertEqual(server.kill9(), -signal.SIGKILL)

        server = self.start()
        r = self.client(server)
        self.assertEqual(self.call(server, "BF.INFO", "copy"), copy_info)
        self.assertAllPresent(r, "BF.MEXISTS", "copy", items("s", 300), "restored items")


class ReplayExactnessTest(DurabilityTestCase):
    """Counting and cuckoo filters are not idempotent: a log record replayed
    twice, or on top of a snapshot that already holds it, changes counts."""

    def adds_then_deletes(self, between=None):
        server = self.start()
        r = self.client(server)
        # Bucket size 4: three copies of one fingerprint always fit in one
        # sub-filter. At the default size 2 the item's two buckets coincide for
        # about one seed in a hundred, the third copy opens a second
        # sub-filter, and CF.DEL then compacts and resets "deleted" to 0, as
        # RedisBloom does: correct, but not the (2, 1) this test pins.
        self.assertEqual(r.execute_command("CF.RESERVE", "cf", 64, "BUCKETSIZE", 4), b"OK")
        for _ in range(3):
            r.execute_command("CBF.ADD", "cbf", "x")
            r.execute_command("CF.ADD", "cf", "x")
        if between is not None:
            between(server, r)
        self.assertEqual(r.execute_command("CBF.DEL", "cbf", "x"), 1)
        self.assertEqual(r.execute_command("CF.DEL", "cf", "x"), 1)
        live = info_pairs(r.execute_command("CF.INFO", "cf"))
        self.assertEqual((live["Number of filters"], live["Number of items deleted"]), (1, 1))
        self.assertEqual(server.kill9(), -signal.SIGKILL)
        for restart in range(2):  # and again: the replayed state is logged right too
            server = self.start()
            r = self.client(server)
            self.assertEqual(r.execute_command("CBF.COUNT", "cbf", "x"), 2, f"restart {restart}")
            self.assertEqual(r.execute_command("CBF.CARD", "cbf"), 2, f"restart {restart}")
            self.assertEqual(r.execute_command("CF.COUNT", "cf", "x"), 2, f"restart {restart}")
            cf = info_pairs(r.execute_command("CF.INFO", "cf"))
            self.assertEqual((cf["Number of items inserted"], cf["Number of items deleted"]),
                             (2, 1), f"restart {restart}")
            self.assertEqual(cf, live, f"restart {restart}: CF.INFO as acknowledged")
            self.assertEqual(server.kill9(), -signal.SIGKILL)

    def test_three_adds_and_one_delete_replay_to_a_count_of_two(self):
        self.adds_then_deletes()

    def test_a_bgsave_between_the_adds_and_the_delete_does_not_replay_adds_twice(self):
        def bgsave(server, r):
            self.assertEqual(self.call(server, "BGSAVE"), "Background saving started")
            self.assertEqual(self.wait_for_bgsave(server)["rdb_last_bgsave_status"], "ok")
        self.adds_then_deletes(between=bgsave)

    def test_a_save_between_the_adds_and_the_delete_does_not_replay_adds_twice(self):
        self.adds_then_deletes(between=lambda server, r: r.execute_command("SAVE"))


class DamagedFilesTest(DurabilityTestCase):

    def test_a_torn_final_log_record_is_cut_off_and_earlier_records_load(self):
        server = self.start()
        r = self.client(server)
        written = items("t", 50)
        for item in written:
            r.execute_command("BF.ADD", "bf", item)
        self.assertEqual(server.kill9(), -signal.SIGKILL)
        logs = log_files(self.data_dir)
        self.assertTrue(logs, f"no append-only log in {os.listdir(self.data_dir)}")
        newest = logs[-1][1]
        size = os.path.getsize(newest)
        os.truncate(newest, size - 3)

        server = self.start()
        self.assertIn("torn", server.log().lower(), "the log should mention the torn record")
        r = self.client(server)
        self.assertAllPresent(r, "BF.MEXISTS", "bf", written[:-1], "records before the torn one")
        # Writes after the cut go on a clean log and survive another crash.
        later = items("u", 20)
        r.execute_command("BF.MADD", "bf", *later)
        self.assertEqual(server.kill9(), -signal.SIGKILL)
        server = self.start()
        self.assertNotIn("torn", server.log().lower(), "no torn record the second time")
        r = self.client(server)
        self.assertAllPresent(r, "BF.MEXISTS", "bf", written[:-1] + later, "items")

    def test_a_damaged_snapshot_stops_start_up_and_is_left_untouched(self):
        server = self.start()
        r = self.client(server)
        r.execute_command("BF.MADD", "bf", *items("b", 200))
        r.execute_command("CF.ADD", "cf", "x")
        r.execute_command("CBF.ADD", "cbf", "x")
        self.assertEqual(self.call(server, "SAVE"), "OK")
        server.stop()
        path = os.path.join(self.data_dir, SNAPSHOT)
        good = read_bytes(path)
        good_copy = os.path.join(self.tmp.name, "good.bgs")
        with open(good_copy, "wb") as f:
            f.write(good)

        checked = run_bloomgate(["check-snapshot", good_copy])
        self.assertEqual(checked.returncode, 0, checked.stderr + checked.stdout)
        summary = checked.stdout + checked.stderr
        for key, type_name in (("bf", "MBbloom--"), ("cf", "MBbloomCF"), ("cbf", "BGcountBF")):
            self.assertRegex(summary, rf"(?m)\b{key}\b.*{type_name}|{type_name}.*\b{key}\b",
                             summary)

        def flipped(at):
            return good[:at] + bytes([good[at] ^ 0xFF]) + good[at + 1:]
        damages = {"first byte flipped": flipped(0), "middle byte flipped": flipped(len(good) // 2),
                   "last byte flipped": flipped(len(good) - 1), "truncated": good[:-7],
                   "empty": b""}
        for what, damaged in damages.items():
            with self.subTest(what):
                with open(path, "wb") as f:
                    f.write(damaged)
                server = self.start(expected_exit_code=None, ready=False)
                code = server.wait_exit(10.0)
                self.assertNotEqual(code, 0, f"start-up should fail\n{server.log()}")
                self.assertIn(SNAPSHOT, server.log(), "the error should name the file")
                self.assertEqual(read_bytes(path), damaged, "the damaged file must stay as it was")
                checked = run_bloomgate(["check-snapshot", path])
                self.assertEqual(checked.returncode, 1, checked.stdout + checked.stderr)
                self.assertIn(SNAPSHOT, checked.stdout + checked.stderr)
                self.assertEqual(read_bytes(path), damaged, "check-snapshot must not change it")
                server._cleanup()

    def test_check_snapshot_of_a_missing_file_fails_and_starts_no_server(self):
        checked = run_bloomgate(["check-snapshot", os.path.join(self.tmp.name, "nope.bgs")],
                                deadline_s=10.0)
        self.assertEqual(checked.returncode, 1, checked.stdout + checked.stderr)
        self.assertIn("nope.bgs", checked.stdout + checked.stderr)


class SaveCommandsAndConfigTest(DurabilityTestCase):

    def lastsave(self, server):
        """LASTSAVE as an int (redis-py would turn it into a datetime)."""
        with server.raw() as c:
            reply = c.call("LASTSAVE")
        self.assertIsInstance(reply, int, reply)
        return reply

    def test_lastsave_moves_forward_after_save_and_info_follows(self):
        server = self.start()
        r = self.client(server)
        first = self.lastsave(server)
        wait_until(lambda: int(time.time()) > first, 3.0, what="the next second")
        r.execute_command("BF.MADD", "bf", "a", "b", "c")
        info = self.persistence_info(server)
        self.assertGreaterEqual(int(info["rdb_changes_since_last_save"]), 1, info)
        saves = int(info["rdb_saves"])
        self.assertEqual(self.call(server, "SAVE"), "OK")
        second = self.lastsave(server)
        self.assertGreater(second, first)
        self.assertLessEqual(abs(second - time.time()), 5)
        info = self.persistence_info(server)
        for field in ("loading", "rdb_changes_since_last_save", "rdb_bgsave_in_progress",
                      "rdb_last_save_time", "rdb_last_bgsave_status", "last_bgsave_status",
                      "rdb_saves", "rdb_last_load_keys_loaded", "aof_enabled",
                      "aof_last_write_status", "aof_fsync", "aof_generation",
                      "aof_current_size", "last_save_bytes", "last_save_duration_ms"):
            self.assertIn(field, info)
        self.assertEqual(info["loading"], "0")
        self.assertEqual(info["rdb_changes_since_last_save"], "0")
        self.assertEqual(info["rdb_last_save_time"], str(second))
        self.assertEqual(info["rdb_last_bgsave_status"], "ok")
        self.assertEqual(int(info["rdb_saves"]), saves + 1)
        self.assertEqual(info["aof_enabled"], "1")
        self.assertEqual(info["aof_last_write_status"], "ok")
        self.assertEqual(int(info["last_save_bytes"]),
                         os.path.getsize(os.path.join(self.data_dir, SNAPSHOT)))
        self.assertGreaterEqual(int(info["last_save_duration_ms"]), 0)
        self.assertGreaterEqual(int(info["aof_generation"]), 1)
        generations = [g for g, _ in log_files(self.data_dir)]
        self.assertIn(int(info["aof_generation"]), generations, os.listdir(self.data_dir))

    def test_config_get_answers_the_persistence_settings_and_set_appendfsync_works(self):
        server = self.start()
        r = self.client(server)
        got = r.config_get("dir")["dir"]
        self.assertTrue(os.path.samefile(os.path.join(self.data_dir, got), self.data_dir), got)
        self.assertEqual(r.config_get("dbfilename"), {"dbfilename": SNAPSHOT})
        self.assertEqual(r.config_get("save"), {"save": "3600 1 300 100 60 10000"})
        self.assertEqual(r.config_get("appendonly"), {"appendonly": "yes"})
        self.assertEqual(r.config_get("appendfsync"), {"appendfsync": "everysec"})
        self.assertEqual(r.config_get("appendfilename"), {"appendfilename": "appendonly.bglog"})
        self.assertTrue(r.config_set("appendfsync", "always"))
        self.assertEqual(r.config_get("appendfsync"), {"appendfsync": "always"})
        self.assertEqual(self.persistence_info(server)["aof_fsync"], "always")
        with self.assertRaises(redis.ResponseError):
            r.config_set("appendfsync", "sometimes")
        r.execute_command("BF.ADD", "bf", "x")
        self.assertEqual(server.kill9(), -signal.SIGKILL)
        r = self.client(self.start())
        self.assertEqual(r.execute_command("BF.EXISTS", "bf", "x"), 1)

    def test_command_line_flags_choose_the_files_and_reach_config_get(self):
        elsewhere = os.path.join(self.tmp.name, "elsewhere")
        os.mkdir(elsewhere)
        args = ("--dir", elsewhere, "--save", "900 1", "--appendfsync", "no",
                "--dbfilename", "other.bgs", "--appendfilename", "mylog")
        server = self.start(*args)
        r = self.client(server)
        self.assertTrue(os.path.samefile(r.config_get("dir")["dir"], elsewhere))
        self.assertEqual(r.config_get("save"), {"save": "900 1"})
        self.assertEqual(r.config_get("appendfsync"), {"appendfsync": "no"})
        self.assertEqual(r.config_get("dbfilename"), {"dbfilename": "other.bgs"})
        r.execute_command("BF.ADD", "bf", "x")
        self.assertEqual(self.call(server, "SAVE"), "OK")
        r.execute_command("BF.ADD", "bf", "y")  # only in the log
        names = os.listdir(elsewhere)
        self.assertIn("other.bgs", names)
        self.assertTrue(any(n.startswith("mylog.") for n in names), names)
        self.assertEqual(os.listdir(self.data_dir), [], "nothing in the cwd with --dir set")
        r = self.client(self.restart(server, *args, how="kill"))
        self.assertEqual(r.execute_command("BF.MEXISTS", "bf", "x", "y"), [1, 1])

    def test_save_and_bgsave_inside_multi_are_queued_and_refused_at_exec(self):
        # docs/redisbloom.md, "Differences from RedisBloom": SAVE inside MULTI is queued
        # and refused at EXEC (EXEC holds key locks the cut would wait for);
        # BGSAVE and BGREWRITEAOF take the same cut and the same path.
        server = self.start()
        r = self.client(server)
        r.execute_command("BF.ADD", "bf", "x")
        saves_before = self.persistence_info(server)["rdb_saves"]
        for command in ("SAVE", "BGSAVE", "BGREWRITEAOF"):
            with self.subTest(command), server.raw() as c:
                self.assertEqual(c.call("MULTI"), "OK")
                self.assertEqual(c.call(command), "QUEUED")
                self.assertEqual(c.call("BF.ADD", "bf", "y"), "QUEUED")
                result = c.call("EXEC")
                self.assertIsInstance(result, list, f"{command} in MULTI: EXEC replied {result!r}")
                self.assertEqual(len(result), 2, result)
                self.assertIsInstance(result[0], RespError, result)
                self.assertEqual(result[0], "ERR SAVE, BGSAVE and BGREWRITEAOF are not allowed "
                                            "inside a transaction")
                self.assertIn(result[1], (0, 1), "the rest of the transaction still runs")
                self.assertEqual(c.call("PING"), "PONG", "the connection stays usable")
        info = self.persistence_info(server)
        self.assertEqual(info["rdb_saves"], saves_before, "no save ran")
        self.assertEqual(info["rdb_bgsave_in_progress"], "0")


class SaveFailureTest(DurabilityTestCase):

    def test_a_failing_save_reports_err_keeps_the_old_snapshot_and_keeps_serving(self):
        server = self.start()
        r = self.client(server)
        r.execute_command("BF.MADD", "bf", *items("a", 50))
        r.execute_command("CBF.ADD", "cbf", "x")
        self.assertEqual(self.call(server, "SAVE"), "OK")
        path = os.path.join(self.data_dir, SNAPSHOT)
        saved = read_bytes(path)
        # A directory where the snapshot file should go: the final rename fails.
        os.mkdir(os.path.join(self.data_dir, "blocked"))
        self.assertTrue(r.config_set("dbfilename", "blocked"))
        r.execute_command("BF.MADD", "bf", *items("b", 50))
        r.execute_command("CBF.ADD", "cbf", "x")
        with self.assertRaises(redis.ResponseError):
            r.execute_command("SAVE")
        info = self.persistence_info(server)
        self.assertEqual(info["rdb_last_bgsave_status"], "err", info)
        self.assertEqual(info["last_bgsave_status"], "err", info)
        self.assertEqual(read_bytes(path), saved, "the previous snapshot must be unchanged")
        self.assertTrue(os.path.isdir(os.path.join(self.data_dir, "blocked")))

        self.assertEqual(self.call(server, "BGSAVE"), "Background saving started")
        self.assertEqual(self.wait_for_bgsave(server)["rdb_last_bgsave_status"], "err")
        # Still serving writes and reads.
        r.execute_command("BF.MADD", "bf", *items("c", 50))
        r.execute_command("CBF.ADD", "cbf", "x")
        self.assertAllPresent(r, "BF.MEXISTS", "bf", items("a", 50) + items("b", 50) +
                              items("c", 50), "items")
        self.assertEqual(r.execute_command("CBF.COUNT", "cbf", "x"), 3)
        self.assertEqual(read_bytes(path), saved)

        # After the failed saves the old snapshot and the logs still hold it all.
        self.assertEqual(server.kill9(), -signal.SIGKILL)
        server = self.start()
        r = self.client(server)
        self.assertAllPresent(r, "BF.MEXISTS", "bf", items("a", 50) + items("b", 50) +
                              items("c", 50), "items after the failed saves")
        self.assertEqual(r.execute_command("CBF.COUNT", "cbf", "x"), 3)
        # And a save to a writable name succeeds and clears the error.
        self.assertEqual(self.call(server, "SAVE"), "OK")
        self.assertEqual(self.persistence_info(server)["rdb_last_bgsave_status"], "ok")


class BuildToolTest(DurabilityTestCase):

    N = 10_000

    def check_served(self, filename, key, members, capacity):
        checked = run_bloomgate(["check-snapshot", os.path.join(self.data_dir, filename)])
        self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)
        self.assertIn(key, checked.stdout + checked.stderr)
        self.assertIn("MBbloom--", checked.stdout + checked.stderr)
        server = self.start("--dbfilename", filename, *NO_PERSISTENCE)
        r = self.client(server)
        self.assertEqual(r.keys("*"), [key.encode()])
        self.assertAllPresent(r, "BF.MEXISTS", key, members, "built items")
        others = items("other", self.N)
        hits = sum(r.execute_command("BF.MEXISTS", key, *others[i:i + 1000]).count(1)
                   for i in range(0, len(others), 1000))
        # Built for 1% at this capacity; 3% leaves room for the blocked layout.
        self.assertLess(hits / len(others), 0.03, f"false positive rate {hits / len(others):.4f}")
        info = info_pairs(r.execute_command("BF.INFO", key))
        self.assertEqual(info["Capacity"], capacity, info)
        # Like BF.ADD, an item that tests present already is not counted: at
        # 1% when full that costs well under 1% of the count.
        self.assertLessEqual(info["Number of items inserted"], len(members), info)
        self.assertGreaterEqual(info["Number of items inserted"], len(members) * 0.99, info)
        server.stop()

    def test_build_from_a_file_writes_a_snapshot_a_server_serves(self):
        members = items("member", self.N)
        source = os.path.join(self.tmp.name, "items.txt")
        with open(source, "w") as f:
            f.write("\n".join(members) + "\n")
        out = os.path.join(self.data_dir, "built.bgs")
        done = run_bloomgate(["build", "--output", out, "--input", source, "--key", "members",
                              "--error-rate", "0.01", "--capacity", str(self.N)])
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.check_served("built.bgs", "members", members, self.N)

    def test_build_from_stdin_uses_the_default_key(self):
        members = items("piped", self.N)
        out = os.path.join(self.data_dir, "piped.bgs")
        done = run_bloomgate(["build", "--output", out, "--input", "-", "--capacity",
                              str(self.N)], input="\n".join(members) + "\n")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.check_served("piped.bgs", "filter", members, self.N)


if __name__ == "__main__":
    unittest.main()
