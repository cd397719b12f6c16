"""Failover by Debian's redis-sentinel: a Bloomgate primary with two replicas
and three Sentinels (quorum 2, down-after-milliseconds 1000). A redis-py
Sentinel client writes BF.ADD throughout, each write followed by WAIT 1.
kill -9 of the primary: a replica is promoted, the other follows it, the old
primary restarted on its port rejoins as a replica and catches up, and every
write acknowledged by WAIT 1 is on the new primary. Sentinel itself may fail
over once more between the two replicas right after the first failover (see
run_failover): the checks hold for whichever master it settles on, and the
test prints the masters it named."""

import os
import shutil
import tempfile
import time
import unittest

from harness import wait_until
from sentinel_cluster import (FAILOVER_DEADLINE_S, FILTER_KEY, REJOIN_DEADLINE_S, FailoverSet,
                              Writer)

WRITES_BEFORE_KILL = 200
BATCH = 1000


@unittest.skipUnless(shutil.which("redis-sentinel"), "redis-sentinel is not installed")
class SentinelFailoverTest(unittest.TestCase):

    def test_kill9_of_the_primary_promotes_a_replica_and_loses_no_waited_write(self):
        tmp = tempfile.TemporaryDirectory(prefix="bloomgate-failover-")
        self.addCleanup(tmp.cleanup)
        cluster = FailoverSet(tmp.name)
        self.addCleanup(cluster.stop)
        self.started = time.monotonic()
        self.phases = []
        self.masters_seen = []
        self.writer = None
        try:
            self.run_failover(cluster)
        except Exception:
            # Flushed, so the logs come before unittest's traceback, and the
            # phases and the traceback are the last thing a truncated CI log
            # shows.
            print(cluster.logs(), flush=True)
            self.print_progress()
            raise

    def phase(self, name):
        self.phases.append((name, time.monotonic() - self.started))

    def print_progress(self):
        for name, at in self.phases:
            print(f"{at:7.2f} s  {name}")
        w = self.writer
        if w is not None:
            print(f"writer: alive {w.is_alive()}, {len(w.acked)} acked, {len(w.waited)} waited, "
                  f"{w.errors} errors, last error {w.last_error!r}")
        print(f"{time.monotonic() - self.started:7.2f} s  failed", flush=True)

    def run_failover(self, cluster):
        cluster.start()
        self.phase("primary, 2 replicas and 3 sentinels up")
        old = cluster.nodes[0]
        self.assertEqual(cluster.master_everywhere(), ("127.0.0.1", old.port))
        writer = self.writer = Writer(cluster.sentinel_client())
        writer.start()
        self.addCleanup(writer.stop)
        wait_until(lambda: len(writer.waited) >= WRITES_BEFORE_KILL, 30.0, interval_s=0.05,
                   what="writes acknowledged by WAIT 1 before the kill")

        self.phase(f"{len(writer.waited)} writes acknowledged by WAIT 1")
        old_pid = old.kill9()
        # After the process is reaped: a write sent later cannot reach it.
        killed_at = time.monotonic()
        self.assertFalse(old.alive())
        with self.assertRaises(ProcessLookupError):
            os.kill(old_pid, 0)

        def promoted():
            address = self.agreed_master(cluster)
            return address is not None and address[1] != old.port
        wait_until(promoted, FAILOVER_DEADLINE_S, interval_s=0.05,
                   what="the sentinels to agree on a new master")
        self.phase(f"sentinels agree on a new master, port {self.agreed_master(cluster)[1]}")
        wait_until(lambda: writer.first_ok_after(killed_at) is not None, FAILOVER_DEADLINE_S,
                   interval_s=0.02, what="a write through the Sentinel client after the kill")
        failover_s = writer.first_ok_after(killed_at) - killed_at
        self.phase("a write through the Sentinel client")
        print(f"failover: {failover_s:.3f} s from kill -9 to the first write")

        # Sentinel may fail over a second time, between the two live nodes:
        # with down-after-milliseconds 1000 a Sentinel judges its new link to
        # a just-promoted master down at the link's first PING (the link's
        # pending-ping clock starts at its creation, and the first PING goes
        # out one ping period, 1 s, later), and two Sentinels that switched
        # together judge so together. The master they then demote is
        # reconfigured as a returning one is (Sentinel's 8 s role wait on an
        # INFO every 10 s). So every check below is against the master the
        # Sentinels name once it has settled, whichever it is.
        live = [n for n in cluster.nodes if n is not old]
        wait_until(lambda: self.settled_master(cluster, live) is not None,
                   FAILOVER_DEADLINE_S + REJOIN_DEADLINE_S, interval_s=0.1,
                   what="a master the sentinels name, followed by the other replica")
        self.phase(f"the other replica follows the master on port "
                   f"{self.settled_master(cluster, live).port}")
        old.start()
        wait_until(lambda: (self.settled_master(cluster, cluster.nodes) not in (None, old)),
                   FAILOVER_DEADLINE_S + REJOIN_DEADLINE_S, interval_s=0.1,
                   what="the old primary to rejoin as a replica of the master")
        self.phase("the old primary rejoined as a replica")
        # More writes after the rejoin, then stop writing and compare.
        after = len(writer.waited)
        wait_until(lambda: len(writer.waited) >= after + 50, 30.0, interval_s=0.05,
                   what="writes acknowledged by WAIT 1 after the rejoin")
        writer.stop()
        self.phase(f"writer stopped: {len(writer.waited)} of {len(writer.acked)} writes waited")
        masters = [port for port in self.masters_seen if port != old.port]
        print(f"masters the sentinels named after the kill: {masters} "
              f"({len(masters)} failover{'s' if len(masters) > 1 else ''})")

        master = self.settled_master(cluster, cluster.nodes)
        self.assertIsNotNone(master)
        with master.client() as c:
            self.assertEqual(c.execute_command("ROLE")[0], "master")
            waited = list(writer.waited)
            present = []
            for i in range(0, len(waited), BATCH):
                present += c.execute_command("BF.MEXISTS", FILTER_KEY, *waited[i:i + BATCH])
            missing = [item for item, there in zip(waited, present) if not there]
            self.assertEqual(missing, [], f"{len(missing)} of {len(waited)} waited writes lost")
            target = int(c.info("replication")["master_repl_offset"])
        # At least the offset read after the last write: the primary's PING
        # records (every repl-ping-replica-period) move it on afterwards.
        for node in cluster.nodes:
            if node is master:
                continue
            wait_until(lambda n=node: int(n.replication()["slave_repl_offset"]) >= target,
                       REJOIN_DEADLINE_S, interval_s=0.1,
                       what=f"replica on port {node.port} to catch up")
            with node.client() as c, master.client() as p:
                self.assertEqual(c.dump(FILTER_KEY), p.dump(FILTER_KEY))

    def agreed_master(self, cluster):
        """The address all three Sentinels name (None while they differ),
        each new one noted in self.masters_seen."""
        address = cluster.master_everywhere()
        if address is not None and (not self.masters_seen or
                                    self.masters_seen[-1] != address[1]):
            self.masters_seen.append(address[1])
        return address

    def settled_master(self, cluster, members):
        """The node the Sentinels name as master once it reports the master
        role and every other node of `members` follows it with its link up;
        None until then."""
        address = self.agreed_master(cluster)
        if address is None:
            return None
        master = cluster.node_on(address[1])
        if not master.alive() or master.replication()["role"] != "master":
            return None
        for node in members:
            if node is master:
                continue
            fields = node.replication()
            if not (fields["role"] == "slave" and int(fields["master_port"]) == master.port
                    and fields["master_link_status"] == "up"):
                return None
        return master

if __name__ == "__main__":
    unittest.main()
