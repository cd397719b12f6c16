"""Start-up as an operator meets it: one server per data directory, clear
words about a directory that cannot be used, and a server that listens
first and answers -LOADING (with its progress in INFO and the log) while it
loads.

A slow load comes from the test hook BLOOMGATE_TEST_LOAD_BYTES_PER_SEC,
which caps the loader's read rate, so a snapshot of a megabyte takes
seconds to load instead of needing gigabytes.
"""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from harness import (PersistentServer, RawConnection, RespError, free_port, parse_info,
                     run_bloomgate, server_binary, wait_until)

LOADING = "LOADING Bloomgate is loading the dataset in memory"
START_DEADLINE_S = 10.0
LOAD_DEADLINE_S = 30.0


def run_to_exit(args, cwd=None, prefix=()):
    """Starts the server with `args` and waits for it to give up; returns
    (exit code, stdout + stderr)."""
    proc = subprocess.run([*prefix, server_binary(), "--port", str(free_port()),
                           "--bind", "127.0.0.1", *args],
                          cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=START_DEADLINE_S)
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


class StartupTestCase(unittest.TestCase):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.TemporaryDirectory(prefix="bloomgate-startup-")
        self.addCleanup(self.tmp.cleanup)
        self.data_dir = os.path.join(self.tmp.name, "data")
        os.mkdir(self.data_dir)
        self.count = 0

    def start(self, *args, ready=True, env=None):
        self.count += 1
        server = PersistentServer(self.data_dir, args,
                                  log_path=os.path.join(self.tmp.name, f"server-{self.count}.log"),
                                  ready=ready)
        saved = dict(os.environ)
        os.environ.update(env or {})
        try:
            server.start()
        finally:
            os.environ.clear()
            os.environ.update(saved)
        self.addCleanup(lambda: server.kill9() if server.alive() else server._cleanup())
        return server


class OneServerPerDataDirTest(StartupTestCase):
    def test_a_second_server_on_the_same_dir_refuses_and_the_first_still_saves(self):
        first = self.start("--save", "", "--appendonly", "yes")
        with first.raw() as c:
            self.assertEqual(c.call("BF.ADD", "bf", "x"), 1)
        before = sorted(os.listdir(self.data_dir))
        code, output = run_to_exit(["--appendonly", "yes"], cwd=self.data_dir)
        self.assertEqual(code, 1, output)
        self.assertIn("is in use by another bloomgate", output)
        self.assertIn(f"pid {first.proc.pid}", output)
        self.assertEqual(sorted(os.listdir(self.data_dir)), before,
                         "the refused server must create no file in the directory")
        # The symptom was "create ...: File exists" on the next save.
        with first.raw() as c:
            self.assertEqual(c.call("BGSAVE"), "Background saving started")
            info = wait_until(
                lambda: (lambda i: i if i["rdb_bgsave_in_progress"] == "0" else None)(
                    parse_info(c.call("INFO", "persistence"))),
                LOAD_DEADLINE_S, what="the background save to finish")
        self.assertEqual(info["rdb_last_bgsave_status"], "ok", first.log())
        self.assertEqual(info["rdb_saves"], "1")
        first.stop()
        self.assertNotIn("bloomgate.lock", os.listdir(self.data_dir),
                         "a clean stop removes its lock file")

    def test_the_lock_of_a_killed_server_does_not_block_the_next(self):
        first = self.start()
        first.kill9()
        second = self.start()
        with second.raw() as c:
            self.assertEqual(c.call("PING"), "PONG")

    def test_a_refused_port_writes_nothing_in_the_data_dir(self):
        with socket_bound() as port:
            code, output = run_to_exit(["--port", str(port), "--appendonly", "yes"],
                                       cwd=self.data_dir)
        self.assertEqual(code, 1, output)
        self.assertIn("cannot listen", output)
        self.assertEqual(os.listdir(self.data_dir), [], "no log generation before the bind")


class socket_bound:
    """A loopback port held open (listening) for the block."""

    def __enter__(self):
        import socket
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        return self.sock.getsockname()[1]

    def __exit__(self, *exc):
        self.sock.close()


class DataDirMessagesTest(StartupTestCase):
    def assertSaysOnce(self, output, text):
        self.assertEqual(output.count(text), 1, output)
        for misleading in ("starting empty", "cannot load the data"):
            self.assertNotIn(misleading, output)

    def test_a_missing_data_dir_is_named_once(self):
        missing = os.path.join(self.tmp.name, "nope")
        code, output = run_to_exit(["--dir", missing])
        self.assertEqual(code, 1, output)
        self.assertSaysOnce(output, f"the data directory '{missing}' does not exist")

    def test_a_file_as_data_dir_is_named_once(self):
        path = os.path.join(self.tmp.name, "a-file")
        open(path, "w").close()
        code, output = run_to_exit(["--dir", path])
        self.assertEqual(code, 1, output)
        self.assertSaysOnce(output, f"the data directory '{path}' is not a directory")

    def test_a_data_dir_that_is_not_writable_is_named_once(self):
        os.chmod(self.tmp.name, 0o755)
        if os.geteuid() == 0:
            # root writes anywhere: run the server as nobody instead.
            if shutil.which("setpriv") is None:
                self.skipTest("running as root without setpriv")
            os.chmod(self.data_dir, 0o755)
            prefix = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
        else:
            os.chmod(self.data_dir, 0o555)
            prefix = ()
        code, output = run_to_exit(["--dir", self.data_dir], prefix=prefix)
        self.assertEqual(code, 1, output)
        self.assertSaysOnce(output, f"the data directory '{self.data_dir}' is not writable")
        self.assertEqual(os.listdir(self.data_dir), [])


class LoadingTest(StartupTestCase):
    # A Bloom filter of 400,000 items at 0.1% is ~720 KB of bits: at 150 KB/s
    # the load takes ~5 s, long enough to look at and past the 3 s log line.
    RATE = 150_000

    def make_snapshot(self):
        server = self.start("--save", "", "--appendonly", "yes")
        with server.raw() as c:
            self.assertEqual(c.call("BF.RESERVE", "big", "0.001", "400000"), "OK")
            self.assertEqual(c.call("BF.ADD", "big", "present"), 1)
            self.assertEqual(c.call("SAVE"), "OK")
            self.assertEqual(c.call("BF.ADD", "big", "in-the-log"), 1)
        server.stop()
        # What the load reads: the snapshot and the log, not the replication
        # position file beside the snapshot (dump.bgs.repl).
        return sum(os.path.getsize(os.path.join(self.data_dir, n))
                   for n in os.listdir(self.data_dir)
                   if n == "dump.bgs" or n.startswith("appendonly."))

    def start_slow_load(self):
        server = self.start("--save", "", "--appendonly", "yes", ready=False,
                            env={"BLOOMGATE_TEST_LOAD_BYTES_PER_SEC": str(self.RATE)})

        def loading_reply():
            try:
                with RawConnection(server.port, timeout=1.0) as c:
                    return c.call("PING")
            except OSError:
                return None
        reply = wait_until(loading_reply, START_DEADLINE_S, what="the port to answer")
        self.assertEqual(reply, LOADING, "PING is not loading-flagged (as in Redis)")
        return server

    def test_clients_get_loading_and_info_shows_progress_until_the_data_is_in(self):
        total = self.make_snapshot()
        server = self.start_slow_load()
        with server.raw() as c:
            self.assertEqual(c.call("BF.EXISTS", "big", "present"), LOADING)
            self.assertEqual(c.call("DBSIZE"), LOADING)
            self.assertEqual(c.call("BGSAVE"), LOADING)
            # Loading-flagged rows answer: INFO, HELLO, CONFIG GET, TIME.
            info = parse_info(c.call("INFO", "persistence"))
            self.assertEqual(c.call("CONFIG", "GET", "appendonly"), [b"appendonly", b"yes"])
            self.assertEqual(info["loading"], "1")
            self.assertEqual(int(info["loading_total_bytes"]), total)
            loaded = int(info["loading_loaded_bytes"])
            self.assertLess(loaded, total)
            self.assertGreaterEqual(float(info["loading_loaded_perc"]), 0.0)
            self.assertLess(float(info["loading_loaded_perc"]), 100.0)
            self.assertGreaterEqual(int(info["loading_eta_seconds"]), 0)
            self.assertIn("loading_bytes_per_sec", info)
            # Progress moves.
            wait_until(lambda: int(parse_info(c.call("INFO", "persistence"))
                                   ["loading_loaded_bytes"] or 0) > loaded,
                       LOAD_DEADLINE_S, interval_s=0.1, what="loading_loaded_bytes to grow")
            # MULTI is loading-flagged; what it would queue is refused.
            self.assertEqual(c.call("MULTI"), "OK")
            self.assertEqual(c.call("BF.ADD", "big", "y"), LOADING)
            self.assertEqual(c.call("DISCARD"), "OK")
            wait_until(lambda: c.call("PING") == "PONG", LOAD_DEADLINE_S, interval_s=0.1,
                       what="the load to finish")
            self.assertEqual(parse_info(c.call("INFO", "persistence"))["loading"], "0")
            self.assertEqual(c.call("BF.MEXISTS", "big", "present", "in-the-log"), [1, 1])
        log = server.log()
        self.assertIn("loading: ", log, "no progress line during a ~5 s load")
        self.assertIn("ready to accept commands", log)

    def test_sigterm_while_loading_stops_at_once_and_saves_nothing(self):
        self.make_snapshot()
        snapshot = os.path.join(self.data_dir, "dump.bgs")
        with open(snapshot, "rb") as f:
            before = f.read()
        names = sorted(os.listdir(self.data_dir))
        server = self.start_slow_load()
        started = time.monotonic()
        self.assertEqual(server.stop(signal.SIGTERM), 0)
        self.assertLess(time.monotonic() - started, 4.0, "the load was not interrupted")
        with open(snapshot, "rb") as f:
            self.assertEqual(f.read(), before, "a half-loaded keyspace was saved")
        self.assertEqual(sorted(os.listdir(self.data_dir)), names)
        # And the data is all there on the next start.
        server = self.start("--save", "", "--appendonly", "yes")
        with server.raw() as c:
            self.assertEqual(c.call("BF.MEXISTS", "big", "present", "in-the-log"), [1, 1])


ISO_MS = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \((\d+) ms\)"


def iso_of(ms):
    seconds, millis = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


class StartupLogTest(StartupTestCase):
    """The first lines an operator reads after a restart."""

    def test_settings_and_whether_the_last_stop_was_clean_are_logged(self):
        server = self.start("--appendonly", "yes", "--appendfsync", "always",
                            "--save", "900 1 60 500")
        log = server.log()
        self.assertRegex(log, re.escape(f"persistence: dir {os.path.realpath(self.data_dir)}") +
                         "/?" + re.escape(", dbfilename dump.bgs, save \"900 1 60 500\", "
                                          "appendonly yes (appendfsync always)"))
        self.assertIn("protected-mode yes (no password: only loopback clients are served); "
                      "TLS off", log)
        self.assertIn("previous shutdown was clean", log)
        pid = server.proc.pid
        server.kill9()
        server = self.start("--appendonly", "no", "--save", "")
        log = server.log()
        self.assertIn("previous shutdown was not clean: the bloomgate.lock of "
                      f"pid {pid} was left behind", log)
        self.assertIn('save "" (no scheduled snapshots), appendonly no', log)
        server.stop()
        server = self.start()
        self.assertIn("previous shutdown was clean", server.log())
        self.assertNotIn("not clean", server.log())
        server.stop()


class OfflineChecksTest(StartupTestCase):
    """check-snapshot and check-log: what a file holds, with dates."""

    def test_check_snapshot_prints_utc_dates_beside_the_ms(self):
        server = self.start("--appendonly", "no")
        with server.raw() as c:
            c.call("BF.ADD", "forever", "x")
            c.call("BF.ADD", "brief", "x")
            c.call("PEXPIREAT", "brief", 4102444800000)  # 2100-01-01T00:00:00Z
            self.assertEqual(c.call("SAVE"), "OK")
        server.stop()
        checked = run_bloomgate(["check-snapshot", os.path.join(self.data_dir, "dump.bgs")])
        self.assertEqual(checked.returncode, 0, checked.stderr)
        created = re.search(r"created " + ISO_MS, checked.stdout)
        self.assertIsNotNone(created, checked.stdout)
        self.assertIn(f"created {iso_of(int(created.group(1)))} ", checked.stdout)
        self.assertIn("brief (MBbloom--) expires 2100-01-01T00:00:00.000Z (4102444800000 ms)",
                      checked.stdout)
        self.assertIn("forever (MBbloom--) no expiry", checked.stdout)

    def log_files(self):
        return sorted(name for name in os.listdir(self.data_dir)
                      if re.fullmatch(r"appendonly\.bglog\.\d+", name))

    def test_check_log_counts_the_records_and_names_where_a_log_is_damaged(self):
        server = self.start("--appendonly", "yes", "--save", "")
        with server.raw() as c:
            c.call("BF.RESERVE", "b", "0.01", "100")
            for i in range(10):
                c.call("BF.ADD", "b", f"item{i}")
            c.call("CMS.INITBYDIM", "cms", "10", "2")
            c.call("CMS.INCRBY", "cms", "x", "3")
            c.call("DEL", "cms")
        server.kill9()
        [name] = self.log_files()
        path = os.path.join(self.data_dir, name)
        checked = run_bloomgate(["check-log", path])
        self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)
        summary = re.match(rf"{re.escape(path)}: (\d+) records in (\d+) bytes, "
                           rf"first {ISO_MS}, last {ISO_MS}\n", checked.stdout)
        self.assertIsNotNone(summary, checked.stdout)
        records = int(summary.group(1))
        self.assertGreaterEqual(records, 13, checked.stdout)
        self.assertLessEqual(int(summary.group(3)), int(summary.group(4)))
        counts = dict(re.findall(r"(?m)^  (.+): (\d+)$", checked.stdout))
        self.assertEqual(sum(map(int, counts.values())), records, checked.stdout)
        self.assertEqual(counts.get("DEL"), "1", checked.stdout)
        self.assertIn("all checksums good", checked.stdout)

        with open(path, "rb") as f:
            good = f.read()
        # A torn final record: what a crash during its write leaves.
        with open(path, "wb") as f:
            f.write(good[:-3])
        checked = run_bloomgate(["check-log", path])
        self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)
        self.assertIn(f"{records - 1} records", checked.stdout)
        self.assertIn("the final record is torn at byte", checked.stdout)
        # Damage in the middle: named, exit 1, the file left as it is.
        middle = len(good) // 2
        damaged = good[:middle] + bytes([good[middle] ^ 0xFF]) + good[middle + 1:]
        with open(path, "wb") as f:
            f.write(damaged)
        checked = run_bloomgate(["check-log", path])
        self.assertEqual(checked.returncode, 1, checked.stdout + checked.stderr)
        self.assertIn("damaged after record", checked.stdout)
        self.assertIn(name, checked.stderr)
        with open(path, "rb") as f:
            self.assertEqual(f.read(), damaged)

    def test_build_explains_the_gap_between_items_read_and_counted(self):
        items = os.path.join(self.tmp.name, "items.txt")
        with open(items, "w") as f:
            f.write("".join(f"i{i}\n" for i in range(500)) + "i1\ni2\ni3\n")
        out = os.path.join(self.tmp.name, "out.bgs")
        done = run_bloomgate(["build", "--input", items, "--output", out])
        self.assertEqual(done.returncode, 0, done.stderr)
        found = re.search(r"(\d+) items read, (\d+) counted", done.stdout)
        self.assertIsNotNone(found, done.stdout)
        read, counted = int(found.group(1)), int(found.group(2))
        self.assertEqual(read, 503)
        self.assertLessEqual(counted, 500)
        self.assertIn(f"{read - counted} of the items read were not counted: the filter "
                      "already answered yes for them, as repeated lines or false positives",
                      done.stdout)


class CommandLineTest(unittest.TestCase):
    def test_help_lists_the_sub_commands_and_each_has_its_own_help(self):
        top = run_bloomgate(["--help"])
        self.assertEqual(top.returncode, 0, top.stderr)
        head = "\n".join(top.stdout.splitlines()[:5])
        self.assertIn("bloomgate check-snapshot FILE", head)
        self.assertIn("bloomgate build --output FILE", head)
        self.assertIn("bloomgate check-log FILE", head)
        for mode, words in (("check-snapshot", "Verifies every checksum"),
                            ("check-log", "Reads the append-only log FILE"),
                            ("build", "Reads items, one per line")):
            for flag in ("--help", "-h"):
                proc = run_bloomgate([mode, flag])
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertIn(f"usage: bloomgate {mode}", proc.stdout)
                self.assertIn(words, proc.stdout)

    def test_an_unknown_option_is_one_line_with_a_did_you_mean(self):
        for args, line in (
                (["--prot", "7000"],
                 "bloomgate: unknown option '--prot'; did you mean --port? (see --help)"),
                (["build", "--outptu", "x.bgs"],
                 "bloomgate build: unknown option --outptu; did you mean --output? "
                 "(see bloomgate build --help)")):
            proc = run_bloomgate(args)
            self.assertEqual(proc.returncode, 2, proc.stderr)
            self.assertEqual(proc.stderr, line + "\n")
            self.assertEqual(proc.stdout, "")


if __name__ == "__main__":
    unittest.main()
