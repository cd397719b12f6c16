"""The copy a snapshot owes itself of a counting or cuckoo filter (issue 15
bug 3): after BGSAVE, the first write to a big one waits for that copy
off the event loop, so other connections of the same loop go on; the copy
is charged to maxmemory, and a write whose copy cannot fit is refused with
Redis's OOM text and changes nothing.
"""

import select
import sys
import time
import unittest

from harness import BloomgateServer, RawConnection, RespError, parse_info, wait_until

# About 150 MB of counters: its copy takes tens of milliseconds even on an
# idle machine (and the copy is made while the test watches), far more than
# a PING round trip (~0.1 ms).
BIG_CAPACITY = 30_000_000
ONE_LOOP = ("--threads", "1", "--save", "", "--appendonly", "no")


def readable(conn):
    if conn.buf:
        return True
    ready, _, _ = select.select([conn.sock], [], [], 0)
    return bool(ready)


class SnapshotCopyTest(unittest.TestCase):

    def info(self, conn, section="persistence"):
        return parse_info(conn.call("INFO", section))

    def test_the_first_write_after_bgsave_waits_for_the_copy_without_stalling_its_loop(self):
        with BloomgateServer(ONE_LOOP) as server:
            with RawConnection(server.port) as writer, RawConnection(server.port) as other:
                self.assertEqual(writer.call("CBF.RESERVE", "big", "0.01", BIG_CAPACITY), "OK")
                self.assertEqual(writer.call("CBF.ADD", "big", "before"), 1)
                self.assertEqual(writer.call("BGSAVE"), "Background saving started")
                started = time.monotonic()
                writer.send(b"*3\r\n$7\r\nCBF.ADD\r\n$3\r\nbig\r\n$5\r\nafter\r\n")
                # PINGs on another connection of the same (only) event loop
                # while the write waits for its copy.
                answered_meanwhile = 0
                worst_ping = 0.0
                while not readable(writer):
                    t = time.monotonic()
                    self.assertEqual(other.call("PING"), "PONG")
                    worst_ping = max(worst_ping, time.monotonic() - t)
                    if not readable(writer):
                        answered_meanwhile += 1
                    self.assertLess(time.monotonic() - started, 30, "the write never answered")
                self.assertEqual(writer.read_reply(), 1)
                write_wait = time.monotonic() - started
                sys.stderr.write(f"\n  write waited {write_wait * 1000:.1f} ms; "
                                 f"{answered_meanwhile} PINGs meanwhile, worst "
                                 f"{worst_ping * 1000:.2f} ms\n")
                # Before the fix the loop ran the copy itself: no PING was
                # answered until the write was, and the worst PING took the
                # whole copy (642 ms for 614 MB).
                self.assertGreaterEqual(answered_meanwhile, 3,
                                        f"write waited {write_wait * 1000:.1f} ms")
                self.assertLess(worst_ping, write_wait / 2,
                                f"write waited {write_wait * 1000:.1f} ms")
                info = self.info(other)
                self.assertGreaterEqual(int(info["snapshot_copy_waits"]), 1, info)
                wait_until(lambda: self.info(other)["rdb_bgsave_in_progress"] == "0", 60,
                           what="the background save to end")
                self.assertEqual(self.info(other)["rdb_last_bgsave_status"], "ok")
                self.assertEqual(other.call("CBF.COUNT", "big", "after"), 1)

    def test_a_write_whose_snapshot_copy_does_not_fit_maxmemory_is_refused_and_changes_nothing(self):
        # maxmemory fits the filter once (~15 MB) but not twice.
        with BloomgateServer(ONE_LOOP + ("--maxmemory", "24mb")) as server:
            with RawConnection(server.port) as c:
                self.assertEqual(c.call("CBF.RESERVE", "big", "0.01", 3_000_000), "OK")
                self.assertEqual(c.call("CBF.ADD", "big", "before"), 1)
                # A SAVE's own copy does not fit either: the save fails, says
                # so, and the filter takes writes again afterwards.
                reply = c.call("SAVE")
                self.assertIsInstance(reply, RespError)
                self.assertIn("out of memory copying key 'big'", reply)
                self.assertEqual(c.call("CBF.ADD", "big", "x"), 1)
                # BGSAVE: its saver copies in the background; the writer that
                # gets there first is refused with Redis's OOM text, or finds
                # the save already failed and writes. Either way nothing
                # half-done: the count is 1 after the OK, 0 after the refusal.
                self.assertEqual(c.call("BGSAVE"), "Background saving started")
                reply = c.call("CBF.ADD", "big", "y")
                if isinstance(reply, RespError):
                    self.assertEqual(reply, "OOM command not allowed when used memory > "
                                            "'maxmemory'.")
                    self.assertEqual(c.call("CBF.COUNT", "big", "y"), 0)
                else:
                    self.assertEqual(reply, 1)
                wait_until(lambda: self.info(c)["rdb_bgsave_in_progress"] == "0", 60,
                           what="the background save to end")
                self.assertEqual(self.info(c)["rdb_last_bgsave_status"], "err")
                memory = self.info(c, "memory")
                self.assertLess(int(memory["used_memory"]), 20 << 20, memory)


if __name__ == "__main__":
    unittest.main()
