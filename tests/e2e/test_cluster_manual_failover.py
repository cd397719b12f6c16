"""CLUSTER FAILOVER [FORCE|TAKEOVER] and cluster-allow-reads-when-down on a
cluster of three masters and three replicas made by `redis-cli --cluster
create ... --cluster-replicas 1`:

- the errors are Redis 7.0's texts;
- TAKEOVER: the replica takes its master's slots at a new epoch of its own,
  every node agrees, the old master becomes its replica;
- the default form, while a writer writes to that shard without pause: the
  master pauses writes, the replica catches up and wins an election, the
  old master follows it, and every write acknowledged with +OK is on the
  new master (the writer follows -MOVED); the failover time is printed;
- FORCE with the master stopped (SIGSTOP) and cluster-replica-no-failover
  on the replica (no automatic election): the replica is elected without
  it; the master, once running again, follows it;
- with a shard's master and replica both stopped, the cluster is down:
  keys get -CLUSTERDOWN, and with cluster-allow-reads-when-down yes reads
  of the other shards are served while writes get Redis's read-only text.

The failovers run in this order, each on a shard untouched before, on one
cluster. Every wait has a deadline derived from cluster-node-timeout.
"""
import os
import signal
import threading
import time
import unittest

from harness import RespError, wait_until
from cluster_support import (NODE_TIMEOUT_MS, REDIS_CLI, RedirectingClient, create_for_class,
                             info_fields, key_in_slot, node_lines, stop_for_class)

TIMEOUT_S = NODE_TIMEOUT_MS / 1000
# Roles agreed after a failover: a PONG broadcast, the old master's
# reconfiguration and a gossip round; margin for a loaded machine.
AGREE_DEADLINE_S = 10 * TIMEOUT_S
# A replica's sync after a role change (a full sync of a small keyspace).
SYNC_DEADLINE_S = 15 * TIMEOUT_S
# fail? takes a node timeout after an unanswered PING, fail one gossip round
# more; an election up to twice the node timeout after that.
FAIL_DEADLINE_S = 6 * TIMEOUT_S
FORCE_DEADLINE_S = 8 * TIMEOUT_S
# Redis's CLUSTER_SLAVE_MIGRATION_DELAY: an orphan waits this long for a replica.
MIGRATION_DELAY_S = 5.0
# A master serving slots is cleared of fail twice the node timeout after.
CLEAR_DEADLINE_S = 8 * TIMEOUT_S



@unittest.skipIf(REDIS_CLI is None, "redis-cli is not installed")
class ClusterManualFailoverTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        create_for_class(cls, "bloomgate-cluster-manual-failover-", 6, "--cluster-replicas", "1")

    @classmethod
    def tearDownClass(cls):
        stop_for_class(cls)

    def client(self, node):
        return node.client(decode_responses=True)

    def live(self):
        return [n for n in self.nodes if n.alive() and not getattr(n, "stopped", False)]

    def roles(self, node):
        """{master id: set of its replicas' ids} as `node` sees it, every
        master holding slots listed, with the slots it holds."""
        masters, replicas = {}, {}
        for fields in node_lines(self.client(node)):
            if "master" in fields[2] and len(fields) > 8:
                masters[fields[0]] = " ".join(sorted(fields[8:]))
            elif "slave" in fields[2]:
                replicas[fields[0]] = fields[3]
        return masters, replicas

    def wait_roles(self, want_master=None, want_replica_of=None, nodes=None,
                   deadline_s=AGREE_DEADLINE_S):
        """Every node of `nodes` (default: all running) shows the same three
        slot-holding masters and three replicas, all connected and none
        failing; optionally `want_master` among the masters and
        `want_replica_of` = (replica id, master id)."""
        def agreed():
            views = [self.roles(n) for n in (nodes or self.live())]
            first = views[0]
            if any(v != first for v in views) or len(first[0]) != 3 or len(first[1]) != 3:
                return False
            for n in nodes or self.live():
                for fields in node_lines(self.client(n)):
                    if fields[7] != "connected" or "fail" in fields[2]:
                        return False
            if want_master and want_master not in first[0]:
                return False
            if want_replica_of and first[1].get(want_replica_of[0]) != want_replica_of[1]:
                return False
            return first
        return wait_until(agreed, deadline_s, interval_s=0.05, what="roles agreed everywhere")

    def node_by_id(self, node_id):
        for node in self.nodes:
            if node.alive() and getattr(node, "node_id", None) is None:
                node.node_id = self.client(node).execute_command("CLUSTER", "MYID")
            if getattr(node, "node_id", None) == node_id:
                return node
        raise AssertionError(f"no node with id {node_id}")

    def shard(self, index):
        """The `index`-th shard (by its lowest slot): (master, replica, a slot)."""
        masters, replicas = self.wait_roles()
        by_first = sorted(masters, key=lambda m: int(masters[m].split(" ")[0].split("-")[0]))
        master_id = by_first[index]
        replica_id = next(r for r, m in replicas.items() if m == master_id)
        slot = int(masters[master_id].split(" ")[0].split("-")[0])
        return self.node_by_id(master_id), self.node_by_id(replica_id), slot

    def wait_synced(self, master, replica):
        def synced():
            target = int(info_fields(self.client(master), "replication")["master_repl_offset"])
            fields = info_fields(self.client(replica), "replication")
            return (fields.get("master_link_status") == "up" and
                    int(fields.get("slave_repl_offset", "-1")) >= target)
        wait_until(synced, SYNC_DEADLINE_S, interval_s=0.05, what="the replica in sync")

    def assertFails(self, text, client, *args):
        with self.assertRaises(Exception) as caught:
            client.execute_command(*args)
        self.assertEqual(str(caught.exception), text, args)

    def test_01_errors_are_redis_texts(self):
        master, replica, _ = self.shard(0)
        self.assertFails("You should send CLUSTER FAILOVER to a replica", self.client(master),
                         "CLUSTER", "FAILOVER")
        self.assertFails("You should send CLUSTER FAILOVER to a replica", self.client(master),
                         "CLUSTER", "FAILOVER", "TAKEOVER")
        self.assertFails("syntax error", self.client(replica), "CLUSTER", "FAILOVER", "NOW")
        self.assertFails("wrong number of arguments for 'cluster|failover' command",
                         self.client(replica), "CLUSTER", "FAILOVER", "FORCE", "NOW")

    def test_02_takeover_needs_no_vote(self):
        master, replica, slot = self.shard(0)
        master_id, replica_id = master.node_id, replica.node_id
        key = key_in_slot(slot)
        self.assertEqual(self.client(master).execute_command("BF.ADD", key, "before"), 1)
        self.wait_synced(master, replica)
        old_epoch = int(next(f for f in node_lines(self.client(replica))
                             if f[0] == master_id)[6])
        started = time.monotonic()
        self.assertEqual(self.client(replica).execute_command("CLUSTER", "FAILOVER", "TAKEOVER"),
                         "OK")
        self.wait_roles(want_master=replica_id, want_replica_of=(master_id, replica_id))
        print(f"\nTAKEOVER: roles agreed everywhere in {time.monotonic() - started:.2f} s",
              flush=True)
        # A config epoch of its own (Redis's bump: currentEpoch + 1 unless
        # its own is already the highest), above its old master's: every
        # node prefers its claim; masters' epochs stay distinct.
        lines = node_lines(self.client(replica))
        line = next(f for f in lines if f[0] == replica_id)
        self.assertGreater(int(line[6]), old_epoch)
        master_epochs = [f[6] for f in lines if "master" in f[2] and len(f) > 8]
        self.assertEqual(len(set(master_epochs)), 3, master_epochs)
        self.assertEqual(self.client(replica).execute_command("BF.EXISTS", key, "before"), 1)
        self.assertEqual(self.client(replica).execute_command("BF.ADD", key, "after"), 1)
        self.wait_synced(replica, master)
        role = self.client(master).execute_command("ROLE")
        self.assertEqual((role[0], int(role[2])), ("slave", replica.port))
        self.assertFails(f"MOVED {slot} 127.0.0.1:{replica.port}", self.client(master),
                         "BF.ADD", key, "x")

    def test_03_manual_failover_under_writes_loses_no_acknowledged_write(self):
        master, replica, slot = self.shard(1)
        master_id, replica_id = master.node_id, replica.node_id
        key = key_in_slot(slot)
        acked, errors, redirects = [], [], []
        stop = threading.Event()

        def write():
            client = RedirectingClient(master.port)
            try:
                i = 0
                while not stop.is_set():
                    item = f"item-{i}"
                    reply = client.call(key, "BF.ADD", key, item)
                    if isinstance(reply, RespError):
                        errors.append(str(reply))
                    else:
                        acked.append(item)
                    i += 1
            finally:
                redirects.append(client.moved)
                client.close()
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        try:
            wait_until(lambda: len(acked) >= 200 or not writer.is_alive(), AGREE_DEADLINE_S,
                       what="the writer under way")
            self.assertTrue(writer.is_alive())
            started = time.monotonic()
            self.assertEqual(self.client(replica).execute_command("CLUSTER", "FAILOVER"), "OK")
            wait_until(lambda: self.client(replica).execute_command("ROLE")[0] == "master",
                       AGREE_DEADLINE_S, interval_s=0.01, what="the replica promoted")
            promoted = time.monotonic() - started
            self.wait_roles(want_master=replica_id, want_replica_of=(master_id, replica_id))
            agreed = time.monotonic() - started
            # The writer goes on at the new master.
            before = len(acked)
            wait_until(lambda: len(acked) >= before + 200 or not writer.is_alive(),
                       AGREE_DEADLINE_S, what="writes acknowledged by the new master")
        finally:
            stop.set()
            writer.join(AGREE_DEADLINE_S)
        self.assertFalse(writer.is_alive())
        print(f"\nmanual failover under writes: replica promoted in {promoted:.2f} s, "
              f"roles agreed everywhere in {agreed:.2f} s; {len(acked)} writes acknowledged, "
              f"{redirects[0]} -MOVED followed, {len(errors)} refused", flush=True)
        self.assertGreaterEqual(redirects[0], 1)
        self.assertEqual(errors, [])
        new_master = self.client(replica)
        for first in range(0, len(acked), 500):
            chunk = acked[first:first + 500]
            self.assertEqual(new_master.execute_command("BF.MEXISTS", key, *chunk),
                             [1] * len(chunk))
        info = self.client(replica).execute_command("CLUSTER", "INFO")
        self.assertIn("cluster_stats_messages_mfstart_sent:1\r\n", info)
        self.assertIn("cluster_stats_messages_mfstart_received:1\r\n",
                      self.client(master).execute_command("CLUSTER", "INFO"))
        # The old master follows the new one and has every write too.
        self.wait_synced(replica, master)
        role = self.client(master).execute_command("ROLE")
        self.assertEqual((role[0], int(role[2])), ("slave", replica.port))

    def test_04_force_with_the_master_stopped(self):
        master, replica, slot = self.shard(2)
        master_id, replica_id = master.node_id, replica.node_id
        key = key_in_slot(slot)
        self.assertEqual(self.client(master).execute_command("BF.ADD", key, "before"), 1)
        self.wait_synced(master, replica)
        others = [n for n in self.live() if n is not master]
        # No automatic election: only FORCE can make the replica master.
        self.assertTrue(self.client(replica).config_set("cluster-replica-no-failover", "yes"))
        os.kill(master.proc.pid, signal.SIGSTOP)
        master.stopped = True
        try:
            def master_failing():
                line = next(f for f in node_lines(self.client(replica)) if f[0] == master_id)
                return "fail" in line[2] or "fail?" in line[2]
            wait_until(master_failing, FAIL_DEADLINE_S, interval_s=0.05,
                       what="the replica suspecting its master")
            self.assertFails("Master is down or failed, please use CLUSTER FAILOVER FORCE",
                             self.client(replica), "CLUSTER", "FAILOVER")
            started = time.monotonic()
            self.assertEqual(self.client(replica).execute_command("CLUSTER", "FAILOVER", "FORCE"),
                             "OK")

            def owned_by_replica():
                return all(self.roles(n)[0].get(replica_id) for n in others)
            wait_until(owned_by_replica, FORCE_DEADLINE_S, interval_s=0.05,
                       what="the replica elected without its master")
            print(f"\nFORCE with the master stopped: every running node names the replica "
                  f"master in {time.monotonic() - started:.2f} s", flush=True)
            self.assertEqual(self.client(replica).execute_command("BF.EXISTS", key, "before"), 1)
        finally:
            os.kill(master.proc.pid, signal.SIGCONT)
            master.stopped = False
        self.assertTrue(self.client(replica).config_set("cluster-replica-no-failover", "no"))
        self.wait_roles(want_master=replica_id, want_replica_of=(master_id, replica_id),
                        deadline_s=CLEAR_DEADLINE_S + AGREE_DEADLINE_S)
        self.wait_synced(replica, master)

    def test_05_allow_reads_when_down(self):
        master, replica, slot = self.shard(2)
        down_slot = slot
        _, _, up_slot = self.shard(1)
        owner, _, _ = self.shard(1)
        up_key = key_in_slot(up_slot)
        entry = self.client(owner)
        self.assertEqual(entry.execute_command("BF.ADD", up_key, "item"), 1)
        observers = [n for n in self.live() if n not in (master, replica)]
        for node in self.live():
            self.assertEqual(self.client(node).config_get("cluster-allow-reads-when-down"),
                             {"cluster-allow-reads-when-down": "no"})
        # The shard's master and replica both stopped: no failover can happen.
        for node in (replica, master):
            os.kill(node.proc.pid, signal.SIGSTOP)
            node.stopped = True
        try:
            wait_until(lambda: all("cluster_state:fail" in self.client(n).execute_command(
                                       "CLUSTER", "INFO") for n in observers),
                       FAIL_DEADLINE_S, interval_s=0.05, what="the cluster down")
            self.assertFails("CLUSTERDOWN The cluster is down", entry, "BF.EXISTS", up_key, "item")
            self.assertTrue(entry.config_set("cluster-allow-reads-when-down", "yes"))
            self.assertEqual(entry.execute_command("BF.EXISTS", up_key, "item"), 1)
            self.assertEqual(entry.execute_command("BF.MEXISTS", up_key, "item", "no"), [1, 0])
            self.assertFails("CLUSTERDOWN The cluster is down and only accepts read commands",
                             entry, "BF.ADD", up_key, "other")
            # A key of the stopped shard is still redirected to its owner.
            self.assertFails(f"MOVED {down_slot} 127.0.0.1:{master.port}", entry,
                             "BF.EXISTS", key_in_slot(down_slot), "item")
            self.assertTrue(entry.config_set("cluster-allow-reads-when-down", "no"))
            self.assertFails("CLUSTERDOWN The cluster is down", entry, "BF.EXISTS", up_key, "item")
        finally:
            for node in (master, replica):
                os.kill(node.proc.pid, signal.SIGCONT)
                node.stopped = False
        wait_until(lambda: all("cluster_state:ok" in self.client(n).execute_command(
                                   "CLUSTER", "INFO") for n in self.live()),
                   CLEAR_DEADLINE_S, interval_s=0.05, what="the cluster ok again")

    def test_06_a_spare_replica_migrates_past_the_barrier(self):
        # One shard's replica moves to another master: its old master is
        # orphaned, the other has two replicas.
        orphan, moved, _ = self.shard(0)
        donor, _, _ = self.shard(1)
        for node in self.live():
            self.assertTrue(self.client(node).config_set("cluster-migration-barrier", "2"))
        self.assertEqual(self.client(moved).execute_command("CLUSTER", "REPLICATE",
                                                            donor.node_id), "OK")

        def shape():
            views = [self.roles(n) for n in self.live()]
            if any(v != views[0] for v in views):
                return None
            masters, replicas = views[0]
            return sorted(sum(1 for m in replicas.values() if m == master) for master in masters)
        wait_until(lambda: shape() == [0, 1, 2], AGREE_DEADLINE_S, interval_s=0.05,
                   what="the replica moved everywhere")
        # With the barrier at 2 the donor keeps both: past Redis's 5 s delay
        # (and a cron tick's margin) nothing moves.
        held_until = time.monotonic() + MIGRATION_DELAY_S + 1.5
        while time.monotonic() < held_until:
            self.assertEqual(shape() or [0, 1, 2], [0, 1, 2])
            time.sleep(0.1)
        started = time.monotonic()
        for node in self.live():
            self.assertTrue(self.client(node).config_set("cluster-migration-barrier", "1"))
        wait_until(lambda: shape() == [1, 1, 1], AGREE_DEADLINE_S, interval_s=0.05,
                   what="a replica migrated to the orphaned master")
        masters, replicas = self.wait_roles()
        self.assertIn(orphan.node_id, set(replicas.values()))
        donor_replicas = sorted(r for r, m in replicas.items() if m == donor.node_id)
        self.assertEqual(len(donor_replicas), 1)
        print(f"\nreplica migration after the barrier fell: {time.monotonic() - started:.2f} s",
              flush=True)
        # The migrated replica syncs from its new master.
        migrated = self.node_by_id(next(r for r, m in replicas.items() if m == orphan.node_id))
        self.wait_synced(orphan, migrated)


if __name__ == "__main__":
    unittest.main()
