"""bloomgate import-rdb with the RDB file a RedisBloom 2.4.23 server saved
(tests/data/redisbloom-sketches/redisbloom-all-types.rdb: its five types,
their RESTOREd copies, a string, a hash and a list; TTLs on `bf` and `cms`).

The file was saved in the past, so its two deadlines have passed: the test
moves them to the future (re-signing the CRC) to check that every key comes
with its TTL, and imports the file as saved to check that passed deadlines
are not loaded. Every key answers RedisBloom's recorded probe; the plain
keys are listed and skipped; a damaged or cut file is refused whole; the
snapshot output loads in a server.
"""

import json
import os
import struct
import subprocess
import tempfile
import time
import unittest

from harness import BloomgateServer, ServerTestCase, server_binary
from redis_dump_support import FIXTURES, payloads, probe, resign_rdb

RDB = os.path.join(FIXTURES, "redisbloom-all-types.rdb")
PLAIN = {"plain:string": "string", "plain:hash": "hash", "plain:list": "list"}
EXPIRETIME_MS = 0xFC
TYPE_MODULE_2 = 7


def with_deadlines_moved(data, now_ms):
    """The file with each key's EXPIRETIME_MS set to now + the PTTL it had
    at the save: the opcode, 8 bytes, then type 7 and the key's length and
    name (the fixture's keys are short, plain strings)."""
    with open(RDB + ".json") as f:
        keys = json.load(f)["keys"]
    out = bytearray(data)
    moved = {}
    for name, key in keys.items():
        if key["pttl_ms_at_save"] < 0:
            continue
        tail = bytes([TYPE_MODULE_2, len(name)]) + name.encode()
        at = out.find(tail)
        assert at > 9 and out[at - 9] == EXPIRETIME_MS, name
        deadline = now_ms + key["pttl_ms_at_save"]
        out[at - 8:at] = struct.pack("<Q", deadline)
        moved[name] = key["pttl_ms_at_save"]
    return resign_rdb(bytes(out)), moved


def run_import(*args, timeout=60):
    return subprocess.run([server_binary(), "import-rdb", *args], capture_output=True,
                          text=True, timeout=timeout)


class ImportRdb(ServerTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.payloads = payloads()
        with open(RDB, "rb") as f:
            cls.data = f.read()
        with open(RDB + ".json") as f:
            cls.keys = json.load(f)["keys"]
        cls.tmp = tempfile.TemporaryDirectory(prefix="bloomgate-import-rdb-")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()
        super().tearDownClass()

    def write(self, name, data):
        path = os.path.join(self.tmp.name, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def check_keys(self, client, moved):
        for name, key in self.keys.items():
            if key["type"] in PLAIN.values():
                self.assertEqual(client.exists(name), 0, name)
                continue
            base = name.split(":")[0]
            _t, _payload, _pttl, command, expected = self.payloads[base]
            with self.subTest(key=name):
                self.assertEqual(client.type(name).decode(), key["type"])
                probe(self, client, name, command, expected)
                if name in moved:
                    self.assertTrue(moved[name] - 60_000 < client.pttl(name) <= moved[name])
                else:
                    self.assertEqual(client.pttl(name), -1)

    def test_every_key_with_its_ttl_and_the_plain_keys_listed(self):
        data, moved = with_deadlines_moved(self.data, int(time.time() * 1000))
        self.assertEqual(set(moved), {"bf", "cms"})
        path = self.write("moved.rdb", data)
        done = run_import(path, "--to", f"127.0.0.1:{self.port}")
        self.assertEqual(done.returncode, 0, done.stderr)
        for name, kind in PLAIN.items():
            self.assertIn(f"skipped '{name}' ({kind})", done.stderr)
        self.assertIn("10 RedisBloom keys loaded", done.stderr)
        self.assertIn("3 keys of other types skipped, 0 failed", done.stderr)
        self.assertRegex(done.stderr, r"done: [0-9.]+ of [0-9.]+ MB read \(100%\), [0-9.]+ MB/s")
        self.check_keys(self.r, moved)
        # Again: every key exists now, so each fails by name unless --replace.
        again = run_import(path, "--to", f"127.0.0.1:{self.port}")
        self.assertEqual(again.returncode, 1)
        self.assertIn("BUSYKEY", again.stderr)
        self.assertIn("10 failed", again.stderr)
        replaced = run_import(path, "--to", f"127.0.0.1:{self.port}", "--replace")
        self.assertEqual(replaced.returncode, 0, replaced.stderr)

    def test_passed_deadlines_are_not_loaded(self):
        done = run_import(RDB, "--to", f"127.0.0.1:{self.port}")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("2 expired (not loaded)", done.stderr)
        self.assertEqual(self.r.exists("bf", "cms"), 0)
        self.assertEqual(self.r.dbsize(), 8)

    def test_damaged_or_cut_files_are_refused_whole(self):
        cases = {
            "cut.rdb": self.data[:len(self.data) // 2],
            "no-checksum-tail.rdb": self.data[:-1],
            "flipped.rdb": self.data[:3000] + bytes([self.data[3000] ^ 1]) + self.data[3001:],
            "version.rdb": b"REDIS0013" + self.data[9:],
            "not-rdb.rdb": b"hello world, not an RDB file at all",
        }
        for name, data in cases.items():
            with self.subTest(case=name):
                done = run_import(self.write(name, data), "--to", f"127.0.0.1:{self.port}")
                self.assertEqual(done.returncode, 1, done.stderr)
                self.assertIn("refused", done.stderr)
                self.assertIn("nothing was loaded", done.stderr)
        self.assertIn("checksum mismatch",
                      run_import(self.write("f.rdb", cases["flipped.rdb"]), "--output",
                                 os.path.join(self.tmp.name, "x.bgs")).stderr)
        self.assertEqual(self.r.dbsize(), 0)

    def test_damage_behind_a_valid_checksum_is_reported_not_half_guessed(self):
        # Cut inside the last value, re-signed: the checksum passes and the
        # parse finds the damage.
        data = resign_rdb(self.data[:-40] + b"\xff" + bytes(8))
        done = run_import(self.write("parse.rdb", data), "--output",
                          os.path.join(self.tmp.name, "never.bgs"))
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertIn("damaged", done.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "never.bgs")))

    def test_snapshot_output_loads_in_a_server(self):
        data, moved = with_deadlines_moved(self.data, int(time.time() * 1000))
        out = os.path.join(self.tmp.name, "imported.bgs")
        done = run_import(self.write("snap.rdb", data), "--output", out)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("wrote", done.stderr)
        self.assertEqual(run_import(self.write("snap2.rdb", data), "--output", out).returncode, 1)
        with BloomgateServer(("--dir", self.tmp.name, "--dbfilename", "imported.bgs",
                              "--appendonly", "no", "--save", "")) as server:
            client = server.client()
            self.addCleanup(client.close)
            self.check_keys(client, moved)

    def test_usage(self):
        self.assertEqual(run_import(RDB).returncode, 2)
        self.assertEqual(run_import("--to", "x:1").returncode, 2)
        helped = run_import("--help")
        self.assertEqual(helped.returncode, 0)
        self.assertIn("--output SNAPSHOT", helped.stdout)


if __name__ == "__main__":
    unittest.main()
