"""ACL channel rules as Redis 7 has them, end to end: &pattern rules,
allchannels / resetchannels and acl-pubsub-default (resetchannels unless
configured), PUBLISH / SUBSCRIBE / PSUBSCRIBE refused with Redis's NOPERM
text (also at MULTI's queue time), ACL GETUSER / LIST showing the channels,
INFO's acl_access_denied_channel, a subscriber of a user whose channels
shrink closed, and users lines of older builds (&*, allchannels) loading."""

import os
import tempfile
import unittest

from harness import BloomgateServer, RawConnection, RespError, parse_info, wait_until

CHANNEL_DENIED = "NOPERM No permissions to access a channel"


class AclChannelsTest(unittest.TestCase):

    def setUp(self):
        self.server = BloomgateServer(["--threads", "3"]).start()
        self.addCleanup(self.server.stop)
        self.admin = RawConnection(self.server.port)
        self.addCleanup(self.admin.close)

    def login(self, user):
        conn = RawConnection(self.server.port)
        self.addCleanup(conn.close)
        self.assertEqual(conn.call("AUTH", user, "pw"), "OK")
        return conn

    def test_patterns_decide_publish_subscribe_and_psubscribe(self):
        self.assertEqual(self.admin.call("ACL", "SETUSER", "news", "on", ">pw", "~*", "+@all",
                                         "&news", "&alerts:*"), "OK")
        news = self.login("news")
        self.assertEqual(news.call("PUBLISH", "news", "m"), 0)
        self.assertEqual(news.call("PUBLISH", "alerts:disk", "m"), 0)
        self.assertEqual(news.call("PUBLISH", "sports", "m"), RespError(CHANNEL_DENIED))
        self.assertEqual(news.call("SUBSCRIBE", "news", "sports"), RespError(CHANNEL_DENIED))
        # A pattern is allowed only as one of the user's own, literally.
        self.assertEqual(news.call("PSUBSCRIBE", "alerts:d*"), RespError(CHANNEL_DENIED))
        self.assertEqual(news.call("PSUBSCRIBE", "alerts:*"), [b"psubscribe", b"alerts:*", 1])
        # Refused at queue time inside MULTI, which then aborts.
        other = self.login("news")
        self.assertEqual(other.call("MULTI"), "OK")
        self.assertEqual(other.call("PUBLISH", "sports", "m"), RespError(CHANNEL_DENIED))
        self.assertIsInstance(other.call("EXEC"), RespError)
        info = parse_info(self.admin.call("INFO", "stats"))
        self.assertEqual(int(info["acl_access_denied_channel"]), 4)
        # ACL LOG, newest first: the refusal inside MULTI, then the others.
        log = [dict(zip(e[::2], e[1::2])) for e in self.admin.call("ACL", "LOG")]
        self.assertEqual((log[0][b"reason"], log[0][b"context"], log[0][b"object"],
                          log[0][b"username"]), (b"channel", b"multi", b"sports", b"news"))
        toplevel = [e for e in log if e[b"context"] == b"toplevel"]
        self.assertEqual({e[b"object"] for e in toplevel}, {b"sports", b"alerts:d*"})
        sports = [e for e in toplevel if e[b"object"] == b"sports"][0]
        self.assertEqual(sports[b"count"], 2)   # PUBLISH and SUBSCRIBE, grouped as Redis
        self.assertIn(b"user=news", sports[b"client-info"])
        self.assertEqual(self.admin.call("ACL", "LOG", "RESET"), "OK")
        self.assertEqual(self.admin.call("ACL", "LOG"), [])

        getuser = self.admin.call("ACL", "GETUSER", "news")
        fields = dict(zip(getuser[::2], getuser[1::2]))
        self.assertEqual(fields[b"channels"], b"&news &alerts:*")
        listed = [line.decode() for line in self.admin.call("ACL", "LIST")]
        self.assertIn("user default on nopass ~* &* +@all", listed)
        self.assertTrue(any(line.startswith("user news on #") and
                            line.endswith(" ~* resetchannels &news &alerts:* +@all")
                            for line in listed), listed)
        # A pattern after allchannels is refused with Redis's text.
        reply = self.admin.call("ACL", "SETUSER", "news", "allchannels", "&x")
        self.assertIsInstance(reply, RespError)
        self.assertIn("Adding a pattern after the * pattern (or the 'allchannels' flag)", reply)

    def test_acl_pubsub_default_gives_new_users_no_channels_unless_set(self):
        self.assertEqual(self.admin.call("CONFIG", "GET", "acl-pubsub-default"),
                         [b"acl-pubsub-default", b"resetchannels"])
        self.assertEqual(self.admin.call("ACL", "SETUSER", "plain", "on", ">pw", "~*", "+@all"),
                         "OK")
        self.assertEqual(self.login("plain").call("PUBLISH", "any", "m"),
                         RespError(CHANNEL_DENIED))
        self.assertEqual(self.admin.call("CONFIG", "SET", "acl-pubsub-default", "allchannels"),
                         "OK")
        self.assertEqual(self.admin.call("ACL", "SETUSER", "later", "on", ">pw", "~*", "+@all"),
                         "OK")
        self.assertEqual(self.login("later").call("PUBLISH", "any", "m"), 0)
        # A user that existed keeps what it had, as in Redis.
        self.assertEqual(self.login("plain").call("PUBLISH", "any", "m"),
                         RespError(CHANNEL_DENIED))
        reply = self.admin.call("CONFIG", "SET", "acl-pubsub-default", "some")
        self.assertIsInstance(reply, RespError)
        self.assertIn("must be one of the following: allchannels, resetchannels", reply)

    def test_subscribers_outside_their_new_channels_are_closed(self):
        self.assertEqual(self.admin.call("ACL", "SETUSER", "feed", "on", ">pw", "~*", "+@all",
                                         "&news", "&alerts:*"), "OK")
        on_news = self.login("feed")
        on_news.send(b"SUBSCRIBE news\r\n")
        self.assertEqual(on_news.read_reply(), [b"subscribe", b"news", 1])
        on_alerts = self.login("feed")
        on_alerts.send(b"PSUBSCRIBE alerts:*\r\n")
        self.assertEqual(on_alerts.read_reply(), [b"psubscribe", b"alerts:*", 1])
        self.assertEqual(self.admin.call("ACL", "SETUSER", "feed", "resetchannels", "&alerts:*"),
                         "OK")
        self.assertTrue(on_news.wait_closed())
        # Still allowed: still subscribed, and still delivered to.
        self.assertEqual(self.admin.call("PUBLISH", "alerts:disk", "full"), 1)
        self.assertEqual(on_alerts.read_reply(),
                         [b"pmessage", b"alerts:*", b"alerts:disk", b"full"])
        wait_until(lambda: self.admin.call("PUBSUB", "NUMSUB", "news") == [b"news", 0], 5.0,
                   what="the closed subscriber to leave its channel")


class OlderUsersLinesTest(unittest.TestCase):

    def test_users_lines_with_the_channel_rules_older_builds_accepted_still_load(self):
        with tempfile.TemporaryDirectory(prefix="bloomgate-acl-") as tmp:
            path = os.path.join(tmp, "bloomgate.yaml")
            with open(path, "w") as f:
                f.write('users:\n'
                        '  - "old on >pw ~* &* +@all"\n'
                        '  - "older on >pw ~* allchannels +@all"\n'
                        '  - "oldest on >pw ~* resetchannels +@all"\n')
            with BloomgateServer(["--config", path]) as server:
                for user, expected in (("old", 0), ("older", 0),
                                       ("oldest", RespError(CHANNEL_DENIED))):
                    with RawConnection(server.port) as conn:
                        self.assertEqual(conn.call("AUTH", user, "pw"), "OK")
                        self.assertEqual(conn.call("PUBLISH", "c", "m"), expected, user)


if __name__ == "__main__":
    unittest.main()
