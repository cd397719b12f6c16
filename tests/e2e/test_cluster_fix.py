"""`redis-cli --cluster fix` repairs a Bloomgate cluster as it repairs Redis:
a slot left open by an interrupted move (MIGRATING on its owner, IMPORTING
on the target, some of its keys already moved) is closed with every key on
one node, and an uncovered slot is given to a node. `check` fails before
each repair and passes after it; every key written before is still there.
"""
import tempfile
import unittest

from cluster_support import (REDIS_CLI, LocalCluster, cli, key_in_slot, node_lines,
                             slot_owners)
from harness import wait_until

KEYS_PER_SLOT = 6


def key_of(slot, i):
    return key_in_slot(slot, tag=f":bf:{i}")


@unittest.skipIf(REDIS_CLI is None, "redis-cli is not installed")
class ClusterFixTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="bloomgate-cluster-fix-")
        self.addCleanup(tmp.cleanup)
        self.cluster = LocalCluster(tmp.name, nodes=3)
        self.addCleanup(self.cluster.stop)
        self.cluster.create()
        self.cluster.wait_agreement(holders=3)
        self.ids = {n.my_id(): n for n in self.cluster.nodes}

    def owner_of(self, slot):
        owner_id = slot_owners(self.cluster.nodes[0].client(decode_responses=True))[slot]
        return self.ids[owner_id]

    def write_slot(self, slot):
        owner = self.owner_of(slot).client(decode_responses=True)
        keys = [key_of(slot, i) for i in range(KEYS_PER_SLOT)]
        for key in keys:
            self.assertEqual(owner.execute_command("BF.ADD", key, "item"), 1)
        return keys

    def assert_check_fails(self, *expected):
        out = cli("--cluster", "check", self.cluster.nodes[0].address)
        text = out.stdout + out.stderr
        for line in expected:
            self.assertIn(line, text)
        return text

    def fix(self):
        # redis-cli 7.0 asks before it covers a slot even with --cluster-yes.
        out = cli("--cluster", "fix", self.cluster.nodes[0].address, "--cluster-yes",
                  answers="yes\n" * 4)
        text = out.stdout + out.stderr
        self.assertEqual(out.returncode, 0, text)
        return text

    def assert_keys_on_owner(self, slot, keys):
        owner = self.owner_of(slot)
        for node in self.cluster.nodes:
            c = node.client(decode_responses=True)
            count = c.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)
            self.assertEqual(count, len(keys) if node is owner else 0, node.address)
        c = owner.client(decode_responses=True)
        for key in keys:
            self.assertEqual(c.execute_command("BF.EXISTS", key, "item"), 1, key)

    def test_an_interrupted_move_is_closed_with_every_key_on_one_node(self):
        slot = 100
        source = self.owner_of(slot)
        target = next(n for n in self.cluster.nodes if n is not source)
        keys = self.write_slot(slot)
        s = source.client(decode_responses=True)
        t = target.client(decode_responses=True)
        # What redis-cli --cluster reshard does, stopped after two keys.
        self.assertEqual(t.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING",
                                           source.my_id()), "OK")
        self.assertEqual(s.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING",
                                           target.my_id()), "OK")
        self.assertEqual(s.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 5000,
                                           "KEYS", *keys[:2]), "OK")
        self.assert_check_fails("[WARNING] Node", "has slots in migrating state", str(slot))

        text = self.fix()
        self.assertIn(f"Fixing open slot {slot}", text)
        self.cluster.wait_agreement(holders=3)
        self.cluster.check()
        for node in self.cluster.nodes:
            self.assertFalse([f for f in node_lines(node.client(decode_responses=True))
                              if any(p.startswith("[") for p in f[8:])], node.address)
        self.assert_keys_on_owner(slot, keys)

    def test_an_uncovered_slot_is_given_to_a_node(self):
        slot = 200
        # As Redis's own tests unassign a slot: DELSLOTS on every node, since
        # a node keeps a peer's claim until a newer one replaces it.
        for c in self.cluster.clients():
            self.assertEqual(c.execute_command("CLUSTER", "DELSLOTS", slot), "OK")
        self.assertTrue(all(slot_owners(c)[slot] is None for c in self.cluster.clients()))
        self.assert_check_fails("[ERR] Not all 16384 slots are covered by nodes.")

        text = self.fix()
        self.assertIn("Fixing slots coverage", text)
        wait_until(lambda: all(slot_owners(c)[slot] is not None for c in self.cluster.clients()),
                   30.0, interval_s=0.05, what=f"slot {slot} assigned on every node")
        self.cluster.wait_agreement(holders=3)
        self.cluster.check()
        keys = self.write_slot(slot)
        self.assert_keys_on_owner(slot, keys)


if __name__ == "__main__":
    unittest.main()
