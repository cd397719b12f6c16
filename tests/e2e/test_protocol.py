"""The wire: redis-cli, bulk loading, pipelining, many connections, inline
commands, and malformed or hostile input (after each, the server must still
serve a fresh client)."""

import os
import pty
import random
import select
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from harness import (RawConnection, RespError, ServerTestCase, NeedMore, parse_info, parse_resp,
                     encode_command, proc_status_kb, raise_fd_limit, wait_until)

N_CONNECTIONS = 500
# Each simultaneous connection is one descriptor here and one in the server
# (which inherits this limit), plus some slack for both.
raise_fd_limit(N_CONNECTIONS * 2 + 256)


def redis_cli(*args):
    """argv for the redis-cli binary (Debian's redis-tools) with `args`."""
    path = shutil.which("redis-cli")
    if path is None:
        raise AssertionError("redis-cli is not installed (Debian package redis-tools)")
    return [path, *args]


def run_with_pty(cmd, deadline_s=10.0):
    """Runs cmd with a pseudo-terminal as stdin/stdout/stderr (as a person at a
    shell would) and returns everything it printed."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + deadline_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return out.decode("utf-8", "replace")


class RedisCliTest(ServerTestCase):

    def test_redis_cli_on_a_terminal_prints_integer_1_for_a_new_item(self):
        out = run_with_pty(redis_cli("-p", str(self.port), "BF.ADD", "visits", "/a/b.jpg"))
        self.assertEqual(out.strip(), "(integer) 1")

    def test_redis_cli_in_a_pipe_prints_the_bare_reply(self):
        def cli(*args):
            return subprocess.run(redis_cli("-p", str(self.port), *args),
                                  capture_output=True, text=True, timeout=10).stdout
        self.assertEqual(cli("BF.ADD", "visits", "/a/b.jpg"), "1\n")
        self.assertEqual(cli("BF.ADD", "visits", "/a/b.jpg"), "0\n")
        self.assertEqual(cli("BF.EXISTS", "visits", "/a/b.jpg"), "1\n")
        self.assertEqual(cli("PING"), "PONG\n")

    def test_redis_cli_pipe_bulk_loads_100k_adds(self):
        n = 100_000
        self.r.bf().create("bulk", 0.001, n)
        with tempfile.TemporaryFile() as f:
            f.write(b"".join(encode_command("BF.ADD", "bulk", f"item:{i}") for i in range(n)))
            f.seek(0)
            started = time.monotonic()
            proc = subprocess.run(redis_cli("-p", str(self.port), "--pipe"), stdin=f,
                                  capture_output=True, text=True, timeout=60)
            elapsed = time.monotonic() - started
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn(f"errors: 0, replies: {n}", proc.stdout, proc.stdout)
        card = self.r.execute_command("BF.CARD", "bulk")
        # Adds that hit a false positive (bound 0.1%) reply 0 and are not counted.
        self.assertLessEqual(card, n)
        self.assertGreaterEqual(card, n - n * 0.001 * 2,
                                f"BF.CARD {card} after {n} distinct adds at 0.1% error")
        pipe = self.r.pipeline(transaction=False)
        for i in range(0, n, 5000):
            pipe.execute_command("BF.MEXISTS", "bulk", *[f"item:{j}" for j in range(i, i + 5000)])
        missing = sum(h == 0 for batch in pipe.execute() for h in batch)
        self.assertEqual(missing, 0, "every bulk-loaded item is found")
        self.assertLess(elapsed, 30, f"--pipe of {n} commands took {elapsed:.1f}s")


class PipeliningTest(ServerTestCase):

    def test_10000_pipelined_commands_in_one_write_get_10000_replies_in_order(self):
        n = 10_000
        requests, expected = [], []
        for i in range(n):
            kind = i % 4
            if kind == 0:
                requests.append(encode_command("BF.ADD", "pipe", f"item:{i}"))
                expected.append(("flag", None))
            elif kind == 1:
                requests.append(encode_command("ECHO", f"message:{i}"))
                expected.append(("value", f"message:{i}".encode()))
            elif kind == 2:
                requests.append(encode_command("BF.EXISTS", "pipe", f"item:{i - 2}"))
                expected.append(("value", 1))
            else:
                requests.append(b"PING\r\n" if i % 8 == 3 else encode_command("PING"))
                expected.append(("value", "PONG"))
        payload = b"".join(requests)

        c = self.raw(timeout=20)
        sender = threading.Thread(target=c.send, args=(payload,))
        sender.start()  # write everything in one sendall while this thread reads
        replies = [c.read_reply() for _ in range(n)]
        sender.join(timeout=20)
        self.assertFalse(sender.is_alive())
        for i, (reply, (kind, value)) in enumerate(zip(replies, expected)):
            if kind == "flag":
                self.assertIn(reply, (0, 1), f"reply #{i}")
            else:
                self.assertEqual(reply, value, f"reply #{i} out of order or wrong")
        self.assertEqual(c.call("ECHO", "last"), b"last", "nothing extra was sent")

    def test_replies_to_commands_split_across_many_writes_are_complete(self):
        c = self.raw()
        payload = encode_command("BF.MADD", "split", "a", "bb", "ccc") + encode_command("PING")
        for b in payload:
            c.send(bytes([b]))  # one byte per segment (TCP_NODELAY)
        self.assertEqual(c.read_reply(), [1, 1, 1])
        self.assertEqual(c.read_reply(), "PONG")


class ManyConnectionsTest(ServerTestCase):

    def test_500_simultaneous_connections_each_run_a_few_commands(self):
        started = time.monotonic()
        conns = []
        try:
            for _ in range(N_CONNECTIONS):
                conns.append(RawConnection(self.port, timeout=15))
            wait_until(lambda: self.r.info("clients")["connected_clients"] >= N_CONNECTIONS + 1,
                       deadline_s=10, what=f"{N_CONNECTIONS} connections to be accepted")
            for rnd in range(3):
                for i, c in enumerate(conns):
                    c.send(encode_command("BF.ADD", f"conn:{i % 50}", f"item:{i}:{rnd}")
                           + encode_command("BF.EXISTS", f"conn:{i % 50}", f"item:{i}:{rnd}")
                           + encode_command("ECHO", f"{i}:{rnd}"))
                for i, c in enumerate(conns):
                    self.assertIn(c.read_reply(), (0, 1), f"connection {i} round {rnd}")
                    self.assertEqual(c.read_reply(), 1, f"connection {i} round {rnd}")
                    self.assertEqual(c.read_reply(), f"{i}:{rnd}".encode())
                self.assertLess(time.monotonic() - started, 60, "500 connections took too long")
            self.assertGreaterEqual(self.r.info("clients")["connected_clients"], N_CONNECTIONS + 1)
        finally:
            for c in conns:
                c.close()
        wait_until(lambda: self.r.info("clients")["connected_clients"] <= 5,
                   deadline_s=10, what="closed connections to leave connected_clients")
        total = sum(self.r.execute_command("BF.CARD", f"conn:{k}") for k in range(50))
        self.assertLessEqual(total, 3 * N_CONNECTIONS)
        self.assertGreater(total, 3 * N_CONNECTIONS * 0.95)


class InlineCommandsTest(ServerTestCase):

    def test_inline_ping(self):
        c = self.raw()
        c.send(b"PING\r\n")
        self.assertEqual(c.read_raw(), b"+PONG\r\n")

    def test_inline_commands_ending_in_a_bare_newline_as_netcat_sends(self):
        c = self.raw()
        c.send(b"PING\n")
        self.assertEqual(c.read_reply(), "PONG")

    def test_inline_arguments_may_be_quoted(self):
        c = self.raw()
        c.send(b'BF.ADD inline "hello world"\r\n')
        self.assertEqual(c.read_reply(), 1)
        c.send(b"BF.EXISTS inline 'hello world'\r\n")
        self.assertEqual(c.read_reply(), 1)
        c.send(b'ECHO "tab\\there\\x41"\r\n')
        self.assertEqual(c.read_reply(), b"tab\thereA")

    def test_empty_inline_lines_are_ignored(self):
        c = self.raw()
        c.send(b"\r\n\r\n   \r\nPING\r\n")
        self.assertEqual(c.read_reply(), "PONG")

    def test_inline_and_multibulk_commands_can_be_mixed_in_one_write(self):
        c = self.raw()
        c.send(b"PING\r\n" + encode_command("ECHO", "x") + b"ECHO y\r\n")
        self.assertEqual([c.read_reply() for _ in range(3)], ["PONG", b"x", b"y"])

    def test_an_inline_line_over_64kb_is_a_protocol_error(self):
        c = self.raw()
        c.send(b"A" * 70_000)  # no newline in sight
        self.assertErrorText(c.read_reply(), "ERR Protocol error: too big inline request")
        self.assertTrue(c.wait_closed())
        self.assertServesNewClients()

    def test_quit_answers_ok_and_ignores_what_follows(self):
        c = self.raw()
        c.send(b"QUIT\r\n" + encode_command("BF.ADD", "after-quit", "x"))
        self.assertEqual(c.read_reply(), "OK")
        self.assertTrue(c.wait_closed())
        self.assertEqual(bytes(c.buf), b"")
        self.assertEqual(self.r.exists("after-quit"), 0, "nothing after QUIT runs")

    def test_unbalanced_quotes_are_a_protocol_error(self):
        c = self.raw()
        c.send(b'ECHO "unbalanced\r\n')
        self.assertErrorText(c.read_reply(), "ERR Protocol error: unbalanced quotes in request")
        self.assertTrue(c.wait_closed())
        self.assertServesNewClients()


class MalformedInputTest(ServerTestCase):

    def assertIgnoredAndStillServed(self, data):
        c = self.raw()
        c.send(data + encode_command("PING"))
        self.assertEqual(c.read_reply(), "PONG", f"{data!r} should be ignored")
        self.assertServesNewClients()

    def assertProtocolErrorAndClosed(self, data, expected):
        c = self.raw()
        c.send(data)
        self.assertErrorText(c.read_reply(), expected)
        self.assertTrue(c.wait_closed(), f"connection should close after {data!r}")
        self.assertEqual(bytes(c.buf), b"", "nothing may follow the protocol error")
        self.assertServesNewClients()

    def test_negative_multibulk_length_is_ignored(self):
        self.assertIgnoredAndStillServed(b"*-10\r\n")

    def test_zero_multibulk_length_is_ignored(self):
        self.assertIgnoredAndStillServed(b"*0\r\n")

    def test_huge_multibulk_length_is_refused(self):
        self.assertProtocolErrorAndClosed(b"*20000000\r\n",
                                          "ERR Protocol error: invalid multibulk length")

    def test_multibulk_length_that_is_not_a_number_is_refused(self):
        self.assertProtocolErrorAndClosed(b"*abc\r\n",
                                          "ERR Protocol error: invalid multibulk length")

    def test_negative_bulk_length_is_refused(self):
        self.assertProtocolErrorAndClosed(b"*1\r\n$-10\r\n",
                                          "ERR Protocol error: invalid bulk length")

    def test_bulk_length_over_the_limit_is_refused(self):
        self.assertProtocolErrorAndClosed(b"*1\r\n$2000000000\r\n",
                                          "ERR Protocol error: invalid bulk length")

    def test_bulk_length_that_is_not_a_number_is_refused(self):
        self.assertProtocolErrorAndClosed(b"*1\r\n$blabla\r\n",
                                          "ERR Protocol error: invalid bulk length")

    def test_a_non_dollar_byte_where_a_bulk_is_expected_is_refused(self):
        self.assertProtocolErrorAndClosed(b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n",
                                          "ERR Protocol error: expected '$', got 'f'")
        self.assertProtocolErrorAndClosed(b"*1\r\nxyz\r\n",
                                          "ERR Protocol error: expected '$', got 'x'")

    def test_commands_before_a_protocol_error_are_answered_first(self):
        c = self.raw()
        c.send(encode_command("ECHO", "before") + b"*1\r\n$blabla\r\n")
        self.assertEqual(c.read_reply(), b"before")
        self.assertErrorText(c.read_reply(), "ERR Protocol error: invalid bulk length")
        self.assertTrue(c.wait_closed())

    def test_random_garbage_gets_only_errors_and_the_server_survives(self):
        for seed in range(12):
            with self.subTest(seed=seed):
                rng = random.Random(1000 + seed)
                garbage = bytes(rng.getrandbits(8) for _ in range(4096))
                c = self.raw(timeout=5)
                try:
                    c.send(garbage)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the server already dropped us
                try:
                    c.sock.shutdown(socket.SHUT_WR)  # EOF: nothing more is coming
                except OSError:
                    pass
                self.assertTrue(c.wait_closed(5.0), "the server closes the connection")
                replies, pos = [], 0
                while pos < len(c.buf):
                    try:
                        value, pos = parse_resp(c.buf, pos)
                    except NeedMore:
                        self.fail(f"truncated reply at byte {pos}: {bytes(c.buf[pos:pos+80])!r}")
                    replies.append(value)
                for value in replies:
                    self.assertIsInstance(value, RespError,
                                          f"garbage should only produce errors: {value!r}")
                self.assertServesNewClients()

    def test_a_huge_claimed_bulk_is_not_allocated_up_front(self):
        # Eight clients each claim a 400 MB argument and send 1 KB of it. A
        # server that reserved what was claimed would map 3.2 GB.
        pid = self.server.proc.pid
        vm_before = proc_status_kb(pid, "VmSize")
        claimed = 400 * 1024 * 1024
        probe = self.raw()
        input_before = self._net_input_bytes(probe)
        conns = []
        partial = b"*2\r\n$4\r\nECHO\r\n$%d\r\n" % claimed + b"x" * 1024
        for _ in range(8):
            c = self.raw()
            c.send(partial)
            conns.append(c)
        self.assertEqual(self.r.ping(), True)
        # The server has read the partial requests: its input counter holds
        # their bytes (and those of the probe's own INFO requests).
        probes = 0

        def read_all_of_them():
            nonlocal probes
            probes += 1
            own = probes * len(encode_command("INFO", "stats")) + len(encode_command("PING"))
            return self._net_input_bytes(probe) - input_before - own >= len(partial) * len(conns)
        wait_until(read_all_of_them, 10.0, what=f"the server to read {len(conns)} partial requests "
                                                f"of {len(partial)} bytes")
        rss = int(self.r.info("memory")["used_memory_rss"])
        self.assertLess(rss, 100 * 1024 * 1024,
                        f"used_memory_rss {rss} bytes with 8 x 400 MB claimed bulks pending")
        vm_rss_kb = proc_status_kb(pid, "VmRSS")
        self.assertLess(vm_rss_kb, 100 * 1024, f"VmRSS {vm_rss_kb} kB")
        vm_growth_kb = proc_status_kb(pid, "VmSize") - vm_before
        self.assertLess(vm_growth_kb, 1024 * 1024,
                        f"address space grew by {vm_growth_kb} kB while 3.2 GB was claimed "
                        f"but only 8 KB sent: the claim was preallocated")
        for c in conns:
            c.close()
        self.assertServesNewClients()

    @staticmethod
    def _net_input_bytes(conn):
        return int(parse_info(conn.call("INFO", "stats"))["total_net_input_bytes"])

    def test_a_claimed_bulk_is_still_accepted_when_it_arrives_in_full(self):
        c = self.raw()
        size = 3 * 1024 * 1024
        c.send(b"*2\r\n$4\r\nECHO\r\n$%d\r\n" % size)
        chunk = b"y" * 65536
        for _ in range(size // len(chunk)):
            c.send(chunk)
        c.send(b"\r\n")
        self.assertEqual(c.read_reply(), b"y" * size)


class BulkLimitTest(ServerTestCase):
    server_args = ("--proto-max-bulk-len", "1mb")

    def test_a_bulk_over_proto_max_bulk_len_is_refused(self):
        c = self.raw()
        c.send(b"*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$%d\r\n" % (1024 * 1024 + 1))
        self.assertErrorText(c.read_reply(), "ERR Protocol error: invalid bulk length")
        self.assertTrue(c.wait_closed())
        self.assertServesNewClients()

    def test_a_bulk_of_exactly_proto_max_bulk_len_is_accepted(self):
        c = self.raw()
        self.assertEqual(c.call("BF.ADD", "k", b"z" * (1024 * 1024)), 1)


class CommandErrorTextTest(ServerTestCase):

    def test_unknown_command_uses_redis_text_and_keeps_the_connection(self):
        c = self.raw()
        self.assertErrorText(c.call("foo", "bar"),
                             "ERR unknown command 'foo', with args beginning with: 'bar' ")
        self.assertErrorText(c.call("foo"), "ERR unknown command 'foo', with args beginning with: ")
        self.assertEqual(c.call("PING"), "PONG")

    def test_unknown_command_text_never_breaks_the_protocol(self):
        c = self.raw()
        reply = c.call("foo", "a\r\nb", "\n-ERR fake")
        self.assertIsInstance(reply, RespError)
        self.assertTrue(reply.startswith("ERR unknown command 'foo', with args beginning with: "),
                        reply)
        self.assertNotIn("\n", reply)
        self.assertEqual(c.call("PING"), "PONG", "the next reply is not desynchronised")

    def test_unknown_command_text_is_bounded_for_huge_arguments(self):
        c = self.raw()
        reply = c.call("x" * 5000, "y" * 5000, "z")
        self.assertIsInstance(reply, RespError)
        self.assertLess(len(reply), 400, f"error text of {len(reply)} bytes")

    def test_wrong_arity_uses_redis_text(self):
        c = self.raw()
        self.assertErrorText(c.call("BF.ADD", "k"),
                             "ERR wrong number of arguments for 'bf.add' command")
        self.assertErrorText(c.call("ECHO"), "ERR wrong number of arguments for 'echo' command")
        self.assertErrorText(c.call("bf.exists"),
                             "ERR wrong number of arguments for 'bf.exists' command")
        self.assertEqual(c.call("PING"), "PONG")

    def test_command_names_ignore_case(self):
        c = self.raw()
        self.assertEqual(c.call("bf.add", "k", "a"), 1)
        self.assertEqual(c.call("Bf.ExIsTs", "k", "a"), 1)
        self.assertEqual(c.call("ping"), "PONG")


class LargeReplyTest(ServerTestCase):

    def test_a_client_that_never_reads_cannot_grow_the_server_without_bound(self):
        # What the server guarantees today is backpressure, not a cut-off:
        # it runs a client's commands only while that client reads their
        # replies (connection.cc flushes every 256 KB of replies and reads no
        # more input until the write completes). client-output-buffer-limit
        # is parsed but not enforced yet; a client that stops reading stalls.
        names = [f"key:{i:05d}:" + "q" * 90 for i in range(2000)]
        pipe = self.r.pipeline(transaction=False)
        for name in names:
            pipe.execute_command("BF.ADD", name, "x")
        pipe.execute()
        reply_len = len(b"*%d\r\n" % len(names)) + sum(
            len(b"$%d\r\n%s\r\n" % (len(n), n.encode())) for n in names)
        other = self.raw()
        keys_before = self._keys_calls(other)
        # (The hog keeps its default receive buffer: with a 4 KB one, reading
        # the replies back ran at ~40 KB/s, delayed ACKs on a 4 KB window.)
        hog = self.raw()
        # 500 x ~200 KB of replies = ~100 MB that this client will not read.
        n_requests = 500
        request = encode_command("KEYS", "key:*")
        sender = threading.Thread(target=lambda: self._send_quietly(hog, request * n_requests))
        sender.daemon = True
        sender.start()
        pid = self.server.proc.pid
        peak_kb = 0
        for i in range(50):  # a second client keeps being served meanwhile
            self.assertEqual(other.call("ECHO", str(i)), str(i).encode())
            peak_kb = max(peak_kb, proc_status_kb(pid, "VmRSS"))
            self.assertEqual(other.call("DBSIZE"), len(names))
        self.assertLess(peak_kb, 150 * 1024,
                        f"server RSS reached {peak_kb} kB for a client that never reads "
                        f"(client-output-buffer-limit is 64 MB)")
        # The hog's commands stop running once its replies fill the socket
        # buffers (4 MB here, net.ipv4.tcp_wmem) and the server's two 256 KB
        # batches: the count of KEYS calls stops moving, far below 500.
        stalled_at = self._wait_until_steady(lambda: self._keys_calls(other) - keys_before)
        peak_kb = max(peak_kb, proc_status_kb(pid, "VmRSS"))
        self.assertLess(stalled_at, 100,
                        f"{stalled_at} of {n_requests} KEYS ran ({stalled_at * reply_len} bytes "
                        f"of replies) for a client that reads nothing: they were buffered")
        self.assertGreater(stalled_at, 0, "the hog's first KEYS never ran")
        self.assertLess(peak_kb, 150 * 1024, f"server RSS reached {peak_kb} kB")
        # Not cut off: once it reads, every reply arrives, and the rest run.
        received = 0
        deadline = time.monotonic() + 60
        hog.sock.settimeout(10)
        while received < n_requests * reply_len:
            self.assertLess(time.monotonic(), deadline, f"replies stalled at {received} B")
            chunk = hog.sock.recv(1 << 20)
            self.assertTrue(chunk, f"connection closed after {received} of "
                                   f"{n_requests * reply_len} B")
            received += len(chunk)
        self.assertEqual(received, n_requests * reply_len)
        self.assertEqual(self._keys_calls(other) - keys_before, n_requests)
        hog.close()
        self.assertServesNewClients()

    @staticmethod
    def _keys_calls(conn):
        stats = parse_info(conn.call("INFO", "commandstats")).get("cmdstat_keys", "calls=0,")
        return int(stats.split(",")[0].split("=")[1])

    def _wait_until_steady(self, measure, deadline_s=20.0, steady_s=0.5, interval_s=0.05):
        """Polls measure() until it is non-zero and has not changed for
        steady_s seconds; returns that value (fails at the deadline)."""
        deadline = time.monotonic() + deadline_s
        value, since = measure(), time.monotonic()
        while True:
            self.assertLess(time.monotonic(), deadline,
                            f"still changing after {deadline_s} s (last {value})")
            time.sleep(interval_s)
            now = measure()
            if now != value:
                value, since = now, time.monotonic()
            elif value and time.monotonic() - since >= steady_s:
                return value

    @staticmethod
    def _send_quietly(conn, data):
        try:
            conn.send(data)
        except OSError:
            pass  # closed by the test or refused by the server: both fine

    def test_a_reply_larger_than_the_socket_buffer_reaches_a_slow_reader(self):
        n_keys = 20_000
        names = [f"key:{i:06d}:" + "p" * 80 for i in range(n_keys)]  # ~1.8 MB of KEYS reply
        pipe = self.r.pipeline(transaction=False)
        for name in names:
            pipe.execute_command("BF.ADD", name, "x")
        pipe.execute()

        slow = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.settimeout(20)
        slow.connect(("127.0.0.1", self.port))
        self.addCleanup(slow.close)
        slow.sendall(encode_command("KEYS", "key:*"))

        # While the slow client reads nothing, the server keeps serving others.
        other = self.raw()
        for i in range(200):
            self.assertEqual(other.call("ECHO", str(i)), str(i).encode())
        self.assertEqual(other.call("DBSIZE"), n_keys)

        # The reply's length does not depend on key order: read exactly that
        # many bytes, in small pieces, then parse once.
        expected_len = len(b"*%d\r\n" % n_keys) + sum(
            len(b"$%d\r\n%s\r\n" % (len(n), n.encode())) for n in names)
        buf = bytearray()
        deadline = time.monotonic() + 20
        while len(buf) < expected_len:
            self.assertLess(time.monotonic(), deadline, f"KEYS reply stalled at {len(buf)} B")
            chunk = slow.recv(4096)
            self.assertTrue(chunk, f"connection closed after {len(buf)} of {expected_len} B")
            buf += chunk
        value, end = parse_resp(buf, 0)
        self.assertEqual(sorted(value), [n.encode() for n in names])
        self.assertEqual(end, len(buf), "exactly one reply")


if __name__ == "__main__":
    unittest.main()
