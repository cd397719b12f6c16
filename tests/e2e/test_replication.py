"""Replication with Redis's commands and numbers: a primary, a replica of it
and a replica of that replica, all on loopback. Writes of every family reach
both replicas and every key DUMPs the same on all three nodes; a replica
refuses writes; a killed link resumes from the backlog (+CONTINUE), a replica
that fell behind the backlog gets a full sync, and a full sync under a steady
write load ends equal."""

import os
import signal
import threading
import time
import unittest

import redis

from harness import BloomgateServer, wait_until

SYNC_DEADLINE_S = 20.0
# The server's wait for its clients to leave when it stops (kStopGraceMs).
STOP_GRACE_S = 5.0


def info(client, section):
    """INFO's fields as redis-py parses them (numbers as ints, slaveN as a dict)."""
    return client.info(section)


def offset_of(client):
    fields = info(client, "replication")
    if fields["role"] == "slave":
        return int(fields["slave_repl_offset"])
    return int(fields["master_repl_offset"])


def follow(replica, primary):
    replica.client().execute_command("REPLICAOF", "127.0.0.1", primary.port)


def link_up(replica):
    fields = info(replica.client(), "replication")
    return fields.get("master_link_status") == "up"


def caught_up(primary, *replicas):
    """Every replica's link is up and its offset equals the primary's."""
    def check():
        want = offset_of(primary.client())
        return all(link_up(r) and offset_of(r.client()) == want for r in replicas)
    return check


def dumps(client):
    return {key: client.dump(key) for key in sorted(client.keys("*"))}


def write_every_family(c, tag):
    """Writes of every family, deletes and decay included."""
    c.execute_command("BF.RESERVE", f"bf:{tag}", "0.01", "1000")
    c.execute_command("BF.MADD", f"bf:{tag}", *[f"i{i}" for i in range(300)])
    c.execute_command("BF.ADD", f"bf:auto:{tag}", "x")
    c.execute_command("CBF.RESERVE", f"cbf:{tag}", "0.01", "1000")
    c.execute_command("CBF.MADD", f"cbf:{tag}", *[f"i{i}" for i in range(200)])
    c.execute_command("CBF.DEL", f"cbf:{tag}", "i3")
    c.execute_command("CF.RESERVE", f"cf:{tag}", "1000")
    for i in range(100):
        c.execute_command("CF.ADD", f"cf:{tag}", f"i{i}")
    c.execute_command("CF.DEL", f"cf:{tag}", "i7")
    c.execute_command("CMS.INITBYDIM", f"cms:{tag}", "100", "5")
    c.execute_command("CMS.INCRBY", f"cms:{tag}", "a", "3", "b", "9")
    c.execute_command("TOPK.RESERVE", f"topk:{tag}", "5", "50", "4", "0.9")
    for i in range(300):
        c.execute_command("TOPK.ADD", f"topk:{tag}", f"k{i % 37}", f"k{i % 11}")
    c.execute_command("BF.RESERVE", f"wbf:{tag}", "0.01", "1000", "WINDOW", "3600")
    c.execute_command("BF.MADD", f"wbf:{tag}", *[f"i{i}" for i in range(50)])
    c.execute_command("CBF.RESERVE", f"wcbf:{tag}", "0.01", "1000", "WINDOW", "3600")
    c.execute_command("CBF.MADD", f"wcbf:{tag}", *[f"i{i}" for i in range(50)])
    c.execute_command("CBF.DEL", f"wcbf:{tag}", "i1")
    c.execute_command("TDIGEST.CREATE", f"td:{tag}")
    c.execute_command("TDIGEST.ADD", f"td:{tag}", *range(1, 200))
    c.execute_command("BF.ADD", f"ttl:{tag}", "x")
    c.execute_command("PEXPIRE", f"ttl:{tag}", "3600000")
    pipe = c.pipeline(transaction=True)
    pipe.execute_command("BF.ADD", f"multi:{tag}", "a")
    pipe.execute_command("CBF.ADD", f"multi:c:{tag}", "a")
    pipe.execute()
    c.execute_command("BF.ADD", f"gone:{tag}", "x")
    c.delete(f"gone:{tag}")


class PipelinedWriter:
    """Sends `batch(i)`'s commands in pipelines from a thread until stopped;
    i counts the batches. `count` is how many batches went out."""

    def __init__(self, server, batch):
        self.server, self.batch = server, batch
        self.stop = threading.Event()
        self.count = 0
        self.thread = threading.Thread(target=self._run)

    def _run(self):
        c = self.server.client()
        while not self.stop.is_set():
            pipe = c.pipeline(transaction=False)
            for command in self.batch(self.count):
                pipe.execute_command(*command)
            pipe.execute()
            self.count += 1

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        return False


class ReplicationTest(unittest.TestCase):
    def assert_same(self, primary, *replicas):
        wait_until(caught_up(primary, *replicas), SYNC_DEADLINE_S, interval_s=0.05,
                   what="the replicas to reach the primary's offset")
        want = dumps(primary.client())
        self.assertTrue(want)
        for replica in replicas:
            got = dumps(replica.client())
            self.assertEqual(sorted(got), sorted(want))
            for key in want:
                self.assertEqual(got[key], want[key], key)

    def test_a_chain_holds_every_family_byte_for_byte(self):
        with BloomgateServer() as primary, BloomgateServer() as r1, BloomgateServer() as r2:
            p = primary.client()
            write_every_family(p, "before")  # reaches the replicas in the snapshot
            follow(r1, primary)
            follow(r2, r1)  # a replica of a replica
            wait_until(lambda: link_up(r1) and link_up(r2), SYNC_DEADLINE_S, interval_s=0.05,
                       what="both links up")
            write_every_family(p, "after")  # reaches them through the stream
            self.assert_same(primary, r1, r2)
            # The same offsets on every node of the chain.
            self.assertEqual(offset_of(r2.client()), offset_of(p))

            # The replica's ACK (every second) brings its offset to INFO.
            wait_until(lambda: info(p, "replication")["slave0"]["offset"] == offset_of(p), 5.0,
                       interval_s=0.05, what="the replica's ACK")
            fields = info(p, "replication")
            self.assertEqual(fields["role"], "master")
            self.assertEqual(fields["connected_slaves"], 1)
            self.assertEqual(fields["slave0"]["port"], r1.port)
            self.assertEqual(fields["slave0"]["state"], "online")
            self.assertEqual(fields["repl_backlog_active"], 1)
            r1_fields = info(r1.client(), "replication")
            self.assertEqual(r1_fields["role"], "slave")
            self.assertEqual(r1_fields["master_port"], primary.port)
            self.assertEqual(r1_fields["master_replid"], fields["master_replid"])
            self.assertEqual(r1_fields["connected_slaves"], 1)
            self.assertEqual(r1_fields["slave_read_only"], 1)
            role = r1.client().execute_command("ROLE")
            self.assertEqual(role[0], b"slave")
            self.assertEqual(role[3], b"connected")
            self.assertEqual(p.execute_command("ROLE")[0], b"master")

            # A replica refuses its clients' writes, and the link's type shows.
            with self.assertRaises(redis.exceptions.ReadOnlyError) as refused:
                r1.client().execute_command("BF.ADD", "bf:after", "new")
            self.assertIn("You can't write against a read only replica.", str(refused.exception))
            # WAIT is refused on a replica before its arguments are read, as in Redis.
            for args in (("1", "100"), ("x", "y")):
                with self.assertRaises(redis.exceptions.ResponseError) as refused:
                    r1.client().execute_command("WAIT", *args)
                self.assertEqual(
                    str(refused.exception),
                    "WAIT cannot be used with replica instances. Please also note that since "
                    "Redis 4.0 if a replica is configured to be writable (which is not the "
                    "default) writes to replicas are just local and are not propagated.")
            self.assertIn("flags=M",
                          r1.client().execute_command("CLIENT", "LIST", "TYPE", "master").decode())
            self.assertIn("flags=S", p.execute_command("CLIENT", "LIST", "TYPE", "replica").decode())
            r1.client().execute_command("CLIENT", "KILL", "TYPE", "normal")
            self.assertTrue(link_up(r1))

            # Expired keys go by the primary's DEL, never the replica's clock.
            p.execute_command("BF.ADD", "short", "x")
            p.execute_command("PEXPIRE", "short", "100")
            wait_until(lambda: p.exists("short") == 0, 5.0, what="the key to expire")
            self.assert_same(primary, r1, r2)

    def test_a_killed_link_continues_from_the_backlog(self):
        with BloomgateServer() as primary, BloomgateServer() as replica:
            p = primary.client()
            write_every_family(p, "a")
            follow(replica, primary)
            wait_until(caught_up(primary, replica), SYNC_DEADLINE_S, interval_s=0.05,
                       what="the first sync")
            before = info(p, "stats")
            replica.client().execute_command("CLIENT", "KILL", "TYPE", "master")
            write_every_family(p, "b")
            self.assert_same(primary, replica)
            after = info(p, "stats")
            self.assertEqual(int(after["sync_partial_ok"]), int(before["sync_partial_ok"]) + 1)
            self.assertEqual(after["sync_full"], before["sync_full"])

    def test_a_replica_behind_the_backlog_gets_a_full_sync(self):
        with BloomgateServer(["--repl-backlog-size", "16kb"]) as primary, \
                BloomgateServer() as replica:
            p = primary.client()
            follow(replica, primary)
            wait_until(caught_up(primary, replica), SYNC_DEADLINE_S, interval_s=0.05,
                       what="the first sync")
            before = info(p, "stats")
            # The replica stops reading; its link is cut; the primary writes
            # past what its backlog holds.
            os.kill(replica.proc.pid, signal.SIGSTOP)
            try:
                p.execute_command("CLIENT", "KILL", "TYPE", "replica")
                p.execute_command("BF.MADD", "big", *[f"item-{i:06d}" for i in range(4000)])
            finally:
                os.kill(replica.proc.pid, signal.SIGCONT)
            self.assert_same(primary, replica)
            after = info(p, "stats")
            self.assertEqual(int(after["sync_full"]), int(before["sync_full"]) + 1)

    def test_a_full_sync_under_a_write_load_ends_equal(self):
        with BloomgateServer() as primary, BloomgateServer() as replica:
            p = primary.client()
            p.execute_command("BF.RESERVE", "load", "0.001", "200000")
            p.execute_command("CBF.RESERVE", "cload", "0.01", "100000")

            def batch(n):
                for j in range(16):
                    i = n * 16 + j
                    yield ("BF.ADD", "load", f"w{i}")
                    yield ("CBF.ADD", "cload", f"w{i % 5000}")

            with PipelinedWriter(primary, batch) as writer:
                wait_until(lambda: p.execute_command("BF.CARD", "load") > 2000, 10.0,
                           what="the load to start")
                follow(replica, primary)
                wait_until(lambda: link_up(replica), SYNC_DEADLINE_S, interval_s=0.05,
                           what="the link under load")
                # The load goes on through the stream for a while.
                start = offset_of(p)
                wait_until(lambda: offset_of(p) > start + 200_000, 10.0, interval_s=0.05,
                           what="200 KB more of the stream")
            self.assertGreater(writer.count * 16, 2000)
            self.assert_same(primary, replica)

    def test_wait_counts_replicas_and_min_replicas_refuses_writes(self):
        # One event loop: a WAIT that blocked it would stall the PING below.
        with BloomgateServer(["--threads", "1", "--min-replicas-to-write", "1"]) as primary, \
                BloomgateServer() as r1, BloomgateServer() as r2:
            p = primary.client()
            with self.assertRaises(redis.exceptions.ResponseError) as refused:
                p.execute_command("BF.ADD", "k", "a")
            self.assertEqual(str(refused.exception), "NOREPLICAS Not enough good replicas to write.")
            follow(r1, primary)
            follow(r2, primary)
            wait_until(lambda: link_up(r1) and link_up(r2), SYNC_DEADLINE_S, interval_s=0.05,
                       what="both links up")

            def writes():
                try:
                    return p.execute_command("BF.ADD", "k", "a") == 1
                except redis.exceptions.ResponseError:
                    return False
            wait_until(writes, 5.0, interval_s=0.05, what="a replica's ACK to allow writes")
            p.execute_command("BF.MADD", "k", *[f"i{i}" for i in range(100)])
            self.assertEqual(p.execute_command("WAIT", "2", "1000"), 2)
            # Three cannot ack: the timeout ends it, with the two that did;
            # meanwhile the loop serves other clients.
            result = []
            waiter = threading.Thread(
                target=lambda: result.append(primary.client().execute_command("WAIT", "3", "1500")))
            waiter.start()
            wait_until(lambda: p.info("clients")["blocked_clients"] == 1, 5.0,
                       what="the WAIT to park")
            self.assertTrue(p.ping())
            waiter.join()
            self.assertEqual(result, [2])
            self.assertEqual(p.info("clients")["blocked_clients"], 0)
            # Inside MULTI it answers at once (timeout 0 would wait forever).
            pipe = p.pipeline(transaction=True)
            pipe.execute_command("BF.ADD", "k", "z")
            pipe.execute_command("WAIT", "5", "0")
            self.assertIn(pipe.execute()[1], (0, 1, 2))
            with self.assertRaises(redis.exceptions.ResponseError):
                p.execute_command("WAIT", "1", "-1")

    def test_promotion_inside_exec_does_not_wait_for_the_record_it_holds_back(self):
        # EXEC holds its keys' locks while REPLICAOF NO ONE runs; the record
        # the link is applying may be waiting for one of them. The promotion
        # must not wait for that record without bound.
        with BloomgateServer() as primary, BloomgateServer() as replica:
            p = primary.client()
            p.execute_command("CBF.RESERVE", "hot", "0.01", "100000")
            follow(replica, primary)
            wait_until(lambda: link_up(replica), SYNC_DEADLINE_S, interval_s=0.05,
                       what="the link")
            hot = lambda n: [("CBF.ADD", "hot", f"w{n * 64 + j}") for j in range(64)]
            with PipelinedWriter(primary, hot):
                r = replica.client(socket_timeout=5)
                for attempt in range(20):
                    r.execute_command("REPLICAOF", "127.0.0.1", primary.port)
                    wait_until(lambda: link_up(replica), SYNC_DEADLINE_S, interval_s=0.02,
                               what="the link again")
                    pipe = r.pipeline(transaction=True)
                    pipe.execute_command("CBF.CARD", "hot")
                    pipe.execute_command("REPLICAOF", "NO", "ONE")
                    self.assertEqual(pipe.execute()[1], b"OK", attempt)
                    self.assertEqual(info(r, "replication")["role"], "master")

    def test_a_silent_replica_is_dropped_after_repl_timeout(self):
        # A stopped replica keeps its TCP connection open (the kernel still
        # acknowledges), so only the primary's own clock can tell it is gone:
        # its REPLCONF ACKs stop, and after repl-timeout the primary drops it
        # (WAIT and INFO stop counting it); back, it continues from the backlog.
        timeout_s = 2
        with BloomgateServer(["--repl-timeout", str(timeout_s)]) as primary, \
                BloomgateServer() as replica:
            p = primary.client()
            p.execute_command("BF.ADD", "k", "before")
            follow(replica, primary)
            wait_until(caught_up(primary, replica), SYNC_DEADLINE_S, interval_s=0.05,
                       what="the first sync")
            self.assertEqual(info(p, "replication")["connected_slaves"], 1)
            partial_before = info(p, "stats")["sync_partial_ok"]
            pid = replica.proc.pid
            os.kill(pid, signal.SIGSTOP)
            try:
                stopped_at = time.monotonic()
                # The ACKs stop; the once-a-second check drops it past the
                # timeout: at most timeout + 1 s of check period + 1 s of ACK period.
                wait_until(lambda: info(p, "replication")["connected_slaves"] == 0,
                           timeout_s + 4, interval_s=0.05, what="the silent replica dropped")
                took = time.monotonic() - stopped_at
                self.assertGreaterEqual(took, timeout_s - 1)
                with open(f"/proc/{pid}/stat") as stat:
                    self.assertIn(stat.read().rsplit(")", 1)[1].split()[0], ("T", "t"),
                                  "the replica was not stopped throughout")
                self.assertEqual(p.execute_command("WAIT", "1", "100"), 0)
                p.execute_command("BF.ADD", "k", "while-away")
            finally:
                os.kill(pid, signal.SIGCONT)
            wait_until(caught_up(primary, replica), SYNC_DEADLINE_S, interval_s=0.05,
                       what="the replica back")
            self.assertEqual(info(p, "stats")["sync_partial_ok"], partial_before + 1)
            self.assertEqual(replica.client().execute_command("BF.EXISTS", "k", "while-away"), 1)

    def test_a_replica_with_a_live_link_stops_without_waiting_for_it(self):
        # The link to the primary is a client of the replica; the server's
        # stop waits up to its grace period (5 s) for clients to leave, so the
        # link must close when the stop begins, not after it.
        with BloomgateServer() as primary, BloomgateServer() as replica:
            primary.client().execute_command("BF.ADD", "k", "x")
            follow(replica, primary)
            wait_until(caught_up(primary, replica), SYNC_DEADLINE_S, interval_s=0.05,
                       what="the first sync")
            started = time.monotonic()
            replica.stop()
            took = time.monotonic() - started
            self.assertNotIn("did not finish", replica.final_log)
            self.assertLess(took, STOP_GRACE_S / 2, replica.final_log)


if __name__ == "__main__":
    unittest.main()
