"""TLS, as Redis: a tls-port beside (or instead of) the plain port, client
certificates checked per tls-auth-clients, tls-protocols honoured, the
certificates reloaded by CONFIG SET without a restart, a handshake timeout,
and protected mode / AUTH / the output limit over TLS as over TCP. The
certificates are made with the openssl CLI for each test class
(tls_support.py); clients are redis-cli --tls, redis-py ssl=True and
Python's ssl module."""

import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import unittest

import redis

from harness import (BloomgateServer, RawConnection, encode_command, free_port, parse_info,
                     wait_until)
from tls_support import (KEY_PASS, TlsOnlyServer, client_context, make_certs, tls_args,
                         tls_call, tls_client)


def redis_cli(port, certs, *args, cert="client"):
    """redis-cli --tls; returns (exit code, stdout + stderr)."""
    cmd = ["redis-cli", "-p", str(port), "--tls", "--cacert", certs["ca.crt"]]
    if cert is not None:
        cmd += ["--cert", certs[f"{cert}.crt"], "--key", certs[f"{cert}.key"]]
    proc = subprocess.run(cmd + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=30)
    return proc.returncode, proc.stdout.decode("utf-8", "replace").strip()


def peer_common_name(port, certs, cert="client"):
    """The CN of the certificate the server presents to a new connection."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    with client_context(certs, cert).wrap_socket(raw, server_hostname="localhost") as sock:
        subject = dict(item[0] for item in sock.getpeercert()["subject"])
        return subject["commonName"]


class CertsTestCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if shutil.which("redis-cli") is None or shutil.which("openssl") is None:
            raise unittest.SkipTest("needs redis-cli and openssl (scripts/install-deps.sh --test)")
        cls.cert_dir = tempfile.TemporaryDirectory(prefix="bloomgate-tls-")
        cls.certs = make_certs(cls.cert_dir.name)

    @classmethod
    def tearDownClass(cls):
        cls.cert_dir.cleanup()
        super().tearDownClass()

    def start(self, auth_clients="yes", extra=(), **kwargs):
        tls_port = free_port()
        server = BloomgateServer(tls_args(self.certs, tls_port, auth_clients, extra), **kwargs)
        server.start()
        server.tls_port = tls_port
        self.addCleanup(server.stop)
        return server

    def assertHandshakeRefused(self, port, context, what):
        """The server refuses: the handshake fails, or (TLS 1.3, where the
        client finishes before the server has judged its certificate) the
        first command gets no reply."""
        try:
            reply = tls_call(port, context, "PING")
        except (ssl.SSLError, OSError):
            return
        self.assertEqual(reply, b"", f"{what} was served: {reply!r}")


class TlsCommandsTest(CertsTestCase):
    def test_commands_work_over_tls_with_redis_cli_and_redis_py(self):
        server = self.start()
        self.assertEqual(redis_cli(server.tls_port, self.certs, "BF.ADD", "k", "a"), (0, "1"))
        self.assertEqual(redis_cli(server.tls_port, self.certs, "BF.EXISTS", "k", "a"), (0, "1"))
        r = tls_client(server.tls_port, self.certs)
        self.addCleanup(r.close)
        self.assertEqual(r.execute_command("BF.EXISTS", "k", "a"), 1)
        self.assertEqual(r.execute_command("BF.EXISTS", "k", "b"), 0)
        # A pipeline of 5,000 adds: many TLS records per batch, each reply in order.
        # (Reserved at 1e-6 so that none of the 5,000 is a false "already in".)
        self.assertTrue(r.execute_command("BF.RESERVE", "big", "0.000001", "10000"))
        pipe = r.pipeline(transaction=False)
        for i in range(5000):
            pipe.execute_command("BF.ADD", "big", f"item-{i}")
        self.assertEqual(pipe.execute(), [1] * 5000)
        self.assertEqual(r.execute_command("BF.CARD", "big"), 5000)
        # The plain port shares the keyspace.
        self.assertEqual(server.client().execute_command("BF.CARD", "big"), 5000)

    def test_info_lists_both_listeners_and_client_list_shows_the_tls_port(self):
        server = self.start()
        with RawConnection(server.port) as c:
            info = parse_info(c.call("INFO", "server"))
        self.assertEqual(info["tcp_port"], str(server.port))
        self.assertEqual(info["listener0"], f"name=tcp,bind=127.0.0.1,port={server.port}")
        self.assertEqual(info["listener1"], f"name=tls,bind=127.0.0.1,port={server.tls_port}")
        r = tls_client(server.tls_port, self.certs)
        self.addCleanup(r.close)
        own = r.execute_command("CLIENT", "INFO").decode()
        self.assertIn(f"laddr=127.0.0.1:{server.tls_port} ", own)

    def test_plain_text_to_the_tls_port_fails_cleanly_and_others_are_served(self):
        server = self.start()
        r = tls_client(server.tls_port, self.certs)
        self.addCleanup(r.close)
        self.assertTrue(r.ping())
        with RawConnection(server.tls_port) as c:
            c.send(encode_command("PING"))
            self.assertTrue(c.wait_closed(), "plain text on the TLS port must be closed")
            self.assertNotIn(b"PONG", bytes(c.buf))
        # A half ClientHello and then silence, then a reset mid-handshake.
        half = socket.create_connection(("127.0.0.1", server.tls_port))
        half.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
        reset = socket.create_connection(("127.0.0.1", server.tls_port))
        reset.sendall(b"\x16\x03\x01\x02\x00")
        reset.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        reset.close()
        self.assertTrue(r.ping(), "an open TLS client must not notice")
        self.assertEqual(tls_call(server.tls_port, client_context(self.certs), "PING"),
                         b"+PONG\r\n")
        self.assertTrue(server.client().ping())
        half.close()
        self.assertIn("TLS handshake with 127.0.0.1:", server.log())

    def test_a_tls_only_server_serves_on_tls_port_with_port_zero(self):
        server = TlsOnlyServer(self.certs)
        server.start()
        self.addCleanup(server.stop)
        r = tls_client(server.tls_port, self.certs)
        self.addCleanup(r.close)
        self.assertEqual(r.execute_command("BF.ADD", "k", "x"), 1)
        info = r.info("server")
        self.assertEqual(info["tcp_port"], 0)
        self.assertEqual(info["listener0"],
                         {"name": "tls", "bind": "127.0.0.1", "port": server.tls_port})
        self.assertNotIn("listener1", info)
        self.assertNotIn("listening on 127.0.0.1:0", server.log())

    def test_the_server_refuses_to_listen_nowhere_and_to_start_with_a_bad_certificate(self):
        nowhere = BloomgateServer(["--port", "0"], expected_exit_code=1, ready=False).start()
        self.assertEqual(nowhere.wait_exit(), 1)
        self.assertIn("configured to listen nowhere", nowhere.log())
        nowhere.stop()
        bad = BloomgateServer(tls_args(self.certs, free_port(),
                                       extra=["--tls-cert-file", "/no/such.crt"]),
                              expected_exit_code=1, ready=False).start()
        self.assertEqual(bad.wait_exit(), 1)
        self.assertIn("cannot set up TLS: cannot load tls-cert-file '/no/such.crt': "
                      "No such file or directory", bad.log())
        bad.stop()

    def test_an_encrypted_key_loads_with_its_passphrase_and_not_without(self):
        server = self.start(extra=["--tls-key-file", self.certs["server-enc.key"],
                                   "--tls-key-file-pass", KEY_PASS])
        self.assertEqual(redis_cli(server.tls_port, self.certs, "PING"), (0, "PONG"))
        wrong = BloomgateServer(tls_args(self.certs, free_port(),
                                         extra=["--tls-key-file", self.certs["server-enc.key"],
                                                "--tls-key-file-pass", "wrong"]),
                                expected_exit_code=1, ready=False).start()
        self.assertEqual(wrong.wait_exit(), 1)
        self.assertIn("cannot load tls-key-file", wrong.log())
        wrong.stop()


class TlsClientAuthTest(CertsTestCase):
    def test_auth_clients_yes_refuses_a_client_without_or_with_a_wrong_certificate(self):
        server = self.start("yes")
        self.assertEqual(redis_cli(server.tls_port, self.certs, "PING"), (0, "PONG"))
        code, out = redis_cli(server.tls_port, self.certs, "PING", cert=None)
        self.assertNotEqual(out, "PONG")
        code, out = redis_cli(server.tls_port, self.certs, "PING", cert="rogue")
        self.assertNotEqual(out, "PONG")
        self.assertHandshakeRefused(server.tls_port, client_context(self.certs, None), "no cert")
        self.assertHandshakeRefused(server.tls_port, client_context(self.certs, "rogue"),
                                    "a certificate from an unknown CA")
        with self.assertRaises(redis.ConnectionError):
            tls_client(server.tls_port, self.certs, cert=None).ping()
        self.assertTrue(tls_client(server.tls_port, self.certs).ping())

    def test_auth_clients_optional_accepts_both_but_checks_a_certificate_it_gets(self):
        server = self.start("optional")
        self.assertEqual(redis_cli(server.tls_port, self.certs, "PING"), (0, "PONG"))
        self.assertEqual(redis_cli(server.tls_port, self.certs, "PING", cert=None), (0, "PONG"))
        self.assertTrue(tls_client(server.tls_port, self.certs, cert=None).ping())
        self.assertHandshakeRefused(server.tls_port, client_context(self.certs, "rogue"),
                                    "a certificate from an unknown CA")

    def test_auth_clients_no_asks_for_no_certificate(self):
        server = self.start("no")
        self.assertEqual(redis_cli(server.tls_port, self.certs, "PING", cert=None), (0, "PONG"))
        self.assertEqual(tls_call(server.tls_port, client_context(self.certs, "rogue"), "PING"),
                         b"+PONG\r\n")

    def test_auth_clients_yes_without_a_ca_is_refused(self):
        r = self.start("yes").client()
        self.assertRaisesRegex(redis.ResponseError,
                               "^CONFIG SET failed \\(possibly related to argument "
                               "'tls-ca-cert-file'\\) - Unable to update TLS configuration: "
                               "tls-auth-clients is yes or optional but neither",
                               r.config_set, "tls-ca-cert-file", "")
        self.assertEqual(r.config_get("tls-ca-cert-file"),
                         {"tls-ca-cert-file": self.certs["ca.crt"]})


class TlsReloadTest(CertsTestCase):
    def test_config_set_reloads_the_certificate_for_new_connections(self):
        server = self.start()
        admin = server.client()
        before = tls_client(server.tls_port, self.certs)
        self.addCleanup(before.close)
        self.assertTrue(before.ping())
        self.assertEqual(peer_common_name(server.tls_port, self.certs), "bloomgate-a")
        self.assertTrue(admin.config_set("tls-cert-file", self.certs["server-b.crt"],
                                         "tls-key-file", self.certs["server-b.key"]))
        self.assertEqual(peer_common_name(server.tls_port, self.certs), "bloomgate-b")
        self.assertEqual(admin.config_get("tls-cert-file"),
                         {"tls-cert-file": self.certs["server-b.crt"]})
        self.assertTrue(before.ping(), "an open session keeps working across a reload")

    def test_a_bad_file_is_refused_and_the_old_certificate_stays(self):
        server = self.start()
        admin = server.client()
        with self.assertRaises(redis.ResponseError) as refused:
            admin.config_set("tls-cert-file", "/no/such.crt")
        self.assertEqual(str(refused.exception),
                         "CONFIG SET failed (possibly related to argument 'tls-cert-file') - "
                         "Unable to update TLS configuration: cannot load tls-cert-file "
                         "'/no/such.crt': No such file or directory")
        # A key that does not match the certificate: all or nothing, so the
        # certificate set with it is not kept either.
        with self.assertRaises(redis.ResponseError) as mismatch:
            admin.config_set("tls-cert-file", self.certs["server-b.crt"],
                             "tls-key-file", self.certs["server.key"])
        self.assertIn("Unable to update TLS configuration: cannot load tls-key-file",
                      str(mismatch.exception))
        self.assertEqual(admin.config_get("tls-*-file"),
                         {"tls-cert-file": self.certs["server.crt"],
                          "tls-key-file": self.certs["server.key"],
                          "tls-ca-cert-file": self.certs["ca.crt"]})
        self.assertEqual(peer_common_name(server.tls_port, self.certs), "bloomgate-a")
        self.assertEqual(redis_cli(server.tls_port, self.certs, "PING"), (0, "PONG"))

    def test_setting_the_same_path_rereads_a_replaced_file(self):
        work = tempfile.TemporaryDirectory(prefix="bloomgate-tls-rotate-")
        self.addCleanup(work.cleanup)
        cert, key = f"{work.name}/live.crt", f"{work.name}/live.key"
        shutil.copy(self.certs["server.crt"], cert)
        shutil.copy(self.certs["server.key"], key)
        server = self.start(extra=["--tls-cert-file", cert, "--tls-key-file", key])
        self.assertEqual(peer_common_name(server.tls_port, self.certs), "bloomgate-a")
        shutil.copy(self.certs["server-b.crt"], cert)
        shutil.copy(self.certs["server-b.key"], key)
        self.assertEqual(peer_common_name(server.tls_port, self.certs), "bloomgate-a",
                         "nothing reloads until CONFIG SET")
        self.assertTrue(server.client().config_set("tls-cert-file", cert))
        self.assertEqual(peer_common_name(server.tls_port, self.certs), "bloomgate-b")


class TlsProtocolsTest(CertsTestCase):
    def test_protocols_setting_is_honoured_at_start_and_after_config_set(self):
        server = self.start(extra=["--tls-protocols", "TLSv1.2"])
        v12 = client_context(self.certs, maximum=ssl.TLSVersion.TLSv1_2)
        v13 = client_context(self.certs, minimum=ssl.TLSVersion.TLSv1_3)
        self.assertEqual(tls_call(server.tls_port, v12, "PING"), b"+PONG\r\n")
        with self.assertRaises(ssl.SSLError):
            tls_call(server.tls_port, v13, "PING")
        self.assertTrue(server.client().config_set("tls-protocols", "TLSv1.3"))
        self.assertEqual(tls_call(server.tls_port, v13, "PING"), b"+PONG\r\n")
        with self.assertRaises(ssl.SSLError):
            tls_call(server.tls_port, v12, "PING")
        self.assertRaisesRegex(redis.ResponseError, "argument must list protocols among",
                               server.client().config_set, "tls-protocols", "SSLv3")

    def test_ciphers_and_ciphersuites_are_checked_and_applied(self):
        server = self.start(extra=["--tls-protocols", "TLSv1.3",
                                   "--tls-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256"])
        raw = socket.create_connection(("127.0.0.1", server.tls_port), timeout=5)
        with client_context(self.certs).wrap_socket(raw, server_hostname="localhost") as s:
            self.assertEqual(s.cipher()[0], "TLS_CHACHA20_POLY1305_SHA256")
        admin = server.client()
        self.assertRaisesRegex(redis.ResponseError, "invalid tls-ciphersuites 'NOPE'",
                               admin.config_set, "tls-ciphersuites", "NOPE")
        self.assertRaisesRegex(redis.ResponseError, "invalid tls-ciphers 'NOPE'",
                               admin.config_set, "tls-ciphers", "NOPE")


def refused(port):
    """Nothing listens on `port` any more."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


class TlsPortChangeTest(CertsTestCase):
    def test_config_set_tls_port_opens_moves_and_closes_the_tls_listener(self):
        # Started with the files but no TLS port: CONFIG SET opens it.
        server = BloomgateServer(tls_args(self.certs, 0)).start()
        self.addCleanup(server.stop)
        admin = server.client()
        context = client_context(self.certs)
        first, second = free_port(), free_port()
        self.assertTrue(admin.config_set("tls-port", first))
        self.assertEqual(tls_call(first, context, "PING"), b"+PONG\r\n")
        self.assertEqual(admin.config_get("tls-port"), {"tls-port": str(first)})
        self.assertEqual(admin.info("server")["listener1"],
                         {"name": "tls", "bind": "127.0.0.1", "port": first})
        kept = tls_client(first, self.certs)
        self.addCleanup(kept.close)
        self.assertTrue(kept.ping())

        # Moved: the new port serves, the old one is closed, open sessions stay.
        self.assertTrue(admin.config_set("tls-port", second))
        self.assertEqual(tls_call(second, context, "PING"), b"+PONG\r\n")
        wait_until(lambda: refused(first), 5, what="the old TLS port closed")
        self.assertTrue(kept.ping())

        # A port that cannot be bound: refused, nothing changed.
        self.assertRaisesRegex(redis.ResponseError, "Unable to listen on this port",
                               admin.config_set, "tls-port", server.port)
        self.assertEqual(admin.config_get("tls-port"), {"tls-port": str(second)})
        self.assertEqual(tls_call(second, context, "PING"), b"+PONG\r\n")

        # 0 closes the listener; the open session goes on.
        self.assertTrue(admin.config_set("tls-port", 0))
        wait_until(lambda: refused(second), 5, what="the TLS port closed")
        self.assertNotIn("listener1", admin.info("server"))
        self.assertTrue(kept.ping())


class TlsLimitsTest(CertsTestCase):
    def test_a_client_that_never_finishes_its_handshake_is_closed(self):
        server = self.start(extra=["--tls-handshake-timeout", "300"])
        admin = server.client()
        with RawConnection(server.tls_port) as silent:
            wait_until(lambda: len(admin.client_list()) == 2, 5, what="the silent client listed")
            started = time.monotonic()
            self.assertTrue(silent.wait_closed(deadline_s=5.0), "still open after 5 s")
            # Generous: the timer is 300 ms; the bound only says "not forever".
            self.assertLess(time.monotonic() - started, 4.0)
        wait_until(lambda: len(admin.client_list()) == 1, 5, what="the slot released")
        self.assertIn("not finished within 300 ms", server.log())

    def test_sigterm_with_idle_and_handshaking_tls_clients_stops_promptly(self):
        tls_port = free_port()
        server = BloomgateServer(tls_args(self.certs, tls_port)).start()
        idle = tls_client(tls_port, self.certs)
        self.assertTrue(idle.ping())
        with RawConnection(tls_port) as handshaking:
            handshaking.send(b"\x16\x03\x01")  # the first bytes of a ClientHello
            admin = server.client()
            wait_until(lambda: len(admin.client_list()) == 3, 5,
                       what="the idle and the handshaking client listed")
            admin.close()
            started = time.monotonic()
            server.stop()  # asserts exit code 0
            self.assertLess(time.monotonic() - started, 4.0)
        idle.close()
        self.assertNotIn("forced", server.final_log)

    def test_protected_mode_answers_denied_over_tls(self):
        server = self.start()
        reply = tls_call(server.tls_port, client_context(self.certs), "PING", source="127.0.0.2")
        self.assertTrue(reply.startswith(b"-DENIED "), reply)
        self.assertIn("refusing a client from 127.0.0.2 in protected mode", server.log())
        self.assertEqual(tls_call(server.tls_port, client_context(self.certs), "PING"),
                         b"+PONG\r\n")

    def test_auth_applies_over_tls(self):
        server = self.start(extra=["--requirepass", "s3cret"], password="s3cret")
        context = client_context(self.certs)
        self.assertTrue(tls_call(server.tls_port, context, "PING").startswith(b"-NOAUTH"))
        r = tls_client(server.tls_port, self.certs, password="s3cret")
        self.addCleanup(r.close)
        self.assertTrue(r.ping())
        self.assertEqual(tls_call(server.tls_port, context, "PING", source="127.0.0.2")[:7],
                         b"-NOAUTH", "with a password, protected mode lets others in")

    def test_a_client_over_maxclients_on_the_tls_port_reads_the_error_over_tls(self):
        server = self.start(extra=["--maxclients", "2"])
        admin = server.client()
        first = tls_client(server.tls_port, self.certs)
        self.addCleanup(first.close)
        self.assertTrue(first.ping())
        wait_until(lambda: len(admin.client_list()) == 2, 5, what="two clients listed")
        context = client_context(self.certs)
        self.assertEqual(tls_call(server.tls_port, context, "PING"),
                         b"-ERR max number of clients reached\r\n")
        # Refused: never a client, so not listed, and counted as Redis counts it.
        self.assertEqual(len(admin.client_list()), 2)
        self.assertEqual(admin.info("stats")["rejected_connections"], 1)
        first.connection_pool.disconnect()
        wait_until(lambda: len(admin.client_list()) == 1, 5, what="the slot released")
        self.assertEqual(tls_call(server.tls_port, context, "PING"), b"+PONG\r\n")

    def test_the_server_ends_tls_sessions_with_close_notify(self):
        """QUIT, CLIENT KILL, a maxclients refusal and shutdown: the client
        reads a clean end of the session (with suppress_ragged_eofs off and
        without Debian's default OP_IGNORE_UNEXPECTED_EOF, a TCP close
        without close_notify raises SSLEOFError)."""
        server = self.start(extra=["--maxclients", "2"])
        admin = server.client()
        context = client_context(self.certs)
        context.options &= ~ssl.OP_IGNORE_UNEXPECTED_EOF

        def session():
            raw = socket.create_connection(("127.0.0.1", server.tls_port), timeout=5)
            return context.wrap_socket(raw, server_hostname="localhost",
                                       suppress_ragged_eofs=False)

        def read_to_the_end(sock):
            data = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    return data
                data += chunk

        with session() as quitting:
            quitting.sendall(encode_command("QUIT"))
            self.assertEqual(read_to_the_end(quitting), b"+OK\r\n")
        with session() as killed:
            killed.sendall(encode_command("CLIENT", "ID"))
            client_id = int(killed.recv(64)[1:-2])
            self.assertEqual(admin.execute_command("CLIENT", "KILL", "ID", client_id), 1)
            self.assertEqual(read_to_the_end(killed), b"")
        with session() as idle, session() as refused:
            idle.sendall(encode_command("PING"))
            self.assertEqual(idle.recv(64), b"+PONG\r\n")
            refused.sendall(encode_command("PING"))
            self.assertEqual(read_to_the_end(refused),
                             b"-ERR max number of clients reached\r\n")
            admin.close()
            server.proc.send_signal(signal.SIGTERM)
            self.assertEqual(read_to_the_end(idle), b"")
        self.assertEqual(server.wait_exit(), 0)

    def test_output_limit_pauses_a_tls_client_that_does_not_read(self):
        # 1kb, the floor: one TLS record brings up to 16 KB of commands (~540
        # of them, ~2 KB of replies), so only the limit keeps a batch this small.
        server = self.start(extra=["--client-output-buffer-limit", "1kb"])
        admin = server.client()
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        raw.connect(("127.0.0.1", server.tls_port))
        sock = client_context(self.certs).wrap_socket(raw, server_hostname="localhost")
        self.addCleanup(sock.close)
        port = sock.getsockname()[1]
        # 60 MB in, 8 MB of replies: past what loopback's buffers absorb.
        payload = encode_command("BF.EXISTS", "k", "x") * 2_000_000
        sender = threading.Thread(target=lambda: self._send_quietly(sock, payload), daemon=True)
        sender.start()

        def omem():
            for client in admin.client_list():
                if client["addr"] == f"127.0.0.1:{port}":
                    return int(client["omem"])
            return None

        wait_until(lambda: (omem() or 0) > 0, 10, what="the greedy client's replies to pile up")
        peak = max(omem() or 0 for _ in range(50))
        # The limit plus one reply (4 bytes): the batch stops at 1 KiB.
        self.assertLessEqual(peak, 1024 + 4)
        self.assertTrue(admin.ping(), "other clients are served meanwhile")

    @staticmethod
    def _send_quietly(sock, payload):
        try:
            sock.sendall(payload)
        except (OSError, ssl.SSLError):
            pass


if __name__ == "__main__":
    unittest.main()
