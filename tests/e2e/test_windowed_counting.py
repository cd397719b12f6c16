"""Windowed counting Bloom filters (CBF.RESERVE ... WINDOW seconds
[GENERATIONS n], CBF.INCR) against the real server, through redis-cli and
redis-py, with a one-second window in two generations (a period of 0.5 s):
an occurrence counts for the window after it and is gone by 1.5 s after it
(docs/commands/windowed.md). Restarts after kill -9 inside and across a
window boundary, from the log and from a snapshot.
"""

import os
import subprocess
import tempfile
import time
import unittest

from harness import PersistentServer, ServerTestCase, wait_until

WINDOW_S = 1.0
GENERATIONS = 2
GONE_BY_S = WINDOW_S + WINDOW_S / GENERATIONS  # 1.5 s
INFO_FIELDS = ["Capacity", "Size", "Number of filters", "Number of items inserted",
               "Expansion rate", "Counter bits", "Saturated counters", "Window ms",
               "Generations", "Current generation age ms", "Generation items",
               "Generation capacity"]


def cli(port, *args):
    """redis-cli (not a tty: one reply per line) and its stdout, stripped."""
    done = subprocess.run(["redis-cli", "-p", str(port), *map(str, args)],
                          capture_output=True, text=True, timeout=10, check=True)
    return done.stdout.strip()


class WindowedCountingCommands(ServerTestCase):

    def reserve(self, key="w", *extra):
        return self.r.execute_command("CBF.RESERVE", key, "0.01", "1000", "WINDOW", WINDOW_S,
                                      "GENERATIONS", GENERATIONS, *extra)

    def test_third_hit_admission_through_redis_cli(self):
        self.assertEqual(cli(self.port, "CBF.RESERVE", "hits", "0.01", "1000", "WINDOW", "1",
                             "GENERATIONS", "2"), "OK")
        self.assertEqual(cli(self.port, "CBF.INCR", "hits", "/a.jpg"), "1")
        self.assertEqual(cli(self.port, "CBF.INCR", "hits", "/a.jpg"), "2")
        self.assertEqual(cli(self.port, "CBF.INCR", "hits", "/a.jpg", "/b.jpg"), "3\n1")
        self.assertEqual(cli(self.port, "TYPE", "hits"), "BGcountWB")

    def test_commands_through_redis_py(self):
        self.reserve()
        r = self.r
        self.assertEqual(r.execute_command("CBF.ADD", "w", "x"), 1)
        self.assertEqual(r.execute_command("CBF.MADD", "w", "x", "y"), [0, 1])
        self.assertEqual(r.execute_command("CBF.EXISTS", "w", "y"), 1)
        self.assertEqual(r.execute_command("CBF.MEXISTS", "w", "x", "y", "z"), [1, 1, 0])
        self.assertEqual(r.execute_command("CBF.COUNT", "w", "x"), 2)
        self.assertEqual(r.execute_command("CBF.CARD", "w"), 3)
        self.assertEqual(r.execute_command("CBF.DEL", "w", "x"), 1)
        self.assertEqual(r.execute_command("CBF.MDEL", "w", "x", "x", "never"), [1, 0, 0])
        self.assertEqual(r.execute_command("CBF.COUNT", "w", "x"), 0)
        self.assertEqual(r.execute_command("CBF.CARD", "w"), 1)
        self.assertEqual(r.execute_command("CBF.INSERT", "w", "ITEMS", "z", "y"), [1, 0])

    def test_info_keeps_the_counting_fields_first(self):
        self.reserve("w", "COUNTERBITS", "8")
        self.r.execute_command("CBF.INCR", "w", "a", "b", "a")
        reply = self.r.execute_command("CBF.INFO", "w")
        names = [k.decode() for k in reply[0::2]]
        self.assertEqual(names, INFO_FIELDS)
        info = dict(zip(names, reply[1::2]))
        self.assertEqual(info["Number of items inserted"], 3)
        self.assertEqual(info["Counter bits"], 8)
        self.assertEqual(info["Window ms"], 1000)
        self.assertEqual(info["Generations"], 2)
        self.assertEqual(info["Generation items"][0], 3)
        self.assertEqual(self.r.execute_command("CBF.INFO", "w", "WINDOW"), [1000])

    def test_bad_options_are_refused_and_create_nothing(self):
        cases = [
            (("WINDOW", "0"), "WINDOW must be a number of seconds in [0.001, 316224000]"),
            (("WINDOW", "1", "GENERATIONS", "65"), "GENERATIONS must be in the range [1, 64]"),
            (("GENERATIONS", "4"), "GENERATIONS requires WINDOW"),
            (("WINDOW", "1", "NONSCALING"),
             "WINDOW cannot be combined with NONSCALING or EXPANSION 0"),
        ]
        for extra, message in cases:
            with self.subTest(extra=extra):
                with self.assertRaises(Exception) as caught:
                    self.r.execute_command("CBF.RESERVE", "bad", "0.01", "100", *extra)
                self.assertEqual(str(caught.exception), message)
                self.assertEqual(self.r.exists("bad"), 0)
        with self.assertRaises(Exception) as caught:
            self.r.execute_command("CBF.INSERT", "bad", "NOCREATE", "WINDOW", "1", "ITEMS", "x")
        self.assertEqual(str(caught.exception),
                         "NOCREATE cannot be combined with WINDOW or GENERATIONS")
        self.assertEqual(self.r.exists("bad"), 0)

    def test_insert_creates_a_windowed_counting_filter(self):
        self.assertEqual(self.r.execute_command("CBF.INSERT", "i", "CAPACITY", "50", "WINDOW",
                                                "1", "ITEMS", "a", "a"), [1, 0])
        self.assertEqual(self.r.type("i"), b"BGcountWB")
        self.assertEqual(self.r.execute_command("CBF.COUNT", "i", "a"), 2)

    def test_counts_age_out_after_their_window(self):
        self.reserve()
        added = time.monotonic()
        self.assertEqual(self.r.execute_command("CBF.INCR", "w", "old", "old"), [1, 2])
        wait_until(lambda: self.r.execute_command("CBF.COUNT", "w", "old") == 0,
                   deadline_s=GONE_BY_S + 1, what="the occurrences aged out")
        self.assertGreaterEqual(time.monotonic() - added, WINDOW_S, "dropped inside its window")
        self.assertEqual(self.r.execute_command("CBF.INCR", "w", "old"), [1])

    def test_rename_copy_dump_restore_keep_the_window(self):
        self.reserve()
        self.r.execute_command("CBF.INCR", "w", "x", "x")
        self.r.rename("w", "w2")
        self.assertEqual(self.r.execute_command("CBF.COUNT", "w2", "x"), 2)
        self.assertEqual(self.r.copy("w2", "w3"), 1)
        self.assertEqual(self.r.execute_command("CBF.COUNT", "w3", "x"), 2)
        payload = self.r.dump("w2")
        self.r.restore("w4", 0, payload)
        self.assertEqual(self.r.type("w4"), b"BGcountWB")
        self.assertEqual(self.r.execute_command("CBF.INCR", "w4", "x"), [3])
        self.assertEqual(self.r.execute_command("CBF.COUNT", "w2", "x"), 2)  # copies are apart

    def test_scandump_and_loadchunk_round_trip(self):
        self.reserve()
        self.r.execute_command("CBF.MADD", "w", *[f"i{n}" for n in range(200)])
        self.r.execute_command("CBF.INCR", "w", "i0")
        chunks, it = [], 0
        while True:
            it, data = self.r.execute_command("CBF.SCANDUMP", "w", it)
            if it == 0:
                break
            chunks.append((it, data))
        for it, data in chunks:
            self.r.execute_command("CBF.LOADCHUNK", "copy", it, data)
        self.assertEqual(self.r.type("copy"), b"BGcountWB")
        self.assertEqual(self.r.execute_command("CBF.COUNT", "copy", "i0"), 2)
        self.assertEqual(self.r.execute_command("CBF.MEXISTS", "copy", "i199", "nope"), [1, 0])

    def test_health_covers_windowed_counting_filters(self):
        self.reserve()
        self.r.execute_command("CBF.MADD", "w", "a", "b")
        self.assertTrue(self.r.execute_command("BLOOMGATE.HEALTH", "w"))


class WindowedCountingRestarts(unittest.TestCase):
    """kill -9, then a restart inside the window remembers the counts; one
    after the window has passed while down forgets them."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="bloomgate-wcount-")
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
        r.execute_command("CBF.RESERVE", "w", "0.01", "1000", "WINDOW", WINDOW_S,
                          "GENERATIONS", GENERATIONS)
        self.assertEqual(r.execute_command("CBF.INCR", "w", "early", "both", "gone"), [1, 1, 1])
        if from_snapshot:
            r.execute_command("SAVE")
        time.sleep(0.6)  # the next generation, then more writes in the log
        self.assertEqual(r.execute_command("CBF.INCR", "w", "late", "both"), [1, 2])
        self.assertEqual(r.execute_command("CBF.DEL", "w", "gone"), 1)
        server.kill9()  # no shutdown save: the log's replay comes back
        # Inside the window: every acknowledged count, the delete included.
        server, r = self.start()
        self.assertEqual([r.execute_command("CBF.COUNT", "w", k)
                          for k in ("early", "late", "both", "gone", "nope")], [1, 1, 2, 0, 0])
        self.assertEqual(r.execute_command("CBF.CARD", "w"), 4)
        self.assertEqual(r.execute_command("CBF.INCR", "w", "late"), [2])
        readded = time.monotonic()
        server.kill9()
        # Across the boundary: the last add's window passed while down.
        time.sleep(max(0.0, readded + GONE_BY_S + 0.05 - time.monotonic()))
        server, r = self.start()
        self.assertEqual([r.execute_command("CBF.COUNT", "w", k)
                          for k in ("early", "late", "both")], [0, 0, 0])
        self.assertEqual(r.execute_command("CBF.CARD", "w"), 0)
        self.assertEqual(r.execute_command("CBF.INCR", "w", "late"), [1])

    def test_restart_from_the_log(self):
        self.check(from_snapshot=False)

    def test_a_windowed_merge_survives_kill9(self):
        server, r = self.start()
        for key in ("s1", "s2", "b1", "b2"):
            family = "CBF" if key.startswith("s") else "BF"
            r.execute_command(f"{family}.RESERVE", key, "0.01", "1000", "WINDOW", 10,
                              "GENERATIONS", 2, "SEED", 42)
        r.execute_command("CBF.INCR", "s1", "x", "x")
        r.execute_command("CBF.INCR", "s2", "x", "y")
        r.execute_command("BF.MADD", "b1", "p")
        r.execute_command("BF.MADD", "b2", "q")
        self.assertEqual(r.execute_command("CBF.MERGE", "all", "s1", "s2"), b"OK")
        self.assertEqual(r.execute_command("BF.MERGE", "ball", "b1", "b2"), b"OK")
        server.kill9()
        server, r = self.start()  # the merges' results come back from the log
        self.assertEqual(r.execute_command("CBF.COUNT", "all", "x"), 3)
        self.assertEqual(r.execute_command("CBF.COUNT", "all", "y"), 1)
        self.assertEqual(r.execute_command("BF.MEXISTS", "ball", "p", "q", "z"), [1, 1, 0])
        self.assertEqual(r.type("all"), b"BGcountWB")

    def test_restart_from_a_snapshot_and_the_log(self):
        self.check(from_snapshot=True)


if __name__ == "__main__":
    unittest.main()
