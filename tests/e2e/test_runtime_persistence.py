"""Persistence switched at run time: CONFIG SET appendonly yes|no and
CONFIG SET save, then kill -9 and a restart with the original flags.

Redis rewrites the AOF when appendonly is switched on, so logging starts
from a consistent point; here the switch takes a snapshot cut (the next
100 ms tick), which starts a log generation, and writes a snapshot the log
continues. Once that save has ended (aof_rewrite_in_progress:0) every
acknowledged write survives kill -9. Switched off, the same cut closes the
log: later writes are not logged, as with --appendonly no from the start.

Counting and cuckoo adds and deletes are not idempotent, so a log replayed
twice or on the wrong snapshot shows as a wrong count.
"""

import os
import signal
import tempfile
import unittest

from harness import PersistentServer, parse_info, wait_until

SNAPSHOT = "dump.bgs"
LOG_PREFIX = "appendonly.bglog."
SWITCH_DEADLINE_S = 10.0


def log_files(data_dir):
    return sorted(n for n in os.listdir(data_dir)
                  if n.startswith(LOG_PREFIX) and n[len(LOG_PREFIX):].isdigit())


class RuntimePersistenceTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="bloomgate-runtime-persistence-")
        self.addCleanup(self.tmp.cleanup)
        self.data_dir = os.path.join(self.tmp.name, "data")
        os.mkdir(self.data_dir)

    def start(self, *args):
        server = PersistentServer(self.data_dir, args,
                                  log_path=os.path.join(self.tmp.name, "server.log")).start()
        self.addCleanup(lambda: server.alive() and server.kill9())
        return server

    def call(self, server, *args):
        with server.raw() as c:
            return c.call(*args)

    def info(self, server):
        return parse_info(self.call(server, "INFO", "persistence"))

    def wait_info(self, server, what, **wanted):
        """Polls INFO persistence until every field in `wanted` has its value."""
        return wait_until(
            lambda: (lambda i: i if all(i.get(k) == v for k, v in wanted.items()) else None)(
                self.info(server)), SWITCH_DEADLINE_S, what=what)

    def write(self, server, tag):
        """Counting adds and a delete, cuckoo adds and a delete, a Bloom add:
        returns what they leave as {command: reply}."""
        # CBF.ADD answers whether the item was new (1 only on the first).
        for _ in range(2):
            self.assertIn(self.call(server, "CBF.ADD", "cbf", "x"), (0, 1))
        for command, want in ((("CBF.DEL", "cbf", "x"), 1), (("CF.ADD", "cf", "x"), 1),
                              (("CF.ADD", "cf", "x"), 1), (("CF.DEL", "cf", "x"), 1),
                              (("BF.ADD", "bf", tag), 1)):
            self.assertEqual(self.call(server, *command), want, command)

    def assertState(self, server, rounds, tags, what):
        self.assertEqual(self.call(server, "CBF.COUNT", "cbf", "x"), rounds, what)
        self.assertEqual(self.call(server, "CF.COUNT", "cf", "x"), rounds, what)
        for tag in tags:
            self.assertEqual(self.call(server, "BF.EXISTS", "bf", tag), 1, f"{what}: {tag}")

    def test_appendonly_switched_on_logs_every_later_write_through_kill_9(self):
        args = ("--appendonly", "no", "--save", "")
        server = self.start(*args)
        self.write(server, "before")
        self.assertEqual(self.info(server)["aof_enabled"], "0")
        self.assertEqual(log_files(self.data_dir), [])
        self.assertEqual(self.call(server, "CONFIG", "SET", "appendonly", "yes"), "OK")
        self.assertEqual(self.call(server, "CONFIG", "GET", "appendonly"), [b"appendonly", b"yes"])
        info = self.wait_info(server, "the switch's save", aof_enabled="1",
                              aof_rewrite_in_progress="0", rdb_bgsave_in_progress="0")
        self.assertEqual(info["rdb_last_bgsave_status"], "ok")
        self.assertTrue(os.path.exists(os.path.join(self.data_dir, SNAPSHOT)))
        self.assertEqual(len(log_files(self.data_dir)), 1, os.listdir(self.data_dir))
        self.write(server, "after")
        self.assertEqual(server.kill9(), -signal.SIGKILL)
        # The original flags (appendonly no): start-up still replays the log
        # that is there, and only then stops logging.
        server = self.start(*args)
        self.assertState(server, 2, ["before", "after"], "after kill -9")
        self.assertEqual(self.info(server)["aof_enabled"], "0")

    def test_appendonly_switched_off_stops_logging(self):
        server = self.start("--save", "")
        self.write(server, "logged")
        self.assertEqual(self.info(server)["aof_enabled"], "1")
        self.assertEqual(self.call(server, "CONFIG", "SET", "appendonly", "no"), "OK")
        self.wait_info(server, "the switch-off save", aof_enabled="0",
                       aof_rewrite_in_progress="0", rdb_bgsave_in_progress="0")
        self.assertEqual(log_files(self.data_dir), [], "the snapshot replaced the log")
        self.write(server, "unlogged")
        self.assertEqual(log_files(self.data_dir), [], "a write reached a log")
        self.assertEqual(server.kill9(), -signal.SIGKILL)
        server = self.start("--save", "", "--appendonly", "no")
        # The snapshot of the switch holds the first round; the second was
        # never logged, so kill -9 lost it, as Redis without an AOF does.
        self.assertState(server, 1, ["logged"], "after kill -9")
        self.assertEqual(self.call(server, "BF.EXISTS", "bf", "unlogged"), 0)

    def test_save_points_set_at_run_time_start_and_stop_the_schedule(self):
        server = self.start("--appendonly", "no", "--save", "")
        saves = int(self.info(server)["rdb_saves"])
        self.write(server, "a")
        # A save point due 1 s after the last save and one change: the tick
        # takes a snapshot.
        self.assertEqual(self.call(server, "CONFIG", "SET", "save", "1 1"), "OK")
        info = wait_until(lambda: (lambda i: i if int(i["rdb_saves"]) > saves else None)(
            self.info(server)), SWITCH_DEADLINE_S, what="a scheduled save")
        self.wait_info(server, "the scheduled save's end", rdb_bgsave_in_progress="0",
                       rdb_changes_since_last_save="0")
        saves = int(self.info(server)["rdb_saves"])
        self.assertEqual(self.call(server, "CONFIG", "SET", "save", ""), "OK")
        self.assertEqual(self.call(server, "CONFIG", "GET", "save"), [b"save", b""])
        self.write(server, "b")
        # "1 1" would fire within 1 s of the last save plus a 100 ms tick;
        # twice that passes without a save.
        deadline_info = None
        try:
            wait_until(lambda: int(self.info(server)["rdb_saves"]) > saves, 2.5,
                       what="a save after save \"\"")
            deadline_info = self.info(server)
        except AssertionError:
            pass
        self.assertIsNone(deadline_info, "the schedule still saved after CONFIG SET save \"\"")
        info = self.info(server)
        self.assertEqual(int(info["rdb_saves"]), saves)
        self.assertEqual(info["rdb_changes_since_last_save"], "7")
        self.assertEqual(server.kill9(), -signal.SIGKILL)
        server = self.start("--appendonly", "no", "--save", "")
        self.assertState(server, 1, ["a"], "only the scheduled snapshot")
        self.assertEqual(self.call(server, "BF.EXISTS", "bf", "b"), 0)


if __name__ == "__main__":
    unittest.main()
