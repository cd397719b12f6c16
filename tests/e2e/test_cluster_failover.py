"""Failover of a Bloomgate cluster under load, as Redis Cluster's: six nodes
made three masters with a replica each by `redis-cli --cluster create
--cluster-replicas 1`; redis-py's RedisCluster and ioredis's Cluster write
throughout, on keys of all three masters, each write followed by `WAIT 1`
on its own connection (failover_support.py).

- kill -9 of a master: its replica is master within cluster-node-timeout
  + 2 s, the clients write on through it, every write WAIT counted a
  replica for is there; the old master, restarted, follows the new one.
- SIGSTOP of a master past the node timeout, then SIGCONT: it comes back as
  a replica; no sample of any reachable node's CLUSTER NODES / SLOTS gives
  a slot two masters; the writes it took after its replica's promotion are
  counted, and WAIT counted a replica for none of them.
- CLUSTER FAILOVER on a replica under load: no acknowledged write lost.
- Two masters killed one after the other: both shards heal.
- Ten rounds of kill -9 and restart of a random node (one down at a time),
  then `redis-cli --cluster check` passes.
- `redis-cli --cluster add-node --cluster-slave [--cluster-master-id]`.

After every fault every acknowledged write is checked (EXISTS of its own
key): those WAIT counted a replica for must all be there; the others lost
are counted and printed with the failover's time. Waits poll what the nodes
say, with deadlines derived from the node timeout; every process is
stopped (SIGCONT first) whatever happens.
"""
import os
import random
import time
import unittest

import redis

from harness import wait_until
from cluster_support import REDIS_CLI, cli, create_for_class, node_lines, stop_for_class
import failover_support as fs

TIMEOUT_MS = 1500
TIMEOUT_S = TIMEOUT_MS / 1000
# Redis's bound for a replica to take over: the node timeout to flag the
# master fail, then the election (500 ms + up to 500 ms random + its rank's
# 1 s, and a vote round trip), well inside 2 s more.
FAILOVER_BOUND_S = TIMEOUT_S + 2
# How long to wait before giving up on a failover (the bound is asserted on
# the measured time, so a slow one reports its time, not a timeout): a
# retried election starts again after twice its 2 x node-timeout (at least
# 2 s) timeout.
FAILOVER_WAIT_S = 4 * FAILOVER_BOUND_S
# A restarted node rejoins (handshake, gossip) and fully resyncs; a
# demoted master learns its new role from the next ping.
HEAL_DEADLINE_S = 10 * TIMEOUT_S + 10
WRITES_BEFORE_FAULT = 30
RANDOM_ROUNDS = 10


@unittest.skipIf(REDIS_CLI is None, "redis-cli is not installed")
class ClusterFailoverTest(unittest.TestCase):
    """One cluster for the class, the tests in order; each leaves it healthy
    (three masters with a replica each, all connected, state ok)."""

    @classmethod
    def setUpClass(cls):
        create_for_class(cls, "bloomgate-cluster-failover-", 6, "--cluster-replicas", "1",
                         node_timeout_ms=TIMEOUT_MS)
        cls.stopped = set()
        cls.ledger = fs.Ledger()
        cls.known_lost = set()
        cls.sampler = None
        try:
            fs.wait_healthy(cls.cluster, HEAL_DEADLINE_S)
            cls.tags = fs.spread_tags(fs.node_client(cls.nodes[0]))
            cls.sampler = fs.SlotSampler(cls.cluster, cls.stopped)
            cls.sampler.start()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.sampler is not None:
            cls.sampler.stop()
        fs.continue_all(cls.cluster)
        stop_for_class(cls)

    def setUp(self):
        # A test that failed half-way may have left a node killed: the next
        # one starts from a whole cluster all the same.
        for node in self.nodes:
            if not fs.node_alive(node):
                self.restart(node)
        fs.wait_healthy(self.cluster, HEAL_DEADLINE_S)
        self.writers = fs.start_writers([n.address for n in self.nodes], self.tags, self.ledger)
        self.addCleanup(fs.stop_writers, self.writers)
        self.started = time.monotonic()
        self.wait_writes_flowing(self.started)

    def tearDown(self):
        fs.continue_all(self.cluster)
        self.stopped.clear()
        print("  " + "; ".join(w.summary() for w in self.writers), flush=True)

    def run(self, result=None):
        """On failure, the nodes' logs and the writers' state come first."""
        failures = len(result.failures) + len(result.errors) if result else 0
        out = super().run(result)
        if result and len(result.failures) + len(result.errors) > failures:
            for i, node in enumerate(self.cluster.nodes):
                print(f"--- node {i} (port {node.port}, {self.responds(node)}), its log's "
                      f"end ---\n{node.log()[-3000:]}", flush=True)
            for writer in getattr(self, "writers", []):
                print(writer.summary(), flush=True)
        return out

    def responds(self, node):
        """Whether `node` answers PING within 2 s, for a failure's report."""
        if not fs.node_alive(node):
            return "not running"
        try:
            fs.node_client(node, timeout_s=2).ping()
            return "answers PING"
        except Exception as e:
            return f"no PING answer: {e!r}"

    # -- helpers ------------------------------------------------------------
    def wait_writes_flowing(self, since, what="writes"):
        """Every writer has WRITES_BEFORE_FAULT writes acknowledged since
        `since`, some with a replica counted by WAIT."""
        def flowing():
            writes = [w for w in self.ledger.snapshot() if w.acked_at >= since]
            return all(sum(1 for w in writes if w.client == writer.client_name) >=
                       WRITES_BEFORE_FAULT and
                       any(w.waited for w in writes if w.client == writer.client_name)
                       for writer in self.writers)
        wait_until(flowing, 30.0, interval_s=0.02, what=what)

    def a_master(self, index=0):
        """(master node, its id, its slots, its one replica node)."""
        masters = fs.current_masters(self.cluster)
        master = masters[index % len(masters)]
        master_id, replicas = fs.shard_of(self.cluster, master)
        self.assertEqual(len(replicas), 1, f"master {master.port} has replicas {replicas}")
        slots = fs.claims_master(fs.node_client(master))
        self.assertTrue(slots)
        return master, master_id, slots, replicas[0]

    def wait_clients_through(self, node, since):
        """Each writer has a write acknowledged by `node` after `since`;
        returns {client: seconds after `since`}."""
        address = node.address
        firsts = {}

        def through():
            for w in self.ledger.snapshot():
                if w.acked_at > since and w.node == address and w.client not in firsts:
                    firsts[w.client] = w.acked_at - since
            return all(writer.client_name in firsts for writer in self.writers)
        wait_until(through, FAILOVER_WAIT_S, interval_s=0.02,
                   what=f"every client writing through {address}")
        return firsts

    def wait_follows(self, replica, master_id):
        """`replica` says, in its own CLUSTER NODES, it is a replica of
        `master_id`, and its replication link is up."""
        def follows():
            if not fs.node_alive(replica):
                return False
            try:
                client = fs.node_client(replica)
                mine = next(f for f in node_lines(client) if "myself" in f[2])
                return ("slave" in mine[2] and mine[3] == master_id and
                        client.info("replication").get("master_link_status") == "up")
            except Exception:
                return False
        wait_until(follows, HEAL_DEADLINE_S, interval_s=0.05,
                   what=f"node {replica.port} following {master_id}")

    def restart(self, node):
        """Starts a killed node again; the sampler lets it say, for a moment,
        it still serves what its nodes.conf says it did (as a Redis node
        does until the first ping it reads)."""
        self.sampler.resumed[node.port] = time.monotonic()
        node.start()

    def kill_master(self, master, slots, replica, label, bound_s=FAILOVER_BOUND_S):
        """kill -9 of `master`; asserts `replica` became master of its slots
        within `bound_s`; returns (kill time, failover seconds)."""
        self.assertIn("master", fs.node_client(master).info("replication")["role"])
        killed_at = fs.kill9(master)
        self.assertFalse(master.alive())
        _, promoted_at = fs.wait_promoted(self.cluster, slots, [replica], FAILOVER_WAIT_S,
                                          f"{label}: replica {replica.port} master")
        failover_s = promoted_at - killed_at
        self.assertLessEqual(failover_s, bound_s, f"{label}: failover took {failover_s:.2f} s")
        return killed_at, failover_s

    def check(self, label, lost_allowed=True):
        """Every acknowledged write so far against the healed cluster:
        those WAIT counted a replica for all there; returns the newly lost."""
        self.cluster.wait_agreement(deadline_s=HEAL_DEADLINE_S)
        report = fs.check_writes(self.cluster, self.ledger)
        self.assertEqual(report.missing_waited, [],
                         f"{label}: writes acknowledged by WAIT 1 lost")
        new = [w for w in report.lost if w.key not in self.known_lost]
        self.known_lost.update(w.key for w in new)
        if not lost_allowed:
            self.assertEqual(new, [], f"{label}: acknowledged writes lost")
        print(f"  {label}: {report.acked} writes acknowledged so far ({report.waited} with "
              f"WAIT 1), all present but {len(report.lost)}; lost by this fault without "
              f"WAIT: {len(new)}", flush=True)
        return new

    def assert_no_two_masters(self, label):
        """No sample so far gave a slot two masters; a node restarted or
        SIGCONTed said it served its old slots (under its older epoch) for
        less than the node timeout."""
        sampler = self.sampler
        self.assertGreater(sampler.rounds, 0)
        self.assertEqual(sampler.view_errors, [], label)
        self.assertEqual(sampler.dual_masters, [], f"{label}: two nodes each serving a slot")
        late = [c for c in sampler.stale_claims if c[0] >= TIMEOUT_S]
        self.assertEqual(late, [], f"{label}: an old master's claim outlived the node timeout")

    # -- the tests ------------------------------------------------------------
    def test_1_kill9_of_a_master_promotes_its_replica(self):
        master, master_id, slots, replica = self.a_master(0)
        killed_at, failover_s = self.kill_master(master, slots, replica, "kill -9")
        firsts = self.wait_clients_through(replica, killed_at)
        print(f"\n  kill -9 of master {master.port}: replica {replica.port} master after "
              f"{failover_s:.2f} s; first write through it after the kill: " +
              ", ".join(f"{c} {s:.2f} s" for c, s in sorted(firsts.items())), flush=True)
        self.restart(master)
        self.wait_follows(master, fs.node_client(replica).execute_command("CLUSTER", "MYID"))
        fs.wait_healthy(self.cluster, HEAL_DEADLINE_S)
        self.check("kill -9")
        self.assert_no_two_masters("kill -9")

    def test_2_sigstop_past_the_timeout_comes_back_a_replica(self):
        master, master_id, slots, replica = self.a_master(1)
        self.stopped.add(master)
        stopped_at = fs.sigstop(master)
        try:
            _, promoted_at = fs.wait_promoted(self.cluster, slots, [replica], FAILOVER_WAIT_S,
                                              "SIGSTOP: the replica master")
            # The fault landed: stopped all along, for longer than the timeout.
            self.assertEqual(fs.process_state(master), "T")
            self.assertGreater(promoted_at - stopped_at, TIMEOUT_S)
        finally:
            continued_at = fs.sigcont(master)
            self.sampler.resumed[master.port] = continued_at
            self.stopped.discard(master)
        # Reported, not bounded: a stopped node still accepts connections, so
        # its detection waits a PING's full node timeout (a killed one's
        # refused reconnection starts it at once).
        failover_s = promoted_at - stopped_at
        replica_id = fs.node_client(replica).execute_command("CLUSTER", "MYID")
        self.wait_follows(master, replica_id)
        fs.wait_healthy(self.cluster, HEAL_DEADLINE_S)
        self.wait_writes_flowing(time.monotonic(), "writes after the stopped master's return")
        # What the old master answered once its replica was promoted. A reply
        # held by the stop may be late for a write applied before it: its
        # WAIT 1 was then acknowledged by the replica, which has it. A write
        # the old master took after the promotion can reach no replica, so
        # none of those may be acknowledged by WAIT 1, and none may be lost.
        late = [w for w in self.ledger.snapshot()
                if w.node == master.address and w.acked_at > promoted_at]
        lost = self.check("SIGSTOP")
        late_lost = [w for w in lost if w in late]
        self.assertEqual([w for w in late_lost if w.waited], [],
                         "the demoted master's writes acknowledged by WAIT 1 and lost")
        held = [w for w in late if w.waited and w not in late_lost]
        # Until the first ping it reads after SIGCONT, the old master still
        # says it serves its slots (its older config epoch loses to the new
        # master's everywhere): a moment (assert_no_two_masters bounds it).
        stale = [c for c in self.sampler.stale_claims if c[2] == master.port]
        print(f"  the old master still said it served its slots in {len(stale)} samples, the "
              f"last {max((c[0] for c in stale), default=0) * 1000:.0f} ms after its SIGCONT",
              flush=True)
        print(f"  SIGSTOP of master {master.port} for {continued_at - stopped_at:.2f} s: "
              f"replica {replica.port} master after {failover_s:.2f} s; the old master "
              f"acknowledged {len(late)} writes after that ({len(late_lost)} of them lost, "
              f"{len([w for w in late if w.waited is None])} with WAIT unknown, "
              f"{len(held)} acknowledged by WAIT 1 and present: replies the stop held); "
              f"writes lost without WAIT: {len(lost)}", flush=True)
        self.assert_no_two_masters("SIGSTOP")

    def test_3_cluster_failover_under_load_loses_nothing(self):
        master, master_id, slots, replica = self.a_master(2)
        started = time.monotonic()
        # The master, paused for writes, says it serves its slots (under its
        # older epoch) until the new master's PONG reaches it.
        self.sampler.resumed[master.port] = started
        try:
            reply = fs.node_client(replica, timeout_s=10).execute_command("CLUSTER", "FAILOVER")
        except redis.exceptions.ResponseError as e:
            if str(e).startswith("unknown subcommand 'FAILOVER'"):
                self.skipTest("this build has no CLUSTER FAILOVER")
            raise
        self.assertEqual(reply, "OK")
        _, promoted_at = fs.wait_promoted(self.cluster, slots, [replica], FAILOVER_WAIT_S,
                                          "CLUSTER FAILOVER: the replica master")
        replica_id = fs.node_client(replica).execute_command("CLUSTER", "MYID")
        self.wait_follows(master, replica_id)
        firsts = self.wait_clients_through(replica, started)
        fs.wait_healthy(self.cluster, HEAL_DEADLINE_S)
        self.check("CLUSTER FAILOVER", lost_allowed=False)
        print(f"  CLUSTER FAILOVER on {replica.port}: master after "
              f"{promoted_at - started:.2f} s; first write through it: " +
              ", ".join(f"{c} {s:.2f} s" for c, s in sorted(firsts.items())), flush=True)
        self.assert_no_two_masters("CLUSTER FAILOVER")

    def test_4_two_masters_killed_one_after_the_other_both_heal(self):
        first = self.a_master(0)
        second = self.a_master(1)
        self.assertNotEqual(first[0], second[0])
        costs = []
        for master, _, slots, replica in (first, second):
            _, failover_s = self.kill_master(master, slots, replica,
                                             f"kill -9 of {master.port}")
            costs.append(failover_s)
        for master, _, _, replica in (first, second):
            self.restart(master)
        for master, _, _, replica in (first, second):
            self.wait_follows(master,
                              fs.node_client(replica).execute_command("CLUSTER", "MYID"))
        fs.wait_healthy(self.cluster, HEAL_DEADLINE_S)
        self.wait_writes_flowing(time.monotonic(), "writes after both shards healed")
        lost = self.check("two masters killed")
        print(f"  two masters killed: failovers {costs[0]:.2f} s, {costs[1]:.2f} s; "
              f"writes lost without WAIT: {len(lost)}", flush=True)
        self.assert_no_two_masters("two masters killed")

    def test_5_ten_rounds_of_random_kills_and_restarts(self):
        seed = int(os.environ.get("FAILOVER_SEED", random.randrange(1 << 30)))
        rng = random.Random(seed)
        print(f"\n  random rounds, FAILOVER_SEED={seed}", flush=True)
        failovers = 0
        for round_no in range(1, RANDOM_ROUNDS + 1):
            victim = rng.choice(self.nodes)
            masters = fs.current_masters(self.cluster)
            label = f"round {round_no}: kill -9 of {victim.port}"
            if victim in masters:
                _, _, slots, replica = self.a_master(masters.index(victim))
                # A master's voters refuse a second replica of it for twice
                # the node timeout after their vote (Redis's rule): a
                # shard failing again that soon elects after that.
                killed_at, failover_s = self.kill_master(victim, slots, replica, label,
                                                         FAILOVER_WAIT_S)
                failovers += 1
                cost = f"master, replica {replica.port} master after {failover_s:.2f} s"
            else:
                killed_at = fs.kill9(victim)
                self.assertFalse(victim.alive())
                cost = "replica"
            self.restart(victim)
            fs.wait_healthy(self.cluster, HEAL_DEADLINE_S, what=f"{label}: healed")
            self.wait_writes_flowing(time.monotonic(), f"{label}: writes again")
            lost = self.check(label)
            print(f"  {label} ({cost}), healed {time.monotonic() - killed_at:.2f} s after; "
                  f"lost without WAIT: {len(lost)}", flush=True)
        print(f"  {failovers} of the {RANDOM_ROUNDS} victims were masters", flush=True)
        text = self.cluster.check()
        self.assertEqual(text.count("1 additional replica(s)"), 3, text)
        self.check("after the random rounds")
        self.assert_no_two_masters("random rounds")

    def test_6_add_node_cluster_slave_both_forms(self):
        master, master_id, _, _ = self.a_master(0)
        entry = self.nodes[0].address
        first = self.cluster.add_node()
        out = cli("--cluster", "add-node", first.address, entry, "--cluster-slave")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        second = self.cluster.add_node()
        out = cli("--cluster", "add-node", second.address, entry, "--cluster-slave",
                  "--cluster-master-id", master_id)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.wait_follows(second, master_id)
        first_master = {}

        def first_follows():
            mine = next(f for f in node_lines(fs.node_client(first)) if "myself" in f[2])
            first_master["id"] = mine[3]
            return "slave" in mine[2] and mine[3] != "-"
        wait_until(first_follows, HEAL_DEADLINE_S, interval_s=0.05,
                   what="the first added node a replica")
        self.wait_follows(first, first_master["id"])
        fs.wait_healthy(self.cluster, HEAL_DEADLINE_S)
        for node in self.nodes:
            client = fs.node_client(node)
            for new, of in ((first, first_master["id"]), (second, master_id)):
                new_id = fs.node_client(new).execute_command("CLUSTER", "MYID")
                line = next(f for f in node_lines(client) if f[0] == new_id)
                self.assertIn("slave", line[2])
                self.assertEqual(line[3], of)
                self.assertIn(new_id, [r.split(" ")[0] for r in
                                       client.execute_command("CLUSTER", "REPLICAS", of)])
        self.cluster.check()


if __name__ == "__main__":
    unittest.main()
