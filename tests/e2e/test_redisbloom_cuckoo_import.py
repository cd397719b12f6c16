"""CF.LOADCHUNK of RedisBloom's own CF.SCANDUMP chunks (issue 12, section 1).

The data are filters dumped by RedisBloom v2.4.23 (tests/data/
redisbloom-dumps/cf-*.json, its README explains the fields): each file's
chunks, fed to CF.LOADCHUNK in order, must give a filter whose every answer is
RedisBloom's -- CF.EXISTS of every added item (0 for the deleted ones) and of
the 5,000 never-added probes (the same false positives), CF.COUNT of every
added item, and all of CF.INFO. Then the filter takes adds and deletes with
RedisBloom's semantics, survives a snapshot and the append-only log, and its
CF.SCANDUMP is RedisBloom's format again, byte for byte.

One server per class; the restart tests own a data directory.
"""

import base64
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

import redis

from harness import PersistentServer, RespError, ServerTestCase

DUMPS = os.environ.get(
    "BLOOMGATE_REDISBLOOM_DUMPS",
    # The in-tree copy of ../shared/redisbloom-dumps (a fresh clone, as CI
    # has, sees nothing outside the repository).
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "redisbloom-dumps"))
INFO_FIELDS = ("Size", "Number of buckets", "Number of filters", "Number of items inserted",
               "Number of items deleted", "Bucket size", "Expansion rate", "Max iterations")
BATCH = 1000  # items per CF.MEXISTS


def dump_files():
    files = sorted(glob.glob(os.path.join(DUMPS, "cf-*.json")))
    if not files:
        raise AssertionError(f"no RedisBloom cuckoo dumps under {DUMPS}")
    return files


def load_dump(path):
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    d["name"] = os.path.basename(path)
    d["chunk_pairs"] = [(c["iterator"], base64.b64decode(c["data_base64"])) for c in d["chunks"]]
    return d


DATA = None


def data():
    global DATA
    if DATA is None:
        DATA = [load_dump(p) for p in dump_files()]
    return DATA


def load_with_redis_py(r, key, dump):
    for it, chunk in dump["chunk_pairs"]:
        assert r.execute_command("CF.LOADCHUNK", key, it, chunk) in (b"OK", True)


def info_map(r, key):
    reply = r.execute_command("CF.INFO", key)
    if isinstance(reply, dict):
        return {k.decode(): v for k, v in reply.items()}
    return {reply[i].decode(): reply[i + 1] for i in range(0, len(reply), 2)}


def mexists(r, key, items):
    out = []
    for i in range(0, len(items), BATCH):
        out += [int(x) for x in r.execute_command("CF.MEXISTS", key, *items[i:i + BATCH])]
    return out


def counts(r, key, items):
    pipe = r.pipeline(transaction=False)
    for item in items:
        pipe.execute_command("CF.COUNT", key, item)
    return [int(x) for x in pipe.execute()]


class Answers:
    """Checks every answer of one loaded dump against RedisBloom's."""

    def assertAnswersAsRedisBloom(self, r, key, dump, info=None):
        name = dump["name"]
        got_info = info_map(r, key)
        want_info = dump["info"] if info is None else info
        for field in INFO_FIELDS:
            self.assertEqual(got_info[field], want_info[field], f"{name}: CF.INFO {field}")
        answers = dump["answers"]
        added = dump["items_added_in_order"]
        got = mexists(r, key, added)
        wrong = [i for i, (g, w) in enumerate(zip(got, answers["exists_of_added_items"])) if g != w]
        self.assertEqual(wrong[:10], [], f"{name}: CF.EXISTS of added items differs at these")
        probes = answers["probes"]
        got = mexists(r, key, probes)
        wrong = [i for i, (g, w) in enumerate(zip(got, answers["exists_of_probes"])) if g != w]
        self.assertEqual(wrong[:10], [], f"{name}: CF.EXISTS of probes differs ({len(wrong)})")
        got = counts(r, key, added)
        wrong = [i for i, (g, w) in enumerate(zip(got, answers["count_of_added_items"])) if g != w]
        self.assertEqual(wrong[:10], [], f"{name}: CF.COUNT differs ({len(wrong)})")


M64 = (1 << 64) - 1
MURMUR_M = 0xc6a4a7935bd1e995


def murmur64a(data, seed=0):
    """Appleby's MurmurHash64A, little-endian: RedisBloom's cuckoo hash (seed 0)."""
    h = (seed ^ (len(data) * MURMUR_M)) & M64
    blocks = len(data) // 8
    for i in range(blocks):
        k = int.from_bytes(data[8 * i:8 * i + 8], "little")
        k = (k * MURMUR_M) & M64
        k ^= k >> 47
        k = (k * MURMUR_M) & M64
        h = ((h ^ k) * MURMUR_M) & M64
    tail = data[8 * blocks:]
    if tail:
        for i, byte in enumerate(tail):
            h ^= byte << (8 * i)
        h = (h * MURMUR_M) & M64
    h ^= h >> 47
    h = (h * MURMUR_M) & M64
    return h ^ (h >> 47)


class RedisBloomCuckooModel:
    """CF.ADD as RedisBloom's cuckoo.c does it, written from its documented
    rules in a dozen lines, over a dump's bytes: a reference for the server's
    adds after an import (same slots, same growth)."""

    def __init__(self, pairs):
        header = pairs[0][1]
        f = lambda at, n: int.from_bytes(header[at:at + n], "little")
        self.items, self.n0, self.filters = f(0, 8), f(8, 8), f(24, 8)
        self.bs, self.maxit, self.expansion = f(32, 2), f(34, 2), f(36, 2)
        data = b"".join(chunk for _, chunk in pairs[1:])
        self.subs, at = [], 0
        for k in range(self.filters):
            size = self.n0 * self.expansion ** k * self.bs
            self.subs.append(bytearray(data[at:at + size]))
            at += size

    def add(self, item):
        h = murmur64a(item.encode())
        fp = h % 255 + 1
        h2 = h ^ (fp * 0x5bd1e995)
        for sub in reversed(self.subs):  # a free slot, newest sub-filter first
            n = len(sub) // self.bs
            for index in (h, h2):
                b = index % n * self.bs
                if 0 in sub[b:b + self.bs]:
                    sub[b + sub[b:b + self.bs].index(0)] = fp
                    self.items += 1
                    return
        sub = self.subs[-1]  # kicks in the newest, victims round-robin
        n = len(sub) // self.bs
        bucket, victim, carried = h % n, 0, fp
        for _ in range(self.maxit):
            pos = bucket * self.bs + victim
            sub[pos], carried = carried, sub[pos]
            bucket = (bucket ^ (carried * 0x5bd1e995)) % n
            b = bucket * self.bs
            if 0 in sub[b:b + self.bs]:
                sub[b + sub[b:b + self.bs].index(0)] = carried
                self.items += 1
                return
            victim = (victim + 1) % self.bs
        for _ in range(self.maxit):  # undo, then grow
            victim = (victim + self.bs - 1) % self.bs
            bucket = (bucket ^ (carried * 0x5bd1e995)) % n
            pos = bucket * self.bs + victim
            sub[pos], carried = carried, sub[pos]
        assert self.expansion != 0
        self.subs.append(bytearray(self.n0 * self.expansion ** len(self.subs) * self.bs))
        self.add(item)

    def slots(self):
        return b"".join(bytes(sub) for sub in self.subs)


def scandump(r, key):
    """Every (iterator, chunk) CF.SCANDUMP hands out, in order."""
    pairs = []
    it = 0
    for _ in range(64):
        it, chunk = r.execute_command("CF.SCANDUMP", key, it)
        if it == 0:
            assert chunk is None, chunk
            return pairs
        pairs.append((it, chunk))
    raise AssertionError("CF.SCANDUMP did not end")


class RedisBloomCuckooImport(ServerTestCase, Answers):

    def test_every_dump_loads_through_redis_py_and_answers_as_redisbloom(self):
        for dump in data():
            with self.subTest(dump=dump["name"]):
                key = "rb:" + dump["name"]
                load_with_redis_py(self.r, key, dump)
                self.assertEqual(self.r.type(key), b"MBbloomCF")
                self.assertAnswersAsRedisBloom(self.r, key, dump)

    def test_every_dump_loads_through_redis_cli(self):
        cli = shutil.which("redis-cli")
        self.assertIsNotNone(cli, "redis-cli is not installed (Debian package redis-tools)")
        for dump in data():
            with self.subTest(dump=dump["name"]):
                key = "cli:" + dump["name"]
                for it, chunk in dump["chunk_pairs"]:
                    # -x: the chunk's raw bytes are the last argument.
                    out = subprocess.run([cli, "-p", str(self.port), "-x", "CF.LOADCHUNK", key,
                                          str(it)], input=chunk, capture_output=True,
                                         timeout=10, check=True)
                    self.assertEqual(out.stdout.strip(), b"OK", out)
                self.assertAnswersAsRedisBloom(self.r, key, dump)

    def test_scandump_gives_redisbloom_chunks_back_byte_for_byte_and_they_reload(self):
        for dump in data():
            with self.subTest(dump=dump["name"]):
                key = "sd:" + dump["name"]
                load_with_redis_py(self.r, key, dump)
                pairs = scandump(self.r, key)
                self.assertEqual(pairs, dump["chunk_pairs"])
                copy = "sd-copy:" + dump["name"]
                for it, chunk in pairs:
                    self.assertEqual(self.r.execute_command("CF.LOADCHUNK", copy, it, chunk), b"OK")
                self.assertAnswersAsRedisBloom(self.r, copy, dump)

    def test_adds_deletes_and_inserts_after_the_import_keep_redisbloom_semantics(self):
        dump = next(d for d in data() if d["info"]["Number of filters"] > 1)
        key = "grow"
        load_with_redis_py(self.r, key, dump)
        info = info_map(self.r, key)
        fresh = [f"after:{i}" for i in range(3000)]
        model = RedisBloomCuckooModel(dump["chunk_pairs"])
        for item in fresh:
            self.assertEqual(self.r.execute_command("CF.ADD", key, item), 1)
            model.add(item)
        # The very slots RedisBloom's rules give, through kicks and growth.
        self.assertEqual(b"".join(c for _, c in scandump(self.r, key)[1:]), model.slots())
        self.assertEqual(info_map(self.r, key)["Number of filters"], len(model.subs))
        self.assertEqual(self.r.execute_command("CF.INSERTNX", key, "ITEMS", fresh[0], "nx:1"),
                         [0, 1])
        self.assertEqual(mexists(self.r, key, fresh + ["nx:1"]), [1] * (len(fresh) + 1))
        grown = info_map(self.r, key)
        self.assertEqual(grown["Number of items inserted"], info["Number of items inserted"] + 3001)
        self.assertGreater(grown["Number of filters"], info["Number of filters"],
                           "3,000 more items must have grown new sub-filters")
        # New sub-filters are RedisBloom's kind: the dump is still its format.
        pairs = scandump(self.r, key)
        self.assertEqual(len(pairs[0][1]), 38)
        self.assertEqual(self.r.execute_command("CF.DEL", key, fresh[1]), 1)
        self.assertEqual(self.r.execute_command("CF.COUNT", key, fresh[2]), 1)
        old = dump["items_added_in_order"][:50]
        self.assertEqual(mexists(self.r, key, old), [1] * 50, "old items are never lost")
        self.assertEqual(self.r.execute_command("CF.COMPACT", key), b"OK")
        self.assertEqual(mexists(self.r, key, old + fresh[2:]), [1] * (50 + len(fresh) - 2))
        self.assertEqual(info_map(self.r, key)["Number of items deleted"], 0)

    def test_damaged_chunks_get_redisbloom_texts_and_change_nothing(self):
        dump = data()[0]
        header_it, header = dump["chunk_pairs"][0]
        raw = self.raw()
        bad_header = b"\0" * 9 + header[9:]  # RedisBloom's own damage test: numBuckets 0
        self.assertEqual(str(raw.call("CF.LOADCHUNK", "k", 1, bad_header)),
                         "Couldn't create filter!")
        self.assertEqual(str(raw.call("CF.LOADCHUNK", "k", 1, header[:37])),
                         "Couldn't create filter!")
        huge = bytearray(header)
        huge[8:16] = (1 << 55).to_bytes(8, "little")  # numBuckets 2^55: far over the caps
        self.assertEqual(str(raw.call("CF.LOADCHUNK", "k", 1, bytes(huge))),
                         "Couldn't create filter!")
        self.assertEqual(self.r.exists("k"), 0)
        self.assertEqual(raw.call("CF.LOADCHUNK", "k", 1, header), "OK")
        it, chunk = dump["chunk_pairs"][1]
        self.assertEqual(str(raw.call("CF.LOADCHUNK", "k", it + 1, chunk)), "Couldn't load chunk!")
        self.assertEqual(str(raw.call("CF.LOADCHUNK", "k", it, chunk + b"x")),
                         "Couldn't load chunk!")
        self.assertEqual(str(raw.call("CF.LOADCHUNK", "k", 10**12, chunk)), "Couldn't load chunk!")
        self.assertEqual(self.r.exists("k"), 0, "a staged load is invisible")
        for it, chunk in dump["chunk_pairs"][1:]:
            self.assertEqual(raw.call("CF.LOADCHUNK", "k", it, chunk), "OK")
        self.assertAnswersAsRedisBloom(self.r, "k", dump)
        # A header whose numItems disagrees with the slots is refused at the end.
        lying = (dump["info"]["Number of items inserted"] + 1).to_bytes(8, "little") + header[8:]
        self.assertEqual(raw.call("CF.LOADCHUNK", "liar", 1, lying), "OK")
        last = None
        for it, chunk in dump["chunk_pairs"][1:]:
            last = raw.call("CF.LOADCHUNK", "liar", it, chunk)
        self.assertEqual(str(last), "Couldn't load chunk!")
        self.assertEqual(self.r.exists("liar"), 0)
        self.assertEqual(str(raw.call("CF.LOADCHUNK", "k", 1, header)), "ERR item exists")
        self.assertServesNewClients()

    def test_rename_and_memory_usage_work_on_an_imported_filter(self):
        dump = data()[0]
        load_with_redis_py(self.r, "a", dump)
        self.assertTrue(self.r.rename("a", "b"))
        self.assertAnswersAsRedisBloom(self.r, "b", dump)
        self.assertGreaterEqual(self.r.memory_usage("b"), dump["info"]["Size"] // 2)


class RedisBloomCuckooRestart(unittest.TestCase, Answers):
    """An imported filter, and adds to it, survive SAVE + restart and the log."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="bloomgate-rbcf-")
        self.addCleanup(self.tmp.cleanup)
        self.data_dir = os.path.join(self.tmp.name, "data")
        os.mkdir(self.data_dir)
        self.n = 0

    def start(self, *args):
        server = PersistentServer(self.data_dir, args,
                                  log_path=os.path.join(self.tmp.name, f"s{self.n}.log"))
        self.n += 1
        server.start()
        self.addCleanup(lambda: server.kill9() if server.alive() else server._cleanup())
        return server

    def test_imported_filters_come_back_from_a_snapshot_and_from_the_log(self):
        server = self.start("--appendfsync", "always")
        r = server.client()
        for dump in data():
            load_with_redis_py(r, "snap:" + dump["name"], dump)
        self.assertTrue(r.save())
        # After the snapshot: more imports and adds reach only the log.
        for dump in data():
            load_with_redis_py(r, "log:" + dump["name"], dump)
        extra = [f"x:{i}" for i in range(500)]
        key0 = "log:" + data()[0]["name"]
        for item in extra:
            r.execute_command("CF.ADD", key0, item)
        info_after = info_map(r, key0)
        dump_after = scandump(r, key0)
        r.close()
        self.assertEqual(server.kill9(), -signal.SIGKILL)
        server = self.start("--appendfsync", "always")
        r = server.client()
        for dump in data():
            self.assertAnswersAsRedisBloom(r, "snap:" + dump["name"], dump)
        for dump in data()[1:]:
            self.assertAnswersAsRedisBloom(r, "log:" + dump["name"], dump)
        self.assertEqual(info_map(r, key0), info_after)
        self.assertEqual(mexists(r, key0, extra), [1] * len(extra))
        self.assertEqual(scandump(r, key0), dump_after, "the replayed adds chose the same slots")
        r.close()


if __name__ == "__main__":
    unittest.main()
