"""The keyspace: counting, listing, renaming and expiring keys, and
transactions. Every key here holds a Bloom filter (the only type there is)."""

import threading
import time
import unittest

import redis

from harness import RespError, ServerTestCase, wait_until


class KeyCountingTest(ServerTestCase):

    def test_dbsize_counts_keys(self):
        self.assertEqual(self.r.dbsize(), 0)
        for k in ("a", "b", "c"):
            self.r.bf().add(k, "x")
        self.assertEqual(self.r.dbsize(), 3)

    def test_exists_counts_every_argument_including_duplicates(self):
        self.r.bf().add("a", "x")
        self.r.bf().add("b", "x")
        self.assertEqual(self.r.exists("a", "a", "b", "missing"), 3)
        self.assertEqual(self.r.exists("missing"), 0)

    def test_del_and_unlink_remove_keys_and_count_what_they_removed(self):
        for k in ("a", "b", "c", "d"):
            self.r.bf().add(k, "x")
        self.assertEqual(self.r.delete("a", "b", "missing"), 2)
        self.assertEqual(self.r.unlink("c", "missing"), 1)
        self.assertEqual(self.r.keys("*"), [b"d"])
        self.assertEqual(self.r.bf().exists("a", "x"), 0, "a deleted filter is gone")

    def test_type_of_a_bloom_filter_and_of_a_missing_key(self):
        self.r.bf().add("f", "x")
        self.assertEqual(self.r.type("f"), b"MBbloom--")
        self.assertEqual(self.r.type("missing"), b"none")

    def test_flushall_and_flushdb_empty_the_keyspace(self):
        for i in range(10):
            self.r.bf().add(f"k{i}", "x")
        self.assertTrue(self.r.flushdb())
        self.assertEqual(self.r.dbsize(), 0)
        self.r.bf().add("k", "x")
        self.assertTrue(self.r.flushall(asynchronous=True))
        self.assertEqual(self.r.dbsize(), 0)
        self.assertEqual(self.r.bf().exists("k", "x"), 0)

    def test_memory_usage_reports_a_filter_by_its_size(self):
        self.r.bf().create("small", 0.01, 100)
        self.r.bf().create("large", 0.01, 100_000)
        small, large = self.r.memory_usage("small"), self.r.memory_usage("large")
        self.assertGreaterEqual(small, self.r.bf().info("small").size // 2)
        self.assertGreater(large, 100_000, "100k items at 1% need about 120 KB")
        self.assertGreater(large, small)
        self.assertIsNone(self.r.memory_usage("missing"))


class KeysAndScanTest(ServerTestCase):

    def test_keys_matches_redis_glob_patterns(self):
        for k in ("hello", "hallo", "hxllo", "hllo", "heeeello", "other"):
            self.r.bf().add(k, "x")

        def keys(pattern):
            return sorted(k.decode() for k in self.r.keys(pattern))
        self.assertEqual(keys("h?llo"), ["hallo", "hello", "hxllo"])
        self.assertEqual(keys("h*llo"), ["hallo", "heeeello", "hello", "hllo", "hxllo"])
        self.assertEqual(keys("h[ae]llo"), ["hallo", "hello"])
        self.assertEqual(keys("h[^e]llo"), ["hallo", "hxllo"])
        self.assertEqual(keys("h[a-b]llo"), ["hallo"])
        self.assertEqual(keys("*"), ["hallo", "heeeello", "hello", "hllo", "hxllo", "other"])
        self.assertEqual(keys("nomatch*"), [])

    def fill(self, n):
        pipe = self.r.pipeline(transaction=False)
        names = []
        for i in range(n):
            name = f"user:{i}" if i % 2 == 0 else f"item:{i}"
            names.append(name.encode())
            pipe.execute_command("BF.ADD", name, "x")
        pipe.execute()
        return names

    def scan_all(self, client=None, **kwargs):
        client = client or self.r
        seen, cursor, calls = [], 0, 0
        while True:
            cursor, batch = client.scan(cursor, **kwargs)
            seen += batch
            calls += 1
            self.assertLess(calls, 5000, "SCAN did not finish")
            if cursor == 0:
                return seen, calls

    def test_a_full_scan_returns_every_key_exactly_once(self):
        names = self.fill(2000)
        seen, calls = self.scan_all(count=10)
        self.assertEqual(len(seen), len(set(seen)), "no key is returned twice")
        self.assertEqual(set(seen), set(names))
        self.assertGreater(calls, 20, "COUNT 10 over 2,000 keys needs many calls")

    def test_scan_match_filters_keys(self):
        names = self.fill(2000)
        seen, _ = self.scan_all(match="user:*", count=50)
        self.assertEqual(sorted(seen), sorted(n for n in names if n.startswith(b"user:")))

    def test_scan_type_filters_by_type_name(self):
        names = self.fill(200)
        seen, _ = self.scan_all(_type="MBbloom--", count=50)
        self.assertEqual(sorted(seen), sorted(names))
        self.assertEqual(self.scan_all(_type="string")[0], [])

    def test_scan_returns_every_key_that_stays_while_others_come_and_go(self):
        stable = self.fill(1000)
        stop = threading.Event()
        errors = []

        def churn():
            c = self.server.client()
            try:
                i = 0
                while not stop.is_set() and i < 3000:
                    c.execute_command("BF.ADD", f"churn:{i}", "x")
                    if i >= 10:
                        c.delete(f"churn:{i - 10}")
                    i += 1
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
            finally:
                c.close()
        t = threading.Thread(target=churn)
        t.start()
        try:
            seen, _ = self.scan_all(count=20)
        finally:
            stop.set()
            t.join(10)
        self.assertEqual(errors, [])
        missing = set(stable) - set(seen)
        self.assertEqual(missing, set(), "a key present for the whole scan must be returned")

    def test_scan_refuses_bad_arguments(self):
        c = self.raw()
        self.assertErrorText(c.call("SCAN", "abc"), "ERR invalid cursor")
        self.assertErrorText(c.call("SCAN", "0", "COUNT", "0"), "ERR syntax error")
        self.assertErrorText(c.call("SCAN", "0", "MATCH"), "ERR syntax error")


class RenameTest(ServerTestCase):

    def test_rename_moves_the_filter(self):
        self.r.bf().add("old", "x")
        self.assertTrue(self.r.rename("old", "new"))
        self.assertEqual(self.r.exists("old"), 0)
        self.assertEqual(self.r.bf().exists("new", "x"), 1)

    def test_rename_over_an_existing_key_replaces_it(self):
        self.r.bf().add("src", "from-src")
        self.r.bf().add("dst", "from-dst")
        self.assertTrue(self.r.rename("src", "dst"))
        self.assertEqual(self.r.bf().mexists("dst", "from-src", "from-dst"), [1, 0])
        self.assertEqual(self.r.dbsize(), 1)

    def test_rename_of_a_missing_key_is_an_error(self):
        c = self.raw()
        self.assertErrorText(c.call("RENAME", "missing", "x"), "ERR no such key")
        self.assertErrorText(c.call("RENAMENX", "missing", "x"), "ERR no such key")

    def test_renamenx_only_renames_onto_a_free_name(self):
        self.r.bf().add("a", "x")
        self.r.bf().add("b", "y")
        self.assertFalse(self.r.renamenx("a", "b"))
        self.assertEqual(self.r.bf().exists("b", "x"), 0, "b was left alone")
        self.assertTrue(self.r.renamenx("a", "c"))
        self.assertEqual(self.r.bf().exists("c", "x"), 1)

    def test_rename_onto_itself_is_ok(self):
        self.r.bf().add("a", "x")
        self.assertTrue(self.r.rename("a", "a"))
        self.assertEqual(self.r.bf().exists("a", "x"), 1)

    def test_rename_gives_the_destination_the_sources_time_to_live(self):
        self.r.bf().add("src", "x")
        self.r.bf().add("dst", "y")
        self.r.expire("dst", 100)
        self.r.rename("src", "dst")
        self.assertEqual(self.r.ttl("dst"), -1, "the source had no TTL")

    def test_rename_keeps_the_time_to_live(self):
        self.r.bf().add("a", "x")
        self.r.expire("a", 100)
        self.r.rename("a", "b")
        self.assertGreater(self.r.ttl("b"), 90)

    def test_rename_swaps_a_rebuilt_filter_in_for_concurrent_readers(self):
        # Readers check items that are in every version of "live" while a
        # writer rebuilds "shadow" and renames it over "live" again and again.
        common = [f"common:{i}" for i in range(500)]
        self.r.bf().create("live", 0.01, 2000)
        self.r.bf().madd("live", *common)

        stop = threading.Event()
        errors, false_negatives = [], []
        reads = [0] * 4
        renames = [0]

        def reader(n):
            c = self.server.client()
            try:
                i = 0
                while not stop.is_set():
                    batch = [common[(i * 37 + j) % len(common)] for j in range(50)]
                    hits = c.bf().mexists("live", *batch)
                    false_negatives.extend(x for x, h in zip(batch, hits) if h != 1)
                    if c.bf().exists("live", common[i % len(common)]) != 1:
                        false_negatives.append(common[i % len(common)])
                    reads[n] += 1
                    i += 1
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))
            finally:
                c.close()

        def writer():
            c = self.server.client()
            try:
                deadline = time.monotonic() + 3.0
                generation = 0
                while time.monotonic() < deadline and generation < 200:
                    c.delete("shadow")
                    c.bf().create("shadow", 0.01, 2000)
                    c.bf().madd("shadow", *common)
                    c.bf().madd("shadow", *[f"gen{generation}:{j}" for j in range(100)])
                    c.rename("shadow", "live")
                    renames[0] += 1
                    generation += 1
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))
            finally:
                c.close()
                stop.set()

        threads = [threading.Thread(target=reader, args=(n,)) for n in range(4)]
        threads.append(threading.Thread(target=writer))
        for t in threads:
            t.start()
        for t in threads:
            t.join(15)
        stop.set()
        self.assertFalse(any(t.is_alive() for t in threads), "threads did not finish")
        self.assertEqual(errors, [], "no reader or writer may see an error")
        self.assertGreaterEqual(renames[0], 10, "the writer should swap many times")
        self.assertGreater(sum(reads), 40)
        self.assertEqual(false_negatives[:10], [],
                         f"{len(false_negatives)} false negatives over {sum(reads)} reads and "
                         f"{renames[0]} renames")


class ExpiryTest(ServerTestCase):

    def test_ttl_and_pttl_of_keys_with_without_and_missing(self):
        self.r.bf().add("k", "x")
        self.assertEqual(self.r.ttl("k"), -1)
        self.assertEqual(self.r.pttl("k"), -1)
        self.assertEqual(self.r.ttl("missing"), -2)
        self.assertEqual(self.r.pttl("missing"), -2)
        self.assertTrue(self.r.expire("k", 100))
        self.assertIn(self.r.ttl("k"), (99, 100))
        self.assertTrue(98_000 < self.r.pttl("k") <= 100_000)

    def test_expire_on_a_missing_key_replies_0(self):
        self.assertFalse(self.r.expire("missing", 100))
        self.assertFalse(self.r.pexpire("missing", 100))

    def test_expireat_and_expiretime(self):
        self.r.bf().add("k", "x")
        at = int(time.time()) + 1000
        self.assertTrue(self.r.expireat("k", at))
        self.assertEqual(self.r.execute_command("EXPIRETIME", "k"), at)
        self.assertEqual(self.r.execute_command("PEXPIRETIME", "k"), at * 1000)
        self.assertTrue(self.r.pexpireat("k", at * 1000 + 500))
        self.assertEqual(self.r.execute_command("PEXPIRETIME", "k"), at * 1000 + 500)
        self.assertEqual(self.r.execute_command("EXPIRETIME", "missing"), -2)
        self.r.persist("k")
        self.assertEqual(self.r.execute_command("EXPIRETIME", "k"), -1)

    def test_an_expiry_in_the_past_deletes_the_key_at_once(self):
        for k in ("a", "b", "c"):
            self.r.bf().add(k, "x")
        self.assertTrue(self.r.expireat("a", 1))
        self.assertTrue(self.r.expire("b", -1))
        self.assertTrue(self.r.pexpire("c", 0))
        self.assertEqual(self.r.exists("a", "b", "c"), 0)

    def test_expire_options_nx_xx_gt_lt(self):
        self.r.bf().add("k", "x")
        self.assertFalse(self.r.expire("k", 100, xx=True), "XX: no TTL yet")
        self.assertTrue(self.r.expire("k", 100, nx=True), "NX: no TTL yet")
        self.assertFalse(self.r.expire("k", 200, nx=True), "NX: already has a TTL")
        self.assertFalse(self.r.expire("k", 50, gt=True), "GT: 50 < 100")
        self.assertTrue(self.r.expire("k", 200, gt=True), "GT: 200 > 100")
        self.assertFalse(self.r.expire("k", 300, lt=True), "LT: 300 > 200")
        self.assertTrue(self.r.expire("k", 150, lt=True), "LT: 150 < 200")
        self.assertTrue(self.r.expire("k", 120, xx=True), "XX: has a TTL")
        self.assertIn(self.r.ttl("k"), (119, 120))
        self.r.persist("k")
        self.assertFalse(self.r.expire("k", 100, gt=True), "GT: no TTL counts as infinite")
        self.assertTrue(self.r.expire("k", 100, lt=True), "LT: no TTL counts as infinite")
        self.assertTrue(self.r.pexpire("k", 50_000, lt=True))

    def test_expire_refuses_conflicting_or_bad_options(self):
        c = self.raw()
        c.call("BF.ADD", "k", "x")
        self.assertErrorText(c.call("EXPIRE", "k", "100", "NX", "XX"),
                             "ERR NX and XX, GT or LT options at the same time are not compatible")
        self.assertErrorText(c.call("EXPIRE", "k", "100", "GT", "LT"),
                             "ERR GT and LT options at the same time are not compatible")
        self.assertErrorText(c.call("EXPIRE", "k", "100", "FOO"), "ERR Unsupported option FOO")
        self.assertErrorText(c.call("EXPIRE", "k", "abc"),
                             "ERR value is not an integer or out of range")
        self.assertErrorText(c.call("EXPIRE", "k", "9223372036854775807"),
                             "ERR invalid expire time in 'expire' command")
        self.assertErrorText(c.call("PEXPIRE", "k", "9223372036854775807"),
                             "ERR invalid expire time in 'pexpire' command")
        self.assertEqual(c.call("TTL", "k"), -1, "a refused EXPIRE changes nothing")

    def test_persist_removes_the_ttl(self):
        self.r.bf().add("k", "x")
        self.assertFalse(self.r.persist("k"), "nothing to remove")
        self.r.expire("k", 100)
        self.assertTrue(self.r.persist("k"))
        self.assertEqual(self.r.ttl("k"), -1)
        self.assertFalse(self.r.persist("missing"))

    def test_adding_to_a_filter_keeps_its_ttl(self):
        self.r.bf().add("k", "x")
        self.r.expire("k", 100)
        self.r.bf().madd("k", "y", "z")
        self.assertGreater(self.r.ttl("k"), 90)

    def test_an_expired_key_vanishes_when_accessed(self):
        self.r.bf().add("k", "x")
        self.r.pexpire("k", 100)
        wait_until(lambda: self.r.exists("k") == 0, deadline_s=5, what="k to expire")
        self.assertEqual(self.r.bf().exists("k", "x"), 0)
        self.assertEqual(self.r.bf().add("k", "x"), 1, "a new filter is created")
        self.assertEqual(self.r.ttl("k"), -1, "without the old TTL")

    def test_an_expired_key_is_never_listed_and_counts_as_missing(self):
        pipe = self.r.pipeline(transaction=False)
        at_ms = int(time.time() * 1000) + 300
        for i in range(20):
            pipe.execute_command("BF.ADD", f"soon:{i}", "x")
            pipe.pexpireat(f"soon:{i}", at_ms)
        pipe.execute_command("BF.ADD", "stays", "x")
        pipe.execute()
        wait_until(lambda: time.time() * 1000 > at_ms + 20, deadline_s=5, what="the expiry time")
        self.assertEqual(self.r.keys("soon:*"), [])
        self.assertEqual(self.scan_keys(), [b"stays"])
        self.assertEqual(self.r.delete("soon:0"), 0, "DEL of an expired key removes nothing")
        self.assertEqual(self.r.execute_command("BF.RESERVE", "soon:1", "0.01", "100"), b"OK",
                         "an expired name is free for BF.RESERVE")
        self.assertTrue(self.r.renamenx("stays", "soon:2"),
                        "RENAMENX onto an expired name succeeds")

    def scan_keys(self):
        cursor, seen = 0, []
        for _ in range(1000):
            cursor, batch = self.r.scan(cursor, count=100)
            seen += batch
            if cursor == 0:
                break
        return sorted(seen)

    def test_expired_keys_are_swept_without_being_accessed(self):
        expired_before = self.r.info("stats")["expired_keys"]
        pipe = self.r.pipeline(transaction=False)
        for i in range(50):
            pipe.execute_command("BF.ADD", f"short:{i}", "x")
            pipe.pexpire(f"short:{i}", 100)
        pipe.execute_command("BF.ADD", "long", "x")
        pipe.execute()
        # DBSIZE counts keys without touching them one by one: it can only drop
        # if the server removes expired keys in the background.
        wait_until(lambda: self.r.dbsize() == 1, deadline_s=5,
                   what="the background sweep to remove 50 expired keys")
        self.assertEqual(self.r.info("stats")["expired_keys"] - expired_before, 50)
        self.assertEqual(self.r.keys("*"), [b"long"])


class TransactionTest(ServerTestCase):

    def test_multi_exec_runs_the_queued_commands_in_order(self):
        c = self.raw()
        self.assertEqual(c.call("MULTI"), "OK")
        self.assertEqual(c.call("BF.ADD", "k", "x"), "QUEUED")
        self.assertEqual(c.call("BF.EXISTS", "k", "x"), "QUEUED")
        self.assertEqual(c.call("BF.CARD", "k"), "QUEUED")
        self.assertEqual(c.call("EXEC"), [1, 1, 1])

    def test_a_runtime_error_inside_exec_does_not_stop_the_others(self):
        c = self.raw()
        c.call("BF.RESERVE", "k", "0.01", "100")
        c.call("MULTI")
        c.call("BF.RESERVE", "k", "0.01", "100")
        c.call("BF.ADD", "k", "x")
        reply = c.call("EXEC")
        self.assertErrorText(reply[0], "ERR item exists")
        self.assertEqual(reply[1], 1)

    def test_a_queue_time_error_aborts_exec(self):
        for bad in (["NOPE", "x"], ["BF.ADD", "k"]):
            with self.subTest(bad=bad):
                c = self.raw()
                c.call("MULTI")
                self.assertEqual(c.call("BF.ADD", "k", "x"), "QUEUED")
                self.assertIsInstance(c.call(*bad), RespError)
                self.assertErrorText(c.call("EXEC"),
                                     "EXECABORT Transaction discarded because of previous errors.")
                self.assertEqual(c.call("EXISTS", "k"), 0, "nothing queued ran")
                self.assertEqual(c.call("PING"), "PONG", "the connection left MULTI")

    def test_discard_drops_the_queue(self):
        c = self.raw()
        c.call("MULTI")
        c.call("BF.ADD", "k", "x")
        self.assertEqual(c.call("DISCARD"), "OK")
        self.assertEqual(c.call("EXISTS", "k"), 0)

    def test_transaction_state_errors(self):
        c = self.raw()
        self.assertErrorText(c.call("EXEC"), "ERR EXEC without MULTI")
        self.assertErrorText(c.call("DISCARD"), "ERR DISCARD without MULTI")
        c.call("MULTI")
        self.assertErrorText(c.call("MULTI"), "ERR MULTI calls can not be nested")
        self.assertErrorText(c.call("WATCH", "k"), "ERR WATCH inside MULTI is not allowed")
        self.assertEqual(c.call("EXEC"), [], "these errors do not abort the transaction")

    def test_exec_returns_nil_when_a_watched_key_was_changed(self):
        c, other = self.raw(), self.raw()
        c.call("BF.ADD", "k", "x")
        self.assertEqual(c.call("WATCH", "k"), "OK")
        self.assertEqual(other.call("BF.ADD", "k", "y"), 1)
        c.call("MULTI")
        c.call("BF.ADD", "k", "z")
        self.assertEqual(c.call_raw("EXEC"), b"*-1\r\n")
        self.assertEqual(c.call("BF.EXISTS", "k", "z"), 0, "the transaction did not run")

    def test_watch_sees_deletion_rename_and_expiry_by_others(self):
        changes = [("DEL", "k"), ("RENAME", "k", "k2"), ("EXPIRE", "k", "100")]
        for change in changes:
            with self.subTest(change=change):
                self.r.flushall()
                c, other = self.raw(), self.raw()
                c.call("BF.ADD", "k", "x")
                c.call("WATCH", "k")
                other.call(*change)
                c.call("MULTI")
                c.call("PING")
                self.assertIsNone(c.call("EXEC"))

    def test_watch_of_a_missing_key_sees_its_creation(self):
        c, other = self.raw(), self.raw()
        c.call("WATCH", "k")
        other.call("BF.ADD", "k", "x")
        c.call("MULTI")
        c.call("PING")
        self.assertIsNone(c.call("EXEC"))

    def test_exec_runs_when_only_other_keys_changed_or_after_unwatch(self):
        c, other = self.raw(), self.raw()
        c.call("WATCH", "k")
        other.call("BF.ADD", "unrelated", "x")
        c.call("MULTI")
        c.call("BF.ADD", "k", "x")
        self.assertEqual(c.call("EXEC"), [1])
        c.call("WATCH", "k")
        c.call("UNWATCH")
        other.call("BF.ADD", "k", "y")
        c.call("MULTI")
        c.call("BF.ADD", "k", "z")
        self.assertEqual(c.call("EXEC"), [1])

    def test_redis_py_transactional_pipeline(self):
        pipe = self.r.pipeline(transaction=True)
        pipe.bf().create("k", 0.01, 100)
        pipe.bf().madd("k", "a", "b")
        pipe.execute_command("BF.CARD", "k")
        pipe.expire("k", 100)
        self.assertEqual(pipe.execute(), [True, [1, 1], 2, True])

    def test_redis_py_transaction_retries_after_a_watch_failure(self):
        self.r.bf().add("k", "x")
        other = self.client()
        calls = []

        def body(pipe):
            calls.append(pipe.bf().exists("k", "x"))  # immediate mode, after WATCH
            if len(calls) == 1:
                other.execute_command("BF.ADD", "k", "changed-by-other")
            pipe.multi()
            pipe.execute_command("BF.ADD", "k", "from-transaction")
        result = self.r.transaction(body, "k")
        self.assertEqual(len(calls), 2, "the first EXEC fails, the retry succeeds")
        self.assertEqual(result, [1])
        self.assertEqual(self.r.bf().mexists("k", "changed-by-other", "from-transaction"), [1, 1])

    def test_redis_py_reports_a_watch_failure(self):
        self.r.bf().add("k", "x")
        other = self.client()
        with self.r.pipeline() as pipe:
            pipe.watch("k")
            other.execute_command("BF.ADD", "k", "y")
            pipe.multi()
            pipe.execute_command("BF.ADD", "k", "z")
            with self.assertRaises(redis.WatchError):
                pipe.execute()

    def test_no_other_client_sees_a_transaction_half_done(self):
        # Each transaction creates a filter and adds 300 items; a reader polling
        # BF.CARD must see 0 (not there yet) or the final count, never between.
        n_tx, n_items = 40, 300
        observed = {i: set() for i in range(n_tx)}
        done = threading.Event()
        errors = []

        def reader():
            c = self.server.client()
            try:
                while not done.is_set():
                    pipe = c.pipeline(transaction=False)
                    for i in range(n_tx):
                        pipe.execute_command("BF.CARD", f"tx:{i}")
                    for i, card in enumerate(pipe.execute()):
                        observed[i].add(card)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))
            finally:
                c.close()
        t = threading.Thread(target=reader)
        t.start()
        try:
            for i in range(n_tx):
                pipe = self.r.pipeline(transaction=True)
                pipe.execute_command("BF.RESERVE", f"tx:{i}", "0.01", str(n_items))
                pipe.execute_command("BF.MADD", f"tx:{i}", *[f"{i}:{j}" for j in range(n_items)])
                pipe.execute()
        finally:
            done.set()
            t.join(10)
        self.assertEqual(errors, [])
        for i in range(n_tx):
            final = self.r.execute_command("BF.CARD", f"tx:{i}")
            partial = observed[i] - {0, final}
            self.assertEqual(partial, set(), f"tx:{i} was seen half-built (final {final})")


if __name__ == "__main__":
    unittest.main()
