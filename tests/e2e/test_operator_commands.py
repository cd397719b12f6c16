"""The operator's commands against the real binary, through redis-py and
raw sockets: SLOWLOG, LATENCY, CLIENT KILL / NO-EVICT, RESET, CONFIG
RESETSTAT, BGREWRITEAOF during a BGSAVE, Redis's loglevel names."""

import unittest

import redis

from harness import ServerTestCase, parse_info, wait_until


class OperatorCommandsTest(ServerTestCase):
    server_args = ("--slowlog-log-slower-than", "0")

    def test_slowlog_holds_the_commands_with_the_clients_address_and_name(self):
        c = self.client()
        c.client_setname("tool")
        c.execute_command("BF.ADD", "k", "item")
        # Debian's redis-py 4.3 drops the address and name: read the raw reply.
        entries = c.execute_command("SLOWLOG", "GET", "2")  # newest first
        (id1, _, _, args1, addr1, name1), (id2, _, _, args2, _, _) = entries
        self.assertEqual(args1, [b"BF.ADD", b"k", b"item"])
        self.assertEqual(name1, b"tool")
        self.assertIn(b"127.0.0.1:", addr1)
        self.assertEqual(args2, [b"CLIENT", b"SETNAME", b"tool"])
        self.assertGreater(id1, id2)
        self.assertTrue(c.slowlog_reset())
        self.assertEqual(c.slowlog_len(), 1)  # the RESET itself

    def test_latency_answers_in_resp2_and_resp3(self):
        self.assertEqual(self.r.execute_command("LATENCY", "LATEST"), [])
        raw = self.raw()
        raw.call("HELLO", "3")
        raw.call("CONFIG", "RESETSTAT")  # other clients' PINGs (readiness probes) go
        raw.call("PING")
        histogram = raw.call("LATENCY", "HISTOGRAM", "ping")
        self.assertEqual(list(histogram.keys()), [b"ping"])
        self.assertEqual(histogram[b"ping"][b"calls"], 1)

    def test_client_kill_closes_the_other_connection(self):
        victim = self.raw()
        victim_id = victim.call("CLIENT", "ID")
        self.assertEqual(self.r.execute_command("CLIENT", "KILL", "ID", victim_id), 1)

        def closed():
            try:
                victim.call("PING")
                return False
            except (ConnectionError, OSError):
                return True
        wait_until(closed, 5, what="the killed client's connection to close")
        # The killer itself is skipped by default, and still served.
        me = self.r.client_id()
        self.assertEqual(self.r.execute_command("CLIENT", "KILL", "ID", me), 0)
        self.assertEqual(self.r.ping(), True)
        self.assertServesNewClients()

    def test_client_kill_by_old_address_form(self):
        victim = self.raw()
        addr = victim.call("CLIENT", "INFO").decode().split(" addr=")[1].split(" ")[0]
        self.assertEqual(self.r.execute_command("CLIENT", "KILL", addr), b"OK")
        self.assertRaisesText("No such client", self.r.execute_command, "CLIENT", "KILL", addr)

    def test_no_evict_and_reset(self):
        raw = self.raw()
        self.assertEqual(raw.call("CLIENT", "NO-EVICT", "on"), "OK")
        self.assertIn(b" flags=e ", raw.call("CLIENT", "INFO"))
        raw.call("MULTI")
        self.assertEqual(raw.call("RESET"), "RESET")
        self.assertIn(b" flags=N ", raw.call("CLIENT", "INFO"))

    def test_config_resetstat_zeroes_commandstats_and_errorstats(self):
        try:
            self.r.execute_command("NOSUCH")
        except redis.ResponseError:
            pass
        raw = self.raw()  # the INFO text as sent
        info = parse_info(raw.call("INFO", "errorstats"))
        self.assertRegex(info["errorstat_ERR"], r"^count=[1-9]")
        self.assertTrue(self.r.config_resetstat())
        info = parse_info(raw.call("INFO", "errorstats"))
        self.assertNotIn("errorstat_ERR", info)

    def test_bgrewriteaof_during_a_bgsave_is_scheduled(self):
        # A filter large enough that the first save is still running.
        self.r.execute_command("BF.RESERVE", "big", "0.0001", "20000000")
        raw = self.raw()  # redis-py turns these replies into True
        self.assertEqual(raw.call("BGSAVE"), "Background saving started")
        reply = raw.call("BGREWRITEAOF")
        self.assertIn(reply, ("Background append only file rewriting scheduled",
                              "Background append only file rewriting started"))
        wait_until(lambda: self.r.info("persistence")["aof_rewrite_scheduled"] == 0 and
                   self.r.info("persistence")["rdb_bgsave_in_progress"] == 0, 30,
                   interval_s=0.05, what="the scheduled rewrite to run")
        self.assertGreaterEqual(self.r.info("persistence")["rdb_saves"], 2 if reply.endswith(
            "scheduled") else 1)

    def test_redis_loglevel_names_are_accepted(self):
        for level in ("notice", "verbose", "warning", "debug", "nothing", "notice"):
            self.assertTrue(self.r.config_set("loglevel", level))
            self.assertEqual(self.r.config_get("loglevel"), {"loglevel": level})


if __name__ == "__main__":
    unittest.main()
