"""CBF.* (counting Bloom filters, Bloomgate's own family) against the real
server: raw commands over RESP2 (redis-py execute_command) and RESP3 (a raw
socket).

The commands mirror BF.* where they overlap (options, defaults, reply shapes,
error texts) and add deletion and counts (docs/commands/counting-bloom.md):
only items that were added may be deleted, and a saturated counter is never
decremented, so no added item is ever lost.
"""

import random
import threading
import unittest

import redis

from harness import Map, RespError, ServerTestCase, Simple, encode_command

WRONG_ARITY = "ERR wrong number of arguments for '{}' command"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
BAD_COUNTER_BITS = "ERR COUNTERBITS must be 4 or 8"
INFO_FIELDS = ["Capacity", "Size", "Number of filters", "Number of items inserted",
               "Expansion rate", "Counter bits", "Saturated counters"]
CBF_COMMANDS = {
    # name: (arity, flag)
    "cbf.reserve": (-4, "write"),
    "cbf.add": (3, "write"),
    "cbf.madd": (-3, "write"),
    "cbf.insert": (-4, "write"),
    "cbf.exists": (3, "readonly"),
    "cbf.mexists": (-3, "readonly"),
    "cbf.del": (3, "write"),
    "cbf.mdel": (-3, "write"),
    "cbf.count": (3, "readonly"),
    "cbf.incr": (-3, "write"),
    "cbf.card": (2, "readonly"),
    "cbf.info": (-2, "readonly"),
}


def items(prefix, n, start=0):
    return [f"{prefix}:{i}" for i in range(start, start + n)]


class CountingTestCase(ServerTestCase):

    def cmd(self, *args):
        return self.r.execute_command(*args)

    def info(self, key):
        """CBF.INFO over RESP2 as {field name: value}."""
        reply = self.cmd("CBF.INFO", key)
        return {k.decode(): v for k, v in zip(reply[0::2], reply[1::2])}

    def resp3(self):
        c = self.raw()
        hello = c.call("HELLO", "3")
        self.assertIsInstance(hello, Map, hello)
        return c

    def absent_items(self, key, prefix, n):
        """n items the filter under `key` does not report (so deleting them
        is a real "not present")."""
        candidates = items(prefix, n * 2 + 20)
        flags = self.cmd("CBF.MEXISTS", key, *candidates)
        out = [x for x, hit in zip(candidates, flags) if not hit][:n]
        self.assertEqual(len(out), n)
        return out


class ReserveTest(CountingTestCase):

    def test_reserve_creates_an_empty_filter_that_info_describes(self):
        self.assertEqual(self.cmd("CBF.RESERVE", "f", "0.01", "1000"), b"OK")
        info = self.info("f")
        self.assertEqual(info["Capacity"], 1000)
        self.assertEqual(info["Number of filters"], 1)
        self.assertEqual(info["Number of items inserted"], 0)
        self.assertEqual(info["Expansion rate"], 2, "BF.RESERVE's default expansion")
        self.assertEqual(info["Counter bits"], 4, "4-bit counters by default")
        self.assertEqual(info["Saturated counters"], 0)
        # 4-bit counters at >= 9.6 cells per item for 1%.
        self.assertGreater(info["Size"], 1000 * 9 * 4 // 8, info)
        self.assertEqual(self.r.type("f"), b"BGcountBF")

    def test_reserve_options(self):
        cases = [
            (["EXPANSION", "4"], {"Expansion rate": 4, "Counter bits": 4}),
            (["NONSCALING"], {"Expansion rate": None}),
            (["EXPANSION", "0"], {"Expansion rate": None}),
            (["NONSCALING", "EXPANSION", "0"], {"Expansion rate": None}),
            (["COUNTERBITS", "8"], {"Counter bits": 8, "Expansion rate": 2}),
            (["COUNTERBITS", "4"], {"Counter bits": 4}),
            (["counterbits", "8", "nonscaling"], {"Counter bits": 8, "Expansion rate": None}),
            (["COUNTERBITS", "8", "EXPANSION", "3"], {"Counter bits": 8, "Expansion rate": 3}),
        ]
        for n, (options, expected) in enumerate(cases):
            with self.subTest(options=options):
                key = f"f{n}"
                self.assertEqual(self.cmd("CBF.RESERVE", key, "0.01", "100", *options), b"OK")
                info = self.info(key)
                self.assertEqual({k: info[k] for k in expected}, expected, info)

    def test_8_bit_counters_take_more_memory_than_4_bit_ones(self):
        self.cmd("CBF.RESERVE", "narrow", "0.01", "10000", "COUNTERBITS", "4")
        self.cmd("CBF.RESERVE", "wide", "0.01", "10000", "COUNTERBITS", "8")
        self.cmd("BF.RESERVE", "plain", "0.01", "10000")
        narrow, wide = self.info("narrow")["Size"], self.info("wide")["Size"]
        plain = self.r.bf().info("plain").size
        self.assertGreater(wide, narrow * 3 // 2, (narrow, wide))
        self.assertGreater(narrow, plain * 3, (plain, narrow))

    def test_reserve_on_an_existing_key_replies_item_exists(self):
        c = self.raw()
        self.assertEqual(c.call("CBF.RESERVE", "f", "0.01", "100"), "OK")
        self.assertErrorText(c.call("CBF.RESERVE", "f", "0.01", "100"), "ERR item exists")
        c.call("CBF.ADD", "auto", "x")
        self.assertErrorText(c.call("CBF.RESERVE", "auto", "0.01", "100"), "ERR item exists")

    def test_reserve_refuses_bad_arguments_with_bf_reserves_texts(self):
        c = self.raw()
        rate_range = "ERR error rate must be in the range (0.000000, 1.000000)"
        cases = [
            (["k", "abc", "100"], "ERR bad error rate"),
            (["k", "0", "100"], rate_range),
            (["k", "1", "100"], rate_range),
            (["k", "0.01", "abc"], "ERR bad capacity"),
            (["k", "0.01", "1.5"], "ERR bad capacity"),
            (["k", "0.01", "100", "EXPANSION"], "ERR no expansion"),
            (["k", "0.01", "100", "EXPANSION", "abc"], "ERR bad expansion"),
            (["k", "0.01", "100", "EXPANSION", "40000"],
             "ERR expansion must be in the range [0, 32768]"),
            (["k", "0.01", "100", "NONSCALING", "EXPANSION", "2"],
             "Nonscaling filters cannot expand"),
            (["k", "0.01", "100", "COUNTERBITS"], BAD_COUNTER_BITS),
            (["k", "0.01", "100", "COUNTERBITS", "16"], BAD_COUNTER_BITS),
            (["k", "0.01", "100", "COUNTERBITS", "0"], BAD_COUNTER_BITS),
            (["k", "0.01", "100", "COUNTERBITS", "x"], BAD_COUNTER_BITS),
            (["k", "0.01", "100", "COUNTERBITS", "04"], BAD_COUNTER_BITS),
            (["k", "0.01", "100", "COUNTERBITS", "4", "COUNTERBITS", "8"],
             "ERR option given more than once"),
            (["k", "0.01", "100", "BOGUS"], "ERR syntax error"),
            (["k", "0.01"], WRONG_ARITY.format("cbf.reserve")),
        ]
        for args, expected in cases:
            with self.subTest(args=args):
                self.assertErrorText(c.call("CBF.RESERVE", *args), expected)
        for args in (["0.01", "0"], ["0.01", "-1"]):
            with self.subTest(args=args):
                reply = c.call("CBF.RESERVE", "k", *args)
                self.assertIsInstance(reply, RespError, reply)
                self.assertTrue(reply.startswith("ERR capacity must be in the range [1, "), reply)
        self.assertEqual(c.call("EXISTS", "k"), 0, "a refused CBF.RESERVE must create nothing")

    def test_reserve_of_an_impossible_capacity_fails_cleanly(self):
        c = self.raw()
        self.assertErrorText(c.call("CBF.RESERVE", "k", "0.01", "18446744073709551615"),
                             "ERR Insufficient memory to create filter: needs more than 2^64 "
                             "bytes, more than any filter can have")
        self.assertEqual(c.call("EXISTS", "k"), 0)
        self.assertEqual(c.call("CBF.ADD", "other", "x"), 1, "the server keeps serving")
        self.assertServesNewClients()


class AddAndExistsTest(CountingTestCase):

    def test_add_replies_1_for_a_new_item_and_0_for_a_repeat_that_still_counts(self):
        self.assertEqual(self.cmd("CBF.ADD", "f", "a"), 1)
        self.assertEqual(self.cmd("CBF.ADD", "f", "a"), 0)
        self.assertEqual(self.cmd("CBF.COUNT", "f", "a"), 2)
        self.assertEqual(self.cmd("CBF.CARD", "f"), 2, "CARD counts occurrences")

    def test_add_auto_creates_a_filter_with_bf_defaults(self):
        self.cmd("CBF.ADD", "f", "x")
        info = self.info("f")
        self.assertEqual((info["Capacity"], info["Expansion rate"], info["Number of filters"],
                          info["Number of items inserted"], info["Counter bits"]),
                         (100, 2, 1, 1, 4), info)
        self.assertEqual(self.r.type("f"), b"BGcountBF")

    def test_madd_replies_one_flag_per_item_in_order(self):
        self.assertEqual(self.cmd("CBF.MADD", "f", "a", "b", "a"), [1, 1, 0])
        self.assertEqual(self.cmd("CBF.MADD", "f", "b", "c"), [0, 1])
        self.assertEqual(self.cmd("CBF.CARD", "f"), 5)
        self.assertEqual(self.cmd("CBF.COUNT", "f", "b"), 2)

    def test_exists_and_mexists_find_every_added_item(self):
        added = items("present", 500)
        self.cmd("CBF.MADD", "f", *added)
        self.assertEqual(self.cmd("CBF.MEXISTS", "f", *added), [1] * len(added))
        self.assertEqual(self.cmd("CBF.EXISTS", "f", added[0]), 1)

    def test_reads_on_a_missing_key(self):
        self.assertEqual(self.cmd("CBF.EXISTS", "nokey", "a"), 0)
        self.assertEqual(self.cmd("CBF.MEXISTS", "nokey", "a", "b"), [0, 0])
        self.assertEqual(self.cmd("CBF.COUNT", "nokey", "a"), 0)
        self.assertEqual(self.cmd("CBF.CARD", "nokey"), 0)
        self.assertEqual(self.r.exists("nokey"), 0, "a lookup must not create the key")

    def test_items_are_binary_safe(self):
        item = bytes(range(256))
        self.assertEqual(self.cmd("CBF.ADD", "f", item), 1)
        self.assertEqual(self.cmd("CBF.EXISTS", "f", item), 1)
        self.assertEqual(self.cmd("CBF.ADD", "f", b""), 1)
        self.assertEqual(self.cmd("CBF.DEL", "f", b""), 1)
        self.assertEqual(self.cmd("CBF.EXISTS", "f", item), 1)

    def test_commands_with_the_wrong_number_of_arguments_get_redis_arity_text(self):
        c = self.raw()
        cases = [
            (["CBF.ADD", "f"], "cbf.add"),
            (["CBF.ADD", "f", "a", "b"], "cbf.add"),
            (["CBF.MADD", "f"], "cbf.madd"),
            (["CBF.EXISTS", "f"], "cbf.exists"),
            (["CBF.EXISTS", "f", "a", "b"], "cbf.exists"),
            (["CBF.MEXISTS", "f"], "cbf.mexists"),
            (["CBF.DEL", "f"], "cbf.del"),
            (["CBF.DEL", "f", "a", "b"], "cbf.del"),
            (["CBF.MDEL", "f"], "cbf.mdel"),
            (["CBF.COUNT", "f"], "cbf.count"),
            (["CBF.COUNT", "f", "a", "b"], "cbf.count"),
            (["CBF.CARD"], "cbf.card"),
            (["CBF.CARD", "a", "b"], "cbf.card"),
            (["CBF.INFO"], "cbf.info"),
            (["CBF.INFO", "a", "b", "c"], "cbf.info"),
            (["CBF.INSERT", "f"], "cbf.insert"),
            (["CBF.INSERT", "f", "ITEMS"], "cbf.insert"),
            (["CBF.RESERVE", "f", "0.01"], "cbf.reserve"),
        ]
        for args, name in cases:
            with self.subTest(args=args):
                self.assertErrorText(c.call(*args), WRONG_ARITY.format(name))
        self.assertEqual(c.call("DBSIZE"), 0)


class InsertTest(CountingTestCase):

    def test_insert_with_every_creation_option(self):
        self.assertEqual(self.cmd("CBF.INSERT", "f", "CAPACITY", "500", "ERROR", "0.001",
                                  "EXPANSION", "4", "COUNTERBITS", "8", "ITEMS", "a", "b", "a"),
                         [1, 1, 0])
        info = self.info("f")
        self.assertEqual((info["Capacity"], info["Expansion rate"], info["Counter bits"],
                          info["Number of items inserted"]), (500, 4, 8, 3), info)

    def test_insert_nonscaling_makes_a_nil_expansion_and_expansion_0_is_refused(self):
        self.cmd("CBF.INSERT", "a", "CAPACITY", "10", "NONSCALING", "ITEMS", "x")
        self.assertIsNone(self.info("a")["Expansion rate"])
        self.assertEqual(self.info("a")["Capacity"], 10)
        # As BF.INSERT (RedisBloom refuses its EXPANSION 0).
        with self.assertRaisesRegex(redis.ResponseError, "^Bad expansion$"):
            self.cmd("CBF.INSERT", "b", "EXPANSION", "0", "ITEMS", "x")

    def test_insert_auto_creates_with_the_defaults(self):
        self.assertEqual(self.cmd("CBF.INSERT", "f", "ITEMS", "a"), [1])
        info = self.info("f")
        self.assertEqual((info["Capacity"], info["Expansion rate"], info["Counter bits"]),
                         (100, 2, 4))

    def test_insert_options_are_ignored_for_an_existing_filter(self):
        self.cmd("CBF.RESERVE", "f", "0.01", "100")
        self.assertEqual(self.cmd("CBF.INSERT", "f", "CAPACITY", "5000", "COUNTERBITS", "8",
                                  "ITEMS", "a"), [1])
        info = self.info("f")
        self.assertEqual((info["Capacity"], info["Counter bits"]), (100, 4))

    def test_insert_nocreate(self):
        c = self.raw()
        self.assertErrorText(c.call("CBF.INSERT", "f", "NOCREATE", "ITEMS", "a"), "ERR not found")
        self.assertEqual(c.call("EXISTS", "f"), 0)
        c.call("CBF.RESERVE", "f", "0.01", "100")
        self.assertEqual(c.call("CBF.INSERT", "f", "NOCREATE", "ITEMS", "a", "b", "a"), [1, 1, 0])
        self.assertEqual(c.call("CBF.INSERT", "f", "NOCREATE", "NONSCALING", "ITEMS", "c"), [1])

    def test_insert_takes_everything_after_items_as_items(self):
        self.assertEqual(self.cmd("CBF.INSERT", "f", "ITEMS", "NOCREATE", "COUNTERBITS"), [1, 1])
        self.assertEqual(self.cmd("CBF.MEXISTS", "f", "NOCREATE", "COUNTERBITS"), [1, 1])

    def test_insert_refuses_bad_arguments_with_bf_inserts_texts(self):
        c = self.raw()
        cases = [
            (["CAPACITY", "abc", "ITEMS", "a"], "Bad capacity"),
            (["CAPACITY", "0", "ITEMS", "a"], "Bad capacity"),
            (["ERROR", "abc", "ITEMS", "a"], "Bad error rate"),
            (["ERROR", "1", "ITEMS", "a"], "Bad error rate"),
            (["EXPANSION", "abc", "ITEMS", "a"], "Bad expansion"),
            (["EXPANSION", "-1", "ITEMS", "a"], "Bad expansion"),
            (["COUNTERBITS", "16", "ITEMS", "a"], BAD_COUNTER_BITS),
            (["COUNTERBITS", "ITEMS", "a"], BAD_COUNTER_BITS),
            (["WAT", "ITEMS", "a"], "Unknown argument received"),
            (["COUNTERBITSX", "4", "ITEMS", "a"], "Unknown argument received"),
            (["NONSCALING", "EXPANSION", "2", "ITEMS", "a"], "Nonscaling filters cannot expand"),
            (["NOCREATE", "CAPACITY", "10", "ITEMS", "a"],
             "ERR NOCREATE cannot be combined with CAPACITY or ERROR"),
            (["NOCREATE", "COUNTERBITS", "8", "ITEMS", "a"],
             "ERR NOCREATE cannot be combined with COUNTERBITS"),
            (["COUNTERBITS", "4", "COUNTERBITS", "4", "ITEMS", "a"],
             "ERR option given more than once"),
            (["CAPACITY", "10"], WRONG_ARITY.format("cbf.insert")),
            (["CAPACITY", "10", "ITEMS"], WRONG_ARITY.format("cbf.insert")),
        ]
        for args, expected in cases:
            with self.subTest(args=args):
                self.assertErrorText(c.call("CBF.INSERT", "k", *args), expected)
        self.assertEqual(c.call("EXISTS", "k"), 0, "a refused CBF.INSERT must create nothing")

    def test_insert_errors_reach_redis_py_as_response_errors(self):
        with self.assertRaises(redis.ResponseError) as ctx:
            self.cmd("CBF.INSERT", "k", "COUNTERBITS", "5", "ITEMS", "a")
        self.assertEqual(str(ctx.exception), "COUNTERBITS must be 4 or 8")


class DeleteAndCountTest(CountingTestCase):

    def test_del_replies_1_when_removed_and_0_when_not_present(self):
        self.cmd("CBF.ADD", "f", "a")
        absent = self.absent_items("f", "absent", 1)[0]
        self.assertEqual(self.cmd("CBF.DEL", "f", absent), 0)
        self.assertEqual(self.cmd("CBF.CARD", "f"), 1, "a delete of nothing changes nothing")
        self.assertEqual(self.cmd("CBF.DEL", "f", "a"), 1)
        self.assertEqual(self.cmd("CBF.EXISTS", "f", "a"), 0)
        self.assertEqual(self.cmd("CBF.DEL", "f", "a"), 0)
        self.assertEqual(self.cmd("CBF.CARD", "f"), 0)

    def test_del_and_mdel_on_a_missing_key_reply_not_found(self):
        c = self.raw()
        self.assertErrorText(c.call("CBF.DEL", "nokey", "a"), "ERR not found")
        self.assertErrorText(c.call("CBF.MDEL", "nokey", "a", "b"), "ERR not found")
        self.assertEqual(c.call("EXISTS", "nokey"), 0)

    def test_mdel_replies_one_flag_per_item(self):
        self.cmd("CBF.MADD", "f", "a", "b", "c")
        absent = self.absent_items("f", "absent", 1)[0]
        self.assertEqual(self.cmd("CBF.MDEL", "f", "a", absent, "b", "a"), [1, 0, 1, 0])
        self.assertEqual(self.cmd("CBF.MEXISTS", "f", "a", "b", "c"), [0, 0, 1])
        self.assertEqual(self.cmd("CBF.CARD", "f"), 1)

    def test_count_follows_adds_and_deletes(self):
        for _ in range(3):
            self.cmd("CBF.ADD", "f", "x")
        self.assertEqual(self.cmd("CBF.COUNT", "f", "x"), 3)
        self.assertEqual(self.cmd("CBF.DEL", "f", "x"), 1)
        self.assertEqual(self.cmd("CBF.COUNT", "f", "x"), 2)
        self.assertEqual(self.cmd("CBF.EXISTS", "f", "x"), 1, "two occurrences are left")
        self.assertEqual(self.cmd("CBF.MDEL", "f", "x", "x"), [1, 1])
        self.assertEqual(self.cmd("CBF.COUNT", "f", "x"), 0)
        self.assertEqual(self.cmd("CBF.EXISTS", "f", "x"), 0)
        self.assertEqual(self.cmd("CBF.COUNT", "f", "never"), 0)

    def test_deleting_every_added_item_empties_the_filter(self):
        self.cmd("CBF.RESERVE", "f", "0.01", "2000")
        added = items("all", 2000)
        for i in range(0, len(added), 500):
            self.cmd("CBF.MADD", "f", *added[i:i + 500])
        self.assertEqual(self.info("f")["Saturated counters"], 0)
        for i in range(0, len(added), 500):
            self.assertEqual(self.cmd("CBF.MDEL", "f", *added[i:i + 500]), [1] * 500)
        self.assertEqual(self.cmd("CBF.CARD", "f"), 0)
        self.assertEqual(sum(self.cmd("CBF.MEXISTS", "f", *added)), 0,
                         "with every count back to zero, nothing tests present")


class InfoTest(CountingTestCase):

    def test_info_replies_seven_fields_in_order_as_simple_strings(self):
        c = self.raw()
        c.call("CBF.RESERVE", "f", "0.01", "1000", "COUNTERBITS", "8")
        c.call("CBF.MADD", "f", "a", "b", "a")
        reply = c.call("CBF.INFO", "f")
        self.assertEqual(len(reply), 14, reply)
        self.assertEqual(reply[0::2], INFO_FIELDS)
        self.assertTrue(all(isinstance(k, Simple) for k in reply[0::2]),
                        f"field names must be simple strings: {reply}")
        values = dict(zip(reply[0::2], reply[1::2]))
        self.assertEqual(values["Capacity"], 1000)
        self.assertEqual(values["Number of filters"], 1)
        self.assertEqual(values["Number of items inserted"], 3)
        self.assertEqual(values["Expansion rate"], 2)
        self.assertEqual(values["Counter bits"], 8)
        self.assertEqual(values["Saturated counters"], 0)
        self.assertIsInstance(values["Size"], int)

    def test_info_single_field_forms_reply_a_one_element_array(self):
        c = self.raw()
        c.call("CBF.RESERVE", "f", "0.01", "1000", "EXPANSION", "3", "COUNTERBITS", "8")
        c.call("CBF.MADD", "f", "a", "b", "c")
        full = c.call("CBF.INFO", "f")
        values = dict(zip(full[0::2], full[1::2]))
        self.assertEqual(c.call_raw("CBF.INFO", "f", "CAPACITY"), b"*1\r\n:1000\r\n")
        self.assertEqual(c.call("CBF.INFO", "f", "SIZE"), [values["Size"]])
        self.assertEqual(c.call("CBF.INFO", "f", "FILTERS"), [1])
        self.assertEqual(c.call("CBF.INFO", "f", "ITEMS"), [3])
        self.assertEqual(c.call("CBF.INFO", "f", "EXPANSION"), [3])
        self.assertEqual(c.call("CBF.INFO", "f", "COUNTERBITS"), [8])
        self.assertEqual(c.call("CBF.INFO", "f", "SATURATED"), [0])
        self.assertEqual(c.call("CBF.INFO", "f", "counterbits"), [8], "selectors ignore case")

    def test_info_expansion_of_a_nonscaling_filter_is_nil(self):
        c = self.raw()
        c.call("CBF.RESERVE", "f", "0.01", "100", "NONSCALING")
        self.assertEqual(c.call_raw("CBF.INFO", "f", "EXPANSION"), b"*1\r\n$-1\r\n")
        self.assertIn(b"+Expansion rate\r\n$-1\r\n+Counter bits\r\n:4\r\n",
                      c.call_raw("CBF.INFO", "f"))

    def test_info_errors(self):
        c = self.raw()
        self.assertErrorText(c.call("CBF.INFO", "nokey"), "ERR not found")
        c.call("CBF.ADD", "f", "a")
        self.assertErrorText(c.call("CBF.INFO", "f", "BOGUS"), "Invalid information value")

    def test_info_in_resp3_is_a_map_with_a_null_expansion_when_nonscaling(self):
        c = self.resp3()
        c.call("CBF.RESERVE", "f", "0.01", "100", "NONSCALING")
        c.send(encode_command("CBF.INFO", "f"))
        reply, raw = c.read_reply(raw=True)
        self.assertTrue(raw.startswith(b"%7\r\n+Capacity\r\n:100\r\n+Size\r\n:"), raw)
        self.assertIn(b"+Expansion rate\r\n_\r\n", raw)
        self.assertIsInstance(reply, Map)
        self.assertEqual(list(reply.keys()), INFO_FIELDS)
        self.assertTrue(all(isinstance(k, Simple) for k in reply), raw)
        self.assertEqual(c.call_raw("CBF.INFO", "f", "COUNTERBITS"),
                         b"%1\r\n+Counter bits\r\n:4\r\n")
        self.assertEqual(c.call_raw("CBF.INFO", "f", "EXPANSION"),
                         b"%1\r\n+Expansion rate\r\n_\r\n")


class SaturationTest(CountingTestCase):

    def test_a_4_bit_counter_saturates_at_15_and_is_never_decremented(self):
        self.cmd("CBF.RESERVE", "f", "0.01", "1000", "COUNTERBITS", "4")
        pipe = self.r.pipeline(transaction=False)
        for _ in range(20):
            pipe.execute_command("CBF.ADD", "f", "hot")
        self.assertEqual(pipe.execute(), [1] + [0] * 19)
        self.assertEqual(self.cmd("CBF.COUNT", "f", "hot"), 15)
        saturated = self.info("f")["Saturated counters"]
        self.assertGreater(saturated, 0)
        self.assertEqual(self.cmd("CBF.INFO", "f", "SATURATED"), [saturated])
        for _ in range(20):
            pipe.execute_command("CBF.DEL", "f", "hot")
        self.assertEqual(pipe.execute(), [1] * 20, "the item stays present, so each delete hits")
        self.assertEqual(self.cmd("CBF.EXISTS", "f", "hot"), 1,
                         "saturated counters never decrement: the item is never lost")
        self.assertEqual(self.cmd("CBF.COUNT", "f", "hot"), 15)
        self.assertEqual(self.info("f")["Saturated counters"], saturated)

    def test_8_bit_counters_count_past_15_and_saturate_at_255(self):
        self.cmd("CBF.RESERVE", "f", "0.01", "1000", "COUNTERBITS", "8")
        pipe = self.r.pipeline(transaction=False)
        for _ in range(20):
            pipe.execute_command("CBF.ADD", "f", "warm")
        pipe.execute()
        self.assertEqual(self.cmd("CBF.COUNT", "f", "warm"), 20)
        self.assertEqual(self.info("f")["Saturated counters"], 0)
        for _ in range(20):
            pipe.execute_command("CBF.DEL", "f", "warm")
        self.assertEqual(pipe.execute(), [1] * 20)
        self.assertEqual(self.cmd("CBF.EXISTS", "f", "warm"), 0, "20 adds, 20 deletes: gone")
        for _ in range(300):
            pipe.execute_command("CBF.ADD", "f", "hot")
        pipe.execute()
        self.assertEqual(self.cmd("CBF.COUNT", "f", "hot"), 255)
        self.assertGreater(self.info("f")["Saturated counters"], 0)


class NoFalseNegativesTest(CountingTestCase):

    def test_interleaved_adds_and_deletes_of_added_items_lose_nothing(self):
        rng = random.Random(20240607)
        # A small first layer, so that the filter grows through several layers.
        self.cmd("CBF.RESERVE", "f", "0.01", "200")
        pool = items("mix", 1500)
        counts = {}
        batch = []
        pipe = self.r.pipeline(transaction=False)
        deletes_seen = []
        live = []  # items added more often than deleted, refreshed every 50 steps
        for step in range(6000):
            if step % 50 == 0:
                live = [x for x, n in counts.items() if n > 0]
            if live and rng.random() < 0.4:
                item = rng.choice(live)
                if counts[item] == 0:
                    continue  # deleted since `live` was computed
                counts[item] -= 1
                pipe.execute_command("CBF.DEL", "f", item)
                batch.append(("del", item))
            else:
                item = rng.choice(pool)
                counts[item] = counts.get(item, 0) + 1
                pipe.execute_command("CBF.ADD", "f", item)
                batch.append(("add", item))
            if len(batch) == 1000:
                self.check_batch(pipe.execute(), batch, deletes_seen)
                batch = []
        self.check_batch(pipe.execute(), batch, deletes_seen)
        self.assertGreater(len(deletes_seen), 1000, "the mix must delete a lot")
        present = [x for x, n in counts.items() if n > 0]
        self.assertGreater(len(present), 300)
        flags = self.cmd("CBF.MEXISTS", "f", *present)
        missing = [x for x, hit in zip(present, flags) if hit != 1]
        self.assertEqual(missing, [], "an item added more often than deleted must be present")
        for item in present[:200]:
            self.assertGreaterEqual(self.cmd("CBF.COUNT", "f", item), counts[item], item)
        self.assertEqual(self.cmd("CBF.CARD", "f"), sum(counts.values()))
        self.assertGreater(self.info("f")["Number of filters"], 1)

    def check_batch(self, replies, ops, deletes_seen):
        self.assertEqual(len(replies), len(ops))
        for reply, (op, item) in zip(replies, ops):
            self.assertNotIsInstance(reply, Exception, f"{op} {item}")
            if op == "del":
                deletes_seen.append(item)
                self.assertEqual(reply, 1, f"CBF.DEL of {item}, which was added, replied 0")
            else:
                self.assertIn(reply, (0, 1))


class FalsePositiveRateTest(CountingTestCase):

    def test_measured_false_positive_rate_at_1_percent(self):
        rng = random.Random(20240608)
        n_items, n_probes, bound = 10_000, 50_000, 0.01 * 1.5
        self.cmd("CBF.RESERVE", "fp", "0.01", str(n_items))
        present = [f"in:{rng.getrandbits(64):016x}" for _ in range(n_items)]
        absent = [f"out:{rng.getrandbits(64):016x}" for _ in range(n_probes)]
        pipe = self.r.pipeline(transaction=False)
        for i in range(0, n_items, 1000):
            pipe.execute_command("CBF.MADD", "fp", *present[i:i + 1000])
        pipe.execute()
        for i in range(0, n_items, 1000):
            pipe.execute_command("CBF.MEXISTS", "fp", *present[i:i + 1000])
        self.assertEqual(sum(h for batch in pipe.execute() for h in batch), n_items,
                         "no false negatives")
        for i in range(0, n_probes, 1000):
            pipe.execute_command("CBF.MEXISTS", "fp", *absent[i:i + 1000])
        rate = sum(h for batch in pipe.execute() for h in batch) / n_probes
        info = self.info("fp")
        self.assertEqual(info["Number of filters"], 1, "10k items fit the first layer")
        self.assertLessEqual(rate, bound,
                             f"measured FP rate {rate:.4%} over {n_probes} absent probes into a "
                             f"full 0.01 counting filter of {n_items} items exceeds the bound "
                             f"{bound:.2%}")


class NonScalingFullTest(CountingTestCase):

    def test_madd_on_a_full_nonscaling_filter_is_truncated_with_an_error_element(self):
        c = self.raw()
        self.assertEqual(c.call("CBF.RESERVE", "f", "0.01", "10", "NONSCALING"), "OK")
        reply = c.call("CBF.MADD", "f", *items("i", 30))
        self.assertIsInstance(reply, list, reply)
        # Every add that succeeded (new or not) counts toward the capacity:
        # the 10 it holds, then the first new item is refused and the rest
        # of the batch is not run. An item the full filter already reports
        # (0, a false positive about 1 time in 100) is counted again, not
        # refused, so it may stretch the batch past 10.
        accepted = len(reply) - 1
        self.assertGreaterEqual(accepted, 10, reply)
        self.assertErrorText(reply[-1], "ERR non scaling filter is full")
        self.assertTrue(all(f in (0, 1) for f in reply[:-1]), reply)
        self.assertTrue(all(f == 0 for f in reply[10:-1]), reply)
        self.assertEqual(c.call("CBF.CARD", "f"), accepted)

    def test_add_on_a_full_nonscaling_filter_and_deleting_to_make_room(self):
        c = self.raw()
        self.assertEqual(c.call("CBF.RESERVE", "f", "0.01", "5", "NONSCALING"), "OK")
        added = items("i", 5)
        self.assertEqual(c.call("CBF.MADD", "f", *added), [1] * 5)
        probes = [x for x in items("new", 50) if c.call("CBF.EXISTS", "f", x) == 0]
        self.assertGreaterEqual(len(probes), 3)
        self.assertErrorText(c.call("CBF.ADD", "f", probes[0]), "ERR non scaling filter is full")
        reply = c.call("CBF.INSERT", "f", "ITEMS", probes[0])
        self.assertEqual(len(reply), 1, reply)
        self.assertErrorText(reply[0], "ERR non scaling filter is full")
        self.assertEqual(c.call("CBF.MDEL", "f", added[0], added[1]), [1, 1])
        self.assertEqual(c.call("CBF.ADD", "f", probes[0]), 1, "deleting made room")
        # redis-py returns the error element inside the list rather than raising.
        result = self.r.execute_command("CBF.MADD", "f", probes[1], probes[1], probes[2])
        self.assertEqual(result[:2], [1, 0])
        self.assertIsInstance(result[2], redis.ResponseError)

    def test_full_nonscaling_madd_is_truncated_in_resp3_too(self):
        c = self.resp3()
        c.call("CBF.RESERVE", "f", "0.01", "3", "NONSCALING")
        reply = c.call("CBF.MADD", "f", *items("i", 10))
        self.assertEqual(len(reply), 4, reply)
        self.assertErrorText(reply[-1], "ERR non scaling filter is full")
        self.assertTrue(all(isinstance(x, bool) for x in reply[:-1]), reply)


class MemoryLimitTest(CountingTestCase):

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
        # The cap is read when the filter is created: one layer of 500 items
        # fits in 8 KiB, a second twice that size does not.
        self.assertTrue(self.r.config_set("max-filter-memory", "8192"))
        c = self.raw()
        self.assertEqual(c.call("CBF.RESERVE", "f", "0.01", "500"), "OK")
        reply = c.call("CBF.MADD", "f", *items("m", 2000))
        self.assertEqual(len(reply), 501, "500 adds fit the first layer, then the error")
        # 12,040 bytes: layer 0 and the first list live inside the filter object.
        growth = ("ERR problem inserting into filter: growing needs 12040 bytes in all, "
                  "max-filter-memory is 8192")
        self.assertErrorText(reply[-1], growth)
        # An item the full layer does not report (at 1% one in a hundred is a
        # false positive, which would not need to grow).
        absent = next(f"m:{i}" for i in range(1999, 3000)
                      if self.cmd("CBF.EXISTS", "f", f"m:{i}") == 0)
        self.assertErrorText(c.call("CBF.ADD", "f", absent), growth)
        info = self.info("f")
        self.assertEqual((info["Number of filters"], info["Number of items inserted"]), (1, 500))
        self.assertEqual(self.cmd("CBF.MEXISTS", "f", *items("m", 500)), [1] * 500)
        self.assertEqual(self.cmd("CBF.DEL", "f", "m:0"), 1, "deletes still work")
        self.assertServesNewClients()

    def test_a_filter_over_max_filter_memory_is_not_created(self):
        self.assertTrue(self.r.config_set("max-filter-memory", "8192"))
        c = self.raw()
        self.assertMemoryRefusal(c.call("CBF.RESERVE", "f", "0.01", "100000"),
                                 "ERR Insufficient memory to create filter",
                                 " bytes, max-filter-memory is 8192")
        self.assertMemoryRefusal(c.call("CBF.INSERT", "f", "CAPACITY", "100000", "ITEMS", "a"),
                                 "ERR Insufficient memory to create filter",
                                 " bytes, max-filter-memory is 8192")
        self.assertEqual(c.call("EXISTS", "f"), 0)


class ConcurrencyTest(CountingTestCase):

    def test_concurrent_adders_and_deleters_keep_every_still_added_item(self):
        # Auto-created at capacity 100, so the filter also grows while the
        # threads race. Each thread adds its own items (some twice), then
        # deletes a part of them, interleaving with the others.
        n_threads, per_thread = 6, 1200
        errors = []
        kept_by_thread = [None] * n_threads

        def worker(n):
            rng = random.Random(n)
            c = self.server.client()
            try:
                mine = items(f"t{n}", per_thread)
                twice = set(mine[::5])
                for i in range(0, per_thread, 100):
                    chunk = mine[i:i + 100]
                    c.execute_command("CBF.MADD", "f", *(chunk + [x for x in chunk if x in twice]))
                gone = set(rng.sample(mine, per_thread // 2))
                pipe = c.pipeline(transaction=False)
                order = sorted(gone)
                rng.shuffle(order)
                for item in order:
                    pipe.execute_command("CBF.DEL", "f", item)
                    if item in twice:
                        pipe.execute_command("CBF.DEL", "f", item)
                replies = pipe.execute()
                if replies != [1] * len(replies):
                    errors.append(f"thread {n}: deletes of added items replied {replies.count(0)}"
                                  f" zeros")
                kept_by_thread[n] = [(x, 2 if x in twice else 1) for x in mine if x not in gone]
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
        kept = [pair for per in kept_by_thread for pair in per]
        names = [x for x, _ in kept]
        flags = self.cmd("CBF.MEXISTS", "f", *names)
        missing = [x for x, hit in zip(names, flags) if hit != 1]
        self.assertEqual(missing[:10], [], f"{len(missing)} still-added items test absent after "
                                           f"concurrent adds and deletes")
        self.assertEqual(self.cmd("CBF.CARD", "f"), sum(n for _, n in kept),
                         "every add and delete was counted exactly once")
        self.assertGreater(self.info("f")["Number of filters"], 3)


class TypesAndCommandTableTest(CountingTestCase):

    def test_type_names_a_counting_filter_bgcountbf(self):
        self.cmd("CBF.RESERVE", "reserved", "0.01", "100")
        self.cmd("CBF.ADD", "added", "x")
        self.cmd("CBF.INSERT", "inserted", "ITEMS", "x")
        for key in ("reserved", "added", "inserted"):
            self.assertEqual(self.r.type(key), b"BGcountBF")

    def test_cbf_commands_on_a_bloom_or_cuckoo_key_are_wrongtype(self):
        c = self.raw()
        c.call("BF.ADD", "bf", "x")
        c.call("CF.ADD", "cf", "x")
        for key in ("bf", "cf"):
            for args in (["CBF.RESERVE", key, "0.01", "100"], ["CBF.ADD", key, "x"],
                         ["CBF.MADD", key, "x"], ["CBF.INSERT", key, "ITEMS", "x"],
                         ["CBF.INSERT", key, "NOCREATE", "ITEMS", "x"],
                         ["CBF.EXISTS", key, "x"], ["CBF.MEXISTS", key, "x", "y"],
                         ["CBF.DEL", key, "x"], ["CBF.MDEL", key, "x"],
                         ["CBF.COUNT", key, "x"], ["CBF.CARD", key], ["CBF.INFO", key],
                         ["CBF.INFO", key, "CAPACITY"]):
                with self.subTest(args=args):
                    self.assertErrorText(c.call(*args), WRONGTYPE)
        self.assertEqual(c.call("BF.EXISTS", "bf", "x"), 1)
        self.assertEqual(c.call("CF.EXISTS", "cf", "x"), 1)

    def test_bloom_and_cuckoo_commands_on_a_counting_key_are_wrongtype(self):
        c = self.raw()
        c.call("CBF.ADD", "cbf", "x")
        for args in (["BF.RESERVE", "cbf", "0.01", "100"], ["BF.ADD", "cbf", "x"],
                     ["BF.MADD", "cbf", "x"], ["BF.INSERT", "cbf", "ITEMS", "x"],
                     ["BF.EXISTS", "cbf", "x"], ["BF.MEXISTS", "cbf", "x"],
                     ["BF.CARD", "cbf"], ["BF.INFO", "cbf"],
                     ["CF.RESERVE", "cbf", "100"], ["CF.ADD", "cbf", "x"],
                     ["CF.EXISTS", "cbf", "x"], ["CF.DEL", "cbf", "x"], ["CF.INFO", "cbf"]):
            with self.subTest(args=args):
                self.assertErrorText(c.call(*args), WRONGTYPE)
        self.assertEqual(c.call("CBF.COUNT", "cbf", "x"), 1)
        self.assertEqual(c.call("TYPE", "cbf"), "BGcountBF")

    def test_command_info_describes_every_cbf_command_with_key_position_1(self):
        c = self.raw()
        listed = {n.decode() for n in c.call("COMMAND", "LIST")}
        self.assertEqual(sorted(set(CBF_COMMANDS) - listed), [],
                         "COMMAND LIST must name every CBF command")
        for name, (arity, flag) in CBF_COMMANDS.items():
            with self.subTest(command=name):
                reply = c.call("COMMAND", "INFO", name.upper())
                self.assertEqual(len(reply), 1, reply)
                entry = reply[0]
                self.assertIsNotNone(entry, f"COMMAND INFO {name} is nil")
                flags = {f if isinstance(f, str) else f.decode() for f in entry[2]}
                self.assertEqual(entry[0], name.encode())
                self.assertEqual((entry[1], entry[3], entry[4], entry[5]), (arity, 1, 1, 1),
                                 entry)
                self.assertIn(flag, flags)

    def test_command_getkeys_finds_the_key(self):
        c = self.raw()
        self.assertEqual(c.call("COMMAND", "GETKEYS", "CBF.ADD", "k", "x"), [b"k"])
        self.assertEqual(c.call("COMMAND", "GETKEYS", "CBF.MDEL", "k", "a", "b"), [b"k"])
        self.assertEqual(c.call("COMMAND", "GETKEYS", "CBF.INSERT", "k", "COUNTERBITS", "8",
                                "ITEMS", "a"), [b"k"])

    def test_config_sets_the_defaults_of_auto_created_counting_filters(self):
        saved = self.r.config_get("bf-initial-size")
        saved.update(self.r.config_get("cbf-counter-bits"))
        self.assertEqual(saved, {"bf-initial-size": "100", "cbf-counter-bits": "4"})

        def restore():
            c = self.server.client()
            try:
                for name, value in saved.items():
                    c.config_set(name, value)
            finally:
                c.close()
        self.addCleanup(restore)
        self.assertTrue(self.r.config_set("cbf-counter-bits", "8"))
        self.assertTrue(self.r.config_set("bf-initial-size", "500"))
        self.cmd("CBF.ADD", "f", "x")
        self.cmd("CBF.INSERT", "g", "COUNTERBITS", "4", "ITEMS", "x")
        info = self.info("f")
        self.assertEqual((info["Capacity"], info["Counter bits"]), (500, 8), info)
        self.assertEqual(self.info("g")["Counter bits"], 4, "COUNTERBITS beats the config")
        with self.assertRaises(redis.ResponseError):
            self.r.config_set("cbf-counter-bits", "16")


if __name__ == "__main__":
    unittest.main()
