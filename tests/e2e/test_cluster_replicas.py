"""Replicas in a Bloomgate cluster, made the way operators make them:
`redis-cli --cluster create ... --cluster-replicas 1` over six nodes gives
three masters, each with a replica that follows it over the replication
stream; `redis-cli --cluster check` passes on every node, replicas
included; CLUSTER NODES says `slave <master-id>` everywhere, CLUSTER
REPLICAS/SLAVES/SLOTS/SHARDS list the replicas; a replica serves reads of
its master's slots after READONLY (not after READWRITE) and redirects
writes with -MOVED; CLUSTER REPLICATE answers Redis 7.0's errors.

Every wait has a deadline and waits on what the nodes say (CLUSTER NODES,
INFO replication); redis-cli runs as a subprocess with one.
"""
import unittest

from harness import wait_until
from cluster_support import (REDIS_CLI, cli, create_for_class, info_fields, node_lines,
                             stop_for_class)

AGREE_DEADLINE_S = 30.0
SYNC_DEADLINE_S = 30.0



@unittest.skipIf(REDIS_CLI is None, "redis-cli is not installed")
class ClusterReplicasTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Redis's default node timeout: nothing here waits on failure
        # detection, and on a loaded machine a 2 s one can flag a node
        # fail? (and the state fail) for a moment.
        create_for_class(cls, "bloomgate-cluster-replicas-", 6, "--cluster-replicas", "1",
                         node_timeout_ms=15000)

    @classmethod
    def tearDownClass(cls):
        stop_for_class(cls)

    def client(self, node):
        return node.client(decode_responses=True)

    def wait_roles_agreed(self):
        """Every node sees three masters holding slots and three replicas,
        each naming a master, all connected; returns {master id: replica id}."""
        def roles(lines):
            masters = {f[0] for f in lines if "master" in f[2] and len(f) > 8}
            replicas = {f[0]: f[3] for f in lines if "slave" in f[2]}
            return masters, replicas
        def agreed():
            views = [roles(node_lines(self.client(n))) for n in self.nodes]
            lines = [node_lines(self.client(n)) for n in self.nodes]
            first = views[0]
            return (all(v == first for v in views) and len(first[0]) == 3 and
                    len(first[1]) == 3 and set(first[1].values()) == first[0] and
                    all(len(ls) == 6 and all(f[7] == "connected" for f in ls)
                        for ls in lines))
        wait_until(agreed, AGREE_DEADLINE_S, interval_s=0.05, what="roles agreed everywhere")
        _, replicas = roles(node_lines(self.client(self.nodes[0])))
        return {master: replica for replica, master in replicas.items()}

    def node_by_id(self, node_id):
        for node in self.nodes:
            if self.client(node).execute_command("CLUSTER", "MYID") == node_id:
                return node
        raise AssertionError(f"no node with id {node_id}")

    def wait_synced(self, master, replica):
        """The replica's link is up and its offset reached the master's."""
        def synced():
            target = int(info_fields(self.client(master), "replication")["master_repl_offset"])
            fields = info_fields(self.client(replica), "replication")
            return (fields.get("master_link_status") == "up" and
                    int(fields.get("slave_repl_offset", "-1")) >= target)
        wait_until(synced, SYNC_DEADLINE_S, interval_s=0.05, what="the replica in sync")

    def test_01_create_with_replicas_and_check_passes_everywhere(self):
        out = self.create.stdout + self.create.stderr
        self.assertEqual(self.create.returncode, 0, out)
        self.assertIn("Adding replica", out)
        self.assertIn("[OK] All 16384 slots covered.", out)
        print(f"\ncreate with replicas: {self.create_seconds:.2f} s", flush=True)
        self.wait_roles_agreed()
        for node in self.nodes:
            text = self.cluster.check(node)
            self.assertEqual(text.count("1 additional replica(s)"), 3, text)
        for node in self.nodes:
            info = self.client(node).execute_command("CLUSTER", "INFO")
            self.assertIn("cluster_state:ok", info)
            self.assertIn("cluster_known_nodes:6", info)
            self.assertIn("cluster_size:3", info)

    def test_02_replicas_follow_their_master_over_replication(self):
        pairs = self.wait_roles_agreed()
        for master_id, replica_id in pairs.items():
            master, replica = self.node_by_id(master_id), self.node_by_id(replica_id)
            self.wait_synced(master, replica)
            role = self.client(replica).execute_command("ROLE")
            self.assertEqual(role[0], "slave")
            self.assertEqual(int(role[2]), master.port)
            self.assertEqual(info_fields(self.client(master), "replication")["connected_slaves"],
                             "1")

    def test_03_replicas_listed_by_replicas_slaves_slots_and_shards(self):
        pairs = self.wait_roles_agreed()
        client = self.client(self.nodes[0])
        for master_id, replica_id in pairs.items():
            for sub in ("REPLICAS", "SLAVES"):
                lines = client.execute_command("CLUSTER", sub, master_id)
                self.assertEqual(len(lines), 1, lines)
                fields = lines[0].split(" ")
                self.assertEqual(fields[0], replica_id)
                self.assertIn("slave", fields[2])
                self.assertEqual(fields[3], master_id)
        slots = client.execute_command("CLUSTER", "SLOTS")
        self.assertEqual(len(slots), 3)
        for entry in slots:
            self.assertEqual(len(entry), 4, entry)  # start, end, master, its replica
            self.assertEqual(pairs[entry[2][2]], entry[3][2])
        shards = client.execute_command("CLUSTER", "SHARDS")
        self.assertEqual(len(shards), 3)
        for shard in shards:
            shard = dict(zip(shard[::2], shard[1::2]))
            nodes = [dict(zip(n[::2], n[1::2])) for n in shard["nodes"]]
            self.assertEqual([n["role"] for n in nodes], ["master", "replica"])
            self.assertEqual(pairs[nodes[0]["id"]], nodes[1]["id"])

    def test_04_replica_reads_after_readonly_and_redirects_writes(self):
        pairs = self.wait_roles_agreed()
        key = "replicated-filter"
        entry = self.client(self.nodes[0])
        slot = entry.execute_command("CLUSTER", "KEYSLOT", key)
        owner = next(e for e in entry.execute_command("CLUSTER", "SLOTS")
                     if e[0] <= slot <= e[1])
        master = self.node_by_id(owner[2][2])
        replica = self.node_by_id(pairs[owner[2][2]])
        self.assertEqual(self.client(master).execute_command("BF.ADD", key, "item"), 1)
        self.wait_synced(master, replica)
        moved = f"MOVED {slot} 127.0.0.1:{master.port}"
        conn = replica.client(decode_responses=True, single_connection_client=True)
        with self.assertRaises(Exception) as caught:
            conn.execute_command("BF.EXISTS", key, "item")
        self.assertEqual(str(caught.exception), moved)
        self.assertTrue(conn.execute_command("READONLY"))
        self.assertEqual(conn.execute_command("BF.EXISTS", key, "item"), 1)
        self.assertEqual(conn.execute_command("BF.EXISTS", key, "absent"), 0)
        with self.assertRaises(Exception) as caught:
            conn.execute_command("BF.ADD", key, "other")
        self.assertEqual(str(caught.exception), moved)
        self.assertTrue(conn.execute_command("READWRITE"))
        with self.assertRaises(Exception) as caught:
            conn.execute_command("BF.EXISTS", key, "item")
        self.assertEqual(str(caught.exception), moved)
        # The replica's offset reaches its master's shard row over the bus.
        target = int(info_fields(self.client(master), "replication")["master_repl_offset"])
        def offset_gossiped():
            for shard in self.client(master).execute_command("CLUSTER", "SHARDS"):
                nodes = [dict(zip(n[::2], n[1::2])) for n in dict(zip(shard[::2], shard[1::2]))["nodes"]]
                for n in nodes:
                    if n["id"] == pairs[owner[2][2]]:
                        return n["replication-offset"] >= target
            return False
        wait_until(offset_gossiped, AGREE_DEADLINE_S, interval_s=0.05,
                   what="the replica's offset heard over the bus")

    def test_05_replicate_errors_are_redis_texts(self):
        pairs = self.wait_roles_agreed()
        master_id, replica_id = next(iter(pairs.items()))
        master = self.node_by_id(master_id)
        client = self.client(master)
        cases = [
            (("REPLICATE", "f" * 40), "Unknown node " + "f" * 40),
            (("REPLICATE", master_id), "Can't replicate myself"),
            (("REPLICATE", replica_id), "I can only replicate a master, not a replica."),
            (("REPLICATE", next(m for m in pairs if m != master_id)),
             "To set a master the node must be empty and without assigned slots."),
            (("REPLICAS", replica_id), "The specified node is not a master"),
            (("SLAVES", "f" * 40), "Unknown node " + "f" * 40),
        ]
        for args, text in cases:
            with self.assertRaises(Exception) as caught:
                client.execute_command("CLUSTER", *args)
            self.assertEqual(str(caught.exception), text, args)
        # A cluster node's master is chosen by CLUSTER REPLICATE, never by
        # REPLICAOF / SLAVEOF, on a master or a replica.
        replica = self.client(self.node_by_id(replica_id))
        for c in (client, replica):
            for command in ("REPLICAOF", "SLAVEOF"):
                for target in (("NO", "ONE"), ("127.0.0.1", str(master.port))):
                    with self.assertRaises(Exception) as caught:
                        c.execute_command(command, *target)
                    self.assertEqual(str(caught.exception),
                                     "REPLICAOF not allowed in cluster mode.")
        self.assertEqual(self.wait_roles_agreed(), pairs)

    def test_06_a_replica_killed_with_9_follows_its_master_again(self):
        pairs = self.wait_roles_agreed()
        master_id, replica_id = next(iter(pairs.items()))
        master, replica = self.node_by_id(master_id), self.node_by_id(replica_id)
        replica.kill9()
        replica.start()
        # nodes.conf says `slave <master-id>`: the bus's cron starts the link.
        self.assertEqual(self.wait_roles_agreed(), pairs)
        self.wait_synced(master, replica)
        self.assertEqual(self.client(replica).execute_command("ROLE")[0], "slave")


if __name__ == "__main__":
    unittest.main()
