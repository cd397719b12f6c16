"""CF.* against the real server, through redis-py's cf() API and raw RESP.

Expected replies and error texts are RedisBloom's (Redis 8 line, see shared
COMPAT.md 1.5 and 1.7), except where Bloomgate deliberately differs (docs/redisbloom.md
"Differences from RedisBloom"): memory-based capacity limits (so the range
texts end in 18446744073709551615), WRONGTYPE from every command, exact
option matching, and "Maximum expansions reached" only when a new sub-filter
is really needed.
"""

import threading
import unittest

import redis

from harness import Map, RespError, ServerTestCase, Simple, encode_command

WRONG_ARITY = "ERR wrong number of arguments for '{}' command"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
U64_MAX = "18446744073709551615"
RESERVE_CAPACITY_RANGE = f"Capacity must be in the range [2 * BUCKETSIZE, {U64_MAX}]"
INSERT_CAPACITY_RANGE = f"Capacity must be in the range [cf-bucket-size * 2, {U64_MAX}]"
INFO_FIELDS = ["Size", "Number of buckets", "Number of filters", "Number of items inserted",
               "Number of items deleted", "Bucket size", "Expansion rate", "Max iterations"]
CF_CONFIG = ["cf-bucket-size", "cf-initial-size", "cf-max-iterations", "cf-expansion-factor",
             "cf-max-expansions"]


def items(prefix, n, start=0):
    return [f"{prefix}:{i}" for i in range(start, start + n)]


def fill_until_full(testcase, conn, key, prefix="fill", limit=10_000):
    """CF.ADDs new items (ones CF.EXISTS says are absent) to `key` until one
    is refused; asserts the refusal is "Filter is full" and returns
    (added, refused_item). A refused insert leaves the filter as it was, so
    the refused item is still absent and would be refused again."""
    added = []
    for item in items(prefix, limit):
        if conn.call("CF.EXISTS", key, item) != 0:
            continue
        reply = conn.call("CF.ADD", key, item)
        if isinstance(reply, RespError):
            testcase.assertErrorText(reply, "Filter is full")
            return added, item
        testcase.assertEqual(reply, 1)
        added.append(item)
    testcase.fail(f"{key} accepted {len(added)} items without ever being full")


class CuckooTestCase(ServerTestCase):

    def resp3(self):
        c = self.raw()
        hello = c.call("HELLO", "3")
        self.assertIsInstance(hello, Map, hello)
        return c

    def restore_cf_config(self):
        """Puts the cf-* settings back as they are now when the test ends."""
        saved = self.r.config_get("cf-*")
        self.assertEqual(set(saved), set(CF_CONFIG), saved)

        def restore():
            c = self.server.client()
            try:
                for name, value in saved.items():
                    c.config_set(name, value)
            finally:
                c.close()
        self.addCleanup(restore)


class ReserveTest(CuckooTestCase):

    def test_create_makes_an_empty_filter_that_info_describes(self):
        self.assertTrue(self.r.cf().create("f", 1000))
        info = self.r.cf().info("f")
        # RedisBloom: numBuckets = nextpow2(capacity / bucket_size) = nextpow2(500).
        self.assertEqual(info.bucketNum, 512)
        self.assertEqual((info.filterNum, info.insertedNum, info.deletedNum), (1, 0, 0))
        self.assertEqual((info.bucketSize, info.expansionRate, info.maxIteration), (2, 1, 20),
                         "RedisBloom's defaults: bucket size 2, expansion 1, 20 iterations")
        self.assertGreaterEqual(info.size, 512 * 2, "one byte per slot at least")
        self.assertEqual(self.r.type("f"), b"MBbloomCF")

    def test_create_with_bucket_size_max_iterations_and_expansion(self):
        self.assertTrue(self.r.cf().create("f", 1000, expansion=4, bucket_size=4,
                                           max_iterations=50))
        info = self.r.cf().info("f")
        self.assertEqual((info.bucketNum, info.bucketSize, info.expansionRate, info.maxIteration),
                         (256, 4, 4, 50), vars(info))

    def test_options_may_come_in_any_order_and_any_case(self):
        c = self.raw()
        self.assertEqual(c.call("CF.RESERVE", "f", "100", "maxiterations", "7", "Expansion", "2",
                                "BUCKETSIZE", "1"), "OK")
        info = self.r.cf().info("f")
        self.assertEqual((info.bucketNum, info.bucketSize, info.expansionRate, info.maxIteration),
                         (128, 1, 2, 7), vars(info))

    def test_capacity_is_rounded_up_to_a_power_of_two_buckets(self):
        for capacity, buckets in ((4, 2), (100, 64), (1024, 512), (1025, 512), (3000, 2048)):
            with self.subTest(capacity=capacity):
                self.r.delete("f")
                self.assertTrue(self.r.cf().create("f", capacity))
                self.assertEqual(self.r.cf().info("f").bucketNum, buckets)

    def test_expansion_is_rounded_up_to_a_power_of_two(self):
        for expansion, rounded in ((1, 1), (2, 2), (3, 4), (5, 8), (1000, 1024)):
            with self.subTest(expansion=expansion):
                self.r.delete("f")
                self.assertTrue(self.r.cf().create("f", 100, expansion=expansion))
                self.assertEqual(self.r.cf().info("f").expansionRate, rounded)

    def test_expansion_zero_makes_a_nonscaling_filter(self):
        self.assertTrue(self.r.cf().create("f", 100, expansion=0))
        self.assertEqual(self.r.cf().info("f").expansionRate, 0)

    def test_reserve_on_an_existing_key_replies_item_exists(self):
        c = self.raw()
        self.assertEqual(c.call("CF.RESERVE", "f", "100"), "OK")
        self.assertErrorText(c.call("CF.RESERVE", "f", "100"), "ERR item exists")
        c.call("CF.ADD", "auto", "x")
        self.assertErrorText(c.call("CF.RESERVE", "auto", "100"), "ERR item exists")

    def test_reserve_refuses_bad_arguments_with_redisblooms_texts(self):
        c = self.raw()
        cases = [
            (["abc"], "Bad capacity"),
            (["1.5"], "Bad capacity"),
            (["1e3"], "Bad capacity"),
            ([""], "Bad capacity"),
            (["18446744073709551616"], "Bad capacity"),
            (["0"], RESERVE_CAPACITY_RANGE),
            (["3"], RESERVE_CAPACITY_RANGE),
            (["7", "BUCKETSIZE", "4"], RESERVE_CAPACITY_RANGE),
            (["100", "BUCKETSIZE", "x"], "Couldn't parse BUCKETSIZE"),
            (["100", "BUCKETSIZE", "2.5"], "Couldn't parse BUCKETSIZE"),
            (["100", "BUCKETSIZE", "0"], "BUCKETSIZE: value must be in the range [1, 255]"),
            (["1000", "BUCKETSIZE", "256"], "BUCKETSIZE: value must be in the range [1, 255]"),
            (["100", "MAXITERATIONS", "x"], "Couldn't parse MAXITERATIONS"),
            (["100", "MAXITERATIONS", "0"],
             "MAXITERATIONS: value must be in the range [1, 65535]"),
            (["100", "MAXITERATIONS", "65536"],
             "MAXITERATIONS: value must be in the range [1, 65535]"),
            (["100", "EXPANSION", "x"], "Couldn't parse EXPANSION"),
            (["100", "EXPANSION", "32769"], "EXPANSION: value must be in the range [0, 32768]"),
            # Bloomgate matches whole keywords (RedisBloom ignores unknown words).
            (["100", "BOGUS", "1"], "ERR syntax error"),
            (["100", "BUCKETSIZE", "2", "BUCKETSIZE", "4"], "ERR option given more than once"),
            ([], WRONG_ARITY.format("cf.reserve")),
            (["100", "BUCKETSIZE", "2", "MAXITERATIONS", "20", "EXPANSION", "1", "X"],
             WRONG_ARITY.format("cf.reserve")),
        ]
        for args, expected in cases:
            with self.subTest(args=args):
                self.assertErrorText(c.call("CF.RESERVE", "k", *args), expected)
        self.assertEqual(c.call("EXISTS", "k"), 0, "a refused CF.RESERVE must create nothing")

    def test_reserve_bounds_negative_numbers_with_the_range_texts(self):
        # RedisBloom reads every number of CF.RESERVE as a signed integer and
        # then bounds it, so a negative value gets the range text, not the
        # "Couldn't parse" one (as BF.RESERVE's negatives do here).
        c = self.raw()
        cases = [
            (["-1"], RESERVE_CAPACITY_RANGE),
            (["100", "BUCKETSIZE", "-1"], "BUCKETSIZE: value must be in the range [1, 255]"),
            (["100", "MAXITERATIONS", "-1"],
             "MAXITERATIONS: value must be in the range [1, 65535]"),
            (["100", "EXPANSION", "-1"], "EXPANSION: value must be in the range [0, 32768]"),
        ]
        for args, expected in cases:
            with self.subTest(args=args):
                self.assertErrorText(c.call("CF.RESERVE", "k", *args), expected)
        self.assertEqual(c.call("EXISTS", "k"), 0)

    def test_reserve_with_an_option_missing_its_value_is_an_arity_error(self):
        # RedisBloom refuses an even argument count up front (argc % 2 == 0).
        c = self.raw()
        for args in (["100", "BUCKETSIZE"], ["100", "EXPANSION", "1", "MAXITERATIONS"]):
            with self.subTest(args=args):
                self.assertErrorText(c.call("CF.RESERVE", "k", *args),
                                     WRONG_ARITY.format("cf.reserve"))
        self.assertEqual(c.call("EXISTS", "k"), 0)

    def test_reserve_of_an_impossible_capacity_fails_cleanly(self):
        c = self.raw()
        self.assertErrorText(c.call("CF.RESERVE", "k", U64_MAX),
                             "ERR Insufficient memory to create filter: needs more than 2^64 "
                             "bytes, more than any filter can have")
        self.assertEqual(c.call("EXISTS", "k"), 0)
        self.assertEqual(c.call("CF.ADD", "other", "x"), 1, "the server keeps serving")
        self.assertServesNewClients()


class AddAndExistsTest(CuckooTestCase):

    def test_add_replies_1_even_for_an_item_already_there(self):
        self.assertEqual(self.r.cf().add("f", "a"), 1)
        self.assertEqual(self.r.cf().add("f", "a"), 1, "CF.ADD stores another copy")
        self.assertEqual(self.r.cf().count("f", "a"), 2)
        self.assertEqual(self.r.cf().info("f").insertedNum, 2)

    def test_addnx_adds_only_an_item_not_there(self):
        self.assertEqual(self.r.cf().addnx("f", "a"), 1)
        self.assertEqual(self.r.cf().addnx("f", "a"), 0)
        self.assertEqual(self.r.cf().count("f", "a"), 1)
        self.assertEqual(self.r.cf().info("f").insertedNum, 1)

    def test_add_auto_creates_a_filter_with_redisblooms_defaults(self):
        self.assertEqual(self.r.cf().add("f", "x"), 1)
        info = self.r.cf().info("f")
        # cf-initial-size 1024 / bucket size 2 = 512 buckets.
        self.assertEqual((info.bucketNum, info.bucketSize, info.maxIteration, info.expansionRate,
                          info.filterNum, info.insertedNum, info.deletedNum),
                         (512, 2, 20, 1, 1, 1, 0), vars(info))
        self.assertEqual(self.r.type("f"), b"MBbloomCF")

    def test_addnx_auto_creates_too(self):
        self.assertEqual(self.r.cf().addnx("f", "x"), 1)
        self.assertEqual(self.r.cf().info("f").bucketNum, 512)

    def test_exists_and_mexists_find_every_added_item(self):
        self.r.cf().create("f", 2000)
        added = items("present", 500)
        for i in range(0, len(added), 100):
            self.assertEqual(self.r.cf().insert("f", added[i:i + 100]), [1] * 100)
        self.assertEqual(self.r.cf().mexists("f", *added), [1] * len(added))
        self.assertEqual(self.r.cf().exists("f", added[0]), 1)
        absent = items("absent", 1000)
        hits = sum(self.r.cf().mexists("f", *absent))
        # 500 items in 2048 slots, bucket size 2: about 2*2*(500/2048)/255 = 0.4%.
        self.assertLess(hits, 30, f"{hits} of 1000 absent items reported present")

    def test_exists_mexists_and_count_on_a_missing_key_reply_0(self):
        self.assertEqual(self.r.cf().exists("nokey", "a"), 0)
        self.assertEqual(self.r.cf().mexists("nokey", "a", "b"), [0, 0])
        self.assertEqual(self.r.cf().count("nokey", "a"), 0)
        self.assertEqual(self.r.exists("nokey"), 0, "a lookup must not create the key")

    def test_items_are_binary_safe(self):
        item = bytes(range(256))
        self.assertEqual(self.r.cf().addnx("f", item), 1)
        self.assertEqual(self.r.cf().exists("f", item), 1)
        self.assertEqual(self.r.cf().addnx("f", b""), 1, "the empty string is an item too")
        self.assertEqual(self.r.cf().exists("f", b""), 1)

    def test_commands_with_the_wrong_number_of_arguments_get_redis_arity_text(self):
        c = self.raw()
        cases = [
            (["CF.ADD", "f"], "cf.add"),
            (["CF.ADD", "f", "a", "b"], "cf.add"),
            (["CF.ADDNX", "f"], "cf.addnx"),
            (["CF.EXISTS", "f"], "cf.exists"),
            (["CF.EXISTS", "f", "a", "b"], "cf.exists"),
            (["CF.MEXISTS", "f"], "cf.mexists"),
            (["CF.COUNT", "f"], "cf.count"),
            (["CF.DEL", "f"], "cf.del"),
            (["CF.DEL", "f", "a", "b"], "cf.del"),
            (["CF.INFO"], "cf.info"),
            (["CF.INFO", "f", "SIZE"], "cf.info"),
            (["CF.COMPACT"], "cf.compact"),
            (["CF.INSERT", "f", "ITEMS"], "cf.insert"),
            (["CF.INSERTNX", "f"], "cf.insertnx"),
        ]
        for args, name in cases:
            with self.subTest(args=args):
                self.assertErrorText(c.call(*args), WRONG_ARITY.format(name))
        self.assertEqual(c.call("DBSIZE"), 0)


class InsertTest(CuckooTestCase):

    def test_insert_replies_1_per_item_and_stores_duplicates(self):
        self.assertEqual(self.r.cf().insert("f", ["a", "b", "a"]), [1, 1, 1])
        self.assertEqual(self.r.cf().count("f", "a"), 2)
        self.assertEqual(self.r.cf().info("f").insertedNum, 3)

    def test_insertnx_replies_0_for_items_already_there(self):
        self.assertEqual(self.r.cf().insertnx("f", ["a", "b", "a"]), [1, 1, 0])
        self.assertEqual(self.r.cf().insertnx("f", ["b", "c"]), [0, 1])
        self.assertEqual(self.r.cf().info("f").insertedNum, 3)

    def test_insert_auto_creates_with_the_defaults_or_the_given_capacity(self):
        self.r.cf().insert("default", ["a"])
        self.assertEqual(self.r.cf().info("default").bucketNum, 512)
        self.r.cf().insert("sized", ["a"], capacity=4000)
        info = self.r.cf().info("sized")
        self.assertEqual((info.bucketNum, info.bucketSize, info.maxIteration), (2048, 2, 20))
        self.r.cf().insertnx("sizednx", ["a"], capacity=64)
        self.assertEqual(self.r.cf().info("sizednx").bucketNum, 32)

    def test_insert_ignores_capacity_for_an_existing_filter(self):
        self.r.cf().create("f", 100)
        self.assertEqual(self.r.cf().insert("f", ["a"], capacity=100_000), [1])
        self.assertEqual(self.r.cf().info("f").bucketNum, 64)

    def test_insert_nocreate_on_a_missing_key_replies_not_found(self):
        c = self.raw()
        self.assertErrorText(c.call("CF.INSERT", "f", "NOCREATE", "ITEMS", "a"), "ERR not found")
        self.assertErrorText(c.call("CF.INSERTNX", "f", "NOCREATE", "ITEMS", "a"),
                             "ERR not found")
        self.assertEqual(c.call("EXISTS", "f"), 0)
        with self.assertRaises(redis.ResponseError) as ctx:
            self.r.cf().insert("f", ["a"], nocreate=True)
        self.assertEqual(str(ctx.exception), "not found")

    def test_insert_nocreate_adds_to_an_existing_filter(self):
        self.r.cf().create("f", 100)
        self.assertEqual(self.r.cf().insert("f", ["a", "b"], nocreate=True), [1, 1])
        self.assertEqual(self.r.cf().insertnx("f", ["a", "c"], nocreate=True), [0, 1])

    def test_insert_takes_everything_after_items_as_items(self):
        c = self.raw()
        self.assertEqual(c.call("CF.INSERT", "f", "ITEMS", "NOCREATE", "CAPACITY"), [1, 1])
        self.assertEqual(c.call("CF.MEXISTS", "f", "NOCREATE", "CAPACITY"), [1, 1])

    def test_insert_refuses_bad_arguments_with_redisblooms_texts(self):
        c = self.raw()
        for command in ("CF.INSERT", "CF.INSERTNX"):
            name = command.lower()
            cases = [
                (["CAPACITY", "abc", "ITEMS", "a"], "Bad capacity"),
                (["CAPACITY", "1.5", "ITEMS", "a"], "Bad capacity"),
                (["CAPACITY", "0", "ITEMS", "a"], INSERT_CAPACITY_RANGE),
                (["CAPACITY", "3", "ITEMS", "a"], INSERT_CAPACITY_RANGE),
                (["WAT", "ITEMS", "a"], "Unknown argument received"),
                (["ERROR", "0.01", "ITEMS", "a"], "Unknown argument received"),
                (["BUCKETSIZE", "4", "ITEMS", "a"], "Unknown argument received"),
                # RedisBloom would take these by their first letter; Bloomgate refuses.
                (["CAPXYZ", "100", "ITEMS", "a"], "Unknown argument received"),
                (["NOCREATEX", "ITEMS", "a"], "Unknown argument received"),
                (["NOCREATE", "CAPACITY", "100", "ITEMS", "a"],
                 "ERR NOCREATE cannot be combined with CAPACITY or ERROR"),
                (["CAPACITY", "100", "CAPACITY", "200", "ITEMS", "a"],
                 "ERR option given more than once"),
                (["CAPACITY", "100"], WRONG_ARITY.format(name)),
                (["CAPACITY", "100", "ITEMS"], WRONG_ARITY.format(name)),
                (["ITEMS"], WRONG_ARITY.format(name)),
            ]
            for args, expected in cases:
                with self.subTest(command=command, args=args):
                    self.assertErrorText(c.call(command, "k", *args), expected)
        self.assertEqual(c.call("EXISTS", "k"), 0, "a refused CF.INSERT must create nothing")

    def test_insert_bounds_a_negative_capacity_with_the_range_text(self):
        # RedisBloom reads CAPACITY as a signed integer, then bounds it.
        c = self.raw()
        self.assertErrorText(c.call("CF.INSERT", "k", "CAPACITY", "-1", "ITEMS", "a"),
                             INSERT_CAPACITY_RANGE)
        self.assertEqual(c.call("EXISTS", "k"), 0)

    def test_insert_errors_reach_redis_py_without_an_err_code(self):
        with self.assertRaises(redis.ResponseError) as ctx:
            self.r.cf().insert("k", ["a"], capacity="abc")
        self.assertEqual(str(ctx.exception), "Bad capacity")


class DeleteAndCountTest(CuckooTestCase):

    def test_delete_removes_an_item_so_exists_is_false(self):
        self.r.cf().add("f", "only")
        self.assertEqual(self.r.cf().delete("f", "only"), 1)
        self.assertEqual(self.r.cf().exists("f", "only"), 0)
        self.assertEqual(self.r.cf().delete("f", "only"), 0, "nothing left to delete")
        info = self.r.cf().info("f")
        self.assertEqual((info.insertedNum, info.deletedNum), (0, 1))

    def test_deleting_unique_items_forgets_them_and_keeps_the_rest(self):
        self.r.cf().create("f", 4000)
        added = items("u", 1000)
        for i in range(0, len(added), 250):
            self.assertEqual(self.r.cf().insert("f", added[i:i + 250]), [1] * 250)
        gone, kept = added[:500], added[500:]
        pipe = self.r.pipeline(transaction=False)
        for item in gone:
            pipe.execute_command("CF.DEL", "f", item)
        self.assertEqual(pipe.execute(), [1] * len(gone), "every added item can be deleted")
        self.assertEqual(self.r.cf().mexists("f", *kept), [1] * len(kept),
                         "deleting other items must not lose these")
        still = [x for x, hit in zip(gone, self.r.cf().mexists("f", *gone)) if hit]
        # A deleted item tests present again only if another item shares its
        # fingerprint and bucket: ~2*2*(500/4096)/255 = 0.2% each, about 1 of
        # the 500 (each filter draws its own hash seed, so each run samples
        # anew: 6 was seen once). P(>= 11) for a mean of 1 is under 1e-8; a
        # delete that forgot nothing would leave all 500.
        self.assertLessEqual(len(still), 10, f"deleted items still present: {still}")
        info = self.r.cf().info("f")
        self.assertEqual((info.insertedNum, info.deletedNum), (500, 500))

    def test_delete_on_a_missing_key_replies_not_found(self):
        c = self.raw()
        self.assertErrorText(c.call("CF.DEL", "nokey", "a"), "Not found")
        self.assertEqual(c.call("EXISTS", "nokey"), 0)
        with self.assertRaises(redis.ResponseError) as ctx:
            self.r.cf().delete("nokey", "a")
        self.assertEqual(str(ctx.exception), "Not found")

    def test_count_counts_duplicates_and_deletes(self):
        for _ in range(3):
            self.r.cf().add("f", "dup")
        self.assertEqual(self.r.cf().count("f", "dup"), 3)
        self.assertEqual(self.r.cf().delete("f", "dup"), 1)
        self.assertEqual(self.r.cf().count("f", "dup"), 2)
        self.assertEqual(self.r.cf().exists("f", "dup"), 1, "two copies are left")
        self.r.cf().delete("f", "dup")
        self.r.cf().delete("f", "dup")
        self.assertEqual(self.r.cf().count("f", "dup"), 0)
        self.assertEqual(self.r.cf().exists("f", "dup"), 0)
        self.assertEqual(self.r.cf().count("f", "never"), 0)

    def test_count_follows_copies_of_one_item_across_sub_filters(self):
        # Two buckets of two slots hold four copies; more copies need a new
        # sub-filter, and once its buckets are full of copies too the next
        # copy is refused (README "Differences from RedisBloom": RedisBloom
        # grows again).
        c = self.raw()
        copies = 0
        while True:
            reply = c.call("CF.ADD", "f", "dup")
            if reply != 1:
                break
            copies += 1
            self.assertLessEqual(copies, 8)
        self.assertErrorText(reply, "Filter is full: copies of this item fill its buckets in the "
                                    "newest two sub-filters")
        self.assertGreaterEqual(copies, 4)
        self.assertEqual(self.r.cf().count("f", "dup"), copies)
        self.assertEqual(self.r.cf().info("f").filterNum, 2)
        self.assertEqual([self.r.cf().delete("f", "dup") for _ in range(copies)], [1] * copies)
        self.assertEqual(self.r.cf().count("f", "dup"), 0)
        self.assertEqual(self.r.cf().exists("f", "dup"), 0)
        self.assertEqual(self.r.cf().delete("f", "dup"), 0)

    def test_compact_on_a_missing_key_and_on_a_filter(self):
        c = self.raw()
        self.assertErrorText(c.call("CF.COMPACT", "nokey"), "Cuckoo filter was not found")
        self.assertEqual(c.call("EXISTS", "nokey"), 0)
        c.call("CF.ADD", "f", "a")
        self.assertEqual(c.call_raw("CF.COMPACT", "f"), b"+OK\r\n")
        self.assertEqual(c.call("CF.EXISTS", "f", "a"), 1)

    def test_info_on_a_missing_key_replies_not_found(self):
        self.assertErrorText(self.raw().call("CF.INFO", "nokey"), "ERR not found")


class FullAndExpansionTest(CuckooTestCase):

    def test_a_full_nonscaling_filter_refuses_add_and_insert_says_minus_1(self):
        c = self.raw()
        self.assertEqual(c.call("CF.RESERVE", "f", "8", "BUCKETSIZE", "1", "EXPANSION", "0"), "OK")
        added, refused = fill_until_full(self, c, "f")
        self.assertGreater(len(added), 0)
        self.assertLessEqual(len(added), 8, "8 slots hold at most 8 fingerprints")
        self.assertEqual(c.call("CF.EXISTS", "f", refused), 0, "a refused add changes nothing")
        self.assertErrorText(c.call("CF.ADD", "f", refused), "Filter is full")
        self.assertErrorText(c.call("CF.ADDNX", "f", refused), "Filter is full")
        self.assertEqual(c.call("CF.INSERT", "f", "ITEMS", refused), [-1])
        self.assertEqual(c.call("CF.INSERTNX", "f", "ITEMS", added[0], refused), [0, -1])
        info = self.r.cf().info("f")
        self.assertEqual((info.filterNum, info.insertedNum, info.expansionRate),
                         (1, len(added), 0), vars(info))
        with self.assertRaises(redis.ResponseError) as ctx:
            self.r.cf().add("f", refused)
        self.assertEqual(str(ctx.exception), "Filter is full")
        # Deleting makes room again.
        self.assertEqual(c.call("CF.DEL", "f", added[0]), 1)
        self.assertEqual(c.call("CF.INSERT", "f", "ITEMS", added[0]), [1])

    def test_a_full_nonscaling_filter_in_resp3(self):
        c = self.resp3()
        self.assertEqual(c.call("CF.RESERVE", "f", "8", "BUCKETSIZE", "1", "EXPANSION", "0"), "OK")
        added, refused = fill_until_full(self, c, "f")
        self.assertEqual(c.call_raw("CF.INSERT", "f", "ITEMS", refused), b"*1\r\n#f\r\n",
                         "CF.INSERT's no-room is false in RESP3")
        self.assertEqual(c.call_raw("CF.INSERTNX", "f", "ITEMS", added[0], refused),
                         b"*2\r\n:0\r\n:-1\r\n", "CF.INSERTNX stays integers in RESP3")
        self.assertErrorText(c.call("CF.ADD", "f", refused), "Filter is full")

    def test_a_filter_expands_when_full_and_never_loses_an_item(self):
        self.assertTrue(self.r.cf().create("f", 64))  # 32 buckets of 2 slots
        added = items("grow", 600)
        flags = []
        for i in range(0, len(added), 100):
            flags += self.r.cf().insert("f", added[i:i + 100])
        self.assertEqual(flags, [1] * len(added), "a scaling filter takes every item")
        info = self.r.cf().info("f")
        self.assertGreater(info.filterNum, 1, vars(info))
        # Expansion 1: every sub-filter has 64 slots, 600 items need >= 10.
        self.assertGreaterEqual(info.filterNum, 10, vars(info))
        self.assertEqual(info.bucketNum, 32, "Number of buckets is the first sub-filter's")
        self.assertEqual(info.insertedNum, 600)
        missing = [x for x, hit in zip(added, self.r.cf().mexists("f", *added)) if hit != 1]
        self.assertEqual(missing, [], "a cuckoo filter has no false negatives")

    def test_expansion_2_grows_in_fewer_larger_sub_filters(self):
        self.assertTrue(self.r.cf().create("one", 64))
        self.assertTrue(self.r.cf().create("two", 64, expansion=2))
        added = items("g2", 600)
        for key in ("one", "two"):
            for i in range(0, len(added), 100):
                self.r.cf().insert(key, added[i:i + 100])
        one, two = self.r.cf().info("one"), self.r.cf().info("two")
        self.assertLess(two.filterNum, one.filterNum, (vars(one), vars(two)))
        # 64 + 128 + 256 = 448 < 600 slots: at least four sub-filters.
        self.assertGreaterEqual(two.filterNum, 4, vars(two))
        self.assertLessEqual(two.filterNum, 6, vars(two))
        self.assertEqual(self.r.cf().mexists("two", *added), [1] * len(added))

    def test_maximum_expansions_reached(self):
        self.restore_cf_config()
        self.assertTrue(self.r.config_set("cf-max-expansions", "2"))
        c = self.raw()
        self.assertEqual(c.call("CF.RESERVE", "f", "4", "BUCKETSIZE", "1"), "OK")
        added = []
        for item in items("max", 200):
            if c.call("CF.EXISTS", "f", item):
                continue
            reply = c.call("CF.ADD", "f", item)
            if isinstance(reply, RespError):
                self.assertErrorText(reply, "Maximum expansions reached")
                self.assertEqual(c.call("CF.INSERT", "f", "ITEMS", item), [-1])
                break
            added.append(item)
        else:
            self.fail("a filter limited to 2 sub-filters of 4 slots took 200 items")
        self.assertLessEqual(len(added), 8)
        self.assertEqual(self.r.cf().info("f").filterNum, 2)
        self.assertEqual(self.r.cf().mexists("f", *added), [1] * len(added))

    def test_compact_after_deleting_everything_frees_the_extra_sub_filters(self):
        self.assertTrue(self.r.cf().create("f", 64))
        added = items("c", 300)
        self.r.cf().insert("f", added)
        self.assertGreater(self.r.cf().info("f").filterNum, 1)
        pipe = self.r.pipeline(transaction=False)
        for item in added:
            pipe.execute_command("CF.DEL", "f", item)
        self.assertEqual(pipe.execute(), [1] * len(added))
        self.assertEqual(self.r.execute_command("CF.COMPACT", "f"), b"OK")
        info = self.r.cf().info("f")
        self.assertEqual((info.filterNum, info.insertedNum, info.deletedNum), (1, 0, 0), vars(info))


class MemoryLimitTest(CuckooTestCase):

    def setUp(self):
        super().setUp()
        saved = self.r.config_get("max-filter-memory")

        def restore():
            c = self.server.client()
            try:
                c.config_set("max-filter-memory", saved["max-filter-memory"])
            finally:
                c.close()
        self.addCleanup(restore)

    def test_a_filter_that_would_pass_max_filter_memory_stops_growing(self):
        # The cap is read when the filter is created: 4096 slots fit in 8 KiB,
        # a second sub-filter of 4096 more does not.
        self.assertTrue(self.r.config_set("max-filter-memory", "8192"))
        c = self.raw()
        self.assertEqual(c.call("CF.RESERVE", "f", "4096"), "OK")
        reply = c.call("CF.INSERT", "f", "ITEMS", *items("m", 6000))
        self.assertIsInstance(reply, list, reply)
        self.assertLess(len(reply), 6000, "the insert stops at the first item that needs memory")
        self.assertMemoryRefusal(reply[-1], "ERR Insufficient memory",
                                 " bytes in all, max-filter-memory is 8192")
        self.assertEqual(reply[:-1], [1] * (len(reply) - 1), reply)
        refused = f"m:{len(reply) - 1}"
        self.assertMemoryRefusal(c.call("CF.ADD", "f", refused), "ERR Insufficient memory",
                                 " bytes in all, max-filter-memory is 8192")
        info = self.r.cf().info("f")
        self.assertEqual((info.filterNum, info.insertedNum), (1, len(reply) - 1), vars(info))
        self.assertEqual(self.r.cf().mexists("f", *items("m", len(reply) - 1)),
                         [1] * (len(reply) - 1))
        self.assertServesNewClients()

    def test_a_filter_over_max_filter_memory_is_not_created(self):
        self.assertTrue(self.r.config_set("max-filter-memory", "8192"))
        c = self.raw()
        self.assertMemoryRefusal(c.call("CF.RESERVE", "f", "100000"),
                                 "ERR Insufficient memory to create filter",
                                 " bytes, max-filter-memory is 8192")
        self.assertMemoryRefusal(c.call("CF.INSERT", "f", "CAPACITY", "100000", "ITEMS", "a"),
                                 "ERR Insufficient memory to create filter",
                                 " bytes, max-filter-memory is 8192")
        self.assertEqual(c.call("EXISTS", "f"), 0)


class InfoTest(CuckooTestCase):

    def test_info_replies_eight_fields_in_order_as_simple_strings(self):
        c = self.raw()
        c.call("CF.RESERVE", "f", "1000", "BUCKETSIZE", "4", "MAXITERATIONS", "30",
               "EXPANSION", "2")
        c.call("CF.INSERT", "f", "ITEMS", "a", "b", "c")
        c.call("CF.DEL", "f", "a")
        reply = c.call("CF.INFO", "f")
        self.assertEqual(len(reply), 16, reply)
        self.assertEqual(reply[0::2], INFO_FIELDS)
        self.assertTrue(all(isinstance(k, Simple) for k in reply[0::2]),
                        f"field names must be simple strings: {reply}")
        values = dict(zip(reply[0::2], reply[1::2]))
        self.assertTrue(all(isinstance(v, int) for v in values.values()), values)
        self.assertEqual(values["Number of buckets"], 256)
        self.assertEqual(values["Number of filters"], 1)
        self.assertEqual(values["Number of items inserted"], 2)
        self.assertEqual(values["Number of items deleted"], 1)
        self.assertEqual(values["Bucket size"], 4)
        self.assertEqual(values["Expansion rate"], 2)
        self.assertEqual(values["Max iterations"], 30)
        self.assertGreaterEqual(values["Size"], 256 * 4)

    def test_info_in_resp3_is_a_map_of_eight_with_simple_string_keys(self):
        c = self.resp3()
        c.call("CF.RESERVE", "f", "1000")
        c.send(encode_command("CF.INFO", "f"))
        reply, raw = c.read_reply(raw=True)
        self.assertTrue(raw.startswith(b"%8\r\n+Size\r\n:"), raw)
        self.assertIn(b"+Number of buckets\r\n:512\r\n", raw)
        self.assertTrue(raw.endswith(b"+Expansion rate\r\n:1\r\n+Max iterations\r\n:20\r\n"), raw)
        self.assertIsInstance(reply, Map)
        self.assertEqual(list(reply.keys()), INFO_FIELDS)
        self.assertTrue(all(isinstance(k, Simple) for k in reply), raw)

    def test_size_grows_with_the_filter(self):
        self.r.cf().create("small", 100)
        self.r.cf().create("large", 100_000)
        self.assertGreater(self.r.cf().info("large").size, 100_000 // 2,
                           self.r.cf().info("large").size)
        self.assertLess(self.r.cf().info("small").size, self.r.cf().info("large").size)


class Resp3Test(CuckooTestCase):

    def test_add_addnx_exists_and_del_reply_booleans(self):
        c = self.resp3()
        self.assertEqual(c.call_raw("CF.ADD", "f", "a"), b"#t\r\n")
        self.assertEqual(c.call_raw("CF.ADD", "f", "a"), b"#t\r\n")
        self.assertEqual(c.call_raw("CF.ADDNX", "f", "b"), b"#t\r\n")
        self.assertEqual(c.call_raw("CF.ADDNX", "f", "b"), b"#f\r\n")
        self.assertEqual(c.call_raw("CF.EXISTS", "f", "a"), b"#t\r\n")
        self.assertEqual(c.call_raw("CF.EXISTS", "f", "zz"), b"#f\r\n")
        self.assertEqual(c.call_raw("CF.EXISTS", "nokey", "a"), b"#f\r\n")
        self.assertEqual(c.call_raw("CF.MEXISTS", "f", "a", "zz"), b"*2\r\n#t\r\n#f\r\n")
        self.assertEqual(c.call_raw("CF.COUNT", "f", "a"), b":2\r\n")
        self.assertEqual(c.call_raw("CF.DEL", "f", "b"), b"#t\r\n")
        self.assertEqual(c.call_raw("CF.DEL", "f", "b"), b"#f\r\n")

    def test_insert_replies_booleans_but_insertnx_stays_integers(self):
        c = self.resp3()
        self.assertEqual(c.call_raw("CF.INSERT", "f", "ITEMS", "a", "a"), b"*2\r\n#t\r\n#t\r\n")
        self.assertEqual(c.call_raw("CF.INSERTNX", "f", "ITEMS", "a", "b"), b"*2\r\n:0\r\n:1\r\n")

    def test_errors_are_the_same_in_resp3(self):
        c = self.resp3()
        self.assertErrorText(c.call("CF.DEL", "nokey", "a"), "Not found")
        self.assertErrorText(c.call("CF.INFO", "nokey"), "ERR not found")
        self.assertErrorText(c.call("CF.INSERT", "nokey", "NOCREATE", "ITEMS", "a"),
                             "ERR not found")


class TypesAndCommandTableTest(CuckooTestCase):

    CF_COMMANDS = {
        # name: (arity, flag)
        "cf.reserve": (-3, "write"),
        "cf.add": (3, "write"),
        "cf.addnx": (3, "write"),
        "cf.insert": (-4, "write"),
        "cf.insertnx": (-4, "write"),
        "cf.exists": (3, "readonly"),
        "cf.mexists": (-3, "readonly"),
        "cf.count": (3, "readonly"),
        "cf.del": (3, "write"),
        "cf.compact": (2, "write"),
        "cf.info": (2, "readonly"),
    }

    def test_type_names_a_cuckoo_filter_mbbloomcf(self):
        self.r.cf().create("reserved", 100)
        self.r.cf().add("added", "x")
        self.r.cf().insert("inserted", ["x"])
        for key in ("reserved", "added", "inserted"):
            self.assertEqual(self.r.type(key), b"MBbloomCF")

    def test_cf_commands_on_a_bloom_or_counting_key_are_wrongtype(self):
        c = self.raw()
        c.call("BF.ADD", "bf", "x")
        c.call("CBF.ADD", "cbf", "x")
        for key in ("bf", "cbf"):
            for args in (["CF.RESERVE", key, "100"], ["CF.ADD", key, "x"],
                         ["CF.ADDNX", key, "x"], ["CF.INSERT", key, "ITEMS", "x"],
                         ["CF.INSERTNX", key, "ITEMS", "x"],
                         ["CF.INSERT", key, "NOCREATE", "ITEMS", "x"],
                         ["CF.EXISTS", key, "x"], ["CF.MEXISTS", key, "x", "y"],
                         ["CF.COUNT", key, "x"], ["CF.DEL", key, "x"],
                         ["CF.COMPACT", key], ["CF.INFO", key]):
                with self.subTest(args=args):
                    self.assertErrorText(c.call(*args), WRONGTYPE)
        self.assertEqual(c.call("BF.EXISTS", "bf", "x"), 1, "the Bloom filter is untouched")
        self.assertEqual(c.call("CBF.COUNT", "cbf", "x"), 1, "the counting filter is untouched")

    def test_bloom_and_counting_commands_on_a_cuckoo_key_are_wrongtype(self):
        c = self.raw()
        c.call("CF.ADD", "cf", "x")
        for args in (["BF.RESERVE", "cf", "0.01", "100"], ["BF.ADD", "cf", "x"],
                     ["BF.MADD", "cf", "x"], ["BF.INSERT", "cf", "ITEMS", "x"],
                     ["BF.EXISTS", "cf", "x"], ["BF.MEXISTS", "cf", "x"], ["BF.CARD", "cf"],
                     ["BF.INFO", "cf"],
                     ["CBF.RESERVE", "cf", "0.01", "100"], ["CBF.ADD", "cf", "x"],
                     ["CBF.MADD", "cf", "x"], ["CBF.INSERT", "cf", "ITEMS", "x"],
                     ["CBF.EXISTS", "cf", "x"], ["CBF.MEXISTS", "cf", "x"],
                     ["CBF.DEL", "cf", "x"], ["CBF.MDEL", "cf", "x"], ["CBF.COUNT", "cf", "x"],
                     ["CBF.CARD", "cf"], ["CBF.INFO", "cf"]):
            with self.subTest(args=args):
                self.assertErrorText(c.call(*args), WRONGTYPE)
        self.assertEqual(c.call("CF.COUNT", "cf", "x"), 1, "the cuckoo filter is untouched")
        self.assertEqual(c.call("TYPE", "cf"), "MBbloomCF")

    def test_command_info_describes_every_cf_command_with_key_position_1(self):
        c = self.raw()
        listed = {n.decode() for n in c.call("COMMAND", "LIST")}
        self.assertEqual(sorted(set(self.CF_COMMANDS) - listed), [],
                         "COMMAND LIST must name every CF command")
        for name, (arity, flag) in self.CF_COMMANDS.items():
            with self.subTest(command=name):
                reply = c.call("COMMAND", "INFO", name)
                self.assertEqual(len(reply), 1, reply)
                entry = reply[0]
                self.assertIsNotNone(entry, f"COMMAND INFO {name} is nil")
                flags = {f if isinstance(f, str) else f.decode() for f in entry[2]}
                self.assertEqual(entry[0], name.encode())
                self.assertEqual((entry[1], entry[3], entry[4], entry[5]), (arity, 1, 1, 1),
                                 entry)
                self.assertIn(flag, flags)

    def test_command_info_cf_add(self):
        entry = self.raw().call("COMMAND", "INFO", "CF.ADD")[0]
        flags = {f if isinstance(f, str) else f.decode() for f in entry[2]}
        self.assertEqual((entry[0], entry[1], entry[3], entry[4], entry[5]),
                         (b"cf.add", 3, 1, 1, 1))
        self.assertTrue({"write", "denyoom"} <= flags, flags)

    def test_command_getkeys_finds_the_key(self):
        c = self.raw()
        self.assertEqual(c.call("COMMAND", "GETKEYS", "CF.ADD", "k", "x"), [b"k"])
        self.assertEqual(c.call("COMMAND", "GETKEYS", "CF.RESERVE", "k", "100"), [b"k"])
        self.assertEqual(c.call("COMMAND", "GETKEYS", "CF.INSERT", "k", "CAPACITY", "100",
                                "ITEMS", "a", "b"), [b"k"])
        self.assertEqual(c.call("COMMAND", "GETKEYS", "CF.MEXISTS", "k", "a", "b"), [b"k"])
        self.assertEqual(c.call("COMMAND", "GETKEYS", "CF.INFO", "k"), [b"k"])


class ConfigTest(CuckooTestCase):

    def setUp(self):
        super().setUp()
        self.restore_cf_config()

    def test_config_get_reports_redisblooms_defaults(self):
        self.assertEqual(self.r.config_get("cf-*"), {
            "cf-bucket-size": "2", "cf-initial-size": "1024", "cf-max-iterations": "20",
            "cf-expansion-factor": "1", "cf-max-expansions": "32"})

    def test_config_set_changes_the_filters_cf_add_and_cf_insert_create(self):
        self.assertTrue(self.r.config_set("cf-initial-size", "4000"))
        self.assertTrue(self.r.config_set("cf-bucket-size", "4"))
        self.assertTrue(self.r.config_set("cf-max-iterations", "50"))
        self.assertTrue(self.r.config_set("cf-expansion-factor", "2"))
        self.assertEqual(self.r.config_get("cf-initial-size"), {"cf-initial-size": "4000"})
        self.r.cf().add("added", "x")
        self.r.cf().insert("inserted", ["x"])
        self.r.cf().insert("sized", ["x"], capacity=400)
        for key, buckets in (("added", 1024), ("inserted", 1024), ("sized", 128)):
            with self.subTest(key=key):
                info = self.r.cf().info(key)
                self.assertEqual((info.bucketNum, info.bucketSize, info.maxIteration,
                                  info.expansionRate), (buckets, 4, 50, 2), vars(info))

    def test_config_set_does_not_change_existing_filters(self):
        self.r.cf().add("before", "x")
        self.assertTrue(self.r.config_set("cf-bucket-size", "4"))
        self.r.cf().add("before", "y")
        self.assertEqual(self.r.cf().info("before").bucketSize, 2)

    def test_config_set_expansion_factor_0_makes_nonscaling_filters(self):
        self.assertTrue(self.r.config_set("cf-expansion-factor", "0"))
        self.r.cf().add("f", "x")
        self.assertEqual(self.r.cf().info("f").expansionRate, 0)

    def test_reserve_options_fall_back_to_the_config(self):
        self.assertTrue(self.r.config_set("cf-max-iterations", "99"))
        self.assertTrue(self.r.config_set("cf-bucket-size", "4"))
        self.r.cf().create("f", 1000)
        info = self.r.cf().info("f")
        self.assertEqual((info.maxIteration, info.bucketSize), (99, 4))

    def test_an_initial_size_below_two_buckets_refuses_auto_creation(self):
        self.assertTrue(self.r.config_set("cf-bucket-size", "4"))
        self.assertTrue(self.r.config_set("cf-initial-size", "6"))
        c = self.raw()
        self.assertErrorText(c.call("CF.ADD", "f", "x"), INSERT_CAPACITY_RANGE)
        self.assertEqual(c.call("EXISTS", "f"), 0)

    def test_config_set_refuses_out_of_range_values(self):
        for name, value in (("cf-bucket-size", "0"), ("cf-bucket-size", "256"),
                            ("cf-max-iterations", "0"), ("cf-max-iterations", "65536"),
                            ("cf-expansion-factor", "32769"), ("cf-initial-size", "1"),
                            ("cf-max-expansions", "0"), ("cf-bucket-size", "abc")):
            with self.subTest(name=name, value=value):
                with self.assertRaises(redis.ResponseError):
                    self.r.config_set(name, value)
        self.assertEqual(self.r.config_get("cf-bucket-size"), {"cf-bucket-size": "2"})


class ConcurrencyTest(CuckooTestCase):

    def test_concurrent_adds_while_the_filter_grows_lose_nothing(self):
        self.assertTrue(self.r.cf().create("f", 256))
        n_threads, per_thread = 4, 1500
        errors = []

        def worker(n):
            c = self.server.client()
            try:
                mine = items(f"t{n}", per_thread)
                for i in range(0, per_thread, 100):
                    flags = c.cf().insert("f", mine[i:i + 100])
                    if flags != [1] * len(flags):
                        errors.append(f"thread {n}: {flags}")
                # Delete every other one of this thread's items.
                pipe = c.pipeline(transaction=False)
                for item in mine[::2]:
                    pipe.execute_command("CF.DEL", "f", item)
                if pipe.execute() != [1] * len(mine[::2]):
                    errors.append(f"thread {n}: a delete of an added item failed")
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))
            finally:
                c.close()
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])
        kept = [x for n in range(n_threads) for x in items(f"t{n}", per_thread)[1::2]]
        missing = [x for x, h in zip(kept, self.r.cf().mexists("f", *kept)) if h != 1]
        self.assertEqual(missing[:10], [], f"{len(missing)} false negatives")
        info = self.r.cf().info("f")
        self.assertEqual(info.insertedNum, len(kept), vars(info))
        self.assertGreater(info.filterNum, 1, vars(info))


if __name__ == "__main__":
    unittest.main()
