"""CLIENT PAUSE / UNPAUSE, MONITOR and RESET's parser limits against the real
binary, over TCP and TLS, through raw sockets, redis-py and redis-cli's
monitor mode. One server per class; each test undoes its pause."""

import re
import select
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import redis

from harness import (BloomgateServer, RawConnection, ServerTestCase, encode_command,
                     wait_until)

MONITOR_LINE = re.compile(rb'^\+(\d+)\.(\d{6}) \[0 127\.0\.0\.1:(\d+)\] (.*)$')


def info(client, section="clients"):
    return client.info(section)


def blocked(client):
    return int(info(client)["blocked_clients"])


def flags_of(client, client_id):
    """CLIENT LIST's flags= of the client with this id."""
    return {c["id"]: c["flags"] for c in client.client_list()}[str(client_id)]


def nothing_to_read(conn, wait_s=0.2):
    """No reply bytes are waiting on `conn` (after a short look)."""
    if conn.buf:
        return False
    readable, _, _ = select.select([conn.sock], [], [], wait_s)
    return not readable


class PauseTests:
    """Each test ends its pause (tearDown of OnePlainServerTest)."""

    def test_a_write_waits_for_unpause_while_reads_go_on(self):
        self.r.execute_command("BF.ADD", "k", "before")
        self.assertEqual(self.r.execute_command("CLIENT", "PAUSE", "100000", "WRITE"), b"OK")
        writer = self.raw()
        writer_id = writer.call("CLIENT", "ID")
        writer.send(encode_command("BF.ADD", "k", "held"))
        wait_until(lambda: blocked(self.r) == 1, 5, what="the write to be held")
        self.assertEqual(flags_of(self.r, writer_id), "b", "a held client is blocked, as in Redis")
        self.assertEqual(self.r.execute_command("BF.EXISTS", "k", "held"), 0)
        self.assertEqual(self.r.ping(), True)
        self.assertTrue(nothing_to_read(writer), "a held write was answered")
        self.assertEqual(self.r.execute_command("CLIENT", "UNPAUSE"), b"OK")
        self.assertEqual(writer.read_reply(), 1)
        self.assertEqual(blocked(self.r), 0)
        self.assertEqual(flags_of(self.r, writer_id), "N")

    def test_a_pause_of_centuries_holds_without_spinning(self):
        # 9e18 ms is accepted (Redis's bound is INT64_MAX - now); the held
        # connection's timer is capped, not overflowed into a busy loop.
        self.r.execute_command("CLIENT", "PAUSE", "9000000000000000000", "WRITE")
        writer = self.raw()
        writer.send(encode_command("BF.ADD", "k", "a"))
        wait_until(lambda: blocked(self.r) == 1, 5, what="the write to be held")
        with open(f"/proc/{self.server.proc.pid}/stat") as f:
            before = sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:13])
        time.sleep(1.0)  # a spinning loop burns ~0.4 s of it even on a busy machine
        with open(f"/proc/{self.server.proc.pid}/stat") as f:
            after = sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:13])
        ticks = after - before  # utime + stime, 1/100 s each
        self.assertLess(ticks, 15, f"the server used {ticks / 100} s of CPU while idle")
        self.assertTrue(nothing_to_read(writer))
        self.r.execute_command("CLIENT", "UNPAUSE")
        self.assertEqual(writer.read_reply(), 1)

    def test_replies_before_a_held_write_in_a_pipeline_are_sent(self):
        self.r.execute_command("BF.ADD", "k", "a")
        self.r.execute_command("CLIENT", "PAUSE", "100000", "WRITE")
        client = self.raw()
        client.send(encode_command("BF.EXISTS", "k", "a") + encode_command("BF.ADD", "k", "b") +
                    encode_command("BF.EXISTS", "k", "b"))
        self.assertEqual(client.read_reply(), 1)
        wait_until(lambda: blocked(self.r) == 1, 5, what="the write to be held")
        self.assertTrue(nothing_to_read(client), "commands after the held write ran")
        self.r.execute_command("CLIENT", "UNPAUSE")
        self.assertEqual((client.read_reply(), client.read_reply()), (1, 1))

    def test_the_pause_ends_by_itself_and_a_longer_one_extends_it(self):
        start = time.monotonic()
        self.r.execute_command("CLIENT", "PAUSE", "200", "WRITE")
        self.r.execute_command("CLIENT", "PAUSE", "600", "WRITE")
        self.r.execute_command("CLIENT", "PAUSE", "100", "WRITE")  # shorter: no change
        writer = self.raw()
        self.assertEqual(writer.call("BF.ADD", "k", "a"), 1)
        self.assertGreaterEqual(time.monotonic() - start, 0.55)

    def test_all_holds_every_command_but_unpause(self):
        self.r.execute_command("CLIENT", "PAUSE", "100000", "WRITE")
        self.r.execute_command("CLIENT", "PAUSE", "100", "ALL")  # ALL overrides WRITE
        other = self.raw()
        other.send(encode_command("PING"))
        # INFO would be held too: no count to wait for, only silence.
        self.assertTrue(nothing_to_read(other, 0.3), "PING was answered under ALL")
        with RawConnection(self.port) as admin:
            self.assertEqual(admin.call("CLIENT", "UNPAUSE"), "OK")
        self.assertEqual(other.read_reply(), "PONG")

    def test_a_held_client_that_disconnects_is_closed_and_its_write_never_runs(self):
        writer = RawConnection(self.port)
        writer_id = writer.call("CLIENT", "ID")
        self.r.execute_command("CLIENT", "PAUSE", "100000", "WRITE")
        writer.send(encode_command("BF.ADD", "gone", "x"))
        wait_until(lambda: blocked(self.r) == 1, 5, what="the write to be held")
        writer.close()
        # By its id: other tests' connections may still be closing.
        wait_until(lambda: blocked(self.r) == 0 and
                   self.r.execute_command("CLIENT", "LIST", "ID", writer_id) in (b"", ""), 5,
                   what="the closed client to leave")
        self.r.execute_command("CLIENT", "UNPAUSE")
        self.assertEqual(self.r.exists("gone"), 0)
        self.assertServesNewClients()

    def test_expiry_deletes_nothing_while_paused(self):
        self.r.execute_command("BF.ADD", "k", "a")
        self.r.execute_command("PEXPIRE", "k", "50")
        expired = int(info(self.r, "stats")["expired_keys"])
        self.r.execute_command("CLIENT", "PAUSE", "100000", "WRITE")
        wait_until(lambda: self.r.exists("k") == 0, 5, what="the key to read as expired")
        # Several housekeeping sweeps (every 100 ms) pass: none deletes it.
        time.sleep(0.35)
        self.assertEqual(self.r.dbsize(), 1)
        self.assertEqual(int(info(self.r, "stats")["expired_keys"]), expired)
        self.r.execute_command("CLIENT", "UNPAUSE")
        wait_until(lambda: self.r.dbsize() == 0, 5, what="the key to be deleted after UNPAUSE")
        self.assertEqual(int(info(self.r, "stats")["expired_keys"]), expired + 1)

    def test_bad_arguments_get_redis_texts(self):
        self.assertRaisesText("CLIENT PAUSE mode must be WRITE or ALL",
                              self.r.execute_command, "CLIENT", "PAUSE", "10", "READ")
        self.assertRaisesText("timeout is not an integer or out of range",
                              self.r.execute_command, "CLIENT", "PAUSE", "soon")
        self.assertRaisesText("timeout is negative",
                              self.r.execute_command, "CLIENT", "PAUSE", "-5")
        self.assertEqual(self.r.execute_command("BF.ADD", "k", "a"), 1)


class MonitorTests:
    def monitor(self, resp3=False):
        conn = self.raw()
        if resp3:
            conn.call("HELLO", "3")
        self.assertEqual(conn.call("MONITOR"), "OK")
        return conn

    def lines(self, conn, count):
        """The next `count` monitor lines, each (client port, the args part)."""
        out = []
        for _ in range(count):
            value, data = conn.read_reply(raw=True)
            match = MONITOR_LINE.match(data.rstrip(b"\r\n"))
            self.assertIsNotNone(match, data)
            out.append((int(match.group(3)), match.group(4)))
        return out

    def test_commands_of_other_clients_show_in_redis_format_in_resp2_and_resp3(self):
        for resp3 in (False, True):
            with self.subTest(resp3=resp3):
                c = self.raw()
                port = int(c.call("CLIENT", "INFO").decode().split(" addr=")[1]
                           .split(" ")[0].rsplit(":", 1)[1])
                conn = self.monitor(resp3)
                c.call("BF.ADD", "k", 'a "q"\n\x01')
                c.call("BF.EXISTS", "k", "b")
                (p1, l1), (p2, l2) = self.lines(conn, 2)
                self.assertEqual(l1, rb'"BF.ADD" "k" "a \"q\"\n\x01"')
                self.assertEqual(l2, rb'"BF.EXISTS" "k" "b"')
                self.assertEqual((p1, p2), (port, port))

    def test_transactions_show_as_redis_shows_them_and_secrets_never(self):
        conn = self.monitor()
        c = self.raw()
        c.call("MULTI")
        c.call("BF.ADD", "k", "a")
        c.call("EXEC")
        c.call("AUTH", "nobody", "secret-password")
        c.call("CONFIG", "SET", "slowlog-max-len", "128")  # admin: not shown
        c.call("HELLO", "2", "AUTH", "nobody", "secret-password")
        got = [line for _, line in self.lines(conn, 5)]
        self.assertEqual(got, [b'"MULTI"', b'"BF.ADD" "k" "a"', b'"EXEC"',
                               b'"AUTH" "(redacted)" "(redacted)"',
                               b'"HELLO" "2" "AUTH" "(redacted)" "(redacted)"'])
        self.assertNotIn(b"secret", bytes(conn.buf))

    def test_a_monitor_may_not_touch_keys_and_reset_ends_monitoring(self):
        conn = self.raw()
        conn_id = conn.call("CLIENT", "ID")
        self.assertEqual(conn.call("MONITOR"), "OK")
        self.assertEqual(str(conn.call("BF.ADD", "k", "a")),
                         "ERR Replica can't interact with the keyspace")
        self.assertEqual(flags_of(self.r, conn_id), "O")
        self.assertEqual(self.lines(conn, 1)[0][1], b'"CLIENT" "LIST"')
        self.assertEqual(conn.call("RESET"), "RESET")
        self.assertEqual(flags_of(self.r, conn_id), "N")
        self.r.execute_command("BF.ADD", "k", "b")
        self.assertEqual(conn.call("BF.EXISTS", "k", "b"), 1, "no monitor line came first")

    def test_every_command_from_every_thread_reaches_the_monitor(self):
        conn = self.monitor()
        clients, per_client = 6, 150
        barrier = threading.Barrier(clients)

        def run(n):
            c = self.server.client()
            barrier.wait()
            for i in range(per_client):
                c.execute_command("BF.ADD", f"key{n}", f"item{i}")
            c.close()
        threads = [threading.Thread(target=run, args=(n,)) for n in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        got = {}
        for _, line in self.lines(conn, clients * per_client):
            m = re.match(rb'"BF.ADD" "key(\d+)" "item(\d+)"', line)
            self.assertIsNotNone(m, line)
            got.setdefault(int(m.group(1)), []).append(int(m.group(2)))
        # Each client's commands in its order, none lost or doubled.
        self.assertEqual(got, {n: list(range(per_client)) for n in range(clients)})

    def test_a_monitor_that_does_not_read_is_cut_off_at_the_output_limit(self):
        self.r.config_set("client-output-buffer-limit", "1mb")
        self.addCleanup(self.r.config_set, "client-output-buffer-limit", "64mb")
        slow = self.monitor()
        big = "x" * 60000
        for _ in range(40):  # ~24 MB of monitor lines, past any socket buffers
            pipe = self.r.pipeline(transaction=False)
            for _ in range(10):
                pipe.execute_command("ECHO", big)
            pipe.execute()
        self.assertTrue(slow.wait_closed(10), "the monitor was not cut off")
        self.assertIn("closing monitor", self.server.log())
        self.assertServesNewClients()

    def test_redis_cli_monitor_mode(self):
        if shutil.which("redis-cli") is None:
            self.skipTest("needs redis-cli")
        cli = subprocess.Popen(["redis-cli", "-p", str(self.port), "monitor"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.addCleanup(cli.wait)
        self.addCleanup(cli.kill)
        self.assertEqual(cli.stdout.readline().strip(), b"OK")
        self.r.execute_command("BF.ADD", "cli", "seen")
        line = cli.stdout.readline().strip()
        self.assertRegex(line, rb'^\d+\.\d{6} \[0 127\.0\.0\.1:\d+\] "BF.ADD" "cli" "seen"$')


class ResetLimitsTest(ServerTestCase):
    server_args = ("--requirepass", "pw")
    server_password = "pw"

    def test_reset_on_a_protected_server_brings_back_the_limits_before_auth(self):
        big = "x" * (32 * 1024)  # past the 16 KB an unauthenticated bulk may be
        conn = self.raw()  # authenticated by the helper
        self.assertEqual(conn.call("BF.ADD", "k", big), 1, "an authenticated client may")
        self.assertEqual(conn.call("RESET"), "RESET")
        self.assertEqual(str(conn.call("BF.ADD", "k", big)),
                         "ERR Protocol error: unauthenticated bulk length")
        self.assertTrue(conn.wait_closed(5))
        with RawConnection(self.port) as fresh:
            self.assertEqual(str(fresh.call("BF.ADD", "k", big)),
                             "ERR Protocol error: unauthenticated bulk length")


class OnePlainServerTest(PauseTests, MonitorTests, ServerTestCase):
    """The pause and monitor tests share one server (start-up is most of
    this file's time)."""

    def tearDown(self):
        self.r.execute_command("CLIENT", "UNPAUSE")
        super().tearDown()

    def test_without_a_password_a_big_argument_after_reset_still_works(self):
        conn = self.raw()
        self.assertEqual(conn.call("RESET"), "RESET")
        self.assertEqual(conn.call("BF.ADD", "k", "x" * (32 * 1024)), 1)


class PauseOverTlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if shutil.which("openssl") is None:
            raise unittest.SkipTest("needs openssl")
        from tls_support import TlsOnlyServer, make_certs
        cls.cert_dir = tempfile.TemporaryDirectory(prefix="bloomgate-tls-")
        cls.certs = make_certs(cls.cert_dir.name)
        cls.server = TlsOnlyServer(cls.certs).start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.cert_dir.cleanup()

    def test_a_held_tls_write_resumes_and_a_held_tls_client_may_leave(self):
        import socket
        from tls_support import client_context, tls_client
        admin = tls_client(self.server.tls_port, self.certs)
        writer = tls_client(self.server.tls_port, self.certs)
        self.addCleanup(admin.close)
        self.addCleanup(writer.close)
        admin.execute_command("CLIENT", "PAUSE", "100000", "WRITE")
        self.addCleanup(admin.execute_command, "CLIENT", "UNPAUSE")
        result = {}
        t = threading.Thread(target=lambda: result.update(
            added=writer.execute_command("BF.ADD", "k", "a")))
        t.start()
        wait_until(lambda: blocked(admin) == 1, 5, what="the TLS write to be held")
        raw = socket.create_connection(("127.0.0.1", self.server.tls_port), timeout=5)
        leaver = client_context(self.certs).wrap_socket(raw, server_hostname="localhost")
        leaver.sendall(encode_command("BF.ADD", "gone", "x"))
        wait_until(lambda: blocked(admin) == 2, 5, what="both writes to be held")
        leaver.close()
        wait_until(lambda: blocked(admin) == 1, 5, what="the leaver to be closed")
        admin.execute_command("CLIENT", "UNPAUSE")
        t.join(10)
        self.assertEqual(result.get("added"), 1)
        self.assertEqual(admin.exists("gone"), 0)


if __name__ == "__main__":
    unittest.main()
