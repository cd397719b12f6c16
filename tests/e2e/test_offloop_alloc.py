"""A command that allocates a big filter never stalls its event loop: the
filter is built and its pages touched on the filter maker's thread while the
creating connection waits (parked, like a write waiting for a snapshot
copy), and other connections of the same loop go on meanwhile.

Before this, `TOPK.RESERVE k 100000000` (4,000,002,737 bytes, just under the
4 GB per-filter cap) allocated and zeroed its heap on the loop: 6-9 s during
which every other connection of that loop waited; `CF.RESERVE c 1073741824`
(1 GiB of slots) stalled it for 0.9 s.
"""

import select
import subprocess
import sys
import threading
import time
import unittest

from harness import BloomgateServer, RawConnection, RespError, encode_command, parse_info

# One event loop, so the creating client and the pinging one share it.
ONE_LOOP = ("--threads", "1", "--save", "", "--appendonly", "no")
# The worst pause another client of the loop may see: far above a PING's
# round trip (~0.1 ms), far below the stalls this guards against (0.9 s to
# 100 s before builds and copies left the loop). Not the 100 ms one would
# want: on this 2-core VM the pause comes from the machine, not from us.
# Checked with a PING loop against an idle server (nothing of ours running
# but its housekeeping) beside another process, 3 s each, load ~20: alone
# 39.7 ms worst; beside a CPU burner 55.5 ms; beside a process filling 4 KiB
# pages 19.9 ms; beside one touching fresh 2 MiB pages (MADV_HUGEPAGE) 70.9
# ms, three gaps over 50 ms. One first touch of a 2 MiB page takes 77 ms on
# average here (202 ms worst), of a 4 KiB page 22 us; the kernel reports no
# compaction stall (compact_stall 0), no cgroup memory limit or throttling
# (cgroup v1, no memory.high, failcnt 0; no CPU quota, nr_throttled 0), and
# CPU pressure at 99.7 %. Our 100 ms timers (housekeeping, accept back-off)
# run no work of this size. The baseline is printed beside each result so
# a change in either shows in CI's log.
MAX_GAP_S = 0.200
# A stand-in for the maker's build: fills 1 GiB of fresh pages, again and again.
PAGE_TOUCHER = ("import time\n"
                "end = time.monotonic() + {seconds}\n"
                "while time.monotonic() < end:\n"
                "    b = bytearray(b'\\x01') * (1 << 30)\n"
                "    del b\n")


def memory_falls_below(conn, field, bound, seconds=30):
    """INFO memory's `field` once it is under `bound` (freed lazily), or its
    last value after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        value = int(parse_info(conn.call("INFO", "memory"))[field])
        if value < bound or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def readable(conn):
    if conn.buf:
        return True
    ready, _, _ = select.select([conn.sock], [], [], 0)
    return bool(ready)


class OffLoopAllocationTest(unittest.TestCase):
    baseline = None

    def baseline_gap(self, conn, seconds=3.0):
        """The worst time between two PONGs while another process fills fresh
        pages on the other core, as the filter maker would."""
        toucher = subprocess.Popen(["/usr/bin/python3", "-c",
                                    PAGE_TOUCHER.format(seconds=seconds)])
        try:
            end = time.monotonic() + seconds
            last = time.monotonic()
            worst = 0.0
            while last < end:
                self.assertEqual(conn.call("PING"), "PONG")
                now = time.monotonic()
                worst = max(worst, now - last)
                last = now
        finally:
            toucher.kill()
            toucher.wait()
        sys.stderr.write(f"\n  baseline beside a page-filling process: worst gap "
                         f"{worst * 1000:.1f} ms\n")
        return worst

    def worst_gap_while(self, server, *command, send_in_background=False):
        """Sends `command` on one connection and PINGs on another of the same
        loop until it answers; returns (its reply, the worst time between two
        PONGs or from the send to the first, its own time). A command too big
        for the socket's buffers is sent from a thread, so the PINGs run
        while its bytes arrive."""
        with RawConnection(server.port, timeout=120) as creator, \
                RawConnection(server.port, timeout=120) as other:
            self.assertEqual(other.call("PING"), "PONG")
            # One baseline per module (3 s, and a core busy filling pages):
            # measured before each of the twelve commands it took 36 s of
            # the module's 58 s. A gap over the bound measures it again, so
            # a machine that grew busier since is judged by its load now.
            cls = type(self)
            if cls.baseline is None:
                cls.baseline = self.baseline_gap(other)
            self.bound = max(MAX_GAP_S, 1.5 * cls.baseline)
            request = encode_command(*command)
            started = time.monotonic()
            if send_in_background:
                sender = threading.Thread(target=creator.send, args=(request,), daemon=True)
                sender.start()
            else:
                creator.send(request)
            last = started
            worst = 0.0
            pings = 0
            while not readable(creator):
                self.assertEqual(other.call("PING"), "PONG")
                now = time.monotonic()
                worst = max(worst, now - last)
                last = now
                pings += 1
                self.assertLess(now - started, 120, f"{command[0]} never answered")
            if send_in_background:
                sender.join(120)
            reply = creator.read_reply()
            took = time.monotonic() - started
            worst = max(worst, time.monotonic() - last) if pings == 0 else worst
            if worst >= self.bound:
                cls.baseline = self.baseline_gap(other)
                self.bound = max(self.bound, 1.5 * cls.baseline)
            shown = ' '.join(str(a)[:40] for a in command[:6]) + (" ..." if len(command) > 6 else "")
            sys.stderr.write(f"\n  {shown}: answered in "
                             f"{took * 1000:.0f} ms; {pings} PINGs meanwhile, worst gap "
                             f"{worst * 1000:.1f} ms (bound {self.bound * 1000:.0f} ms)\n")
            return reply, worst, took

    def assert_served_meanwhile(self, server, expected, *command):
        """Runs `command` as worst_gap_while does and checks its reply and
        that no PING of the other client waited past the bound."""
        reply, worst, took = self.worst_gap_while(server, *command)
        self.assertEqual(reply, expected)
        self.assertLess(worst, self.bound,
                        f"another client waited {worst * 1000:.0f} ms "
                        f"(the {command[0]} took {took * 1000:.0f} ms)")

    def test_topk_reserve_of_4_gb_leaves_the_loop_serving(self):
        with BloomgateServer(ONE_LOOP) as server:
            self.assert_served_meanwhile(server, "OK", "TOPK.RESERVE", "k", 85_000_000)
            with RawConnection(server.port, timeout=120) as c:
                self.assertEqual(c.call("TOPK.ADD", "k", "a", "b", "a"), [None, None, None])
                self.assertEqual(c.call("TOPK.QUERY", "k", "a", "c"), [1, 0])
                memory = int(c.call("MEMORY", "USAGE", "k"))
                self.assertGreater(memory, 4_000_000_000)
                # Freed promptly: the next test may allocate as much again.
                self.assertEqual(c.call("DEL", "k"), 1)

    def test_cf_reserve_of_1_gib_leaves_the_loop_serving(self):
        with BloomgateServer(ONE_LOOP) as server:
            self.assert_served_meanwhile(server, "OK", "CF.RESERVE", "c", 1 << 30)
            with RawConnection(server.port) as c:
                self.assertEqual(c.call("CF.ADD", "c", "x"), 1)
                self.assertEqual(c.call("CF.EXISTS", "c", "x"), 1)
                self.assertEqual(c.call("CF.EXISTS", "c", "y"), 0)
                self.assertEqual(c.call("DEL", "c"), 1)

    def test_bf_reserve_of_about_1_gb_leaves_the_loop_serving(self):
        # 400 million items at 0.0001: ~19 bits each in its first layer.
        with BloomgateServer(ONE_LOOP) as server:
            self.assert_served_meanwhile(server, "OK", "BF.RESERVE", "b", "0.0001", 400_000_000)
            with RawConnection(server.port) as c:
                self.assertEqual(c.call("BF.ADD", "b", "x"), 1)
                self.assertEqual(c.call("BF.EXISTS", "b", "x"), 1)
                self.assertGreater(int(c.call("MEMORY", "USAGE", "b")), 900_000_000)
                self.assertEqual(c.call("DEL", "b"), 1)

    def test_cf_insert_with_a_capacity_of_1_gib_leaves_the_loop_serving(self):
        # Inline it stalled the loop 6.0 s (machine load ~19 on 2 cores).
        with BloomgateServer(ONE_LOOP) as server:
            self.assert_served_meanwhile(server, [1], "CF.INSERT", "c", "CAPACITY", 1 << 30,
                                         "ITEMS", "x")
            with RawConnection(server.port) as c:
                self.assertEqual(c.call("CF.EXISTS", "c", "x"), 1)
                self.assertGreater(int(c.call("MEMORY", "USAGE", "c")), 1 << 30)
                self.assertEqual(c.call("DEL", "c"), 1)

    def test_copy_of_a_1_gib_filter_leaves_the_loop_serving(self):
        # Inline, COPY of a 1 GiB cuckoo filter stalled the loop 12 s, of a
        # 1.2 GB Bloom filter 43 s, of a 2 GB top-k 100 s (load ~19).
        with BloomgateServer(ONE_LOOP) as server:
            with RawConnection(server.port, timeout=120) as c:
                self.assertEqual(c.call("CF.RESERVE", "src", 1 << 30), "OK")
                self.assertEqual(c.call("CF.ADD", "src", "x"), 1)
            self.assert_served_meanwhile(server, 1, "COPY", "src", "dst")
            with RawConnection(server.port) as c:
                self.assertEqual(c.call("CF.EXISTS", "dst", "x"), 1)
                self.assertEqual(c.call("CF.ADD", "dst", "y"), 1)
                self.assertEqual(c.call("CF.EXISTS", "src", "y"), 0)
                self.assertEqual(c.call("DEL", "src", "dst"), 2)

    def test_a_loadchunk_header_that_declares_a_big_filter_leaves_the_loop_serving(self):
        # A 99-byte CF header declaring 1 GiB of slots stalled the loop 8.6 s
        # inline, a 71-byte sketch header declaring 1 GB 3.9 s (load ~22).
        with BloomgateServer(ONE_LOOP) as server:
            for family, create in (("CF", ("CF.RESERVE", "src", 1 << 30)),
                                   ("CMS", ("CMS.INITBYDIM", "src", 32_000_000, 4))):
                with self.subTest(family=family):
                    with RawConnection(server.port, timeout=120) as c:
                        self.assertEqual(c.call(*create), "OK")
                        iterator, header = c.call(f"{family}.SCANDUMP", "src", 0)
                        self.assertEqual(c.call("DEL", "src"), 1)
                    self.assertLess(len(header), 1000)
                    self.assert_served_meanwhile(server, "OK", f"{family}.LOADCHUNK", family,
                                                 iterator, header)

    def test_a_copy_whose_client_is_killed_while_parked_leaks_nothing(self):
        with BloomgateServer(ONE_LOOP) as server:
            with RawConnection(server.port, timeout=120) as c, \
                    RawConnection(server.port) as doomed:
                self.assertEqual(c.call("CF.RESERVE", "src", 1 << 28), "OK")
                source_only = int(parse_info(c.call("INFO", "memory"))["used_memory"])
                doomed_id = doomed.call("CLIENT", "ID")
                doomed.send(encode_command("COPY", "src", "dst"))
                # Killed once its COPY ran (parked: the copy is being made).
                deadline = time.monotonic() + 30
                while not any(line.startswith(f"id={doomed_id} ") and " cmd=copy " in line
                              for line in c.call("CLIENT", "LIST").decode().splitlines()):
                    self.assertLess(time.monotonic(), deadline, "the COPY never ran")
                    time.sleep(0.01)
                self.assertEqual(c.call("CLIENT", "KILL", "ID", doomed_id), 1)
                # The source takes writes again (one owed a copy waits for it).
                self.assertEqual(c.call("CF.ADD", "src", "x"), 1)
                # A killed client's command does not run again; the copy made
                # for it is freed, not kept.
                deadline = time.monotonic() + 60
                while True:
                    used = int(parse_info(c.call("INFO", "memory"))["used_memory"])
                    if used < source_only + (16 << 20) or time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
                self.assertLess(used, source_only + (16 << 20))
                self.assertEqual(c.call("EXISTS", "dst"), 0)
                self.assertEqual(c.call("CF.EXISTS", "src", "x"), 1)

    def test_creations_that_leave_their_pages_untouched_stay_inline_and_cheap(self):
        # A Bloom or counting Bloom layer (and a windowed Bloom filter's
        # generation) is fresh zero pages its creation does not touch: built
        # inline, it must stay this cheap (0.2-15 ms at ~1 GB in four runs,
        # load ~20). The first adds that fault those pages in on the loop
        # (4 KiB pages there) are guarded by
        # test_first_adds_into_a_fresh_big_bloom_filter_leave_the_loop_serving.
        cases = [("CBF.RESERVE", "k", "0.01", 200_000_000),
                 ("BF.RESERVE", "k", "0.01", 400_000_000, "WINDOW", 3600)]
        with BloomgateServer(ONE_LOOP) as server:
            for command in cases:
                with self.subTest(command=command[0]):
                    reply, worst, took = self.worst_gap_while(server, *command)
                    with RawConnection(server.port) as c:
                        # A windowed filter holds one generation at first.
                        memory = int(c.call("MEMORY", "USAGE", "k"))
                        self.assertEqual(c.call("DEL", "k"), 1)
                    self.assertNotIsInstance(reply, RespError)
                    self.assertGreater(memory, 150_000_000)
                    self.assertLess(worst, self.bound,
                                    f"{command[0]} stalled the loop {worst * 1000:.0f} ms")

    def test_a_key_created_while_the_filter_is_built_wins_and_the_build_is_dropped(self):
        with BloomgateServer(ONE_LOOP) as server:
            with RawConnection(server.port, timeout=120) as creator, \
                    RawConnection(server.port) as other:
                creator.send(encode_command("TOPK.RESERVE", "k", 50_000_000))
                # The other client takes the name first, while the 2 GB build runs.
                self.assertEqual(other.call("TOPK.RESERVE", "k", 3), "OK")
                reply = creator.read_reply()
                self.assertIsInstance(reply, RespError)
                self.assertEqual(reply, "TopK: key already exists")
                self.assertEqual(other.call("TOPK.INFO", "k")[1], 3)
                # The dropped build is freed (lazily) and gives its bytes back.
                self.assertLess(memory_falls_below(other, "used_memory", 100 << 20), 100 << 20)

    def test_a_client_that_disconnects_while_parked_leaks_nothing(self):
        with BloomgateServer(ONE_LOOP) as server:
            with RawConnection(server.port) as gone:
                gone.send(encode_command("TOPK.RESERVE", "k", 50_000_000))
            # The command was sent, so it runs (as Redis runs a command whose
            # client went away); nothing stays charged but the filter itself.
            with RawConnection(server.port) as c:
                deadline = time.monotonic() + 60
                while c.call("EXISTS", "k") == 0:
                    self.assertLess(time.monotonic(), deadline, "the RESERVE never ran")
                    time.sleep(0.05)
                self.assertEqual(c.call("DEL", "k"), 1)
                deadline = time.monotonic() + 30
                while True:
                    used = int(parse_info(c.call("INFO", "memory"))["used_memory"])
                    if used < 100 << 20 or time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
                self.assertLess(used, 100 << 20)

    def test_first_adds_into_a_fresh_big_bloom_filter_leave_the_loop_serving(self):
        # Faulted in by the first adds on the loop, 2 MiB pages (MADV_HUGEPAGE)
        # cost ~77 ms each on this VM: BF.MADD of 1000 items into a fresh
        # ~1 GB filter stalled the loop 4.8-11 s (37.8 s at load ~20), and
        # BF.INSERT with a big CAPACITY 15 s. So a filter made off the loop
        # is resident when published, and arrays made on the loop get 4 KiB
        # pages (~22 us a first touch): 2-13 ms, and 90-156 ms for the
        # BF.INSERT, which also maps its 1 GB.
        items = [f"item{i}" for i in range(1000)]
        with BloomgateServer(ONE_LOOP) as server:
            with RawConnection(server.port, timeout=120) as c:
                self.assertEqual(c.call("BF.RESERVE", "b", "0.0001", 400_000_000), "OK")
            self.assert_served_meanwhile(server, [1] * 1000, "BF.MADD", "b", *items)
            self.assert_served_meanwhile(server, [1] * 1000, "BF.INSERT", "i", "CAPACITY",
                                         400_000_000, "ERROR", "0.0001", "ITEMS", *items)
            with RawConnection(server.port, timeout=120) as c:
                self.assertEqual(c.call("DEL", "b", "i"), 2)
                self.assertEqual(c.call("CBF.RESERVE", "k", "0.01", 200_000_000), "OK")
            self.assert_served_meanwhile(server, [1] * 1000, "CBF.MADD", "k", *items)

    def test_a_256_mib_argument_arriving_leaves_the_loop_serving(self):
        # The input buffer grew by doubling on the loop, zero-filling and
        # copying each time: 1.3-2.0 s for a 256 MiB RESTORE even when it
        # answered BUSYKEY at once. Now a declared bulk is reserved once
        # (untouched pages the reads fault in, at most 1 MiB a read) and the
        # idle buffer is freed off the loop.
        payload = b"\x00" * (256 << 20)
        with BloomgateServer(ONE_LOOP) as server:
            with RawConnection(server.port) as c:
                self.assertEqual(c.call("BF.RESERVE", "k", "0.01", 100), "OK")
            for attempt in range(2):  # the second reuses nothing of the first
                with self.subTest(attempt=attempt):
                    reply, worst, took = self.worst_gap_while(
                        server, "RESTORE", "k", 0, payload, send_in_background=True)
                    self.assertIsInstance(reply, RespError)
                    self.assertTrue(str(reply).startswith("BUSYKEY"), reply)
                    self.assertLess(worst, self.bound,
                                    f"another client waited {worst * 1000:.0f} ms while "
                                    f"256 MiB arrived (answered in {took * 1000:.0f} ms)")
            with RawConnection(server.port) as c:
                # The buffers are given back: nothing of 256 MiB stays resident.
                self.assertLess(memory_falls_below(c, "used_memory_rss", 128 << 20), 128 << 20)
                self.assertEqual(c.call("BF.EXISTS", "k", "x"), 0)

    def test_a_merge_into_a_new_key_leaves_the_loop_serving(self):
        # The new dest was created and every source ORed (or added) into it
        # on the loop: 5.2 s for BF.MERGE and 2.4 s for CBF.MERGE of big
        # sources. Now the filter maker builds it, reading the sources in
        # place while their writers wait.
        with BloomgateServer(ONE_LOOP) as server:
            with RawConnection(server.port, timeout=120) as c:
                for key in ("a", "b"):
                    # ~480 MB and ~240 MB; one seed, so they merge.
                    self.assertEqual(c.call("BF.RESERVE", key, "0.0001", 200_000_000,
                                            "SEED", 42), "OK")
                    self.assertEqual(c.call("BF.ADD", key, f"in-{key}"), 1)
                    self.assertEqual(c.call("CBF.RESERVE", f"c{key}", "0.01", 50_000_000,
                                            "SEED", 42), "OK")
                    self.assertEqual(c.call("CBF.ADD", f"c{key}", "both"), 1)
            self.assert_served_meanwhile(server, "OK", "BF.MERGE", "d", "a", "b")
            self.assert_served_meanwhile(server, "OK", "CBF.MERGE", "cd", "ca", "cb")
            with RawConnection(server.port, timeout=120) as c:
                self.assertEqual(c.call("BF.EXISTS", "d", "in-a"), 1)
                self.assertEqual(c.call("BF.EXISTS", "d", "in-b"), 1)
                self.assertEqual(c.call("CBF.COUNT", "cd", "both"), 2)
                self.assertEqual(c.call("BF.ADD", "a", "after"), 1)
                self.assertEqual(c.call("BF.EXISTS", "d", "after"), 0)
                self.assertEqual(c.call("DEL", "a", "b", "d", "ca", "cb", "cd"), 6)

    def test_a_merge_into_an_existing_sketch_leaves_the_loop_serving(self):
        # Merged in place on the loop, a huge sketch stalled it 7 s. Now the
        # merged cells are built off the loop and take dest's place.
        with BloomgateServer(ONE_LOOP) as server:
            with RawConnection(server.port, timeout=120) as c:
                for key in ("src", "dst"):  # 32,000,000 x 4 cells: 512 MB each
                    self.assertEqual(c.call("CMS.INITBYDIM", key, 32_000_000, 4), "OK")
                self.assertEqual(c.call("CMS.INCRBY", "src", "x", 3), [3])
                self.assertEqual(c.call("CMS.INCRBY", "dst", "y", 1), [1])
            self.assert_served_meanwhile(server, "OK", "CMS.MERGE", "dst", 2, "src", "dst",
                                         "WEIGHTS", 2, 1)
            with RawConnection(server.port, timeout=120) as c:
                self.assertEqual(c.call("CMS.QUERY", "dst", "x", "y"), [6, 1])
                self.assertEqual(c.call("DEL", "src", "dst"), 2)

    def test_a_cuckoo_filter_adding_a_big_sub_filter_leaves_the_loop_serving(self):
        # 8192 one-slot buckets, then a sub-filter of 8192 x 32768 (256 MiB)
        # once they are full: zeroed where the growing add ran, on the loop.
        # Now its pages are mapped fresh and faulted in by the adds that
        # reach them. Filled 200 items a command, the one that grows it timed.
        with BloomgateServer(ONE_LOOP) as server:
            with RawConnection(server.port) as c:
                self.assertEqual(c.call("CF.RESERVE", "c", 8192, "BUCKETSIZE", 1,
                                        "EXPANSION", 32768), "OK")
            worst_growing = None
            for batch in range(100):
                items = [f"i{batch}-{j}" for j in range(200)]
                reply, worst, took = self.worst_gap_while(
                    server, "CF.INSERT", "c", "NOCREATE", "ITEMS", *items)
                self.assertEqual(reply, [1] * 200)
                with RawConnection(server.port) as c:
                    info = c.call("CF.INFO", "c")
                    filters = int(info[info.index("Number of filters") + 1])
                if filters == 2:
                    worst_growing = worst
                    break
            self.assertIsNotNone(worst_growing, "the filter never grew")
            sys.stderr.write(f"\n  the CF.INSERT that added a 256 MiB sub-filter: worst gap "
                             f"{worst_growing * 1000:.1f} ms\n")
            self.assertLess(worst_growing, self.bound)
            with RawConnection(server.port) as c:
                self.assertEqual(c.call("CF.EXISTS", "c", "i0-0"), 1)
                self.assertGreater(int(c.call("MEMORY", "USAGE", "c")), 1 << 28)

    def test_a_huge_reserve_inside_exec_is_built_in_place(self):
        # A transaction cannot park half-way: its RESERVE is built inline.
        with BloomgateServer(ONE_LOOP) as server:
            with RawConnection(server.port, timeout=120) as c:
                self.assertEqual(c.call("MULTI"), "OK")
                self.assertEqual(c.call("CF.RESERVE", "c", 1 << 24), "QUEUED")
                self.assertEqual(c.call("CF.ADD", "c", "x"), "QUEUED")
                self.assertEqual(c.call("EXEC"), ["OK", 1])
                self.assertEqual(c.call("CF.EXISTS", "c", "x"), 1)


if __name__ == "__main__":
    unittest.main()
