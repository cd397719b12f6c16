"""Connection and server commands, authentication, client limits, start-up
and shutdown of the real binary."""

import signal
import socket
import subprocess
import threading
import time
import unittest

import redis

from harness import (BloomgateServer, Map, RawConnection, RespError, ServerTestCase,
                     encode_command, parse_info, wait_until)

NOAUTH = "NOAUTH Authentication required."
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
PASSWORD = "s3cret"


class AuthTest(ServerTestCase):
    server_args = ("--requirepass", PASSWORD)
    server_password = PASSWORD

    def unauthenticated(self):
        c = self.server.raw()
        self.addCleanup(c.close)
        return c

    def test_commands_before_auth_get_noauth(self):
        c = self.unauthenticated()
        self.assertErrorText(c.call("PING"), NOAUTH)
        self.assertErrorText(c.call("BF.ADD", "k", "x"), NOAUTH)
        self.assertErrorText(c.call("DBSIZE"), NOAUTH)
        self.assertEqual(self.r.exists("k"), 0, "nothing ran")

    def test_a_wrong_password_gets_wrongpass_and_stays_unauthenticated(self):
        c = self.unauthenticated()
        self.assertErrorText(c.call("AUTH", "bad"), WRONGPASS)
        self.assertErrorText(c.call("AUTH", "default", "bad"), WRONGPASS)
        self.assertErrorText(c.call("PING"), NOAUTH)

    def test_auth_with_the_password_unlocks_the_connection(self):
        c = self.unauthenticated()
        self.assertEqual(c.call("AUTH", PASSWORD), "OK")
        self.assertEqual(c.call("BF.ADD", "k", "x"), 1)
        c2 = self.unauthenticated()
        self.assertEqual(c2.call("AUTH", "default", PASSWORD), "OK", "AUTH <user> <pass> form")
        self.assertEqual(c2.call("BF.EXISTS", "k", "x"), 1)

    def test_auth_with_too_many_arguments_is_a_syntax_error(self):
        c = self.unauthenticated()
        self.assertErrorText(c.call("AUTH", "a", "b", "c"), "ERR syntax error")

    def test_hello_3_with_auth_authenticates_and_switches_protocol(self):
        c = self.unauthenticated()
        hello = c.call("HELLO", "3", "AUTH", "default", PASSWORD)
        self.assertIsInstance(hello, Map, hello)
        self.assertEqual(hello[b"proto"], 3)
        self.assertEqual(c.call_raw("BF.ADD", "k", "x"), b"#t\r\n")

    def test_hello_with_a_wrong_password_gets_wrongpass(self):
        c = self.unauthenticated()
        self.assertErrorText(c.call("HELLO", "3", "AUTH", "default", "bad"), WRONGPASS)
        self.assertErrorText(c.call("PING"), NOAUTH)

    def test_hello_without_auth_is_refused_before_authentication(self):
        c = self.unauthenticated()
        reply = c.call("HELLO", "3")
        self.assertIsInstance(reply, RespError)
        self.assertEqual(reply.code, "NOAUTH", reply)

    def test_an_unauthenticated_client_claiming_more_than_10_arguments_is_closed(self):
        c = self.unauthenticated()
        c.send(encode_command("PING", *["a"] * 11))
        self.assertErrorText(c.read_reply(), "ERR Protocol error: unauthenticated multibulk length")
        self.assertTrue(c.wait_closed())
        self.assertServesNewClients()

    def test_an_unauthenticated_client_sending_a_20kb_bulk_is_closed(self):
        c = self.unauthenticated()
        c.send(b"*2\r\n$4\r\nAUTH\r\n$20000\r\n" + b"x" * 1000)
        self.assertErrorText(c.read_reply(), "ERR Protocol error: unauthenticated bulk length")
        self.assertTrue(c.wait_closed())
        self.assertServesNewClients()

    def test_an_authenticated_client_may_send_many_large_arguments(self):
        c = self.raw()  # authenticated
        items = [("i%d" % i) * 1000 for i in range(50)]
        self.assertEqual(c.call("BF.MADD", "k", *items), [1] * 50)

    def test_redis_py_with_a_password_works(self):
        self.assertTrue(self.r.ping())
        with self.assertRaises(redis.AuthenticationError):
            self.client(password=None).ping()


class MaxClientsTest(ServerTestCase):
    server_args = ("--maxclients", "5")

    def test_the_client_over_the_limit_is_refused_and_closed(self):
        self.r.ping()  # one connection held by self.r
        held = [self.raw() for _ in range(4)]
        for c in held:
            self.assertEqual(c.call("PING"), "PONG")
        extra = self.server.raw()
        self.addCleanup(extra.close)
        self.assertErrorText(extra.read_reply(), "ERR max number of clients reached")
        self.assertTrue(extra.wait_closed(), "the refused client is disconnected")
        self.assertEqual(self.r.config_get("maxclients"), {"maxclients": "5"})
        self.assertGreaterEqual(self.r.info("stats")["rejected_connections"], 1)

        held[0].close()

        def new_client_accepted():
            with RawConnection(self.port) as c:
                c.send(encode_command("PING"))
                return c.read_reply() == "PONG"
        wait_until(new_client_accepted, deadline_s=5,
                   what="a client to be accepted once a slot is free")


class IdleTimeoutTest(ServerTestCase):
    server_args = ("--timeout", "1")

    def test_an_idle_client_is_closed_and_an_active_one_is_kept(self):
        idle = self.raw()
        active = self.raw()
        self.assertEqual(idle.call("PING"), "PONG")
        started = time.monotonic()
        # The active client talks every 200 ms for 2.5 s, well past the 1 s timeout.
        while time.monotonic() - started < 2.5:
            self.assertEqual(active.call("PING"), "PONG", "an active client must be kept")
            time.sleep(0.2)
        self.assertTrue(idle.wait_closed(5), "an idle client must be closed after --timeout 1")
        self.assertEqual(active.call("CONFIG", "GET", "timeout"), [b"timeout", b"1"])


class HelloTest(ServerTestCase):

    def test_hello_2_describes_the_server_as_a_flat_list(self):
        c = self.raw()
        reply = c.call("HELLO", "2")
        self.assertIsInstance(reply, list, reply)
        fields = dict(zip(reply[0::2], reply[1::2]))
        self.assertEqual(list(fields), [b"server", b"version", b"proto", b"id", b"mode", b"role",
                                        b"modules"])
        self.assertEqual(fields[b"server"], b"redis")
        self.assertEqual(fields[b"proto"], 2)
        self.assertEqual(fields[b"id"], c.call("CLIENT", "ID"))
        self.assertEqual(fields[b"mode"], b"standalone")
        self.assertEqual(fields[b"role"], b"master")
        info = parse_info(c.call("INFO", "server"))
        self.assertEqual(fields[b"version"].decode(), info["redis_version"])
        modules = [dict(zip(m[0::2], m[1::2])) for m in fields[b"modules"]]
        self.assertIn(b"bf", [m[b"name"] for m in modules])

    def test_hello_3_replies_a_map_and_switches_to_resp3(self):
        c = self.raw()
        c.send(encode_command("HELLO", "3"))
        reply, raw = c.read_reply(raw=True)
        self.assertTrue(raw.startswith(b"%7\r\n"), raw)
        self.assertEqual(reply[b"proto"], 3)
        self.assertEqual(c.call_raw("BF.EXISTS", "nokey", "x"), b"#f\r\n")
        self.assertIsInstance(c.call("HELLO"), Map, "HELLO with no version keeps RESP3")
        self.assertIsInstance(c.call("HELLO", "2"), list)
        self.assertEqual(c.call_raw("BF.EXISTS", "nokey", "x"), b":0\r\n", "back to RESP2")

    def test_hello_with_an_unsupported_version_gets_noproto(self):
        c = self.raw()
        self.assertErrorText(c.call("HELLO", "4"), "NOPROTO unsupported protocol version")
        self.assertErrorText(c.call("HELLO", "1"), "NOPROTO unsupported protocol version")
        self.assertErrorText(c.call("HELLO", "abc"),
                             "ERR Protocol version is not an integer or out of range")
        self.assertEqual(c.call_raw("PING"), b"+PONG\r\n", "the protocol did not change")

    def test_hello_setname_names_the_connection(self):
        c = self.raw()
        c.call("HELLO", "3", "SETNAME", "worker-1")
        self.assertEqual(c.call("CLIENT", "GETNAME"), b"worker-1")


class ClientCommandTest(ServerTestCase):

    def test_setname_and_getname(self):
        c = self.raw()
        self.assertIsNone(c.call("CLIENT", "GETNAME"))
        self.assertEqual(c.call("CLIENT", "SETNAME", "loader"), "OK")
        self.assertEqual(c.call("CLIENT", "GETNAME"), b"loader")
        self.assertErrorText(c.call("CLIENT", "SETNAME", "has space"),
                             "ERR Client names cannot contain spaces, newlines or special "
                             "characters.")
        self.assertEqual(c.call("CLIENT", "GETNAME"), b"loader")

    def test_client_ids_are_unique_and_match_client_info(self):
        a, b = self.raw(), self.raw()
        id_a, id_b = a.call("CLIENT", "ID"), b.call("CLIENT", "ID")
        self.assertIsInstance(id_a, int)
        self.assertNotEqual(id_a, id_b)
        self.assertIn(f"id={id_a} ", a.call("CLIENT", "INFO").decode())

    def test_client_info_names_the_command_being_run(self):
        c = self.raw()
        c.call("CLIENT", "ID")
        info = c.call("CLIENT", "INFO").decode()
        self.assertIn(" cmd=client|info ", info, "cmd= is the current command, as in Redis")

    def test_client_list_shows_every_connection_with_its_name(self):
        a, b = self.raw(), self.raw()
        a.call("CLIENT", "SETNAME", "alpha")
        b.call("CLIENT", "SETNAME", "beta")
        lines = a.call("CLIENT", "LIST").decode().strip().split("\n")
        names = [dict(f.split("=", 1) for f in line.split(" ") if "=" in f)["name"]
                 for line in lines]
        self.assertIn("alpha", names)
        self.assertIn("beta", names)

    def test_setinfo_records_the_library_name_and_version(self):
        c = self.raw()
        self.assertEqual(c.call("CLIENT", "SETINFO", "LIB-NAME", "redis-py"), "OK")
        self.assertEqual(c.call("CLIENT", "SETINFO", "LIB-VER", "5.0.1"), "OK")
        info = c.call("CLIENT", "INFO").decode()
        self.assertIn("lib-name=redis-py", info)
        self.assertIn("lib-ver=5.0.1", info)

    def test_unknown_client_subcommand_is_an_error_that_keeps_the_connection(self):
        c = self.raw()
        reply = c.call("CLIENT", "NOPE")
        self.assertIsInstance(reply, RespError)
        self.assertTrue(reply.startswith("ERR unknown subcommand 'NOPE'"), reply)
        self.assertEqual(c.call("PING"), "PONG")


class CommandIntrospectionTest(ServerTestCase):

    ALL_COMMANDS = """ping echo quit hello auth select client command info module time config
        shutdown dbsize exists del unlink type keys scan rename renamenx flushall flushdb
        expire pexpire expireat pexpireat ttl pttl expiretime pexpiretime persist memory
        multi exec discard watch unwatch bf.reserve bf.add bf.madd bf.insert bf.exists
        bf.mexists bf.card bf.info""".split()

    def command_info(self, name):
        c = self.raw()
        reply = c.call("COMMAND", "INFO", name)
        self.assertEqual(len(reply), 1)
        self.assertIsNotNone(reply[0], f"COMMAND INFO {name} is nil")
        entry = reply[0]
        return {"name": entry[0], "arity": entry[1], "flags": {f if isinstance(f, str) else f.decode() for f in entry[2]},
                "first": entry[3], "last": entry[4], "step": entry[5]}

    def test_every_served_command_is_described_by_command(self):
        c = self.raw()
        listed = {n.decode() for n in c.call("COMMAND", "LIST")}
        missing = [n for n in self.ALL_COMMANDS if n not in listed]
        self.assertEqual(missing, [], "COMMAND LIST must name every command")
        self.assertEqual(c.call("COMMAND", "COUNT"), len(c.call("COMMAND")))
        described = {e[0].decode() for e in c.call("COMMAND")}
        self.assertEqual([n for n in self.ALL_COMMANDS if n not in described], [])

    def test_command_info_bf_add(self):
        info = self.command_info("bf.add")
        self.assertEqual(info["name"], b"bf.add")
        self.assertEqual(info["arity"], 3)
        self.assertTrue({"write", "denyoom"} <= info["flags"], info["flags"])
        self.assertEqual((info["first"], info["last"], info["step"]), (1, 1, 1))

    def test_command_info_key_positions(self):
        cases = {
            "bf.madd": (-3, 1, 1, 1, "write"),
            "bf.exists": (3, 1, 1, 1, "readonly"),
            "bf.mexists": (-3, 1, 1, 1, "readonly"),
            "bf.insert": (-4, 1, 1, 1, "write"),
            "bf.reserve": (-4, 1, 1, 1, "write"),
            "bf.info": (-2, 1, 1, 1, "readonly"),
            "bf.card": (2, 1, 1, 1, "readonly"),
            "del": (-2, 1, -1, 1, "write"),
            "exists": (-2, 1, -1, 1, "readonly"),
            "rename": (3, 1, 2, 1, "write"),
            "expire": (-3, 1, 1, 1, "write"),
            "ping": (-1, 0, 0, 0, None),
            "keys": (2, 0, 0, 0, "readonly"),
        }
        for name, (arity, first, last, step, flag) in cases.items():
            with self.subTest(command=name):
                info = self.command_info(name)
                self.assertEqual((info["arity"], info["first"], info["last"], info["step"]),
                                 (arity, first, last, step))
                if flag:
                    self.assertIn(flag, info["flags"])

    def test_command_info_ignores_case_and_is_nil_for_unknown_commands(self):
        c = self.raw()
        self.assertEqual(c.call("COMMAND", "INFO", "BF.ADD")[0][0], b"bf.add")
        self.assertEqual(c.call("COMMAND", "INFO", "nope"), [None])

    def test_command_getkeys(self):
        c = self.raw()
        self.assertEqual(c.call("COMMAND", "GETKEYS", "BF.ADD", "k", "x"), [b"k"])
        self.assertEqual(c.call("COMMAND", "GETKEYS", "BF.INSERT", "k", "ITEMS", "a"), [b"k"])
        self.assertEqual(c.call("COMMAND", "GETKEYS", "DEL", "a", "b", "c"), [b"a", b"b", b"c"])
        self.assertEqual(c.call("COMMAND", "GETKEYS", "RENAME", "a", "b"), [b"a", b"b"])
        self.assertErrorText(c.call("COMMAND", "GETKEYS", "PING"),
                             "ERR The command has no key arguments")
        self.assertErrorText(c.call("COMMAND", "GETKEYS", "NOPE", "x"),
                             "ERR Invalid command specified")

    def test_command_docs_has_a_summary(self):
        c = self.raw()
        docs = c.call("COMMAND", "DOCS", "bf.add")
        self.assertEqual(docs[0], b"bf.add")
        fields = dict(zip(docs[1][0::2], docs[1][1::2]))
        self.assertTrue(fields[b"summary"], fields)


class InfoAndModulesTest(ServerTestCase):

    def test_info_has_the_fields_client_libraries_probe(self):
        info = parse_info(self.raw().call("INFO"))
        self.assertRegex(info.get("redis_version", ""), r"^\d+\.\d+\.\d+$")
        self.assertEqual(info.get("arch_bits"), "64")
        self.assertEqual(info.get("loading"), "0", "ioredis's ready check reads loading:0")
        self.assertEqual(info.get("cluster_enabled"), "0")
        self.assertRegex(info.get("module", ""), r"^name=bf,ver=\d+")
        self.assertEqual(info.get("redis_mode"), "standalone")

    def test_info_has_a_modules_section_naming_bf(self):
        text = self.raw().call("INFO", "modules").decode()
        self.assertIn("# Modules", text)
        self.assertRegex(text, r"(?m)^module:name=bf,ver=\d+")

    def test_redis_py_parses_info(self):
        info = self.r.info()
        self.assertIn("redis_version", info)
        self.assertEqual(info["cluster_enabled"], 0)
        self.r.bf().add("k", "x")
        self.assertEqual(self.r.info("keyspace")["db0"]["keys"], 1)

    def test_info_commandstats_counts_calls(self):
        for _ in range(3):
            self.r.bf().add("k", "x")
        text = self.raw().call("INFO", "commandstats").decode()
        self.assertRegex(text, r"(?m)^cmdstat_bf\.add:calls=3,")

    def test_module_list_answers_as_info_does(self):
        c = self.raw()
        modules = [dict(zip(m[0::2], m[1::2])) for m in c.call("MODULE", "LIST")]
        bf = [m for m in modules if m[b"name"] == b"bf"]
        self.assertEqual(len(bf), 1, modules)
        info = parse_info(c.call("INFO", "modules"))
        self.assertIn(f"ver={bf[0][b'ver']},", info["module"])


class ConfigTest(ServerTestCase):

    def setUp(self):
        super().setUp()
        defaults = self.r.config_get("bf-*")
        self.addCleanup(lambda: [self.server.client().config_set(k, v)
                                 for k, v in defaults.items()])

    def test_config_get_returns_name_value_pairs(self):
        self.assertEqual(self.r.config_get("bf-error-rate"), {"bf-error-rate": "0.01"})
        self.assertEqual(self.r.config_get("maxclients"), {"maxclients": "10000"})
        self.assertEqual(set(self.r.config_get("bf-*")),
                         {"bf-error-rate", "bf-initial-size", "bf-expansion-factor"})
        self.assertEqual(self.r.config_get("no-such-setting"), {})

    def test_config_set_changes_the_defaults_of_auto_created_filters(self):
        self.assertTrue(self.r.config_set("bf-initial-size", "1000"))
        self.assertTrue(self.r.config_set("bf-expansion-factor", "4"))
        self.r.bf().add("k", "x")
        info = self.r.bf().info("k")
        self.assertEqual((info.capacity, info.expansionRate), (1000, 4))

    def test_config_set_error_rate_makes_smaller_filters(self):
        self.r.bf().add("tight", "x")
        self.assertTrue(self.r.config_set("bf-error-rate", "0.2"))
        self.assertEqual(self.r.config_get("bf-error-rate"), {"bf-error-rate": "0.2"})
        self.r.bf().add("loose", "x")
        self.assertLess(self.r.bf().info("loose").size, self.r.bf().info("tight").size)

    def test_config_set_maxclients(self):
        self.assertTrue(self.r.config_set("maxclients", "100"))
        self.addCleanup(lambda: self.server.client().config_set("maxclients", "10000"))
        self.assertEqual(self.r.config_get("maxclients"), {"maxclients": "100"})

    def test_config_set_timeout_applies_to_connected_clients(self):
        admin = self.raw()
        idle = self.raw()
        self.assertEqual(idle.call("PING"), "PONG")
        self.assertEqual(admin.call("CONFIG", "SET", "timeout", "1"), "OK")
        try:
            self.assertTrue(idle.wait_closed(5), "an idle client is closed once timeout is set")
        finally:
            with self.server.raw() as c:
                c.call("CONFIG", "SET", "timeout", "0")

    def test_config_set_of_a_start_up_only_setting_is_refused(self):
        reply = self.raw().call("CONFIG", "SET", "port", "1234")
        self.assertIsInstance(reply, RespError)
        self.assertIn("'port'", reply)
        self.assertEqual(self.r.config_get("port"), {"port": str(self.port)})

    def test_config_set_with_a_bad_value_names_the_parameter(self):
        c = self.raw()
        for name, value in [("bf-error-rate", "abc"), ("bf-error-rate", "2"),
                            ("maxclients", "abc"), ("bf-initial-size", "0")]:
            with self.subTest(name=name, value=value):
                reply = c.call("CONFIG", "SET", name, value)
                self.assertIsInstance(reply, RespError, reply)
                # Redis: -ERR CONFIG SET failed (possibly related to argument '<name>') - ...
                self.assertTrue(reply.startswith(
                    f"ERR CONFIG SET failed (possibly related to argument '{name}')"), reply)
        self.assertEqual(self.r.config_get("bf-error-rate"), {"bf-error-rate": "0.01"})

    def test_config_set_of_an_unknown_setting_is_refused(self):
        self.assertErrorText(self.raw().call("CONFIG", "SET", "nosuch", "1"),
                             "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'")


class MiscCommandsTest(ServerTestCase):

    def test_time_is_the_current_unix_time(self):
        secs, usecs = self.raw().call("TIME")
        self.assertLess(abs(int(secs) + int(usecs) / 1e6 - time.time()), 5)
        self.assertLess(int(usecs), 1_000_000)

    def test_select_0_is_ok_and_other_databases_are_out_of_range(self):
        c = self.raw()
        self.assertEqual(c.call("SELECT", "0"), "OK")
        self.assertErrorText(c.call("SELECT", "1"), "ERR DB index is out of range")
        self.assertErrorText(c.call("SELECT", "abc"), "ERR value is not an integer or out of range")

    def test_ping_and_echo(self):
        c = self.raw()
        self.assertEqual(c.call_raw("PING"), b"+PONG\r\n")
        self.assertEqual(c.call_raw("PING", "hi"), b"$2\r\nhi\r\n")
        self.assertEqual(c.call("ECHO", b"\x00\xff"), b"\x00\xff")

    def test_auth_without_a_configured_password_is_an_error(self):
        self.assertErrorText(self.raw().call("AUTH", "whatever"),
                             "ERR AUTH <password> called without any password configured for "
                             "the default user. Are you sure your configuration is correct?")

    def test_quit_replies_ok_and_closes(self):
        c = self.raw()
        self.assertEqual(c.call("QUIT"), "OK")
        self.assertTrue(c.wait_closed())

    def test_every_reply_before_a_quit_arrives_though_the_client_sent_more_after_it(self):
        # 2,000 ECHOs of 1 KiB (2 MB of replies, far more than the client's
        # 64 KiB receive buffer), QUIT, then 4 MB the server never runs. The
        # client reads only after a pause, so at QUIT most replies still sit
        # in the server's send queue; closing the socket with the 4 MB unread
        # made the kernel reset the connection and drop them.
        c = self.raw()
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
        payload = b"x" * 1024
        head = b"".join(encode_command("ECHO", payload) for _ in range(2000))
        data = head + encode_command("QUIT") + encode_command("ECHO", b"y" * (4 << 20))

        def send():
            try:
                c.sock.sendall(data)
            except OSError:
                pass  # reset, or closed by the test
        sender = threading.Thread(target=send)
        sender.start()
        self.addCleanup(sender.join, 10)
        time.sleep(0.5)
        for i in range(2000):
            self.assertEqual(c.read_reply(), payload, f"reply {i}")
        self.assertEqual(c.read_reply(), "OK")
        self.assertTrue(c.wait_closed())
        self.assertEqual(bytes(c.buf), b"")


class MemoryLimitsTest(ServerTestCase):
    server_args = ("--max-filter-memory", "1mb", "--maxmemory", "4mb")

    def test_a_filter_larger_than_max_filter_memory_is_refused_up_front(self):
        c = self.raw()
        self.assertMemoryRefusal(c.call("BF.RESERVE", "big", "0.01", "10000000"),
                                 "ERR Insufficient memory to create filter",
                                 " bytes, max-filter-memory is 1048576")
        self.assertEqual(c.call("EXISTS", "big"), 0)

    def test_filters_past_maxmemory_get_oom_and_the_server_keeps_serving(self):
        c = self.raw()
        replies = [c.call("BF.RESERVE", f"f{i}", "0.01", "200000") for i in range(40)]
        refused = [r for r in replies if isinstance(r, RespError)]
        self.assertTrue(refused, "40 x ~240 KB filters cannot fit in 4 MB")
        self.assertTrue(all(r.startswith(("OOM", "ERR Insufficient memory")) for r in refused),
                        refused)
        for r in refused:  # and say what maxmemory had left
            self.assertIn(" bytes free of 4194304", str(r))
        self.assertEqual(c.call("PING"), "PONG")
        c.call("FLUSHALL")
        self.assertEqual(c.call("BF.RESERVE", "again", "0.01", "200000"), "OK",
                         "memory is given back by FLUSHALL")


class StartupTest(unittest.TestCase):

    def test_command_line_filter_defaults_are_used_for_auto_created_filters(self):
        with BloomgateServer(["--bf-initial-size", "500", "--bf-expansion-factor", "3"]) as s:
            r = s.client()
            r.bf().add("k", "x")
            info = r.bf().info("k")
            self.assertEqual((info.capacity, info.expansionRate), (500, 3))
            r.close()

    def test_a_bad_config_value_stops_start_up_naming_the_key(self):
        for args, key in [(["--bf-error-rate", "2"], "bf-error-rate"),
                          (["--maxclients", "abc"], "maxclients"),
                          (["--no-such-key", "1"], "no-such-key")]:
            with self.subTest(args=args):
                s = BloomgateServer(args, ready=False).start()
                code = s.wait_exit(10)
                log = s.log()
                s._cleanup()
                self.assertNotEqual(code, 0, f"{args} must stop start-up")
                self.assertIn(key, log, f"the message names the key: {log}")


class ShutdownTest(unittest.TestCase):

    def test_shutdown_command_stops_the_server_with_exit_code_0(self):
        s = BloomgateServer().start()
        try:
            c = s.raw()
            self.addCleanup(c.close)
            c.send(encode_command("SHUTDOWN"))
            self.assertTrue(c.wait_closed(), "SHUTDOWN closes the connection")
            self.assertEqual(bytes(c.buf), b"", "a successful SHUTDOWN sends no reply")
            self.assertEqual(s.wait_exit(10), 0)
        finally:
            s.stop(check=False)

    def test_sigterm_and_sigint_exit_0_with_clients_connected(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(signal=sig.name):
                s = BloomgateServer().start()
                idle = [s.raw() for _ in range(5)]
                self.assertEqual(idle[0].call("BF.ADD", "k", "x"), 1)
                started = time.monotonic()
                self.assertEqual(s.stop(sig=sig), 0)
                elapsed = time.monotonic() - started
                self.assertLess(elapsed, 5, f"{sig.name} took {elapsed:.2f}s to stop the server"
                                            f"\n--- server log ---\n{s.log()}")
                for c in idle:
                    self.assertTrue(c.wait_closed(1))
                    c.close()

    def test_sigterm_flushes_every_reply_of_commands_already_run(self):
        # 8 x KEYS over 2,000 long names queue ~1.6 MB of replies for a client
        # that has not read any of them yet (more than one socket buffer, less
        # than the output limit); the last command of its pipeline names the
        # connection, so another client can see that everything ran.
        s = BloomgateServer().start()
        try:
            r = s.client()
            names = [f"key:{i:05d}:" + "n" * 90 for i in range(2000)]
            pipe = r.pipeline(transaction=False)
            for name in names:
                pipe.execute_command("BF.ADD", name, "x")
            pipe.execute()
            c = s.raw(timeout=20)
            self.addCleanup(c.close)
            n = 8
            c.send(encode_command("KEYS", "key:*") * n + encode_command("CLIENT", "SETNAME", "ran"))
            wait_until(lambda: b"name=ran " in r.execute_command("CLIENT", "LIST"),
                       deadline_s=10, what="the pipeline to run")
            r.close()
            s.proc.send_signal(signal.SIGTERM)
            got = 0
            try:
                while got < n:
                    self.assertEqual(len(c.read_reply()), len(names), f"KEYS reply {got}")
                    got += 1
                self.assertEqual(c.read_reply(), "OK")
            except ConnectionError:
                pass
            self.assertEqual(got, n, f"only {got} of {n} queued replies were delivered before "
                                     f"the close\n--- server log ---\n{s.log()}")
            self.assertTrue(c.wait_closed(), "the connection is closed after the last reply")
            self.assertEqual(s.wait_exit(10), 0)
        finally:
            s.stop(check=False)

    def test_sigterm_right_after_clients_connect_stops_promptly(self):
        # A connection accepted just as the stop begins must be stopped too,
        # not left for a forced close after a grace period.
        for trial in range(15):
            s = BloomgateServer().start()
            conns = [socket.create_connection(("127.0.0.1", s.port), timeout=5)
                     for _ in range(20)]
            started = time.monotonic()
            s.proc.send_signal(signal.SIGTERM)
            try:
                code = s.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                code = None
            elapsed = time.monotonic() - started
            stopped = s.stop(check=False)  # reaps, or kills after the grace; cleans up
            code = stopped if code is None else code
            log = s.log()
            for c in conns:
                c.close()
            other = [line for line in log.splitlines() if "accept failed" not in line]
            self.assertEqual(code, 0)
            self.assertLess(elapsed, 3, f"trial {trial}: SIGTERM took {elapsed:.2f}s\n"
                                        + "\n".join(other[-5:]))
            self.assertNotIn("accept failed", log,
                             f"trial {trial}: {log.count('accept failed')} 'accept failed' "
                             f"lines after the acceptor was closed")

    def test_sigterm_during_a_continuous_pipeline_ends_on_a_whole_reply(self):
        s = BloomgateServer().start()
        try:
            c = s.raw()
            self.addCleanup(c.close)
            stop = threading.Event()
            batch = b"".join(encode_command("ECHO", f"m{i}") for i in range(100))

            def keep_sending():
                try:
                    for _ in range(2000):
                        if stop.is_set():
                            return
                        c.sock.sendall(batch)
                except OSError:
                    pass  # the server closed the connection
            sender = threading.Thread(target=keep_sending)
            sender.start()
            self.addCleanup(sender.join, 10)
            self.addCleanup(stop.set)
            for i in range(500):
                self.assertEqual(c.read_reply(), f"m{i % 100}".encode())
            s.proc.send_signal(signal.SIGTERM)
            got = 500
            try:
                while got < 200_000:
                    self.assertEqual(c.read_reply(), f"m{got % 100}".encode(), f"reply {got}")
                    got += 1
            except ConnectionError:
                pass
            self.assertEqual(bytes(c.buf), b"", f"a reply was cut in half after {got} replies")
            self.assertEqual(s.wait_exit(10), 0)
        finally:
            stop.set()
            s.stop(check=False)


if __name__ == "__main__":
    unittest.main()
