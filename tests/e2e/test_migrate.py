"""bloomgate migrate between two real servers, each with a password.

One source and one target for the whole file: the source is filled once
(a scalable Bloom filter of several layers, a cuckoo filter with deletes,
a counting Bloom filter, keys with TTLs, and the families without SCANDUMP
that a Bloomgate still copies with DUMP/RESTORE: a count-min sketch, a
top-k, a windowed Bloom and a windowed counting filter); each test empties the target and runs the real binary's
`migrate` mode against them. A stock redis-server, which has no filter
module, is a source too: migrate says so and fails.
"""

import shutil
import subprocess
import unittest

from harness import BloomgateServer, RawConnection, free_port, server_binary
from test_resp3_shapes import RedisServer

SOURCE_PASSWORD = "source-secret"
TARGET_PASSWORD = "target-secret"
MIGRATE_DEADLINE_S = 60

ADDED = {
    "bf:scaled": [f"b{i}" for i in range(3000)],
    "bf:ttl": [f"t{i}" for i in range(50)],
    "cf:deletes": [f"c{i}" for i in range(600)],
    "cf:ttl": [f"u{i}" for i in range(40)],
    "cbf:counts": [f"n{i}" for i in range(300)],
}
DELETED = [f"c{i}" for i in range(0, 600, 3)]
PROBES = [f"probe{i}" for i in range(2000)]
FAMILY = {"bf": "BF", "cf": "CF", "cbf": "CBF", "bfw": "BF", "cbfw": "CBF"}
# Keys of the families without SCANDUMP, copied by DUMP/RESTORE.
CMS_COUNTS = {"apple": 5, "pear": 2, "plum": 9}
TOPK_ITEMS = ["a"] * 9 + ["b"] * 5 + ["c"] * 3 + ["d", "e", "f"]
# (The windowed ones are in ADDED: they answer as their families do.)
DUMPED = ["cms:counts", "topk:heavy"]
ADDED["bfw:recent"] = [f"w{i}" for i in range(200)]
ADDED["cbfw:recent"] = [f"v{i}" for i in range(200)]
# Commands that only read: all the source may ever see from migrate (and
# from this test's own checks).
READ_ONLY = {"auth", "ping", "scan", "type", "pttl", "bf.scandump", "cf.scandump",
             "cbf.scandump", "module|list", "info", "bf.mexists", "cf.mexists",
             "cbf.mexists", "bf.info", "cf.info", "cbf.info", "cf.count", "dbsize", "keys",
             "ttl", "command", "client|setinfo", "select", "hello", "dump", "cms.query",
             "cms.info", "topk.list", "topk.info"}


def fill_source(r):
    # Capacity 100, expansion 2: 3000 items take 5 layers (100+200+400+800+1600).
    r.execute_command("BF.RESERVE", "bf:scaled", "0.01", "100")
    r.execute_command("BF.MADD", "bf:scaled", *ADDED["bf:scaled"])
    r.execute_command("BF.MADD", "bf:ttl", *ADDED["bf:ttl"])
    r.pexpire("bf:ttl", 300_000)
    r.execute_command("CF.RESERVE", "cf:deletes", "1000")
    r.execute_command("CF.INSERT", "cf:deletes", "ITEMS", *ADDED["cf:deletes"])
    for item in DELETED:
        assert r.execute_command("CF.DEL", "cf:deletes", item) == 1
    r.execute_command("CF.INSERT", "cf:ttl", "ITEMS", *ADDED["cf:ttl"])
    r.pexpire("cf:ttl", 200_000)
    r.execute_command("CBF.RESERVE", "cbf:counts", "0.01", "1000")
    r.execute_command("CBF.MADD", "cbf:counts", *ADDED["cbf:counts"])
    r.execute_command("CMS.INITBYDIM", "cms:counts", "100", "4")
    for item, count in CMS_COUNTS.items():
        r.execute_command("CMS.INCRBY", "cms:counts", item, count)
    r.pexpire("cms:counts", 250_000)
    r.execute_command("TOPK.RESERVE", "topk:heavy", "3")
    r.execute_command("TOPK.ADD", "topk:heavy", *TOPK_ITEMS)
    # Windows far longer than the test: nothing ages out between the source's
    # answers and the target's.
    r.execute_command("BF.RESERVE", "bfw:recent", "0.01", "1000", "WINDOW", "3600")
    r.execute_command("BF.MADD", "bfw:recent", *ADDED["bfw:recent"])
    r.execute_command("CBF.RESERVE", "cbfw:recent", "0.01", "1000", "WINDOW", "3600")
    r.execute_command("CBF.MADD", "cbfw:recent", *ADDED["cbfw:recent"])


def dumped_answers(r, key):
    """What a client can ask the DUMP/RESTORE-copied keys."""
    if key.startswith("cms:"):
        return {"query": r.execute_command("CMS.QUERY", key, *CMS_COUNTS, "absent"),
                "info": r.execute_command("CMS.INFO", key)}
    if key.startswith("topk:"):
        return {"list": r.execute_command("TOPK.LIST", key, "WITHCOUNT"),
                "info": r.execute_command("TOPK.INFO", key)}
    return answers(r, key)


def answers(r, key):
    """Everything a client can ask the filter at `key`, as on the wire."""
    family = FAMILY[key.split(":")[0]]
    probe = ADDED[key] + PROBES
    info = r.execute_command(f"{family}.INFO", key)
    # A windowed filter's generation age is the clock's, not the filter's.
    fields = dict(zip(info[::2], info[1::2]))
    fields.pop(b"Current generation age ms", None)
    fields.pop("Current generation age ms", None)
    result = {
        "exists": r.execute_command(f"{family}.MEXISTS", key, *probe),
        "info": fields,
    }
    if family == "CF":
        result["counts"] = [r.execute_command("CF.COUNT", key, i) for i in probe[:300]]
    return result


class MigrateTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.source = BloomgateServer(["--requirepass", SOURCE_PASSWORD],
                                     password=SOURCE_PASSWORD).start()
        cls.target = BloomgateServer(["--requirepass", TARGET_PASSWORD],
                                     password=TARGET_PASSWORD).start()
        cls.src = cls.source.client(decode_responses=True)
        cls.dst = cls.target.client(decode_responses=True)
        fill_source(cls.src)
        cls.keys_before = sorted(cls.src.keys("*"))
        cls.answers_before = {key: answers(cls.src, key) for key in ADDED}
        cls.dumped_before = {key: dumped_answers(cls.src, key) for key in DUMPED}

    @classmethod
    def tearDownClass(cls):
        cls.src.close()
        cls.dst.close()
        cls.target.stop()
        cls.source.stop()

    def setUp(self):
        self.dst.flushall()

    def migrate(self, *extra, source_password=SOURCE_PASSWORD, to=None):
        cmd = [server_binary(), "migrate", "--from", f"127.0.0.1:{self.source.port}",
               "--to", to or f"127.0.0.1:{self.target.port}", "--to-password", TARGET_PASSWORD,
               "--count", "3"]
        if source_password is not None:
            cmd += ["--password", source_password]
        done = subprocess.run(cmd + list(extra), capture_output=True, text=True,
                              timeout=MIGRATE_DEADLINE_S)
        return done.returncode, done.stderr

    def assertTargetAnswersAsSource(self):
        for key in ADDED:
            self.assertEqual(answers(self.dst, key), self.answers_before[key], key)
        for key in DUMPED:
            self.assertEqual(dumped_answers(self.dst, key), self.dumped_before[key], key)
        for key in ("bf:ttl", "cf:ttl", "cms:counts"):
            source_ttl, target_ttl = self.src.pttl(key), self.dst.pttl(key)
            self.assertGreater(target_ttl, 0, key)
            self.assertLess(abs(source_ttl - target_ttl), 1000, (key, source_ttl, target_ttl))
        for key in ("bf:scaled", "cf:deletes", "cbf:counts"):
            self.assertEqual(self.dst.pttl(key), -1, key)

    def test_copies_every_filter_with_identical_answers_and_skips_the_rest(self):
        code, err = self.migrate()
        self.assertEqual(code, 0, err)
        self.assertTargetAnswersAsSource()
        self.assertEqual(sorted(self.dst.keys("*")), sorted([*ADDED, *DUMPED]), err)
        self.assertIn("9 keys copied, 0 skipped, 0 failed", err)
        # The layers came along: BF.INFO's filter count is the source's.
        info = dict(zip(*[iter(self.dst.execute_command("BF.INFO", "bf:scaled"))] * 2))
        self.assertGreaterEqual(info["Number of filters"], 5, info)

    def test_match_narrows_the_keys(self):
        code, err = self.migrate("--match", "cf:*")
        self.assertEqual(code, 0, err)
        self.assertEqual(sorted(self.dst.keys("*")), ["cf:deletes", "cf:ttl"], err)
        self.assertIn("2 keys copied, 0 skipped, 0 failed", err)

    def test_keys_the_target_has_fail_by_name_and_replace_overwrites_them(self):
        self.dst.execute_command("BF.ADD", "bf:scaled", "target-only")
        self.dst.execute_command("CF.ADD", "cf:ttl", "target-only")
        self.dst.execute_command("TOPK.RESERVE", "topk:heavy", "7")
        code, err = self.migrate()
        self.assertEqual(code, 1, err)
        self.assertIn("6 keys copied, 0 skipped, 3 failed", err)
        for key in ("bf:scaled", "cf:ttl", "topk:heavy"):
            self.assertIn(f"failed: {key}: the target already has this key "
                          "(--replace overwrites it)", err)
        self.assertEqual(self.dst.execute_command("BF.EXISTS", "bf:scaled", "target-only"), 1)
        code, err = self.migrate("--replace")
        self.assertEqual(code, 0, err)
        self.assertTargetAnswersAsSource()
        self.assertEqual(sorted(self.dst.keys("*")), sorted([*ADDED, *DUMPED]), err)

    def test_the_source_is_only_read(self):
        self.src.config_resetstat()
        code, err = self.migrate()
        self.assertEqual(code, 0, err)
        self.assertEqual(sorted(self.src.keys("*")), self.keys_before)
        for key in ADDED:
            self.assertEqual(answers(self.src, key), self.answers_before[key], key)
        for key in DUMPED:
            self.assertEqual(dumped_answers(self.src, key), self.dumped_before[key], key)
        stats = self.src.info("commandstats")
        ran = {name[len("cmdstat_"):] for name in stats if name.startswith("cmdstat_")}
        self.assertIn("bf.scandump", ran)
        self.assertIn("dump", ran)
        self.assertLessEqual(ran, READ_ONLY | {"config|resetstat"}, ran - READ_ONLY)

    def test_connection_and_auth_failures_are_named(self):
        code, err = self.migrate(source_password="wrong")
        self.assertEqual(code, 3, err)
        self.assertIn("source: 127.0.0.1:", err)
        self.assertIn("authentication failed: WRONGPASS", err)
        code, err = self.migrate(source_password=None)
        self.assertEqual(code, 3, err)
        self.assertIn("NOAUTH", err)
        self.assertIn("give --password", err)
        code, err = self.migrate(to=f"127.0.0.1:{free_port()}")
        self.assertEqual(code, 3, err)
        self.assertIn("target: 127.0.0.1:", err)
        self.assertIn("cannot connect: Connection refused", err)
        self.assertEqual(self.dst.dbsize(), 0)

    def test_usage_errors(self):
        done = subprocess.run([server_binary(), "migrate", "--form", "x:1"],
                              capture_output=True, text=True, timeout=10)
        self.assertEqual(done.returncode, 2)
        self.assertIn("unknown option --form; did you mean --from?", done.stderr)
        done = subprocess.run([server_binary(), "migrate", "--to", "x:1"],
                              capture_output=True, text=True, timeout=10)
        self.assertEqual(done.returncode, 2)
        self.assertIn("--from is required", done.stderr)
        done = subprocess.run([server_binary(), "migrate", "--help"],
                              capture_output=True, text=True, timeout=10)
        self.assertEqual(done.returncode, 0)
        self.assertIn("copied with DUMP and RESTORE", done.stdout)


class SourceWithoutFiltersTest(unittest.TestCase):
    def test_a_redis_without_a_filter_module_is_named_and_fails(self):
        binary = shutil.which("redis-server")
        if binary is None:
            self.skipTest("redis-server is not installed (scripts/install-deps.sh)")
        redis_server = RedisServer(binary)
        self.addCleanup(redis_server.stop)
        redis_server.start()
        with RawConnection(redis_server.port) as c:
            c.call("SET", "a", "1")
            c.call("SET", "b", "2")
        target = BloomgateServer(["--save", "", "--appendonly", "no"]).start()
        self.addCleanup(target.stop)
        done = subprocess.run([server_binary(), "migrate", "--from",
                               f"127.0.0.1:{redis_server.port}", "--to",
                               f"127.0.0.1:{target.port}"],
                              capture_output=True, text=True, timeout=MIGRATE_DEADLINE_S)
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertIn(f"the source 127.0.0.1:{redis_server.port} has no filter module", done.stderr)
        self.assertIn("MODULE LIST names no module (RedisBloom's is 'bf')", done.stderr)
        self.assertIn("0 keys copied, 2 skipped, 0 failed", done.stderr)
        self.assertIn("skipped 2: type string is not a filter (", done.stderr)


if __name__ == "__main__":
    unittest.main()
