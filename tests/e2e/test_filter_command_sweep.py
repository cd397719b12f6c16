"""Every filter command against every kind of filter key, in a dozen argument
shapes: each call gets a reply (a value or an error) and the server keeps
serving. A command that assumes its key holds one kind of filter (BF.DEBUG on
a windowed key once dereferenced a plain filter that was not there) takes the
server down here, whatever the command and whichever kind it misreads.
"""

import unittest

from harness import RespError, ServerTestCase

# The filter families' command prefixes (COMMAND LIST is filtered by them,
# so a family added later is swept without editing this file).
PREFIXES = ("bf.", "cbf.", "cf.", "cms.", "topk.", "tdigest.", "bloomgate.")
# Key commands that look inside a filter of any kind.
GENERIC = [("TYPE",), ("DUMP",), ("MEMORY", "USAGE"), ("OBJECT", "ENCODING"), ("TTL",)]

# One key of each kind, made by these commands.
KINDS = {
    "plain": [("BF.RESERVE", "k", "0.01", "1000"), ("BF.ADD", "k", "a")],
    "windowed": [("BF.RESERVE", "k", "0.01", "1000", "WINDOW", "4", "GENERATIONS", "4"),
                 ("BF.ADD", "k", "a")],
    "counting": [("CBF.RESERVE", "k", "0.01", "1000"), ("CBF.ADD", "k", "a")],
    "windowed-counting": [("CBF.RESERVE", "k", "0.01", "1000", "WINDOW", "4"),
                          ("CBF.ADD", "k", "a")],
    "cuckoo": [("CF.RESERVE", "k", "1000"), ("CF.ADD", "k", "a")],
    "cms": [("CMS.INITBYDIM", "k", "100", "5"), ("CMS.INCRBY", "k", "a", "1")],
    "topk": [("TOPK.RESERVE", "k", "5"), ("TOPK.ADD", "k", "a")],
    "tdigest": [("TDIGEST.CREATE", "k"), ("TDIGEST.ADD", "k", "1.5")],
}

# What follows the key: nothing, items, numbers, keywords of several commands.
SHAPES = [(), ("a",), ("a", "b"), ("0",), ("0", "x"), ("ITEMS", "a"), ("1", "a"), ("a", "1"),
          ("0.5",), ("a", "b", "c"), ("k",), ("k", "k"), ("-1",)]


class FilterCommandSweep(ServerTestCase):

    def filter_commands(self):
        with self.server.raw() as conn:
            listed = conn.call("COMMAND", "LIST")
        names = sorted(n.decode() if isinstance(n, bytes) else str(n) for n in listed)
        commands = [(n,) for n in names if n.lower().startswith(PREFIXES)]
        self.assertGreater(len(commands), 50, "COMMAND LIST lost the filter families")
        return commands + GENERIC

    def test_every_filter_command_on_every_kind_of_key_leaves_the_server_serving(self):
        commands = self.filter_commands()
        calls = errors = 0
        with self.server.raw() as conn:
            for kind, setup in KINDS.items():
                for command in commands:
                    conn.call("FLUSHALL")
                    for step in setup:
                        reply = conn.call(*step)
                        self.assertNotIsInstance(reply, RespError, f"{kind}: {step}: {reply}")
                    for shape in SHAPES:
                        argv = command + ("k",) + shape
                        with self.subTest(kind=kind, argv=argv):
                            reply = conn.call(*argv)  # raises if the connection drops
                            calls += 1
                            errors += isinstance(reply, RespError)
                            self.assertEqual(conn.call("PING"), "PONG", argv)
        self.assertTrue(self.server.alive())
        # Both kinds of answer were reached: the shapes are not all refused at
        # the arity or type check (~8,100 calls, ~400 answered with a value).
        self.assertGreater(errors, 100)
        self.assertGreater(calls - errors, 100)


if __name__ == "__main__":
    unittest.main()
