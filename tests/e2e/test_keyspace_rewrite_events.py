"""Keyspace events of the commands that rewrite a filter whole (CF.COMPACT,
TDIGEST.RESET, the families' LOADCHUNK) and of RESTORE, heard by a
subscriber; and acllog-max-len, which bounds ACL LOG."""

import unittest

import redis

from harness import BloomgateServer

EVENT_WAIT_S = 10.0


def scandump(r, command, key):
    """Every (iterator, chunk) pair of a SCANDUMP, in order."""
    chunks = []
    it = 0
    while True:
        it, data = r.execute_command(command, key, it)
        if it == 0:
            return chunks
        chunks.append((it, data))


def entry_object(entry):
    """An ACL LOG entry's object, whether redis-py parsed the entry or not."""
    if isinstance(entry, dict):
        value = entry.get("object", entry.get(b"object"))
    else:
        value = entry[entry.index(b"object") + 1]
    return value.decode() if isinstance(value, bytes) else value


class RewriteEventsTest(unittest.TestCase):

    def setUp(self):
        server = BloomgateServer(["--threads", "2"]).start()
        self.addCleanup(server.stop)
        self.r = server.client()
        self.listener = server.client().pubsub()
        self.addCleanup(self.listener.close)

    def listen(self):
        """Every key event of the database, from here on: returns once the
        server confirmed the subscription, which another connection's
        commands could otherwise overtake (another loop, --threads 2)."""
        self.listener.psubscribe("__keyevent@0__:*")
        message = self.listener.get_message(timeout=EVENT_WAIT_S)
        self.assertIsNotNone(message, "no PSUBSCRIBE confirmation")
        self.assertEqual(message["type"], "psubscribe")

    def heard_until_marker(self):
        """The (event, key) pairs heard before the next marker."""
        heard = []
        while True:
            message = self.listener.get_message(timeout=EVENT_WAIT_S)
            self.assertIsNotNone(message, f"nothing heard after {heard}")
            if message["type"] != "pmessage":
                continue
            event = message["channel"].decode().removeprefix("__keyevent@0__:")
            if event == "marker":
                return heard
            heard.append((event, message["data"].decode()))

    def expect(self, command, expected):
        """Runs `command`, then publishes a marker: what is heard before the
        marker is the command's events, and nothing else."""
        self.r.execute_command(*command)
        self.r.publish("__keyevent@0__:marker", command[0])
        self.assertEqual(self.heard_until_marker(), expected, command)

    def test_compact_reset_loadchunk_and_restore_publish_their_events(self):
        r = self.r
        r.execute_command("CF.RESERVE", "cf", "1000")
        r.execute_command("CF.INSERT", "cf", "ITEMS", *[f"i{i}" for i in range(50)])
        r.execute_command("BF.ADD", "bf", "x")
        r.execute_command("TDIGEST.CREATE", "td")
        r.execute_command("TDIGEST.ADD", "td", "1", "2", "3")
        r.execute_command("CBF.ADD", "cbf", "x")
        r.execute_command("CMS.INITBYDIM", "cms", "10", "2")
        r.execute_command("TOPK.RESERVE", "topk", "3")
        dumps = {(cmd, key): scandump(r, cmd, key) for cmd, key in [
            ("BF.SCANDUMP", "bf"), ("CF.SCANDUMP", "cf"), ("CBF.SCANDUMP", "cbf"),
            ("CMS.SCANDUMP", "cms"), ("TOPK.SCANDUMP", "topk")]}
        payload = r.dump("bf")

        r.config_set("notify-keyspace-events", "KEA")
        self.listen()

        self.expect(("CF.COMPACT", "cf"), [("cuckoo.compact", "cf")])
        self.expect(("TDIGEST.RESET", "td"), [("tdigest.reset", "td")])
        families = {"BF": "bloom", "CF": "cuckoo", "CBF": "cbf", "CMS": "cms", "TOPK": "topk"}
        for (command, key), chunks in dumps.items():
            family = families[command.split(".")[0]]
            self.assertTrue(chunks, command)
            for it, data in chunks:
                self.expect((command.replace("SCANDUMP", "LOADCHUNK"), f"{key}:copy", it, data),
                            [(f"{family}.loadchunk", f"{key}:copy")])
        self.expect(("RESTORE", "restored", "0", payload), [("restore", "restored")])
        self.expect(("RESTORE", "restored", "0", payload, "REPLACE"), [("restore", "restored")])
        # Restored already expired over a key: the key is deleted, as Redis says.
        self.expect(("RESTORE", "restored", "1", payload, "REPLACE", "ABSTTL"),
                    [("del", "restored")])
        self.assertEqual(r.exists("restored"), 0)
        # A refused command publishes nothing.
        with self.assertRaises(redis.ResponseError):
            r.execute_command("CF.COMPACT", "bf")
        self.expect(("PING",), [])

    def test_rewrite_events_are_module_class_d(self):
        self.r.execute_command("TDIGEST.CREATE", "td")
        self.r.config_set("notify-keyspace-events", "Eg")
        self.listen()
        self.expect(("TDIGEST.RESET", "td"), [])
        self.expect(("RESTORE", "r", "0", self.r.dump("td")), [("restore", "r")])


class AclLogMaxLenTest(unittest.TestCase):

    def test_acllog_max_len_bounds_the_log_and_config_set_shrinks_it(self):
        with BloomgateServer() as server:
            r = server.client()
            self.assertEqual(r.config_get("acllog-max-len"), {"acllog-max-len": "128"})
            r.execute_command("ACL", "SETUSER", "lim", "on", ">pw", "~allowed:*", "+@all")
            limited = server.client(username="lim", password="pw")
            # Refusals of ten different keys: ten entries (equal ones would merge).
            for i in range(10):
                with self.assertRaises(redis.exceptions.NoPermissionError):
                    limited.execute_command("BF.ADD", f"denied:{i}", "x")
            self.assertEqual(len(r.execute_command("ACL", "LOG")), 10)
            r.config_set("acllog-max-len", "3")
            self.assertEqual(r.config_get("acllog-max-len"), {"acllog-max-len": "3"})
            entries = r.execute_command("ACL", "LOG")
            self.assertEqual(len(entries), 3)
            self.assertEqual([entry_object(e) for e in entries],
                             ["denied:9", "denied:8", "denied:7"])
            for i in range(10, 13):
                with self.assertRaises(redis.exceptions.NoPermissionError):
                    limited.execute_command("BF.ADD", f"denied:{i}", "x")
            self.assertEqual(len(r.execute_command("ACL", "LOG")), 3)
            r.config_set("acllog-max-len", "0")
            self.assertEqual(r.execute_command("ACL", "LOG"), [])
            with self.assertRaises(redis.ResponseError):
                r.config_set("acllog-max-len", "-1")


if __name__ == "__main__":
    unittest.main()
