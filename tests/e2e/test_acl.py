"""ACL users end to end, through redis-py and redis-cli against the real
binary: the edge-node user of docs/operating/acl.md (BF.ADD / BF.EXISTS on edge:* and
nothing else), AUTH and HELLO 3 AUTH as a user, ACL DELUSER closing that
user's idle connections on other threads, and users from the YAML config.
"""

import hashlib
import os
import subprocess
import tempfile
import unittest

import redis

from harness import BloomgateServer, Map, RespError

ADMIN_PASSWORD = "admin-pw"
EDGE_PASSWORD = "edge-pw"
KEY_DENIED = "No permissions to access a key"
RESERVE_DENIED = "User edge has no permissions to run the 'bf.reserve' command"


def redis_cli(port, *args):
    """Runs redis-cli (not a tty: replies as plain lines) and returns stdout."""
    done = subprocess.run(["redis-cli", "-p", str(port), "--no-auth-warning", *args],
                          capture_output=True, text=True, timeout=30)
    return done.stdout.strip()


class AclTest(unittest.TestCase):
    def server(self, *extra):
        # Four threads, so connections land on different event loops.
        return BloomgateServer(["--requirepass", ADMIN_PASSWORD, "--threads", "4", *extra],
                               password=ADMIN_PASSWORD)

    def make_edge_user(self, admin):
        self.assertTrue(admin.acl_setuser("edge", enabled=True, passwords=["+" + EDGE_PASSWORD],
                                          keys=["edge:*"], commands=["+bf.add", "+bf.exists"]))

    def test_edge_user_adds_and_tests_its_keys_and_nothing_else(self):
        with self.server() as server:
            admin = server.client()
            self.make_edge_user(admin)
            edge = server.client(username="edge", password=EDGE_PASSWORD)
            self.assertEqual(edge.execute_command("BF.ADD", "edge:seen", "a"), 1)
            self.assertEqual(edge.execute_command("BF.EXISTS", "edge:seen", "a"), 1)
            with self.assertRaises(redis.ResponseError) as caught:
                edge.execute_command("BF.ADD", "core:seen", "a")
            self.assertEqual(str(caught.exception), KEY_DENIED)
            with self.assertRaises(redis.ResponseError) as caught:
                edge.execute_command("BF.RESERVE", "edge:new", 0.01, 1000)
            self.assertEqual(str(caught.exception), RESERVE_DENIED)
            with self.assertRaises(redis.ResponseError):
                edge.flushall()
            # Refusals changed nothing.
            self.assertEqual(sorted(admin.keys("*")), [b"edge:seen"])

            user = admin.acl_getuser("edge")
            self.assertTrue(user["enabled"])
            self.assertEqual(user["keys"], ["~edge:*"])
            self.assertEqual(user["commands"], ["+bf.add", "+bf.exists"])
            self.assertEqual(user["categories"], ["-@all"])
            self.assertEqual(user["passwords"],
                             [hashlib.sha256(EDGE_PASSWORD.encode()).hexdigest()])
            self.assertIn("bloom", admin.acl_cat())
            self.assertIn("bf.add", admin.acl_cat("bloom"))
            self.assertEqual(admin.acl_whoami(), "default")
            self.assertEqual(sorted(admin.acl_users()), ["default", "edge"])

            # Wrong passwords for a user are refused and counted like any other.
            with self.assertRaisesRegex(redis.ResponseError, "invalid username-password pair"):
                server.client(username="edge", password="wrong").ping()
            info = admin.info("stats")
            self.assertEqual(info["acl_access_denied_auth"], 1)
            self.assertEqual(info["acl_access_denied_cmd"], 2)
            self.assertEqual(info["acl_access_denied_key"], 1)

    def test_the_documented_edge_user_passes_the_ready_checks_clients_make(self):
        # The rules exactly as docs/operating/acl.md gives them: pools and
        # health checks send PING (redis-py's health_check_interval,
        # redis-cli ping), exporters and dashboards INFO; a user refused them
        # looks like a dead server.
        page = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                            "operating", "acl.md")
        with open(page, encoding="utf-8") as f:
            rules = [line[2:].split() for line in f if line.startswith("> ACL SETUSER edge ")]
        self.assertEqual(len(rules), 1, "acl.md should set up its edge user once")
        password = next(rule[1:] for rule in rules[0] if rule.startswith(">"))
        with self.server() as server:
            self.assertEqual(server.client().execute_command(*rules[0]), b"OK")
            edge = redis.Redis(host="127.0.0.1", port=server.port, username="edge",
                               password=password, health_check_interval=1,
                               socket_timeout=10)
            self.assertTrue(edge.ping())
            self.assertEqual(edge.info("server")["redis_version"], "8.0.0")
            self.assertEqual(edge.execute_command("BF.ADD", "edge:seen", "a"), 1)
            self.assertEqual(redis_cli(server.port, "--user", "edge", "--pass", password,
                                       "PING"), "PONG")
            edge.close()

    def test_redis_cli_as_the_edge_user(self):
        with self.server() as server:
            self.make_edge_user(server.client())
            as_edge = ["--user", "edge", "--pass", EDGE_PASSWORD]
            self.assertEqual(redis_cli(server.port, *as_edge, "BF.ADD", "edge:cli", "x"), "1")
            self.assertEqual(redis_cli(server.port, *as_edge, "BF.EXISTS", "edge:cli", "x"), "1")
            self.assertIn("NOPERM " + RESERVE_DENIED,
                          redis_cli(server.port, *as_edge, "BF.RESERVE", "edge:r", "0.01", "10"))
            self.assertIn("NOPERM " + KEY_DENIED,
                          redis_cli(server.port, *as_edge, "BF.ADD", "other", "x"))
            # redis-cli reports the failed AUTH on stderr and sends PING anyway.
            self.assertIn("NOAUTH",
                          redis_cli(server.port, "--user", "edge", "--pass", "no", "PING"))
            listed = redis_cli(server.port, "-a", ADMIN_PASSWORD, "ACL", "LIST")
            digest = hashlib.sha256(EDGE_PASSWORD.encode()).hexdigest()
            self.assertIn(f"user edge on #{digest} ~edge:* resetchannels -@all +bf.add +bf.exists",
                          listed)

    def test_hello_3_auth_as_a_user(self):
        with self.server() as server:
            self.make_edge_user(server.client())
            with server.raw() as c:
                self.assertIsInstance(c.call("PING"), RespError)  # NOAUTH
                hello = c.call("HELLO", "3", "AUTH", "edge", EDGE_PASSWORD)
                self.assertIsInstance(hello, Map)
                self.assertEqual(hello[b"proto"], 3)
                self.assertIs(c.call("BF.ADD", "edge:h", "x"), True)
                self.assertEqual(c.call("BF.RESERVE", "edge:r", "0.01", "10"),
                                 "NOPERM " + RESERVE_DENIED)

    def test_acl_deluser_closes_the_users_connections(self):
        with self.server() as server:
            admin = server.client()
            self.make_edge_user(admin)
            edges = [server.raw() for _ in range(4)]
            bystander = server.raw()
            try:
                for c in edges:
                    self.assertEqual(c.call("AUTH", "edge", EDGE_PASSWORD), "OK")
                self.assertEqual(bystander.call("AUTH", ADMIN_PASSWORD), "OK")
                with self.assertRaises(redis.ResponseError):
                    admin.acl_deluser("default")
                self.assertEqual(admin.acl_deluser("edge"), 1)
                for c in edges:
                    self.assertTrue(c.wait_closed(), "an idle connection of edge stays open")
                self.assertEqual(bystander.call("PING"), "PONG")
                self.assertIsNone(admin.acl_getuser("edge"))
                with self.assertRaisesRegex(redis.ResponseError, "invalid username-password pair"):
                    server.client(username="edge", password=EDGE_PASSWORD).ping()
            finally:
                for c in edges + [bystander]:
                    c.close()

    def test_users_from_the_config_file(self):
        digest = hashlib.sha256(EDGE_PASSWORD.encode()).hexdigest()
        with tempfile.TemporaryDirectory(prefix="bloomgate-acl-") as tmp:
            path = os.path.join(tmp, "bloomgate.yaml")
            with open(path, "w") as f:
                f.write("users:\n"
                        f'  - "edge on #{digest} ~edge:* +bf.add +bf.exists"\n'
                        f'  - "default on >{ADMIN_PASSWORD} allkeys allcommands"\n')
            with BloomgateServer(["--config", path], password=ADMIN_PASSWORD) as server:
                edge = server.client(username="edge", password=EDGE_PASSWORD)
                self.assertEqual(edge.execute_command("BF.ADD", "edge:conf", "x"), 1)
                with self.assertRaises(redis.ResponseError):
                    edge.execute_command("BF.RESERVE", "edge:r", 0.01, 10)
                self.assertEqual(server.client().acl_whoami(), "default")
                # "default" was redefined with a password: no longer nopass.
                with self.assertRaises(redis.AuthenticationError):  # NOAUTH
                    redis.Redis(port=server.port, socket_timeout=5).ping()

            with open(path, "w") as f:
                f.write('users:\n  - "edge on +nosuch"\n')
            bad = BloomgateServer(["--config", path], expected_exit_code=1, ready=False)
            bad.start()
            try:
                self.assertEqual(bad.wait_exit(), 1)
                self.assertIn("user 'edge': ERR Error in ACL SETUSER modifier '+nosuch'",
                              bad.log())
            finally:
                bad.stop(check=False)


if __name__ == "__main__":
    unittest.main()
