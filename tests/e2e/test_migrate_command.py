"""MIGRATE between two plain servers, in Redis's syntax and replies: every
family single-key and with KEYS, COPY, REPLACE, BUSYKEY then REPLACE (the
digests compared as redis-cli --cluster does), AUTH / AUTH2, a stopped target
(-IOERR within the timeout, the source intact), and a writer that adds to a
filter throughout a MIGRATE losing no acknowledged add. Also DEBUG
DIGEST-VALUE's gate."""

import os
import signal
import threading
import time
import unittest

import redis

from harness import (BloomgateServer, ServerTestCase, TwoServersTestCase, wait_until,
                     write_until)


def fill_every_family(r):
    """One key of each family with a few items; returns their names."""
    r.execute_command("BF.ADD", "bf", "a")
    r.execute_command("BF.RESERVE", "bfw", "0.01", "1000", "WINDOW", "3600")
    r.execute_command("BF.ADD", "bfw", "a")
    r.execute_command("CF.ADD", "cf", "a")
    r.execute_command("CBF.ADD", "cbf", "a")
    r.execute_command("CBF.RESERVE", "cbfw", "0.01", "1000", "WINDOW", "3600")
    r.execute_command("CBF.ADD", "cbfw", "a")
    r.execute_command("CMS.INITBYDIM", "cms", "20", "3")
    r.execute_command("CMS.INCRBY", "cms", "a", "7")
    r.execute_command("TOPK.RESERVE", "topk", "3", "8", "7", "0.9")
    r.execute_command("TOPK.ADD", "topk", "a", "a", "b")
    r.execute_command("TDIGEST.CREATE", "td")
    r.execute_command("TDIGEST.ADD", "td", "1", "2", "3")
    return ["bf", "bfw", "cf", "cbf", "cbfw", "cms", "topk", "td"]


def digest(r, key):
    return r.execute_command("DEBUG", "DIGEST-VALUE", key)[0]


class MigrateTest(TwoServersTestCase):
    server_args = ("--enable-debug-command", "local")
    other_args = ("--enable-debug-command", "local")

    def migrate(self, *args):
        return self.r.execute_command("MIGRATE", "127.0.0.1", self.other.port, *args)

    def test_every_family_moves_one_key_at_a_time_with_its_digest_and_ttl(self):
        keys = fill_every_family(self.r)
        self.r.pexpire("bf", 100_000)
        digests = {key: digest(self.r, key) for key in keys}
        for key in keys:
            self.assertEqual(self.migrate(key, 0, 5000), b"OK", key)
            self.assertEqual(self.r.exists(key), 0, key)
            self.assertEqual(digest(self.o, key), digests[key], key)
        self.assertTrue(90_000 < self.o.pttl("bf") <= 100_000, self.o.pttl("bf"))
        self.assertEqual(self.o.pttl("cf"), -1)
        self.assertEqual(self.o.execute_command("BF.EXISTS", "bf", "a"), 1)
        self.assertEqual(self.o.execute_command("CMS.QUERY", "cms", "a"), [7])
        self.assertEqual(self.migrate("bf", 0, 5000), b"NOKEY")

    def test_keys_form_moves_every_family_at_once_and_skips_missing_keys(self):
        keys = fill_every_family(self.r)
        digests = {key: digest(self.r, key) for key in keys}
        self.assertEqual(self.migrate("", 0, 5000, "KEYS", *keys, "missing"), b"OK")
        self.assertEqual(self.r.dbsize(), 0)
        self.assertEqual({key: digest(self.o, key) for key in keys}, digests)
        self.assertEqual(self.migrate("", 0, 5000, "KEYS", "missing"), b"NOKEY")

    def test_copy_keeps_the_source_and_replace_overwrites_the_target(self):
        self.r.execute_command("BF.ADD", "k", "a")
        self.assertEqual(self.migrate("k", 0, 5000, "COPY"), b"OK")
        self.assertEqual(self.r.exists("k"), 1)
        self.assertEqual(digest(self.r, "k"), digest(self.o, "k"))
        self.r.execute_command("BF.ADD", "k", "b")
        # BUSYKEY as Redis forms it, the source kept; redis-cli then compares
        # the digests (they differ) and retries with REPLACE.
        with self.assertRaises(redis.ResponseError) as busy:
            self.migrate("k", 0, 5000)
        self.assertEqual(str(busy.exception),
                         "Target instance replied with error: BUSYKEY Target key name "
                         "already exists.")
        self.assertEqual(self.r.exists("k"), 1)
        self.assertNotEqual(digest(self.r, "k"), digest(self.o, "k"))
        want = digest(self.r, "k")
        self.assertEqual(self.migrate("k", 0, 5000, "REPLACE"), b"OK")
        self.assertEqual(self.r.exists("k"), 0)
        self.assertEqual(digest(self.o, "k"), want)
        self.assertEqual(self.o.execute_command("BF.EXISTS", "k", "b"), 1)

    def test_syntax_and_argument_errors_are_redis_texts_and_change_nothing(self):
        self.r.execute_command("BF.ADD", "k", "a")
        cases = [
            (("k", 0, 5000, "BOGUS"), "syntax error"),
            (("k", 0, 5000, "AUTH"), "syntax error"),
            (("k", 0, 5000, "AUTH2", "u"), "syntax error"),
            (("k", 0, 5000, "KEYS", "k"),
             "When using MIGRATE KEYS option, the key argument must be set to the empty string"),
            (("k", 0, "x"), "value is not an integer or out of range"),
            (("k", "x", 5000), "value is not an integer or out of range"),
            (("k", 1, 5000), "Target instance replied with error: ERR DB index is out of range"),
        ]
        for args, text in cases:
            with self.subTest(args=args):
                with self.assertRaises(redis.ResponseError) as error:
                    self.migrate(*args)
                self.assertEqual(str(error.exception), text)
                self.assertEqual(self.r.exists("k"), 1)
        self.assertEqual(self.o.dbsize(), 0)
        port = self.other.port
        self.other.stop()
        try:
            with self.assertRaises(redis.ResponseError) as error:
                self.migrate("k", 0, 1000)
            self.assertEqual(str(error.exception),
                             "IOERR error or timeout connecting to the client")
            self.assertEqual(self.r.exists("k"), 1)
        finally:
            type(self).other = BloomgateServer(self.other_args).start()
        self.assertNotEqual(port, None)

    def test_a_stopped_target_gives_ioerr_within_the_timeout_and_the_source_stays(self):
        self.r.execute_command("CF.RESERVE", "big", "4000000")  # ~16 MB payload
        self.r.execute_command("CF.ADD", "big", "x")
        before = digest(self.r, "big")
        self.other.proc.send_signal(signal.SIGSTOP)
        try:
            started = time.monotonic()
            with self.assertRaises(redis.ResponseError) as error:
                self.migrate("big", 0, 500)
            elapsed = time.monotonic() - started
        finally:
            self.other.proc.send_signal(signal.SIGCONT)
        self.assertIn(str(error.exception), ("IOERR error or timeout writing to target instance",
                                             "IOERR error or timeout reading to target instance"))
        self.assertLess(elapsed, 5.0)  # a 500 ms timeout per step, not a hang
        self.assertEqual(digest(self.r, "big"), before)
        # The server served others meanwhile and serves them after.
        self.assertEqual(self.r.execute_command("CF.EXISTS", "big", "x"), 1)

    def test_a_writer_never_loses_an_acknowledged_add_during_migrate(self):
        self.r.execute_command("BF.RESERVE", "hot", "0.001", "2000000")  # ~3.6 MB
        self.r.execute_command("CBF.ADD", "hotc", "seed")
        acked = {"hot": [], "hotc": []}
        stop = threading.Event()
        errors = []

        threads = [threading.Thread(target=write_until, args=(
                       stop, self.server.client(), "hot", "BF.ADD", acked["hot"], errors)),
                   threading.Thread(target=write_until, args=(
                       stop, self.server.client(), "hotc", "CBF.ADD", acked["hotc"], errors))]
        for t in threads:
            t.start()
        try:
            wait_until(lambda: len(acked["hot"]) > 200 and len(acked["hotc"]) > 200, 20,
                       what="writers under way")
            self.assertEqual(self.migrate("", 0, 10000, "KEYS", "hot", "hotc"), b"OK")
            wait_until(lambda: self.r.exists("hot") and self.r.exists("hotc"), 20,
                       what="writes after the move recreating the keys here")
        finally:
            stop.set()
            for t in threads:
                t.join()
        self.assertEqual(errors, [])
        # Every acknowledged add is on the target (moved) or here (after the
        # move, the writers re-created the keys on the source).
        for key, exists in (("hot", "BF.EXISTS"), ("hotc", "CBF.EXISTS")):
            missing = [item for item in acked[key]
                       if not self.o.execute_command(exists, key, item)
                       and not self.r.execute_command(exists, key, item)]
            self.assertEqual(missing, [], f"{key}: acknowledged adds lost")


class MigrateOffTheLoopTest(TwoServersTestCase):
    """A MIGRATE waiting on a stopped target holds up nothing but itself:
    not the filter maker's big builds, not a snapshot's copies, and inside
    MULTI/EXEC not its event loop beyond a small cap."""

    # One event loop: a stall of the loop shows in every other client's PING.
    server_args = ("--threads", "1", "--save", "", "--appendonly", "no")
    TIMEOUT_MS = 5000

    def start_migrate(self, key):
        """MIGRATE `key` to the (stopped) target from a thread of its own,
        once it is parked; returns the thread and where its reply lands."""
        result = {}

        def run():
            c = self.server.client()
            try:
                result["reply"] = c.execute_command("MIGRATE", "127.0.0.1", self.other.port, key,
                                                    0, self.TIMEOUT_MS)
            except redis.ResponseError as e:
                result["reply"] = str(e)
            c.close()

        parked = self.parked()
        thread = threading.Thread(target=run)
        thread.start()
        self.threads.append(thread)
        wait_until(lambda: self.parked() > parked, 10, what="the MIGRATE parked on its transfer")
        return result

    def parked(self):
        """Clients whose command waits off the loop (CLIENT LIST flag b)."""
        return sum("b" in c["flags"] for c in self.r.client_list())

    def setUp(self):
        super().setUp()
        self.threads = []

    def stop_target(self):
        """SIGSTOP the target and wait until every thread of it has stopped
        (the signal lands asynchronously: a loaded machine may let it answer
        a command or two first)."""
        pid = self.other.proc.pid
        self.other.proc.send_signal(signal.SIGSTOP)

        def stopped():
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/stat") as stat:
                    if stat.read().rsplit(")", 1)[1].split()[0] not in ("T", "t"):
                        return False
            return True

        wait_until(stopped, 10, what="the target to stop")

    def wake_target(self):
        self.other.proc.send_signal(signal.SIGCONT)
        for thread in self.threads:
            thread.join(30)
            self.assertFalse(thread.is_alive())

    def test_a_migrate_to_a_stopped_target_does_not_delay_a_big_reserve(self):
        self.r.execute_command("BF.ADD", "moving", "a")
        self.stop_target()
        try:
            result = self.start_migrate("moving")
            started = time.monotonic()
            # ~3.6 MB: built by the filter maker, off the loop.
            self.assertEqual(self.r.execute_command("BF.RESERVE", "big", "0.001", "2000000"),
                             b"OK")
            elapsed = time.monotonic() - started
        finally:
            self.wake_target()
        # The target, woken, may have taken the key after all.
        self.assertIn(result["reply"], (b"OK", "IOERR error or timeout reading to target instance"))
        # Queued behind the transfer on one thread, the build waited out the
        # 5 s timeout; on its own it takes milliseconds.
        self.assertLess(elapsed, self.TIMEOUT_MS / 1000 / 2,
                        f"BF.RESERVE took {elapsed * 1000:.0f} ms beside a stuck MIGRATE")

    def test_a_snapshot_copy_is_not_held_up_by_a_writer_waiting_on_a_migrating_key(self):
        self.r.execute_command("BF.ADD", "moving", "a")
        # ~50 MB of counters: written by the save for tens of ms, so the
        # write below reaches it first and owes the snapshot its copy.
        self.r.execute_command("CBF.RESERVE", "big", "0.01", 10_000_000)
        self.r.execute_command("CBF.ADD", "big", "before")
        self.stop_target()
        writer_reply = {}
        try:
            result = self.start_migrate("moving")
            # A writer of the moving key, parked until the transfer ends.
            parked = self.parked()

            def write_moving():
                c = self.server.client()
                writer_reply["reply"] = c.execute_command("BF.ADD", "moving", "b")
                c.close()

            writer = threading.Thread(target=write_moving)
            writer.start()
            self.threads.append(writer)
            wait_until(lambda: self.parked() > parked, 10,
                       what="the writer parked on the moving key")
            copies = int(self.r.info("persistence")["snapshot_copies_off_loop"])
            self.assertEqual(self.r.bgsave(), True)
            started = time.monotonic()
            self.assertEqual(self.r.execute_command("CBF.ADD", "big", "after"), 1)
            elapsed = time.monotonic() - started
            made = int(self.r.info("persistence")["snapshot_copies_off_loop"]) - copies
        finally:
            self.wake_target()
        self.assertIn(result["reply"], (b"OK", "IOERR error or timeout reading to target instance"))
        self.assertEqual(writer_reply.get("reply"), 1)
        self.assertGreaterEqual(made, 1, "the save wrote `big` before the write reached it: "
                                         "no copy was owed, nothing was measured")
        self.assertLess(elapsed, self.TIMEOUT_MS / 1000 / 2,
                        f"the copy-on-write waited {elapsed * 1000:.0f} ms")
        wait_until(lambda: self.r.info("persistence")["rdb_bgsave_in_progress"] == 0, 60,
                   what="the background save to end")

    def test_migrate_inside_exec_to_a_stopped_target_keeps_the_loop_answering(self):
        self.r.execute_command("BF.ADD", "k", "a")
        self.stop_target()
        result = {}
        try:
            def run():
                c = self.server.client()
                pipe = c.pipeline(transaction=True)
                pipe.execute_command("MIGRATE", "127.0.0.1", self.other.port, "k", 0,
                                     self.TIMEOUT_MS)
                started = time.monotonic()
                result["replies"] = pipe.execute(raise_on_error=False)
                result["elapsed"] = time.monotonic() - started
                c.close()

            thread = threading.Thread(target=run)
            thread.start()
            self.threads.append(thread)
            # PINGs from another client of the same (only) loop meanwhile.
            worst = 0.0
            while thread.is_alive():
                t = time.monotonic()
                self.assertTrue(self.r.ping())
                worst = max(worst, time.monotonic() - t)
        finally:
            self.wake_target()
        # The transfer inside EXEC waits at most 100 ms on the target at each
        # step; before, the loop (and every PING) waited out the 5 s timeout.
        self.assertLess(worst, 1.0, f"a PING waited {worst * 1000:.0f} ms")
        self.assertLess(result["elapsed"], 2.5, f"EXEC took {result['elapsed'] * 1000:.0f} ms")
        self.assertEqual(str(result["replies"][0]),
                         "IOERR error or timeout reading to target instance")
        self.assertEqual(self.r.exists("k"), 1)


class MigrateAuthTest(ServerTestCase):
    """To a target with a password and an ACL user."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.other = BloomgateServer(["--requirepass", "secret"], password="secret").start()
        c = cls.other.client()
        c.execute_command("ACL", "SETUSER", "mover", "on", ">pw", "~*", "+@all")
        c.close()

    @classmethod
    def tearDownClass(cls):
        cls.other.stop()
        super().tearDownClass()

    def test_auth_and_auth2_reach_a_protected_target(self):
        self.r.execute_command("BF.ADD", "a", "x")
        self.r.execute_command("BF.ADD", "b", "x")
        with self.assertRaises(redis.ResponseError) as error:
            self.r.execute_command("MIGRATE", "127.0.0.1", self.other.port, "a", 0, 5000)
        self.assertTrue(str(error.exception).startswith(
            "Target instance replied with error: NOAUTH"), str(error.exception))
        self.assertEqual(self.r.exists("a"), 1)
        self.assertEqual(self.r.execute_command("MIGRATE", "127.0.0.1", self.other.port, "a",
                                                0, 5000, "AUTH", "secret"), b"OK")
        self.assertEqual(self.r.execute_command("MIGRATE", "127.0.0.1", self.other.port, "",
                                                0, 5000, "AUTH2", "mover", "pw", "KEYS", "b"),
                         b"OK")
        self.assertEqual(self.r.dbsize(), 0)
        o = self.other.client()
        self.assertEqual(o.execute_command("BF.EXISTS", "a", "x"), 1)
        self.assertEqual(o.execute_command("BF.EXISTS", "b", "x"), 1)
        o.close()


class DebugGateTest(ServerTestCase):
    def test_debug_is_refused_by_default_as_redis_7(self):
        with self.assertRaises(redis.ResponseError) as error:
            self.r.execute_command("DEBUG", "DIGEST-VALUE", "k")
        self.assertTrue(str(error.exception).startswith("DEBUG command not allowed."))


if __name__ == "__main__":
    unittest.main()
