"""Redis Cluster on one node, against the real binary: CLUSTER's replies in
Redis 7.0's formats, the routing refusals a lone node can give (CLUSTERDOWN,
CROSSSLOT), nodes.conf surviving kill -9, a corrupt one refusing the start,
and `redis-cli --cluster check` reading this node as it reads Redis.
Redirects between nodes (MOVED, ASK) need peers met over the cluster bus;
their rules are tested in process (tests/unit/server/commands/cluster_commands_test.cc).
"""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest

from cluster_support import STATE_OK_DEADLINE_S, key_in_slot
from harness import BloomgateServer, PersistentServer, free_port, parse_info, wait_until

NODE_ID = re.compile(r"^[0-9a-f]{40}$")


class ClusterDisabledTest(unittest.TestCase):
    def test_cluster_commands_say_the_cluster_is_off(self):
        with BloomgateServer() as server, server.raw() as c:
            self.assertEqual(c.call("CLUSTER", "INFO"),
                             "ERR This instance has cluster support disabled")
            self.assertEqual(c.call("READONLY"), "ERR This instance has cluster support disabled")
            info = parse_info(c.call("INFO", "cluster").decode())
            self.assertEqual(info["cluster_enabled"], "0")
            self.assertEqual(c.call("BF.ADD", "a", "x"), 1)


class ClusterNodeTest(unittest.TestCase):
    """One cluster-enabled node per test on a data directory that survives
    its restarts."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="bloomgate-cluster-")
        self.addCleanup(self.tmp.cleanup)
        self.data_dir = os.path.join(self.tmp.name, "data")
        os.mkdir(self.data_dir)
        self.count = 0

    def start(self, expected_exit_code=0, ready=True):
        self.count += 1
        server = PersistentServer(
            self.data_dir, ["--cluster-enabled", "yes", "--cluster-port", str(free_port()),
                            "--save", "", "--appendonly", "no"],
            log_path=os.path.join(self.tmp.name, f"server-{self.count}.log"),
            expected_exit_code=expected_exit_code, ready=ready)
        server.start()
        self.addCleanup(lambda: server.kill9() if server.alive() else server._cleanup())
        return server

    def test_a_lone_node_reports_and_refuses_as_redis(self):
        server = self.start()
        with server.raw() as c:
            my_id = c.call("CLUSTER", "MYID").decode()
            self.assertRegex(my_id, NODE_ID)
            info = parse_info(c.call("INFO").decode())
            # What `redis-cli --cluster create` reads to call a node empty.
            self.assertEqual(info["cluster_enabled"], "1")
            self.assertNotIn("db0", info)
            self.assertEqual(c.call("CLUSTER", "ADDSLOTSRANGE", "0", "5460"), "OK")
            cluster = parse_info(c.call("CLUSTER", "INFO").decode())
            self.assertEqual(cluster["cluster_state"], "fail")
            self.assertEqual(cluster["cluster_slots_assigned"], "5461")
            self.assertEqual(cluster["cluster_known_nodes"], "1")
            self.assertEqual(cluster["cluster_size"], "1")
            nodes = c.call("CLUSTER", "NODES").decode()
            self.assertEqual(nodes, f"{my_id} :{server.port}@{self.cluster_port(server)} "
                                    f"myself,master - 0 0 0 connected 0-5460\n")
            # Redis's KEYSLOT answers for these keys.
            self.assertEqual(c.call("CLUSTER", "KEYSLOT", "foo"), 12182)
            self.assertEqual(c.call("CLUSTER", "KEYSLOT", "{user1000}.following"), 3443)
            mine = key_in_slot(100)
            unowned = key_in_slot(9000)
            self.assertEqual(c.call("CLUSTER", "KEYSLOT", mine), 100)
            self.assertEqual(c.call("CLUSTER", "KEYSLOT", unowned), 9000)
            # Slots 5461-16383 have no owner: the cluster is down for every key.
            self.assertEqual(c.call("BF.ADD", mine, "x"), "CLUSTERDOWN The cluster is down")
            self.assertEqual(c.call("BF.ADD", unowned, "x"), "CLUSTERDOWN Hash slot not served")
            self.assertEqual(c.call("CONFIG", "SET", "cluster-require-full-coverage", "no"), "OK")
            # A master keeps the state fail for 2 s after its start (Redis's
            # writable delay).
            wait_until(lambda: parse_info(c.call("CLUSTER", "INFO").decode())["cluster_state"] ==
                       "ok", STATE_OK_DEADLINE_S, interval_s=0.05, what="cluster_state:ok")
            self.assertEqual(c.call("BF.ADD", mine, "x"), 1)
            self.assertEqual(c.call("DEL", mine, key_in_slot(101)),
                             "CROSSSLOT Keys in request don't hash to the same slot")
            self.assertEqual(c.call("PING"), "PONG")
            stranger = "f" * 40
            self.assertEqual(c.call("CLUSTER", "SETSLOT", "9000", "IMPORTING", stranger),
                             f"ERR I don't know about node {stranger}")
            self.assertEqual(c.call("CLUSTER", "FLUSHSLOTS"),
                             "ERR DB must be empty to perform CLUSTER FLUSHSLOTS.")

    def cluster_port(self, server):
        return int(server.args[server.args.index("--cluster-port") + 1])

    def test_kill9_keeps_the_id_the_epochs_and_the_slots(self):
        server = self.start()
        with server.raw() as c:
            my_id = c.call("CLUSTER", "MYID")
            self.assertEqual(c.call("CLUSTER", "ADDSLOTSRANGE", "0", "99", "200", "16383"), "OK")
            self.assertEqual(c.call("CLUSTER", "SET-CONFIG-EPOCH", "7"), "OK")
            before = c.call("CLUSTER", "NODES").decode()
        self.assertEqual(server.kill9(), -signal.SIGKILL)
        with open(os.path.join(self.data_dir, "nodes.conf")) as f:
            self.assertIn("vars currentEpoch 7 lastVoteEpoch 0\n", f.read())
        again = self.start()
        with again.raw() as c:
            self.assertEqual(c.call("CLUSTER", "MYID"), my_id)
            cluster = parse_info(c.call("CLUSTER", "INFO").decode())
            self.assertEqual(cluster["cluster_current_epoch"], "7")
            self.assertEqual(cluster["cluster_my_epoch"], "7")
            self.assertEqual(cluster["cluster_slots_assigned"], str(16384 - 100))
            after = c.call("CLUSTER", "NODES").decode()
        # Same line but for this start's ports.
        strip = lambda line: re.sub(r" :\d+@\d+ ", " ", line)
        self.assertEqual(strip(after), strip(before))

    def test_a_corrupt_nodes_conf_refuses_the_start(self):
        with open(os.path.join(self.data_dir, "nodes.conf"), "w") as f:
            f.write("0123 not a node line\n")
        server = self.start(expected_exit_code=1, ready=False)
        self.assertEqual(server.wait_exit(), 1)
        self.assertIn("corrupted cluster config file", server.log())
        with open(os.path.join(self.data_dir, "nodes.conf")) as f:
            self.assertEqual(f.read(), "0123 not a node line\n")  # left for the operator

    @unittest.skipUnless(shutil.which("redis-cli"), "redis-cli is not installed")
    def test_redis_cli_cluster_check_accepts_a_node_with_every_slot(self):
        server = self.start()
        with server.raw() as c:
            self.assertEqual(c.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383"), "OK")
        check = subprocess.run(["redis-cli", "--cluster", "check", f"127.0.0.1:{server.port}"],
                               capture_output=True, text=True, timeout=30)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        self.assertIn("[OK] All nodes agree about slots configuration.", check.stdout)
        self.assertIn("[OK] All 16384 slots covered.", check.stdout)


if __name__ == "__main__":
    unittest.main()
