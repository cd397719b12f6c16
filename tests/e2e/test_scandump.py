"""SCANDUMP / LOADCHUNK for BF.*, CF.* and CBF.* against the real server, and
the RENAME swap recipe for replacing a live filter.

The iterator protocol is RedisBloom's: SCANDUMP key 0 -> [1, header], then
SCANDUMP key it -> [next, chunk] until [0, ""]; a copy is restored by
replaying LOADCHUNK key it chunk for every returned pair in order. Our
chunks carry a version and a checksum, so a damaged chunk or one of another
family is refused, and the filter being loaded stays invisible until its last
chunk has arrived.
"""

import itertools
import threading
import time
import unittest

import redis

from harness import RespError, ServerTestCase, Simple, wait_until

MAX_CHUNKS = 64  # a bound on every dump loop: these filters need at most a few


def items(prefix, n, start=0):
    return [f"{prefix}:{i}" for i in range(start, start + n)]


class Family:
    """How to make, fill, probe and describe one filter family."""

    def __init__(self, prefix, reserve, add, mexists, type_name):
        self.prefix = prefix
        self.reserve = reserve      # argv after "<prefix>.RESERVE key"
        self.add = add              # argv prefix adding many items to a key
        self.mexists = mexists
        self.type_name = type_name

    def cmd(self, name):
        return f"{self.prefix}.{name}"

    def __repr__(self):
        return self.prefix


BF = Family("BF", ["0.01", "1000"], lambda key: ["BF.MADD", key], "BF.MEXISTS", b"MBbloom--")
CF = Family("CF", ["1000"], lambda key: ["CF.INSERT", key, "ITEMS"], "CF.MEXISTS", b"MBbloomCF")
CBF = Family("CBF", ["0.01", "1000"], lambda key: ["CBF.MADD", key], "CBF.MEXISTS",
             b"BGcountBF")
FAMILIES = (BF, CF, CBF)


class ScanDumpTestCase(ServerTestCase):

    def info(self, family, key):
        """<family>.INFO as it is on the wire (redis-py turns BF.INFO and
        CF.INFO into objects without equality once r.bf() / r.cf() is used)."""
        if not hasattr(self, "_info_conn"):
            self._info_conn = self.raw()
        reply = self._info_conn.call(family.cmd("INFO"), key)
        self.assertIsInstance(reply, list, reply)
        return reply

    def dump(self, family, key, conn=None):
        """Every (iterator, chunk) pair of SCANDUMP, in order, without the end marker."""
        call = conn.call if conn is not None else self.r.execute_command
        chunks, it = [], 0
        for _ in range(MAX_CHUNKS):
            reply = call(family.cmd("SCANDUMP"), key, it)
            self.assertNotIsInstance(reply, RespError)
            it, data = reply
            if it == 0:
                # RedisBloom ends a cuckoo dump with a null, the others with "".
                self.assertEqual(data, None if family.prefix == "CF" else b"",
                                 "the end marker carries no data")
                return chunks
            chunks.append((it, data))
        self.fail(f"{family.cmd('SCANDUMP')} {key} did not end within {MAX_CHUNKS} chunks")

    def load(self, family, key, chunks):
        for it, data in chunks:
            self.assertEqual(self.r.execute_command(family.cmd("LOADCHUNK"), key, it, data),
                             b"OK")

    def make(self, family, key, n, reserve=None):
        self.r.execute_command(family.cmd("RESERVE"), key, *(reserve or family.reserve))
        members = items(key, n)
        for i in range(0, n, 250):
            self.r.execute_command(*family.add(key), *members[i:i + 250])
        return members

    def assertSameFilter(self, family, original, copy, members):
        """The copy answers exactly like the original: INFO, TYPE, and the
        membership of 1000 probes (members first, then never-added items)."""
        self.assertEqual(self.info(family, copy), self.info(family, original))
        self.assertEqual(self.r.type(copy), family.type_name)
        probes = (members[:500] + items("probe", 1000))[:1000]
        self.assertEqual(self.r.execute_command(family.mexists, copy, *probes),
                         self.r.execute_command(family.mexists, original, *probes))
        hits = self.r.execute_command(family.mexists, copy, *members)
        self.assertEqual(hits.count(0), 0, "every member of the original is in the copy")

    def assertAbsent(self, key, why):
        self.assertEqual(self.r.exists(key), 0, why)
        self.assertEqual(self.r.type(key), b"none", why)


class RoundTripTest(ScanDumpTestCase):

    def test_bloom_filter_round_trips_through_redis_py(self):
        members = self.make(BF, "src", 500)
        chunks, it = [], 0
        for _ in range(MAX_CHUNKS):
            it, data = self.r.bf().scandump("src", it)
            if it == 0:
                break
            chunks.append((it, data))
        self.assertEqual(chunks[0][0], 1, "the header comes with iterator 1")
        for it, data in chunks:
            self.assertTrue(self.r.bf().loadchunk("copy", it, data))
        self.assertSameFilter(BF, "src", "copy", members)
        self.assertEqual(self.r.execute_command("BF.ADD", "copy", "new"), 1,
                         "the copy takes new items")

    def test_multi_layer_bloom_filter_round_trips(self):
        members = self.make(BF, "src", 1500, reserve=["0.01", "100", "EXPANSION", "2"])
        info = self.r.bf().info("src")
        self.assertGreaterEqual(info.filterNum, 4, vars(info))
        self.load(BF, "copy", self.dump(BF, "src"))
        self.assertSameFilter(BF, "src", "copy", members)
        # Both grow the same way from here.
        more = items("more", 3000)
        self.r.execute_command("BF.MADD", "src", *more)
        self.r.execute_command("BF.MADD", "copy", *more)
        self.assertSameFilter(BF, "src", "copy", members + more)

    def test_cuckoo_filter_round_trips_through_redis_py_with_counts_and_deletes(self):
        members = self.make(CF, "src", 1500)  # past 1000: a second sub-filter
        for item in members[:200]:
            self.r.cf().delete("src", item)
        for _ in range(3):
            self.r.cf().add("src", "dup")
        self.assertGreater(self.r.cf().info("src").filterNum, 1)
        chunks, it = [], 0
        for _ in range(MAX_CHUNKS):
            it, data = self.r.cf().scandump("src", it)
            if it == 0:
                break
            chunks.append((it, data))
        for it, data in chunks:
            self.assertTrue(self.r.cf().loadchunk("copy", it, data))
        self.assertSameFilter(CF, "src", "copy", members[200:] + ["dup"])
        probes = members[:300] + ["dup"] + items("probe", 200)
        counts = [self.r.cf().count("src", x) for x in probes]
        self.assertEqual([self.r.cf().count("copy", x) for x in probes], counts)
        self.assertEqual(self.r.cf().count("copy", "dup"), 3)
        self.assertEqual(self.r.cf().delete("copy", "dup"), 1)
        self.assertEqual(self.r.cf().count("copy", "dup"), 2)

    def test_empty_cuckoo_filter_round_trips_and_then_takes_items(self):
        self.r.cf().create("src", 1000)
        chunks = self.dump(CF, "src")
        self.assertGreaterEqual(len(chunks), 1)
        self.load(CF, "copy", chunks)
        self.assertEqual(self.info(CF, "copy"), self.info(CF, "src"))
        self.assertEqual(self.r.cf().info("copy").insertedNum, 0)
        self.assertEqual(self.r.cf().add("copy", "x"), 1)
        self.assertEqual(self.r.cf().exists("copy", "x"), 1)

    def test_counting_bloom_filter_round_trips_with_exact_counts(self):
        self.r.execute_command("CBF.RESERVE", "src", "0.01", "200", "COUNTERBITS", "8")
        members = items("m", 600)  # past 200: more than one layer
        for times in (1, 2, 3):
            self.r.execute_command("CBF.MADD", "src", *members[:200 * times])
        self.r.execute_command("CBF.MDEL", "src", *members[:50])
        self.assertGreater(self.cbf_info("src")["Number of filters"], 1)
        self.load(CBF, "copy", self.dump(CBF, "src"))
        self.assertSameFilter(CBF, "src", "copy", members[50:])
        probes = members[::3] + items("probe", 100)
        self.assertEqual([self.r.execute_command("CBF.COUNT", "copy", x) for x in probes],
                         [self.r.execute_command("CBF.COUNT", "src", x) for x in probes])
        self.assertEqual(self.r.execute_command("CBF.CARD", "copy"),
                         self.r.execute_command("CBF.CARD", "src"))
        self.assertEqual(self.r.execute_command("CBF.DEL", "copy", members[599]), 1)

    def cbf_info(self, key):
        reply = self.r.execute_command("CBF.INFO", key)
        return {k.decode(): v for k, v in zip(reply[0::2], reply[1::2])}

    def test_each_family_round_trips_over_raw_resp(self):
        c = self.raw()
        for family in FAMILIES:
            with self.subTest(family=family):
                src, copy = f"src-{family.prefix}", f"copy-{family.prefix}"
                members = self.make(family, src, 300)
                first = c.call(family.cmd("SCANDUMP"), src, 0)
                self.assertIsInstance(first, list, first)
                self.assertEqual(first[0], 1)
                self.assertIsInstance(first[1], bytes)
                chunks = self.dump(family, src, conn=c)
                self.assertEqual(chunks[0], (1, first[1]), "SCANDUMP is repeatable")
                for it, data in chunks:
                    reply = c.call(family.cmd("LOADCHUNK"), copy, it, data)
                    self.assertEqual(reply, "OK")
                    self.assertIsInstance(reply, Simple)
                self.assertSameFilter(family, src, copy, members)

    def test_a_large_bloom_filter_needs_several_chunks_and_round_trips(self):
        # 0.0001 at 8M items is ~19 MB of bits: more than one 16 MiB chunk.
        self.r.execute_command("BF.RESERVE", "big", "0.0001", "8000000")
        members = items("big", 1000)
        self.r.execute_command("BF.MADD", "big", *members)
        chunks = self.dump(BF, "big")
        self.assertGreaterEqual(len(chunks), 3, "a header and at least two payload chunks")
        self.assertTrue(all(len(data) <= 16 << 20 for _, data in chunks))
        for n, (it, data) in enumerate(chunks):
            self.assertEqual(self.r.execute_command("BF.LOADCHUNK", "copy", it, data), b"OK")
            if n + 1 < len(chunks):
                self.assertAbsent("copy", f"after chunk {n + 1} of {len(chunks)}")
                self.assertEqual(self.r.execute_command("BF.EXISTS", "copy", members[0]), 0)
        self.assertSameFilter(BF, "big", "copy", members)
        self.r.delete("big", "copy")


class RefusedChunksTest(ScanDumpTestCase):

    def tiny(self, family, key):
        reserve = {"BF": ["0.1", "10"], "CF": ["8"], "CBF": ["0.1", "10"]}[family.prefix]
        return self.make(family, key, 3, reserve=reserve)

    def test_every_flipped_byte_of_a_header_chunk_is_refused(self):
        c = self.raw()
        for family in FAMILIES:
            with self.subTest(family=family):
                src = f"tiny-{family.prefix}"
                members = self.tiny(family, src)
                chunks = self.dump(family, src)
                it, header = chunks[0]
                accepted = []
                for at in range(len(header)):
                    damaged = header[:at] + bytes([header[at] ^ 0xFF]) + header[at + 1:]
                    reply = c.call(family.cmd("LOADCHUNK"), "dst", it, damaged)
                    if not isinstance(reply, RespError):
                        accepted.append(at)
                    if c.call("EXISTS", "dst") != 0:
                        accepted.append(f"{at} (key created)")
                        c.call("DEL", "dst")
                self.assertEqual(accepted, [], f"{len(header)}-byte header: damaged bytes "
                                               "accepted at these offsets")
                for cut in (1, len(header) // 2, len(header) - 1):
                    reply = c.call(family.cmd("LOADCHUNK"), "dst", it, header[:cut])
                    self.assertIsInstance(reply, RespError, f"a header cut to {cut} bytes")
                self.assertAbsent("dst", "no damaged header creates the key")
                # The refusals left nothing behind: the real chunks still load.
                self.load(family, "dst", chunks)
                self.assertSameFilter(family, src, "dst", members)
                self.r.delete("dst")

    def test_a_damaged_payload_chunk_is_refused_and_the_right_one_can_follow(self):
        c = self.raw()
        for family in FAMILIES:
            with self.subTest(family=family):
                src = f"src-{family.prefix}"
                members = self.make(family, src, 200)
                chunks = self.dump(family, src)
                self.assertGreaterEqual(len(chunks), 2, "a header and a payload chunk")
                (h_it, header), (p_it, payload) = chunks[0], chunks[1]
                self.assertEqual(c.call(family.cmd("LOADCHUNK"), "dst", h_it, header), "OK")
                step = max(1, len(payload) // 40)
                for at in list(range(0, 40)) + list(range(40, len(payload), step)) + \
                        [len(payload) - 1]:
                    damaged = payload[:at] + bytes([payload[at] ^ 0x01]) + payload[at + 1:]
                    reply = c.call(family.cmd("LOADCHUNK"), "dst", p_it, damaged)
                    self.assertIsInstance(reply, RespError, f"payload byte {at} flipped")
                    self.assertEqual(c.call("EXISTS", "dst"), 0, f"after byte {at}")
                reply = c.call(family.cmd("LOADCHUNK"), "dst", p_it, payload[:-1])
                self.assertIsInstance(reply, RespError, "a truncated payload chunk")
                for it, data in chunks[1:]:
                    self.assertEqual(c.call(family.cmd("LOADCHUNK"), "dst", it, data), "OK")
                self.assertSameFilter(family, src, "dst", members)
                self.r.delete("dst")

    def test_chunks_of_another_family_are_refused(self):
        dumps = {}
        for family in FAMILIES:
            self.make(family, f"src-{family.prefix}", 50)
            dumps[family.prefix] = self.dump(family, f"src-{family.prefix}")
        c = self.raw()
        for source in FAMILIES:
            for target in FAMILIES:
                if source is target:
                    continue
                with self.subTest(source=source, target=target):
                    for it, data in dumps[source.prefix]:
                        reply = c.call(target.cmd("LOADCHUNK"), "dst", it, data)
                        self.assertIsInstance(reply, RespError, f"chunk {it}")
                    self.assertAbsent("dst", "a foreign dump creates nothing")

    def test_a_payload_chunk_from_another_dump_is_refused(self):
        for family in FAMILIES:
            with self.subTest(family=family):
                self.make(family, "one", 100)
                self.make(family, "two", 101)  # same size, other contents
                one, two = self.dump(family, "one"), self.dump(family, "two")
                dst = f"dst-{family.prefix}"
                self.assertEqual(self.r.execute_command(family.cmd("LOADCHUNK"), dst,
                                                        *one[0]), b"OK")
                with self.assertRaises(redis.ResponseError):
                    self.r.execute_command(family.cmd("LOADCHUNK"), dst, *two[1])
                self.assertAbsent(dst, "mixed dumps create nothing")
                self.r.delete("one", "two")

    def test_a_payload_chunk_without_its_header_is_refused(self):
        for family in FAMILIES:
            with self.subTest(family=family):
                self.make(family, "src", 100)
                chunks = self.dump(family, "src")
                with self.assertRaises(redis.ResponseError):
                    self.r.execute_command(family.cmd("LOADCHUNK"), "dst", *chunks[1])
                self.assertAbsent("dst", "a payload alone creates nothing")
                self.r.delete("src")

    def test_loading_into_an_existing_key_is_refused_and_leaves_it_as_it_was(self):
        for family in FAMILIES:
            with self.subTest(family=family):
                self.make(family, "src", 100)
                chunks = self.dump(family, "src")
                for existing in FAMILIES:
                    self.make(existing, "dst", 7)
                    before = self.info(existing, "dst")
                    with self.assertRaises(redis.ResponseError):
                        for it, data in chunks:
                            self.r.execute_command(family.cmd("LOADCHUNK"), "dst", it, data)
                    self.assertEqual(self.info(existing, "dst"), before)
                    self.assertEqual(self.r.type("dst"), existing.type_name)
                    self.r.delete("dst")
                self.r.delete("src")


class InvisibleWhileLoadingTest(ScanDumpTestCase):

    def test_a_filter_being_loaded_does_not_exist_until_its_last_chunk(self):
        for family in FAMILIES:
            with self.subTest(family=family):
                members = self.make(family, "src", 200)
                chunks = self.dump(family, "src")
                self.assertGreaterEqual(len(chunks), 2)
                dbsize = self.r.dbsize()
                for n, (it, data) in enumerate(chunks[:-1]):
                    self.r.execute_command(family.cmd("LOADCHUNK"), "dst", it, data)
                    why = f"after chunk {n + 1} of {len(chunks)}"
                    self.assertAbsent("dst", why)
                    self.assertEqual(self.r.dbsize(), dbsize, why)
                    self.assertNotIn(b"dst", self.r.keys("*"), why)
                    if family is BF:
                        self.assertEqual(self.r.execute_command("BF.EXISTS", "dst", members[0]),
                                         0, why)
                self.r.execute_command(family.cmd("LOADCHUNK"), "dst", *chunks[-1])
                self.assertEqual(self.r.exists("dst"), 1)
                self.assertSameFilter(family, "src", "dst", members)
                self.r.delete("src", "dst")


DUMP_CHANGED = ("ERR the filter changed during SCANDUMP or the chunk is from another dump: "
                "restart SCANDUMP from iterator 0")


class DumpUnderWritesTest(ScanDumpTestCase):
    """SCANDUMP loops while a writer on another connection adds items one at
    a time: every dump is either refused at LOADCHUNK with the restart text
    or loads to the filter as it was at one moment (its base members plus a
    prefix w:0..w:j of the writer's items, and the item count to match)."""

    ROUNDS = 30
    BASE = 300

    def writer(self, family, started, stop, acked):
        conn = self.raw()
        started.wait()
        i = 0
        while not stop.is_set():
            reply = conn.call(*family.add("src"), f"w:{i}")
            if isinstance(reply, RespError):
                acked.append(reply)  # reported below
                return
            acked.append(f"w:{i}")
            i += 1
            # Paced (a write per ~2 ms, a dump takes two round trips), so
            # that some dumps fall between writes and load, and others
            # straddle one and are refused: both outcomes are checked.
            stop.wait(0.002)

    def copy_items(self, family, key):
        info = self.info(family, key)
        return dict(zip(info[0::2], info[1::2]))["Number of items inserted"]

    def check_one_moment(self, family, members, writes):
        """`copy` is src at one moment: every base member, every writer item
        its count says it holds, and (CF, CBF: one count per add) exactly
        those."""
        self.assertEqual(self.r.execute_command(family.mexists, "copy", *members).count(0), 0,
                         "a base member is missing")
        held = self.copy_items(family, "copy") - self.base_items
        self.assertGreaterEqual(held, 0)
        self.assertLessEqual(held, len(writes))
        if held:
            hits = self.r.execute_command(family.mexists, "copy", *writes[:held])
            self.assertEqual(hits.count(0), 0,
                             f"the copy counts {held} writer items but lacks some of them")
        if family is not BF and held < len(writes):
            # Exact counts: the item after the prefix was not in yet (cuckoo
            # and counting filters at this size have no false positive on it
            # in practice; a torn dump would show a later item).
            later = writes[held:held + 50]
            present = self.r.execute_command(family.mexists, "copy", *later).count(1)
            self.assertLessEqual(present, 2, "items added after the dumped moment are in")

    def test_a_dump_taken_while_a_writer_runs_is_refused_or_of_one_moment(self):
        for family in FAMILIES:
            with self.subTest(family=family):
                self.r.delete("src", "copy")
                members = self.make(family, "src", self.BASE, reserve=(
                    ["100000"] if family is CF else ["0.001", "100000"]))
                self.base_items = self.copy_items(family, "src")
                started, stop, acked = threading.Barrier(2), threading.Event(), []
                thread = threading.Thread(target=self.writer,
                                          args=(family, started, stop, acked))
                thread.start()
                started.wait()
                refused = loaded = 0
                loader = self.raw()
                try:
                    for _ in range(self.ROUNDS):
                        # Each round starts after a write the last one did not
                        # see: the writer runs between and during the dumps.
                        seen = len(acked)
                        wait_until(lambda: len(acked) > seen, 10, what="the writer's next add")
                        self.r.delete("copy")
                        ok = True
                        for it, data in self.dump(family, "src"):
                            reply = loader.call(family.cmd("LOADCHUNK"), "copy", it, data)
                            if reply != "OK":
                                self.assertEqual(reply, DUMP_CHANGED)
                                ok = False
                                break
                        if ok:
                            loaded += 1
                            # The writer's items in order, with the one it
                            # may have in flight (applied, reply not read).
                            writes = [f"w:{i}" for i in range(len(acked) + 1)]
                            self.check_one_moment(family, members, writes)
                        else:
                            refused += 1
                            self.assertAbsent("copy", "a refused dump creates nothing")
                finally:
                    stop.set()
                    thread.join()
                self.assertTrue(all(not isinstance(a, RespError) for a in acked),
                                [a for a in acked if isinstance(a, RespError)][:1])
                self.assertEqual(refused + loaded, self.ROUNDS)
                self.assertGreaterEqual(len(acked), self.ROUNDS, "a write before every round")
                # With the writer stopped, the restarted dump loads whole.
                self.r.delete("copy")
                self.load(family, "copy", self.dump(family, "src"))
                self.assertSameFilter(family, "src", "copy", members + list(acked))
                print(f"{family}: {len(acked)} writes, {refused} dumps refused, "
                      f"{loaded} loaded")


class ConcurrentLoadTest(ScanDumpTestCase):

    def test_two_clients_loading_one_key_at_once_leave_one_whole_copy_or_none(self):
        """Two connections replay two different dumps into one key, their
        LOADCHUNKs interleaved in every order: the key ends absent or as one
        source, whole; every refusal is an error reply, never a crash."""
        for family in FAMILIES:
            with self.subTest(family=family):
                self.r.delete("one", "two")
                dumps = {}
                # Sizes far apart: INFO tells the sources apart even when a
                # false positive on add leaves one item uncounted (401 and
                # 400 once gave two equal BF.INFOs).
                sizes = {"one": 400, "two": 300}
                for name, n in sizes.items():
                    self.make(family, name, n)
                    dumps[name] = self.dump(family, name)
                    self.assertEqual(len(dumps[name]), 2, "a header and one payload chunk")
                conns = {name: self.raw() for name in dumps}
                # Each order of the four calls that keeps each client's own
                # calls in order: which client makes call 1, 2, 3, 4.
                orders = sorted(set(itertools.permutations(["one", "one", "two", "two"])))
                self.assertEqual(len(orders), 6)
                for order in orders:
                    self.r.delete("dst")
                    sent = {name: 0 for name in dumps}
                    replies = []
                    for name in order:
                        it, data = dumps[name][sent[name]]
                        sent[name] += 1
                        replies.append(conns[name].call(family.cmd("LOADCHUNK"), "dst", it, data))
                    self.assertTrue(all(r == "OK" or isinstance(r, RespError) for r in replies),
                                    replies)
                    why = f"order {order}: replies {replies}"
                    if self.r.exists("dst"):
                        sources = [n for n in dumps
                                   if self.info(family, n) == self.info(family, "dst")]
                        self.assertEqual(len(sources), 1, why)
                        self.assertSameFilter(family, sources[0], "dst",
                                              items(sources[0], sizes[sources[0]]))
                    # The order where each client's chunk follows its own
                    # header at once always yields the first client's copy.
                    if order[0] == order[1]:
                        self.assertEqual(self.r.exists("dst"), 1, why)
                self.server.assert_serves_new_clients(self)


class RenameSwapTest(ScanDumpTestCase):

    SWAPS = 40
    READ_DEADLINE_S = 20.0

    def test_readers_never_miss_the_live_filter_while_a_shadow_is_renamed_over_it(self):
        sentinel = "always-there"
        self.r.execute_command("BF.RESERVE", "live", "0.01", "1000")
        self.r.execute_command("BF.MADD", "live", sentinel, *items("gen0", 200))
        stop = threading.Event()
        stats = {"reads": 0, "misses": []}
        reader_conn = self.raw()

        def reader():
            deadline = time.monotonic() + self.READ_DEADLINE_S
            while not stop.is_set() and time.monotonic() < deadline:
                exists = reader_conn.call("EXISTS", "live")
                member = reader_conn.call("BF.EXISTS", "live", sentinel)
                stats["reads"] += 1
                if exists != 1 or member != 1:
                    stats["misses"].append((stats["reads"], exists, member))

        thread = threading.Thread(target=reader, daemon=True)
        thread.start()
        try:
            wait_until(lambda: stats["reads"] >= 20, 10.0, what="the reader to start")
            for gen in range(1, self.SWAPS + 1):
                reads_before = stats["reads"]
                self.r.execute_command("BF.RESERVE", "shadow", "0.01", "1000")
                self.r.execute_command("BF.MADD", "shadow", sentinel, *items(f"gen{gen}", 200))
                self.assertEqual(self.r.rename("shadow", "live"), True)
                # Let the reader see each generation before the next swap.
                wait_until(lambda: stats["reads"] > reads_before + 2 or not thread.is_alive(),
                           10.0, what="the reader to go on")
        finally:
            stop.set()
            thread.join(10.0)
        self.assertFalse(thread.is_alive())
        self.assertEqual(stats["misses"], [], f"the reader saw no live filter or no sentinel "
                                              f"({stats['reads']} reads)")
        self.assertGreater(stats["reads"], self.SWAPS * 2)
        self.assertEqual(self.r.exists("shadow"), 0)
        last = items(f"gen{self.SWAPS}", 200)
        self.assertEqual(self.r.execute_command("BF.MEXISTS", "live", *last), [1] * 200)
        self.assertEqual(self.r.bf().info("live").insertedNum, 201)


if __name__ == "__main__":
    unittest.main()
