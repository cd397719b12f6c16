"""Pub/sub and keyspace notifications, as Redis 7.0 answers them: the
(un)subscribe confirmations and their counts, delivery to subscribers on
every I/O thread, RESP3 pushes, the subscribed context, PUBSUB, keyspace
events, client types in CLIENT LIST / KILL, and a subscriber that never
reads cut off at the output limit while the server stays healthy."""

import select
import subprocess
import time
import unittest

from harness import (BloomgateServer, Push, RawConnection, RespError, non_reading_subscriber,
                     parse_info, wait_until)

SUBSCRIBED_ERROR = ("ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / "
                    "PING / QUIT / RESET are allowed in this context")


class PubSubTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        # Three loops: connections are spread over them, so a publisher and
        # its subscribers sit on different threads.
        cls.server = BloomgateServer(["--threads", "3"]).start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def raw(self):
        conn = RawConnection(self.server.port)
        self.addCleanup(conn.close)
        return conn

    def read_n(self, conn, n):
        return [conn.read_reply() for _ in range(n)]

    def test_confirmations_count_channels_and_patterns(self):
        sub = self.raw()
        sub.send(b"SUBSCRIBE a b a\r\n")
        self.assertEqual(self.read_n(sub, 3), [[b"subscribe", b"a", 1], [b"subscribe", b"b", 2],
                                                [b"subscribe", b"a", 2]])
        sub.send(b"PSUBSCRIBE n* n*\r\n")
        self.assertEqual(self.read_n(sub, 2), [[b"psubscribe", b"n*", 3],
                                                [b"psubscribe", b"n*", 3]])
        # Naming a channel not subscribed still confirms it, with the count.
        sub.send(b"UNSUBSCRIBE zzz\r\n")
        self.assertEqual(sub.read_reply(), [b"unsubscribe", b"zzz", 3])
        # No names: every channel, each confirmation counting what is left.
        sub.send(b"UNSUBSCRIBE\r\n")
        self.assertEqual(self.read_n(sub, 2), [[b"unsubscribe", b"a", 2],
                                                [b"unsubscribe", b"b", 1]])
        sub.send(b"PUNSUBSCRIBE\r\n")
        self.assertEqual(sub.read_reply(), [b"punsubscribe", b"n*", 0])
        # Nothing left: one confirmation with a null name, exact RESP2 bytes.
        self.assertEqual(sub.call_raw("UNSUBSCRIBE"),
                         b"*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n")
        self.assertEqual(sub.call_raw("PUNSUBSCRIBE"),
                         b"*3\r\n$12\r\npunsubscribe\r\n$-1\r\n:0\r\n")
        # Out of subscribed mode: ordinary commands run again.
        self.assertEqual(sub.call("BF.ADD", "confirm-k", "x"), 1)

    def test_subscribed_context_allows_only_pubsub_ping_quit_reset(self):
        sub = self.raw()
        sub.send(b"SUBSCRIBE ctx\r\n")
        self.assertEqual(sub.read_reply(), [b"subscribe", b"ctx", 1])
        for args, name in ((("BF.ADD", "k", "x"), "bf.add"), (("CLIENT", "LIST"), "client|list"),
                           (("PUBLISH", "ctx", "m"), "publish")):
            reply = sub.call(*args)
            self.assertIsInstance(reply, RespError)
            self.assertEqual(reply, SUBSCRIBED_ERROR.format(name))
        # PING answers in a message's shape.
        self.assertEqual(sub.call_raw("PING"), b"*2\r\n$4\r\npong\r\n$0\r\n\r\n")
        self.assertEqual(sub.call("PING", "hi"), [b"pong", b"hi"])
        # RESET leaves subscribed mode without confirmations.
        self.assertEqual(sub.call("RESET"), "RESET")
        self.assertEqual(sub.call("PING"), "PONG")
        self.assertEqual(self.server.client().pubsub_numsub("ctx"), [(b"ctx", 0)])

    def test_publish_reaches_subscribers_on_every_thread_and_counts_receivers(self):
        subs = []
        for i in range(6):
            conn = self.raw()
            conn.send(b"SUBSCRIBE news\r\n")
            self.assertEqual(conn.read_reply(), [b"subscribe", b"news", 1])
            subs.append(conn)
        # One also on a matching pattern: it receives twice and counts twice.
        subs[0].send(b"PSUBSCRIBE ne?s\r\n")
        self.assertEqual(subs[0].read_reply(), [b"psubscribe", b"ne?s", 2])
        patterned = self.raw()
        patterned.send(b"PSUBSCRIBE n[aeiou]ws *x*\r\n")
        self.assertEqual(self.read_n(patterned, 2), [[b"psubscribe", b"n[aeiou]ws", 1],
                                                      [b"psubscribe", b"*x*", 2]])
        publisher = self.raw()
        for n in range(50):
            self.assertEqual(publisher.call("PUBLISH", "news", f"m{n}"), 8)
        for i, conn in enumerate(subs):
            for n in range(50):
                self.assertEqual(conn.read_reply(), [b"message", b"news", f"m{n}".encode()])
                if i == 0:
                    self.assertEqual(conn.read_reply(),
                                     [b"pmessage", b"ne?s", b"news", f"m{n}".encode()])
        for n in range(50):
            self.assertEqual(patterned.read_reply(),
                             [b"pmessage", b"n[aeiou]ws", b"news", f"m{n}".encode()])
        # The connections really sit on different loops: ids are spread
        # round-robin, and the count above came from all of them.
        self.assertEqual(publisher.call("PUBLISH", "nobody-listens", "x"), 0)

    def test_resp3_gets_pushes_and_still_runs_commands(self):
        sub = self.raw()
        self.assertIsInstance(sub.call("HELLO", "3"), dict)
        sub.send(b"SUBSCRIBE r3\r\n")
        confirmation, data = sub.read_reply(raw=True)
        self.assertIsInstance(confirmation, Push)
        self.assertEqual(data, b">3\r\n$9\r\nsubscribe\r\n$2\r\nr3\r\n:1\r\n")
        # Normal commands work in RESP3 while subscribed, PING as usual.
        self.assertEqual(sub.call("BF.ADD", "r3-key", "x"), 1)
        self.assertEqual(sub.call("PING"), "PONG")
        self.assertEqual(self.server.client().publish("r3", "hello"), 1)
        message = sub.read_reply()
        self.assertIsInstance(message, Push)
        self.assertEqual(message, [b"message", b"r3", b"hello"])
        self.assertEqual(sub.call_raw("UNSUBSCRIBE"),
                         b">3\r\n$11\r\nunsubscribe\r\n$2\r\nr3\r\n:0\r\n")

    def test_pubsub_introspection_and_info(self):
        r = self.server.client()
        a, b = self.raw(), self.raw()
        a.send(b"SUBSCRIBE intro.1 intro.2\r\n")
        self.read_n(a, 2)
        b.send(b"SUBSCRIBE intro.1\r\nPSUBSCRIBE intro.* other.*\r\n")
        self.read_n(b, 3)
        self.assertEqual(sorted(r.pubsub_channels("intro.*")), [b"intro.1", b"intro.2"])
        self.assertEqual(r.pubsub_numsub("intro.1", "intro.2", "intro.3"),
                         [(b"intro.1", 2), (b"intro.2", 1), (b"intro.3", 0)])
        self.assertEqual(r.execute_command("PUBSUB", "NUMSUB"), [])
        self.assertGreaterEqual(r.pubsub_numpat(), 2)
        stats = r.info("stats")
        self.assertGreaterEqual(stats["pubsub_channels"], 2)
        self.assertGreaterEqual(stats["pubsub_patterns"], 2)
        b.close()
        wait_until(lambda: r.pubsub_numsub("intro.1") == [(b"intro.1", 1)], 5.0,
                   what="a closed subscriber to leave its channels")

    def test_client_list_and_kill_by_type(self):
        r = self.server.client()
        sub = self.raw()
        sub.send(b"CLIENT SETNAME typed-sub\r\n")
        self.assertEqual(sub.read_reply(), "OK")
        sub.send(b"SUBSCRIBE t1\r\nPSUBSCRIBE t*\r\n")
        self.read_n(sub, 2)
        normal = self.raw()
        self.assertEqual(normal.call("CLIENT", "SETNAME", "typed-normal"), "OK")
        line = [c for c in r.client_list() if c["name"] == "typed-sub"][0]
        self.assertEqual((line["flags"], line["sub"], line["psub"]), ("P", "1", "1"))
        names = [c["name"] for c in r.client_list(_type="pubsub")]
        self.assertIn("typed-sub", names)
        self.assertNotIn("typed-normal", names)
        self.assertNotIn("typed-sub", [c["name"] for c in r.client_list(_type="normal")])
        # TYPE normal spares the subscriber; TYPE pubsub takes it.
        killed = r.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
        self.assertGreaterEqual(killed, 1)
        self.assertTrue(normal.wait_closed())
        self.assertEqual(sub.call("PING"), [b"pong", b""])
        self.assertEqual(r.execute_command("CLIENT", "KILL", "TYPE", "pubsub"), 1)
        self.assertTrue(sub.wait_closed())
        with self.assertRaisesRegex(Exception, "Unknown client type 'nope'"):
            r.execute_command("CLIENT", "KILL", "TYPE", "nope")

    def test_redis_cli_subscriber_receives_what_redis_cli_publishes(self):
        port = str(self.server.port)
        proc = subprocess.Popen(["redis-cli", "-p", port, "SUBSCRIBE", "cli-news"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                bufsize=0)  # unbuffered, so select sees every line
        try:
            r = self.server.client()
            wait_until(lambda: r.pubsub_numsub("cli-news") == [(b"cli-news", 1)], 10.0,
                       what="redis-cli to subscribe")
            out = subprocess.run(["redis-cli", "-p", port, "PUBLISH", "cli-news", "hi there"],
                                 capture_output=True, text=True, timeout=10)
            self.assertEqual(out.stdout.strip(), "1")
            lines = []
            deadline = time.monotonic() + 10
            while "hi there" not in lines:
                remaining = deadline - time.monotonic()
                # Waited on with a deadline: a message that never comes fails
                # the test instead of blocking it.
                if remaining <= 0 or not select.select([proc.stdout], [], [], remaining)[0]:
                    break
                line = proc.stdout.readline()
                if not line:
                    break
                lines.append(line.decode().strip())
            self.assertEqual(lines[:3], ["subscribe", "cli-news", "1"])
            self.assertEqual(lines[-3:], ["message", "cli-news", "hi there"])
        finally:
            proc.kill()
            proc.wait(timeout=10)
            proc.stdout.close()


class KeyspaceNotificationTest(unittest.TestCase):

    def setUp(self):
        self.server = BloomgateServer(["--threads", "2"]).start()
        self.addCleanup(self.server.stop)
        self.r = self.server.client()
        self.sub = RawConnection(self.server.port)
        self.addCleanup(self.sub.close)

    def events(self, n):
        """The next n (channel, message) pairs the pattern subscriber got."""
        out = []
        for _ in range(n):
            kind, _pattern, channel, message = self.sub.read_reply()
            self.assertEqual(kind, b"pmessage")
            out.append((channel.decode(), message.decode()))
        return out

    def test_off_by_default_and_redis_validation(self):
        self.assertEqual(self.r.config_get("notify-keyspace-events"),
                         {"notify-keyspace-events": ""})
        with self.assertRaisesRegex(Exception, "Invalid event class character"):
            self.r.config_set("notify-keyspace-events", "KEq")
        self.r.config_set("notify-keyspace-events", "KEg$lshzxetd")
        self.assertEqual(self.r.config_get("notify-keyspace-events"),
                         {"notify-keyspace-events": "AKE"})
        self.r.config_set("notify-keyspace-events", "Egx")
        self.assertEqual(self.r.config_get("notify-keyspace-events"),
                         {"notify-keyspace-events": "gxE"})
        # Off: a subscriber to every event hears nothing of a write.
        self.r.config_set("notify-keyspace-events", "")
        self.sub.send(b"PSUBSCRIBE __key*__:*\r\n")
        self.sub.read_reply()
        self.r.execute_command("BF.ADD", "quiet", "x")
        self.r.publish("__keyevent@0__:marker", "end")
        self.assertEqual(self.events(1), [("__keyevent@0__:marker", "end")])

    def test_filter_creation_adds_del_rename_expire_and_expired(self):
        self.r.config_set("notify-keyspace-events", "KEA")
        self.sub.send(b"PSUBSCRIBE __key*__:*\r\n")
        self.assertEqual(self.sub.read_reply(), [b"psubscribe", b"__key*__:*", 1])
        self.r.execute_command("BF.RESERVE", "f", "0.01", "100")
        self.assertEqual(self.events(2), [("__keyspace@0__:f", "bloom.reserve"),
                                          ("__keyevent@0__:bloom.reserve", "f")])
        # A creating add: the creation, then the add.
        self.r.execute_command("BF.ADD", "g", "x")
        self.assertEqual(self.events(4), [("__keyspace@0__:g", "bloom.reserve"),
                                          ("__keyevent@0__:bloom.reserve", "g"),
                                          ("__keyspace@0__:g", "bloom.add"),
                                          ("__keyevent@0__:bloom.add", "g")])
        # Nothing new went in: no event (the marker comes next).
        self.r.execute_command("BF.ADD", "g", "x")
        self.r.execute_command("BF.MADD", "g", "x", "y")
        self.assertEqual(self.events(2), [("__keyspace@0__:g", "bloom.add"),
                                          ("__keyevent@0__:bloom.add", "g")])
        self.r.execute_command("BF.INSERT", "h", "ITEMS", "a")
        self.assertEqual([e[1] for e in self.events(4)],
                         ["bloom.reserve", "h", "bloom.add", "h"])
        self.r.rename("h", "h2")
        self.assertEqual(self.events(4), [("__keyspace@0__:h", "rename_from"),
                                          ("__keyevent@0__:rename_from", "h"),
                                          ("__keyspace@0__:h2", "rename_to"),
                                          ("__keyevent@0__:rename_to", "h2")])
        self.assertEqual(self.r.delete("h2", "missing"), 1)
        self.assertEqual(self.events(2), [("__keyspace@0__:h2", "del"),
                                          ("__keyevent@0__:del", "h2")])
        self.r.pexpire("g", 100)
        self.assertEqual(self.events(2), [("__keyspace@0__:g", "expire"),
                                          ("__keyevent@0__:expire", "g")])
        # Found expired by the sweep or on access: the "expired" event.
        self.sub.sock.settimeout(10)
        self.assertEqual(self.events(2), [("__keyspace@0__:g", "expired"),
                                          ("__keyevent@0__:expired", "g")])

    def test_keyevent_only(self):
        self.r.config_set("notify-keyspace-events", "Ed")
        self.sub.send(b"PSUBSCRIBE __key*__:*\r\n")
        self.sub.read_reply()
        self.r.execute_command("BF.ADD", "only", "x")
        self.assertEqual(self.events(2), [("__keyevent@0__:bloom.reserve", "only"),
                                          ("__keyevent@0__:bloom.add", "only")])

    def test_filter_events_are_module_class_d_not_generic_g(self):
        self.r.config_set("notify-keyspace-events", "Eg")
        self.sub.send(b"PSUBSCRIBE __key*__:*\r\n")
        self.sub.read_reply()
        self.r.execute_command("BF.ADD", "generic-only", "x")
        self.r.delete("generic-only")
        self.assertEqual(self.events(1), [("__keyevent@0__:del", "generic-only")])

    def test_every_family_publishes_reserve_add_and_del_under_one_rule(self):
        self.r.config_set("notify-keyspace-events", "Ed")
        self.sub.send(b"PSUBSCRIBE __keyevent@0__:*\r\n")
        self.sub.read_reply()
        steps = [
            (("CF.RESERVE", "c", "1000"), ["cuckoo.reserve"]),
            (("CF.ADD", "c2", "a"), ["cuckoo.reserve", "cuckoo.add"]),
            (("CF.ADDNX", "c2", "a"), []),              # already in: nothing added
            (("CF.DEL", "c", "zz"), []),                # an empty filter: nothing deleted
            (("CF.INSERTNX", "c", "ITEMS", "a"), ["cuckoo.add"]),
            (("CF.INSERT", "c3", "ITEMS", "a"), ["cuckoo.reserve", "cuckoo.add"]),
            (("CF.DEL", "c2", "a"), ["cuckoo.del"]),
            (("CBF.RESERVE", "cb", "0.01", "100"), ["cbf.reserve"]),
            (("CBF.ADD", "cb2", "a"), ["cbf.reserve", "cbf.add"]),
            (("CBF.MADD", "cb2", "b"), ["cbf.add"]),
            (("CBF.INCR", "cb2", "a", "2"), ["cbf.add"]),
            (("CBF.DEL", "cb2", "a"), ["cbf.del"]),
            (("CBF.MDEL", "cb2", "b"), ["cbf.del"]),
            (("CMS.INITBYDIM", "m", "10", "2"), ["cms.reserve"]),
            (("CMS.INITBYPROB", "m2", "0.01", "0.01"), ["cms.reserve"]),
            (("CMS.INCRBY", "m", "a", "3"), ["cms.add"]),
            (("TOPK.RESERVE", "t", "3"), ["topk.reserve"]),
            (("TOPK.ADD", "t", "a"), ["topk.add"]),
            (("TOPK.INCRBY", "t", "a", "2"), ["topk.add"]),
            (("TDIGEST.CREATE", "d"), ["tdigest.reserve"]),
            (("TDIGEST.ADD", "d", "1.5"), ["tdigest.add"]),
            (("BF.RESERVE", "w", "0.01", "100", "WINDOW", "60", "GENERATIONS", "4"), ["bloom.reserve"]),
            (("BF.ADD", "w", "a"), ["bloom.add"]),
            (("CBF.RESERVE", "wc", "0.01", "100", "WINDOW", "60", "GENERATIONS", "4"), ["cbf.reserve"]),
            (("CBF.ADD", "wc", "a"), ["cbf.add"]),
        ]
        for command, expected in steps:
            self.r.execute_command(*command)
            # A marker after each command: what came before it is that
            # command's events, and nothing else.
            self.r.publish("__keyevent@0__:marker", command[0])
            got = self.events(len(expected) + 1)
            self.assertEqual(got, [("__keyevent@0__:" + e, command[1]) for e in expected]
                             + [("__keyevent@0__:marker", command[0])], command)


class SlowSubscriberTest(unittest.TestCase):

    def test_subscriber_that_never_reads_is_dropped_at_the_limit(self):
        with BloomgateServer(["--threads", "2"]) as server:
            r = server.client()
            r.config_set("client-output-buffer-limit", "1mb")
            slow = non_reading_subscriber(server.port, "slow", "flood", r)
            try:
                payload = "x" * 65536
                # 64 KiB a message: far past 1 MiB plus the socket buffers
                # (a few MiB on loopback) well before 2,000 messages.
                for sent in range(2000):
                    if r.publish("flood", payload) == 0:
                        break
                self.assertEqual(r.publish("flood", payload), 0,
                                 "the non-reading subscriber was never dropped")
                self.assertNotIn("slow", [c["name"] for c in r.client_list()])
                self.assertTrue(r.ping())
                self.assertIn("closing subscriber", server.log())
            finally:
                slow.close()


if __name__ == "__main__":
    unittest.main()
