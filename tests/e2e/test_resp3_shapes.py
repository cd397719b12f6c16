"""RESP3 reply shapes, byte for byte off the socket, against a real Redis 7.

One Bloomgate and one redis-server (the Debian package; the test is
skipped, saying so, where it is not installed) run for the whole file; each
test sends the same command to both after HELLO 3 and compares what comes
back: the exact bytes where the content is the same (SCAN, COMMAND GETKEYS,
COMMAND LIST), otherwise the type skeleton (every RESP3 type byte, map keys,
verbatim formats) with values left out. Replies Redis 7 cannot give (MODULE
LIST of a module, BF/CF.SCANDUMP) are compared with the shapes Redis's
module API produces for RedisBloom's calls (an array of maps with name, ver,
path, args; an array of an integer and a bulk string, nil at a cuckoo
dump's end).
"""

import os
import shutil
import subprocess
import tempfile
import unittest

from harness import BloomgateServer, RawConnection, free_port, wait_until


def read_raw_reply(conn):
    """One whole RESP3 reply's bytes."""
    return conn.read_raw()


class Node:
    """A parsed RESP3 value: its type byte, its scalar or its children."""

    def __init__(self, kind, value=None, children=None):
        self.kind, self.value, self.children = kind, value, children or []

    def skeleton(self, keep_values=False, set_sizes=True):
        """The type tree: map keys and verbatim formats kept, values dropped;
        with set_sizes=False a set is only its type (flag sets differ in
        content, e.g. DEL's key spec is RW and delete in Redis)."""
        if self.kind == "%":
            return ("%", tuple((k.value if k.kind in "+$" else k.skeleton(),
                                v.skeleton(keep_values, set_sizes))
                               for k, v in zip(self.children[0::2], self.children[1::2])))
        if self.kind == "~" and not set_sizes:
            return ("~",)
        if self.kind in "*~>":
            return (self.kind, tuple(c.skeleton(keep_values, set_sizes) for c in self.children))
        if self.kind == "=":
            return ("=", self.value[:4])
        return (self.kind, self.value) if keep_values else (self.kind,)


def parse(buf, pos=0):
    """Parses one RESP3 value from bytes; returns (Node, next position)."""
    kind = chr(buf[pos])
    end = buf.index(b"\r\n", pos)
    line = buf[pos + 1:end]
    pos = end + 2
    if kind in "+-:,(#":
        return Node(kind, line), pos
    if kind == "_":
        return Node(kind), pos
    if kind in "$=!":
        n = int(line)
        if n < 0:
            return Node(kind, None), pos
        return Node(kind, buf[pos:pos + n]), pos + n + 2
    if kind in "*~>%":
        n = int(line)
        count = 2 * n if kind == "%" else max(n, 0)
        children = []
        for _ in range(count):
            child, pos = parse(buf, pos)
            children.append(child)
        return Node(kind, n if n < 0 else None, children), pos
    raise AssertionError(f"unknown RESP3 type {kind!r} in {buf[:80]!r}")


def parse_whole(buf):
    node, end = parse(buf)
    assert end == len(buf), f"{len(buf) - end} bytes after the reply: {buf[end:end + 40]!r}"
    return node


class RedisServer:
    """A redis-server 7 on a free port, without persistence."""

    def __init__(self, binary):
        self.binary = binary
        self.dir = tempfile.TemporaryDirectory(prefix="bloomgate-resp3-redis-")

    def start(self):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir.name],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def ready():
            try:
                with RawConnection(self.port) as c:
                    return c.call("PING") == "PONG"
            except OSError:
                return False
        wait_until(ready, 10.0, what="redis-server to answer PING")
        return self

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.dir.cleanup()


def redis7_binary(needs):
    """The installed redis-server if it is a Redis 7, else SkipTest saying
    what `needs` it."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise unittest.SkipTest("redis-server is not installed (scripts/install-deps.sh)")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    if " v=7." not in version:
        raise unittest.SkipTest(f"{needs} Redis 7; found {version.strip()}")
    return binary


class Resp3ShapesTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        binary = redis7_binary("these shapes are those of")
        cls.redis = RedisServer(binary).start()
        cls.bloomgate = BloomgateServer(("--save", "", "--appendonly", "no")).start()

    @classmethod
    def tearDownClass(cls):
        cls.bloomgate.stop()
        cls.redis.stop()

    def setUp(self):
        self.ours = RawConnection(self.bloomgate.port)
        self.theirs = RawConnection(self.redis.port)
        for c in (self.ours, self.theirs):
            self.addCleanup(c.close)
            c.call("HELLO", "3")
            c.call("FLUSHALL")

    def raw(self, conn, *args):
        return conn.call_raw(*args)

    def both(self, *args):
        return self.raw(self.ours, *args), self.raw(self.theirs, *args)

    def assertSameBytes(self, *args):
        ours, theirs = self.both(*args)
        self.assertEqual(ours, theirs, args)

    def assertSameSkeleton(self, *args):
        ours, theirs = self.both(*args)
        self.assertEqual(parse_whole(ours).skeleton(), parse_whole(theirs).skeleton(),
                         f"{args}:\n ours   {ours[:300]!r}\n theirs {theirs[:300]!r}")
        return parse_whole(ours), parse_whole(theirs)

    # -- INFO and CLIENT: verbatim strings ------------------------------------
    def test_info_is_a_verbatim_txt_string(self):
        for section in ((), ("persistence",), ("keyspace",), ("server", "clients")):
            ours, theirs = self.assertSameSkeleton("INFO", *section)
            self.assertEqual(ours.value[:4], b"txt:")
            first = ours.value[4:].split(b"\r\n")[0]
            self.assertEqual(first, theirs.value[4:].split(b"\r\n")[0], section)

    def test_client_info_and_list_are_verbatim_with_redis_fields_in_order(self):
        for args in (("CLIENT", "INFO"), ("CLIENT", "LIST")):
            ours, theirs = self.assertSameSkeleton(*args)
            self.assertTrue(ours.value.endswith(b"\n"), args)
            names = [f.split(b"=")[0] for f in ours.value[4:].split(b"\n")[0].split(b" ")]
            redis_names = [f.split(b"=")[0] for f in theirs.value[4:].split(b"\n")[0].split(b" ")]
            self.assertEqual(names[:len(redis_names)], redis_names, args)

    # -- SCAN -------------------------------------------------------------------
    def test_scan_is_a_cursor_and_an_array_of_names(self):
        self.assertSameBytes("SCAN", "0")
        self.assertEqual(self.raw(self.ours, "BF.ADD", "k", "a"), b"#t\r\n")
        self.assertEqual(self.raw(self.theirs, "SET", "k", "a"), b"+OK\r\n")
        self.assertSameBytes("SCAN", "0")
        self.assertSameBytes("SCAN", "0", "MATCH", "k*", "COUNT", "10")

    # -- COMMAND ----------------------------------------------------------------
    def test_command_count_getkeys_and_list_are_as_in_redis(self):
        ours, theirs = self.assertSameSkeleton("COMMAND", "COUNT")
        self.assertEqual(ours.kind, ":")
        self.assertSameBytes("COMMAND", "GETKEYS", "del", "a", "b")
        self.assertSameBytes("COMMAND", "GETKEYS", "rename", "a", "b")
        self.assertSameBytes("COMMAND", "LIST", "FILTERBY", "PATTERN", "ping")

    def test_command_info_uses_sets_for_tips_key_specs_and_no_subcommands(self):
        # ping: no keys, no subcommands; del: a key spec; client: subcommands.
        for name in ("ping", "del", "exists", "expire"):
            ours, theirs = self.both("COMMAND", "INFO", name)
            ours, theirs = parse_whole(ours), parse_whole(theirs)
            entry, redis_entry = ours.children[0], theirs.children[0]
            self.assertEqual([c.kind for c in entry.children],
                             [c.kind for c in redis_entry.children], name)
            self.assertEqual(len(entry.children[8].children),
                             len(redis_entry.children[8].children), f"{name}: key specs")
            for spec, redis_spec in zip(entry.children[8].children,
                                        redis_entry.children[8].children):
                self.assertEqual(spec.skeleton(set_sizes=False),
                                 redis_spec.skeleton(set_sizes=False), f"{name}: key spec")
        ours, theirs = self.both("COMMAND", "INFO", "client")
        entry, redis_entry = parse_whole(ours).children[0], parse_whole(theirs).children[0]
        self.assertEqual(entry.children[9].kind, "*")
        self.assertEqual(redis_entry.children[9].kind, "*")
        self.assertEqual([c.kind for c in entry.children[9].children[0].children],
                         [c.kind for c in redis_entry.children[9].children[0].children])

    def test_command_docs_is_a_map_of_maps(self):
        ours, theirs = self.both("COMMAND", "DOCS", "ping")
        ours, theirs = parse_whole(ours), parse_whole(theirs)
        self.assertEqual((ours.kind, theirs.kind), ("%", "%"))
        doc, redis_doc = ours.children[1], theirs.children[1]
        self.assertEqual(doc.kind, redis_doc.kind)
        fields = dict(zip([k.value for k in doc.children[0::2]], doc.children[1::2]))
        redis_fields = dict(zip([k.value for k in redis_doc.children[0::2]],
                                redis_doc.children[1::2]))
        for name in (b"summary", b"since", b"group"):
            self.assertEqual(fields[name].kind, redis_fields[name].kind, name)

    # -- what only the module API gives ---------------------------------------
    def test_module_list_is_an_array_of_maps_as_the_module_api_writes_it(self):
        node = parse_whole(self.raw(self.ours, "MODULE", "LIST"))
        self.assertEqual(node.kind, "*")
        self.assertEqual(parse_whole(self.raw(self.theirs, "MODULE", "LIST")).kind, "*")
        for module in node.children:
            self.assertEqual(module.skeleton(),
                             ("%", ((b"name", ("$",)), (b"ver", (":",)), (b"path", ("$",)),
                                    (b"args", ("*", ())))))

    def test_scandump_chunks_are_an_integer_and_a_bulk_string(self):
        for prefix in ("BF", "CF"):
            self.raw(self.ours, f"{prefix}.ADD", "dump", "a")
            iterator = 0
            for _ in range(64):
                node = parse_whole(self.raw(self.ours, f"{prefix}.SCANDUMP", "dump",
                                            str(iterator)))
                self.assertEqual(node.kind, "*")
                self.assertEqual(len(node.children), 2)
                self.assertEqual(node.children[0].kind, ":")
                iterator = int(node.children[0].value)
                if iterator == 0:
                    break
                self.assertEqual(node.children[1].kind, "$")
            self.assertEqual(iterator, 0, f"{prefix}: no end in 64 chunks")
            # RedisBloom ends a Bloom dump with an empty string and a cuckoo
            # dump with a null (RedisModule_ReplyWithNull): "_" in RESP3.
            end = node.children[1]
            if prefix == "BF":
                self.assertEqual((end.kind, end.value), ("$", b""))
            else:
                self.assertEqual(end.kind, "_", f"CF.SCANDUMP's end: {end.kind} {end.value!r}")
            self.raw(self.ours, "DEL", "dump")


if __name__ == "__main__":
    unittest.main()
