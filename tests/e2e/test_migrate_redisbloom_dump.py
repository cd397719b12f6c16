"""bloomgate migrate from a RedisBloom source copies the types RedisBloom has
no SCANDUMP for (count-min sketch, top-k, t-digest) with DUMP and RESTORE.

No RedisBloom runs here, so the source is a small RESP server that answers
what a Redis 7.0.15 + RedisBloom 2.4.23 answers for those keys: MODULE LIST
names bf, TYPE the module types, PTTL, and DUMP the payloads RedisBloom made
(tests/data/redisbloom-sketches/dump-payloads.json). Every copied key
answers RedisBloom's recorded probe, keeps its TTL, and the source sees only
reading commands.
"""

import socketserver
import subprocess
import threading
import unittest

from harness import ServerTestCase, server_binary
from redis_dump_support import payloads, probe

DUMPED = ("cms", "topk", "td")
READ_ONLY = {"PING", "AUTH", "INFO", "MODULE", "SCAN", "TYPE", "PTTL", "DUMP"}


def bulk(data):
    if isinstance(data, str):
        data = data.encode()
    return b"$%d\r\n%s\r\n" % (len(data), data)


class FakeRedisBloom(socketserver.ThreadingTCPServer):
    """Answers migrate's reads from the fixture, as RedisBloom would."""
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, keys):
        self.keys = keys  # name -> (type, payload, pttl)
        self.seen = []
        super().__init__(("127.0.0.1", 0), FakeRedisBloomHandler)

    def answer(self, argv):
        self.seen.append(argv[0].upper())
        verb = argv[0].upper()
        if verb == "PING":
            return b"+PONG\r\n"
        if verb == "INFO":
            text = "# Server\r\nredis_version:7.0.15\r\n"
            return bulk(text)
        if verb == "MODULE":
            return (b"*1\r\n*4\r\n" + bulk("name") + bulk("bf") + bulk("ver") + b":20423\r\n")
        if verb == "SCAN":
            names = list(self.keys) + ["plain"]
            return b"*2\r\n" + bulk("0") + b"*%d\r\n" % len(names) + b"".join(
                bulk(n) for n in names)
        if verb == "TYPE":
            return b"+%s\r\n" % (self.keys[argv[1]][0] if argv[1] in self.keys else "string").encode()
        if verb == "PTTL":
            return b":%d\r\n" % (self.keys[argv[1]][2] if argv[1] in self.keys else -1)
        if verb == "DUMP":
            return bulk(self.keys[argv[1]][1]) if argv[1] in self.keys else b"$-1\r\n"
        return b"-ERR unknown command '%s'\r\n" % argv[0].encode()


class FakeRedisBloomHandler(socketserver.StreamRequestHandler):
    def handle(self):
        while True:
            line = self.rfile.readline()
            if not line:
                return
            assert line.startswith(b"*"), line
            argv = []
            for _ in range(int(line[1:])):
                size = int(self.rfile.readline()[1:])
                argv.append(self.rfile.read(size + 2)[:-2].decode("latin-1"))
            self.wfile.write(self.server.answer(argv))


class MigrateFromRedisBloomByDump(ServerTestCase):

    def test_cms_topk_and_tdigest_are_copied_with_dump_and_restore(self):
        fixtures = payloads()
        keys = {name: (fixtures[name][0], fixtures[name][1], fixtures[name][2])
                for name in DUMPED}
        source = FakeRedisBloom(keys)
        self.addCleanup(source.server_close)
        threading.Thread(target=source.serve_forever, daemon=True).start()
        self.addCleanup(source.shutdown)
        port = source.server_address[1]
        done = subprocess.run([server_binary(), "migrate", "--from", f"127.0.0.1:{port}",
                               "--to", f"127.0.0.1:{self.port}"],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        for name in DUMPED:
            module_type, _payload, pttl, command, expected = fixtures[name]
            with self.subTest(key=name):
                self.assertEqual(self.r.type(name).decode(), module_type)
                probe(self, self.r, name, command, expected)
                if pttl > 0:
                    self.assertTrue(pttl - 60_000 < self.r.pttl(name) <= pttl)
                else:
                    self.assertEqual(self.r.pttl(name), -1)
        self.assertEqual(self.r.exists("plain"), 0)
        self.assertLessEqual(set(source.seen), READ_ONLY)


if __name__ == "__main__":
    unittest.main()
