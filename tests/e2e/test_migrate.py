"""bloomgate migrate between two real servers, each with a password.

One source and one target for the whole file: the source is filled once
(a scalable Bloom filter of several layers, a cuckoo filter with deletes,
a counting Bloom filter, keys with TTLs, a count-min sketch and a top-k as
keys migrate must skip); each test empties the target and runs the real
binary's `migrate` mode against them.
"""

import subprocess
import unittest

from harness import BloomgateServer, free_port, server_binary

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
FAMILY = {"bf": "BF", "cf": "CF", "cbf": "CBF"}
# Commands that only read: all the source may ever see from migrate (and
# from this test's own checks).
READ_ONLY = {"auth", "ping", "scan", "type", "pttl", "bf.scandump", "cf.scandump",
             "cbf.scandump", "module|list", "info", "bf.mexists", "cf.mexists",
             "cbf.mexists", "bf.info", "cf.info", "cbf.info", "cf.count", "dbsize", "keys",
             "ttl", "command", "client|setinfo", "select", "hello"}


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
    r.execute_command("CMS.INITBYDIM", "cms:skip", "100", "4")
    r.execute_command("TOPK.RESERVE", "topk:skip", "5")


def answers(r, key):
    """Everything a client can ask the filter at `key`, as on the wire."""
    family = FAMILY[key.split(":")[0]]
    probe = ADDED[key] + PROBES
    result = {
        "exists": r.execute_command(f"{family}.MEXISTS", key, *probe),
        "info": r.execute_command(f"{family}.INFO", key),
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
        for key in ("bf:ttl", "cf:ttl"):
            source_ttl, target_ttl = self.src.pttl(key), self.dst.pttl(key)
            self.assertGreater(target_ttl, 0, key)
            self.assertLess(abs(source_ttl - target_ttl), 1000, (key, source_ttl, target_ttl))
        for key in ("bf:scaled", "cf:deletes", "cbf:counts"):
            self.assertEqual(self.dst.pttl(key), -1, key)

    def test_copies_every_filter_with_identical_answers_and_skips_the_rest(self):
        code, err = self.migrate()
        self.assertEqual(code, 0, err)
        self.assertTargetAnswersAsSource()
        self.assertEqual(sorted(self.dst.keys("*")), sorted(ADDED), err)
        self.assertIn("5 keys copied, 2 skipped, 0 failed", err)
        self.assertIn("count-min sketch (RedisBloom has no SCANDUMP for CMS) (cms:skip)", err)
        self.assertIn("top-k (RedisBloom has no SCANDUMP for TOPK) (topk:skip)", err)
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
        code, err = self.migrate()
        self.assertEqual(code, 1, err)
        self.assertIn("3 keys copied, 2 skipped, 2 failed", err)
        for key in ("bf:scaled", "cf:ttl"):
            self.assertIn(f"failed: {key}: the target already has this key "
                          "(--replace overwrites it)", err)
        self.assertEqual(self.dst.execute_command("BF.EXISTS", "bf:scaled", "target-only"), 1)
        code, err = self.migrate("--replace")
        self.assertEqual(code, 0, err)
        self.assertTargetAnswersAsSource()
        self.assertEqual(sorted(self.dst.keys("*")), sorted(ADDED), err)

    def test_the_source_is_only_read(self):
        self.src.config_resetstat()
        code, err = self.migrate()
        self.assertEqual(code, 0, err)
        self.assertEqual(sorted(self.src.keys("*")), self.keys_before)
        for key in ADDED:
            self.assertEqual(answers(self.src, key), self.answers_before[key], key)
        stats = self.src.info("commandstats")
        ran = {name[len("cmdstat_"):] for name in stats if name.startswith("cmdstat_")}
        self.assertIn("bf.scandump", ran)
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
        self.assertIn("Count-min sketch and top-k keys are", done.stdout)


if __name__ == "__main__":
    unittest.main()
