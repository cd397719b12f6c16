"""Protected mode, as Redis: while no password is set, only clients connecting
from 127.0.0.1 or ::1 are served; any other address gets -DENIED and is
disconnected. The "other address" here is 127.0.0.2, which is loopback
traffic (the test never leaves this machine) but not one of the two local
addresses Redis accepts.
"""

import socket
import unittest

from harness import BloomgateServer, RespError, encode_command, parse_resp, NeedMore, wait_until

OTHER_ADDRESS = "127.0.0.2"


def call_from(source, port, *args, timeout=5.0):
    """Connects from `source`, sends one command, and returns (reply or None,
    whether the server closed the connection afterwards)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.bind((source, 0))
        sock.connect(("127.0.0.1", port))
        try:
            sock.sendall(encode_command(*args))
        except OSError:
            pass  # a refused client may be closed before the command lands
        buf = bytearray()
        reply = None
        closed = False
        while True:
            try:
                chunk = sock.recv(1 << 16)
            except ConnectionResetError:
                closed = True
                break
            except socket.timeout:
                break
            if not chunk:
                closed = True
                break
            buf += chunk
            try:
                reply, _ = parse_resp(buf, 0)
            except NeedMore:
                continue
            if not (isinstance(reply, RespError) and reply.code == "DENIED"):
                break  # served (a NOAUTH is served too): the connection stays open
        return reply, closed
    finally:
        sock.close()


class ProtectedModeTest(unittest.TestCase):
    def test_without_a_password_other_addresses_are_denied_and_disconnected(self):
        with BloomgateServer() as server:
            reply, closed = call_from(OTHER_ADDRESS, server.port, "PING")
            self.assertIsInstance(reply, RespError, reply)
            self.assertEqual(reply.code, "DENIED")
            self.assertIn("protected mode", reply)
            self.assertTrue(closed, "a denied client must be disconnected")
            self.assertEqual(call_from("127.0.0.1", server.port, "PING")[0], "PONG")
            self.assertIn("refusing a client from 127.0.0.2 in protected mode", server.log())

    def test_a_password_lets_other_addresses_connect_and_authenticate(self):
        with BloomgateServer(["--requirepass", "s3cret"], password="s3cret") as server:
            reply, closed = call_from(OTHER_ADDRESS, server.port, "PING")
            self.assertIsInstance(reply, RespError, reply)
            self.assertEqual(reply.code, "NOAUTH")
            self.assertFalse(closed)
            self.assertEqual(call_from(OTHER_ADDRESS, server.port, "AUTH", "s3cret")[0], "OK")

    def test_protected_mode_no_serves_every_address(self):
        with BloomgateServer(["--protected-mode", "no"]) as server:
            self.assertEqual(call_from(OTHER_ADDRESS, server.port, "PING")[0], "PONG")

    def test_config_set_turns_it_off_and_on_at_run_time(self):
        with BloomgateServer() as server:
            r = server.client()
            self.assertEqual(r.config_get("protected-mode"), {"protected-mode": "yes"})
            self.assertTrue(r.config_set("protected-mode", "no"))
            self.assertEqual(call_from(OTHER_ADDRESS, server.port, "PING")[0], "PONG")
            self.assertTrue(r.config_set("protected-mode", "yes"))
            self.assertEqual(call_from(OTHER_ADDRESS, server.port, "PING")[0].code, "DENIED")
            self.assertTrue(r.config_set("requirepass", "pw"))
            self.assertEqual(call_from(OTHER_ADDRESS, server.port, "PING")[0].code, "NOAUTH")


if __name__ == "__main__":
    unittest.main()
