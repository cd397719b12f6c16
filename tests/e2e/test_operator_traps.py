"""Traps an operator falls into, each with the behaviour that keeps them safe:

- out of file descriptors, the server neither floods its log nor spins: it
  sizes maxclients to the fd limit at start-up (one warning) and, when
  accepts still fail with EMFILE, pauses accepting instead of retrying at
  once;
- SIGHUP (a closed terminal, a service manager's reload) is logged and
  ignored: the server goes on and SIGTERM still saves and exits cleanly;
- `bloomgate build --output` refuses a data directory a server holds, and a
  file that exists, without --force.
"""

import os
import re
import resource
import signal
import subprocess
import time
import unittest

from harness import BloomgateServer, RawConnection, run_bloomgate, wait_until
from test_startup import StartupTestCase

# soft = hard: the server cannot raise it. One worker on epoll: the server
# reserves 32 + 1 listener + 3 per worker = 36 descriptors, which leaves 28
# clients (io-backend auto or io_uring reserves a ring's one more per worker).
FD_LIMIT = 64
CLIENTS = 60
# What "the log stays small" means: the accept failure and the refused
# clients are each one line a second at most; a few seconds of either, plus
# start-up, is far below this (the flood was ~450,000 lines a second).
MAX_LOG_LINES = 60
WATCH_S = 3.0


class LimitedServer(BloomgateServer):
    """A BloomgateServer started with RLIMIT_NOFILE = FD_LIMIT (soft and hard)."""

    def start(self):
        real_popen = subprocess.Popen

        def popen(*args, **kwargs):
            kwargs["preexec_fn"] = lambda: resource.setrlimit(resource.RLIMIT_NOFILE,
                                                              (FD_LIMIT, FD_LIMIT))
            return real_popen(*args, **kwargs)

        subprocess.Popen = popen
        try:
            return super().start()
        finally:
            subprocess.Popen = real_popen


def log_lines(server):
    with open(server.log_path, "rb") as f:
        return sum(1 for _ in f)


def open_clients(port, n):
    """n connections that each sent PING (whatever the server does with them)."""
    clients = []
    for _ in range(n):
        c = RawConnection(port, timeout=5.0)
        c.send(b"PING\r\n")
        clients.append(c)
    return clients


class FileDescriptorLimitTest(unittest.TestCase):
    def setUp(self):
        self.server = LimitedServer(["--threads", "1", "--io-backend", "epoll", "--save", "",
                                     "--appendonly", "no"])
        self.server.start()
        self.addCleanup(lambda: self.server.stop(check=False) if self.server.alive() else None)
        self.clients = []
        self.addCleanup(self.close_clients)

    def close_clients(self):
        for c in self.clients:
            c.close()
        self.clients = []

    def assert_log_stays_small(self):
        deadline = time.monotonic() + WATCH_S
        while time.monotonic() < deadline:
            lines = log_lines(self.server)
            self.assertLess(lines, MAX_LOG_LINES,
                            f"the log grew to {lines} lines\n{self.server.log()[-3000:]}")
            time.sleep(0.05)

    def assert_answers_a_new_client(self):
        def pong():
            try:
                with self.server.raw(timeout=2.0) as c:
                    return c.call("PING") == "PONG"
            except OSError:
                return False
        wait_until(pong, 10.0, interval_s=0.05, what="a new client to get PONG")

    def test_start_up_lowers_maxclients_to_the_fd_limit_with_one_warning(self):
        with self.server.raw() as c:
            maxclients = int(c.call("CONFIG", "GET", "maxclients")[1])
        self.assertEqual(maxclients, FD_LIMIT - 36, self.server.log())
        log = self.server.log()
        self.assertEqual(log.count("maxclients has been reduced to 28"), 1, log)
        self.assertIn("maxclients 10000 needs 10036 open files", log)
        # More clients than fit: the extra ones are refused, the log stays
        # small, and once they are gone a new client is served.
        self.clients = open_clients(self.server.port, CLIENTS)
        replies = [c.read_reply() for c in self.clients]
        served = replies.count("PONG")
        # (The CONFIG GET client's close may not have been seen yet.)
        self.assertIn(served, (maxclients - 1, maxclients), replies)
        self.assertEqual(replies.count("ERR max number of clients reached"), CLIENTS - served,
                         replies)
        self.assert_log_stays_small()
        self.close_clients()
        self.assert_answers_a_new_client()

    def test_out_of_descriptors_the_acceptor_pauses_and_logs_once_a_second(self):
        # maxclients above what the limit holds (CONFIG SET does not check
        # it): accepts fail with EMFILE once the descriptors run out.
        with self.server.raw() as c:
            self.assertEqual(c.call("CONFIG", "SET", "maxclients", "1000"), "OK")
        self.clients = open_clients(self.server.port, CLIENTS)
        wait_until(lambda: "Too many open files" in self.server.log(), 10.0,
                   what="an accept to fail with EMFILE")
        self.assert_log_stays_small()
        log = self.server.log()
        self.assertIn("accepting again every 100 ms", log)
        self.assertTrue(self.server.alive())
        self.close_clients()
        self.assert_answers_a_new_client()


class SighupTest(StartupTestCase):
    def start(self):
        return super().start("--appendonly", "no", "--save", "3600 1")

    def test_sighup_is_logged_once_and_ignored_then_sigterm_saves(self):
        server = self.start()
        with server.raw() as c:
            self.assertEqual(c.call("BF.ADD", "kept", "a"), 1)
        server.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: "received SIGHUP" in server.log() or not server.alive(), 10.0,
                   what="the SIGHUP line")
        self.assertTrue(server.alive(), f"SIGHUP ended the server\n{server.log()}")
        with server.raw() as c:
            self.assertEqual(c.call("PING"), "PONG")
            self.assertEqual(c.call("BF.ADD", "kept", "b"), 1)
        self.assertEqual(server.log().count("received SIGHUP"), 1, server.log())
        self.assertEqual(server.stop(), 0)
        log = server.final_log
        self.assertIn("saving the final snapshot before exit", log)
        self.assertFalse(os.path.exists(os.path.join(self.data_dir, "bloomgate.lock")))
        server = self.start()
        with server.raw() as c:
            self.assertEqual(c.call("BF.MEXISTS", "kept", "a", "b"), [1, 1])
        server.stop()


class BuildIntoALiveDirTest(StartupTestCase):
    def setUp(self):
        super().setUp()
        self.items = os.path.join(self.tmp.name, "items.txt")
        with open(self.items, "w") as f:
            f.write("".join(f"item{i}\n" for i in range(100)))

    def start(self):
        return super().start("--appendonly", "yes")

    def build(self, output, *extra):
        return run_bloomgate(["build", "--input", self.items, "--output", output, *extra])

    def test_a_locked_dir_is_refused_and_the_servers_writes_survive(self):
        server = self.start()
        with server.raw() as c:
            for i in range(22):
                self.assertEqual(c.call("BF.ADD", f"written{i}", "x"), 1)
        output = os.path.join(self.data_dir, "dump.bgs")
        done = self.build(output)
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertIn("is in use by a running bloomgate", done.stderr)
        self.assertIn("--force", done.stderr)
        self.assertFalse(os.path.exists(output))
        server.kill9()
        server = self.start()
        with server.raw() as c:
            self.assertEqual(c.call("DBSIZE"), 22, server.log())

    def test_an_existing_file_is_refused_without_force(self):
        output = os.path.join(self.tmp.name, "filters.bgs")
        self.assertEqual(self.build(output).returncode, 0)
        before = os.path.getmtime(output), os.path.getsize(output)
        done = self.build(output, "--key", "other")
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertIn("exists", done.stderr)
        self.assertIn("--force", done.stderr)
        self.assertEqual((os.path.getmtime(output), os.path.getsize(output)), before)
        done = self.build(output, "--key", "other", "--force")
        self.assertEqual(done.returncode, 0, done.stderr)
        check = run_bloomgate(["check-snapshot", output])
        self.assertIn("  other (MBbloom--)", check.stdout)

    def test_a_log_superseded_by_a_built_snapshot_is_a_warning_with_its_count(self):
        # A build into a stopped (here: killed) server's dir: the built snapshot
        # names a newer log generation, so the old logs are not replayed.
        server = self.start()
        with server.raw() as c:
            for i in range(22):
                self.assertEqual(c.call("BF.ADD", f"written{i}", "x"), 1)
        server.kill9()
        done = self.build(os.path.join(self.data_dir, "dump.bgs"))
        self.assertEqual(done.returncode, 0, done.stderr)
        server = self.start()
        log = server.log()
        match = re.search(r"\[warning\].*appendonly\.bglog\.1.* (\d+) records? .*older than "
                          r"the snapshot", log)
        self.assertIsNotNone(match, log)
        self.assertGreaterEqual(int(match.group(1)), 22, log)
        # Kept for the operator, under a name no start-up replays.
        self.assertTrue(os.path.exists(os.path.join(self.data_dir,
                                                    "appendonly.bglog.1.superseded")))
        server.stop()


if __name__ == "__main__":
    unittest.main()
