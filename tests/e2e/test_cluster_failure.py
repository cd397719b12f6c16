"""Failure detection on the cluster bus, as Redis's: three masters made a
cluster by `redis-cli --cluster create`; one is stopped (SIGSTOP) for
longer than cluster-node-timeout: each other node suspects it (fail?),
their failure reports travel in the gossip, and a majority of masters
flags it fail everywhere (CLUSTER NODES, CLUSTER INFO's
cluster_slots_fail, CLUSTER COUNT-FAILURE-REPORTS); once it runs again
(SIGCONT) and answers, the flag clears (after twice the node timeout, as
Redis clears a master that still serves its slots).

Every wait has a deadline derived from the node timeout.
"""
import os
import signal
import unittest

from harness import wait_until
from cluster_support import NODE_TIMEOUT_MS, REDIS_CLI, create_for_class, node_lines, stop_for_class

TIMEOUT_S = NODE_TIMEOUT_MS / 1000
# fail?: one node timeout after a PING went unanswered (pings go out every
# half timeout); fail: the next gossip round, a second at most; margin for
# a loaded machine.
FAIL_DEADLINE_S = 6 * TIMEOUT_S
# A master serving slots is cleared twice the node timeout after it failed.
CLEAR_DEADLINE_S = 8 * TIMEOUT_S


@unittest.skipIf(REDIS_CLI is None, "redis-cli is not installed")
class ClusterFailureTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        create_for_class(cls, "bloomgate-cluster-failure-", 3)

    @classmethod
    def tearDownClass(cls):
        stop_for_class(cls)

    def client(self, node):
        return node.client(decode_responses=True)

    def flags_of(self, observer, node_id):
        for fields in node_lines(self.client(observer)):
            if fields[0] == node_id:
                return fields[2].split(",")
        return []

    def test_a_stopped_master_fails_everywhere_and_clears_when_back(self):
        self.assertEqual(self.create.returncode, 0, self.create.stdout + self.create.stderr)
        victim, others = self.nodes[2], self.nodes[:2]
        victim_id = self.client(victim).execute_command("CLUSTER", "MYID")
        wait_until(lambda: all(len(node_lines(self.client(n))) == 3 and
                               all(f[7] == "connected" for f in node_lines(self.client(n)))
                               for n in self.nodes),
                   FAIL_DEADLINE_S, interval_s=0.05, what="all nodes connected")
        os.kill(victim.proc.pid, signal.SIGSTOP)
        try:
            wait_until(lambda: all("fail" in self.flags_of(n, victim_id) for n in others),
                       FAIL_DEADLINE_S, interval_s=0.05, what="the stopped master flagged fail")
            for node in others:
                info = self.client(node).execute_command("CLUSTER", "INFO")
                self.assertIn("cluster_state:fail", info)
                self.assertNotIn("cluster_slots_fail:0\r\n", info + "\r\n")
            reports = [self.client(n).execute_command("CLUSTER", "COUNT-FAILURE-REPORTS",
                                                      victim_id) for n in others]
            # The other master's report, on at least the node that flagged it first.
            self.assertGreaterEqual(max(reports), 1, reports)
        finally:
            os.kill(victim.proc.pid, signal.SIGCONT)
        wait_until(lambda: all(not {"fail", "fail?"} & set(self.flags_of(n, victim_id))
                               for n in others),
                   CLEAR_DEADLINE_S, interval_s=0.05, what="the flag cleared")
        wait_until(lambda: all("cluster_state:ok" in self.client(n).execute_command(
                                   "CLUSTER", "INFO") for n in self.nodes),
                   CLEAR_DEADLINE_S, interval_s=0.05, what="the cluster ok again")


if __name__ == "__main__":
    unittest.main()
