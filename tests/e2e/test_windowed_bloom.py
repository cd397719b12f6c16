"""Windowed Bloom filters (BF.RESERVE ... WINDOW seconds [GENERATIONS n])
against the real server, through redis-cli and redis-py, with a one-second
window in two generations (a period of 0.5 s): an item is present for the
window after its last add and gone by 1.5 s after it (docs/commands/windowed.md).
Restarts inside and across a window boundary, from the log and
from a snapshot.
"""

import os
import subprocess
import sys
import tempfile
import time
import unittest

from harness import PersistentServer, ServerTestCase, wait_until

WINDOW_S = 1.0
GENERATIONS = 2
GONE_BY_S = WINDOW_S + WINDOW_S / GENERATIONS  # 1.5 s
INFO_FIELDS = ["Capacity", "Size", "Number of filters", "Number of items inserted",
               "Expansion rate", "Window ms", "Generations", "Current generation age ms",
               "Generation items", "Generation capacity"]


def text(error):
    """An error's text as redis-py gives it: without its "ERR " code."""
    return error[4:] if error.startswith("ERR ") else error


def cli(port, *args):
    """redis-cli (not a tty: one reply per line) and its stdout, stripped."""
    done = subprocess.run(["redis-cli", "-p", str(port), *map(str, args)],
                          capture_output=True, text=True, timeout=10, check=True)
    return done.stdout.strip()


class WindowedBloomCommands(ServerTestCase):

    def reserve(self, key="w", *extra):
        return self.r.execute_command("BF.RESERVE", key, "0.01", "1000", "WINDOW", WINDOW_S,
                                      "GENERATIONS", GENERATIONS, *extra)

    def test_one_command_per_miss_through_redis_cli(self):
        self.assertEqual(cli(self.port, "BF.RESERVE", "seen", "0.01", "1000", "WINDOW", "1",
                             "GENERATIONS", "2"), "OK")
        self.assertEqual(cli(self.port, "BF.ADD", "seen", "/a.jpg"), "1")  # first hit: new
        self.assertEqual(cli(self.port, "BF.ADD", "seen", "/a.jpg"), "0")  # second: admit
        self.assertEqual(cli(self.port, "TYPE", "seen"), "MBbloomW-")

    def test_redis_py_helpers_work_unchanged(self):
        self.reserve()
        bf = self.r.bf()
        self.assertEqual(bf.add("w", "x"), 1)
        self.assertEqual(bf.madd("w", "x", "y"), [0, 1])
        self.assertEqual(bf.exists("w", "y"), 1)
        self.assertEqual(bf.mexists("w", "x", "y", "z"), [1, 1, 0])
        self.assertEqual(self.r.execute_command("BF.CARD", "w"), 2)
        self.assertEqual(self.r.execute_command("BF.INSERT", "w", "ITEMS", "z", "x"), [1, 0])

    def test_info_keeps_redisbloom_fields_first(self):
        self.reserve()
        self.r.execute_command("BF.MADD", "w", "a", "b")
        reply = self.r.execute_command("BF.INFO", "w")
        names = [k.decode() for k in reply[0::2]]
        self.assertEqual(names, INFO_FIELDS)
        info = dict(zip(names, reply[1::2]))
        self.assertEqual(info["Capacity"], 1000)
        self.assertEqual(info["Number of items inserted"], 2)
        self.assertEqual(info["Window ms"], 1000)
        self.assertEqual(info["Generations"], 2)
        self.assertEqual(info["Generation items"][0], 2)
        self.assertEqual(self.r.execute_command("BF.INFO", "w", "ITEMS"), [2])
        # MEMORY USAGE adds the key name's bytes to the filter's Size.
        self.assertAlmostEqual(self.r.execute_command("MEMORY", "USAGE", "w"), info["Size"],
                               delta=64)

    def test_bad_options_are_refused_and_create_nothing(self):
        cases = [
            (("WINDOW", "0"), "ERR WINDOW must be a number of seconds in [0.001, 316224000]"),
            (("WINDOW", "abc"), "ERR WINDOW must be a number of seconds in [0.001, 316224000]"),
            (("WINDOW", "1", "GENERATIONS", "0"), "ERR GENERATIONS must be in the range [1, 64]"),
            (("WINDOW", "1", "GENERATIONS", "65"), "ERR GENERATIONS must be in the range [1, 64]"),
            (("GENERATIONS", "4"), "ERR GENERATIONS requires WINDOW"),
            (("WINDOW", "1", "NONSCALING"),
             "ERR WINDOW cannot be combined with NONSCALING or EXPANSION 0"),
            (("WINDOW", "0.002", "GENERATIONS", "4"),
             "ERR WINDOW must be at least GENERATIONS milliseconds"),
            (("WINDOW", "1", "WINDOW", "2"), "ERR option given more than once"),
        ]
        for extra, message in cases:
            with self.subTest(extra=extra):
                with self.assertRaises(Exception) as caught:
                    self.r.execute_command("BF.RESERVE", "bad", "0.01", "100", *extra)
                self.assertEqual(str(caught.exception), text(message))
                self.assertEqual(self.r.exists("bad"), 0)
        with self.assertRaises(Exception) as caught:
            self.r.execute_command("BF.INSERT", "bad", "NOCREATE", "WINDOW", "1", "ITEMS", "x")
        self.assertEqual(str(caught.exception),
                         text("ERR NOCREATE cannot be combined with WINDOW or GENERATIONS"))
        self.reserve()
        with self.assertRaises(Exception) as caught:
            self.reserve()
        self.assertEqual(str(caught.exception), text("ERR item exists"))

    def test_debug_lists_each_live_generations_layers(self):
        # It dereferenced the plain filter a windowed key does not hold and
        # took the server down.
        self.reserve()
        self.r.execute_command("BF.MADD", "w", "a", "b", "c")
        lines = [line.decode() for line in self.r.execute_command("BF.DEBUG", "w")]
        self.assertEqual(lines[0], "size:3")
        self.assertGreaterEqual(len(lines), 2)
        for line in lines[1:]:
            self.assertRegex(line, r"^generation:\d+ bytes:\d+ bits:\d+ hashes:\d+ hashwidth:64 "
                                   r"capacity:\d+ size:\d+ ratio:[0-9.e-]+$")
        self.assertEqual(sum(int(line.split(" size:")[1].split()[0]) for line in lines[1:]), 3)
        self.assertTrue(self.r.ping())

    def test_insert_creates_a_windowed_filter(self):
        self.assertEqual(self.r.execute_command("BF.INSERT", "i", "CAPACITY", "50", "WINDOW", "1",
                                                "ITEMS", "a", "a"), [1, 0])
        self.assertEqual(self.r.type("i"), b"MBbloomW-")

    def test_an_item_ages_out_after_its_window(self):
        self.reserve()
        added = time.monotonic()
        self.assertEqual(self.r.execute_command("BF.ADD", "w", "old"), 1)
        self.assertEqual(self.r.execute_command("BF.EXISTS", "w", "old"), 1)
        wait_until(lambda: self.r.execute_command("BF.EXISTS", "w", "old") == 0,
                   deadline_s=GONE_BY_S + 1, what="the item aged out")
        gone_after = time.monotonic() - added
        self.assertGreaterEqual(gone_after, WINDOW_S, "dropped inside its window")
        self.assertEqual(self.r.execute_command("BF.ADD", "w", "old"), 1)  # new again
        self.assertEqual(self.r.execute_command("BF.CARD", "w"), 1)

    def test_rename_keeps_the_window(self):
        self.reserve()
        self.r.execute_command("BF.ADD", "w", "x")
        self.r.rename("w", "w2")
        self.assertEqual(self.r.execute_command("BF.EXISTS", "w2", "x"), 1)
        self.assertEqual(self.r.execute_command("BF.INFO", "w2", "ITEMS"), [1])

    def test_scandump_and_loadchunk_round_trip(self):
        self.reserve()
        self.r.execute_command("BF.MADD", "w", *[f"i{n}" for n in range(200)])
        chunks, it = [], 0
        while True:
            it, data = self.r.execute_command("BF.SCANDUMP", "w", it)
            if it == 0:
                break
            chunks.append((it, data))
        for it, data in chunks:
            self.r.execute_command("BF.LOADCHUNK", "copy", it, data)
        self.assertEqual(self.r.type("copy"), b"MBbloomW-")
        self.assertEqual(self.r.execute_command("BF.MEXISTS", "copy", "i0", "i199", "nope"),
                         [1, 1, 0])

    def test_health_covers_windowed_filters(self):
        self.reserve()
        self.r.execute_command("BF.MADD", "w", "a", "b")
        reply = self.r.execute_command("BLOOMGATE.HEALTH", "w")
        self.assertTrue(reply)


class WindowedBloomRestarts(unittest.TestCase):
    """A restart inside the window remembers; one across its end forgets."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="bloomgate-window-")
        self.addCleanup(self.tmp.cleanup)
        self.data_dir = os.path.join(self.tmp.name, "data")
        os.mkdir(self.data_dir)
        self.servers = []

    def start(self):
        server = PersistentServer(self.data_dir, ("--appendonly", "yes", "--save", ""),
                                  log_path=os.path.join(self.tmp.name,
                                                        f"server-{len(self.servers)}.log"))
        self.servers.append(server)
        self.addCleanup(lambda: server.kill9() if server.alive() else server._cleanup())
        server.start()
        client = server.client()
        self.addCleanup(client.close)
        return server, client

    def check(self, from_snapshot):
        server, r = self.start()
        r.execute_command("BF.RESERVE", "w", "0.01", "1000", "WINDOW", WINDOW_S,
                          "GENERATIONS", GENERATIONS)
        r.execute_command("BF.MADD", "w", "early", "both")
        if from_snapshot:
            r.execute_command("SAVE")
        time.sleep(0.6)  # the next generation, then more adds in the log
        r.execute_command("BF.MADD", "w", "late", "both")
        added_late = time.monotonic()
        # kill -9: no shutdown save, so what comes back is the log's replay
        # (on top of the snapshot when there is one).
        server.kill9()
        # Restart inside the window: everything is there, and re-adds say 0.
        server, r = self.start()
        self.assertEqual(r.execute_command("BF.MEXISTS", "w", "early", "late", "both", "nope"),
                         [1, 1, 1, 0])
        self.assertEqual(r.execute_command("BF.CARD", "w"), 3)
        self.assertEqual(r.execute_command("BF.ADD", "w", "late"), 0)
        late_readded = time.monotonic()
        server.stop()
        # Restart after the window of the last add has passed while down.
        time.sleep(max(0.0, late_readded + GONE_BY_S + 0.05 - time.monotonic()))
        server, r = self.start()
        self.assertEqual(r.execute_command("BF.MEXISTS", "w", "early", "late", "both"),
                         [0, 0, 0])
        self.assertEqual(r.execute_command("BF.CARD", "w"), 0)
        self.assertEqual(r.execute_command("BF.ADD", "w", "late"), 1)
        del added_late

    def test_restart_from_the_log(self):
        self.check(from_snapshot=False)

    def test_restart_from_a_snapshot_and_the_log(self):
        self.check(from_snapshot=True)


if __name__ == "__main__":
    unittest.main()
