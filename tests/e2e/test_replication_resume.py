"""A node restarted with its data resumes replication where the data stands
(the replication mark saved beside each snapshot, plus the log replayed
after it): a replica killed with kill -9 continues with PSYNC (+CONTINUE),
also when its log ends in a torn record; a primary restarted keeps its old
id as master_replid2, so its replicas continue; a saved position the
primary no longer has, or an id it does not know, gets a full sync, never
a gap. And the primary's PINGs: a replica finds a stopped primary gone
within repl-timeout, while an idle but healthy primary keeps its link."""

import glob
import os
import signal
import subprocess
import tempfile
import time
import unittest

from harness import BloomgateServer, PersistentServer, server_binary, wait_until

SYNC_DEADLINE_S = 20.0
MARK = "dump.bgs.repl"


def fields(client, section="replication"):
    return client.info(section)


def offset_of(client):
    f = fields(client)
    return int(f["slave_repl_offset"] if f["role"] == "slave" else f["master_repl_offset"])


def link_up(client):
    return fields(client).get("master_link_status") == "up"


LOG_HEADER_BYTES = 36


def newest_log(data):
    return max(glob.glob(os.path.join(data, "appendonly.bglog.*")),
               key=lambda path: int(path.rsplit(".", 1)[1]))


def newest_log_size(data):
    return os.path.getsize(newest_log(data))


def dumps(client):
    return {key: client.dump(key) for key in sorted(client.keys("*"))}


def write_batch(c, tag, n=20):
    """Writes of several families; each acknowledged by the primary."""
    c.execute_command("BF.MADD", f"bf:{tag}", *[f"i{i}" for i in range(n)])
    c.execute_command("CF.RESERVE", f"cf:{tag}", "1000")
    for i in range(n):
        c.execute_command("CF.ADD", f"cf:{tag}", f"i{i}")
    c.execute_command("CF.DEL", f"cf:{tag}", "i3")
    c.execute_command("CBF.MADD", f"cbf:{tag}", *[f"i{i}" for i in range(n)])
    c.execute_command("CBF.DEL", f"cbf:{tag}", "i1")
    c.execute_command("CMS.INITBYDIM", f"cms:{tag}", "50", "4")
    c.execute_command("CMS.INCRBY", f"cms:{tag}", "a", "3")
    pipe = c.pipeline(transaction=True)
    pipe.execute_command("BF.ADD", f"multi:{tag}", "a")
    pipe.execute_command("CBF.ADD", f"multi-cbf:{tag}", "a")
    pipe.execute_command("CF.ADD", f"multi-cf:{tag}", "a")
    pipe.execute_command("PEXPIRE", f"multi:{tag}", "3600000")
    pipe.execute()


class FixedPortServer(PersistentServer):
    """A PersistentServer that keeps its port across restarts, as a primary
    must: its replicas follow it by address."""

    def __init__(self, data_dir, port, args=()):
        super().__init__(data_dir, args)
        self.fixed_port = port

    def start(self):
        self.port = self.fixed_port
        self.log_path = self.fixed_log_path
        self._log_file = open(self.log_path, "ab")
        cmd = [server_binary(), "--port", str(self.port), "--bind", "127.0.0.1", *self.args]
        self.proc = subprocess.Popen(cmd, cwd=self.data_dir, stdin=subprocess.DEVNULL,
                                     stdout=self._log_file, stderr=subprocess.STDOUT)
        self._wait_until_ready()
        return self


class ResumeCase(unittest.TestCase):

    def data_dir(self, name):
        tmp = tempfile.TemporaryDirectory(prefix=f"bloomgate-resume-{name}-")
        self.addCleanup(tmp.cleanup)
        path = os.path.join(tmp.name, "data")
        os.mkdir(path)
        return path

    def keep(self, server):
        self.addCleanup(lambda: server.kill9() if server.alive() else None)
        return server

    def caught_up(self, primary, replica):
        def check():
            return link_up(replica.client()) and \
                offset_of(replica.client()) == offset_of(primary.client())
        wait_until(check, SYNC_DEADLINE_S, interval_s=0.05,
                   what="the replica to reach the primary's offset")

    def assert_same(self, primary, replica):
        self.caught_up(primary, replica)
        want = dumps(primary.client())
        self.assertTrue(want)
        self.assertEqual(dumps(replica.client()), want)

    def replica_args(self, primary):
        # everysec: the log thread writes what the link applied once a second
        # (nothing waits for a replica's records otherwise).
        return ["--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
                "--replicaof", f"127.0.0.1 {primary.port}"]

    def synced_replica(self, primary, data):
        """A persistent replica of `primary` whose snapshot of the primary's
        data (and its mark) is written."""
        replica = self.keep(PersistentServer(data, self.replica_args(primary)).start())
        self.caught_up(primary, replica)
        wait_until(lambda: os.path.exists(os.path.join(data, MARK)), SYNC_DEADLINE_S,
                   interval_s=0.05, what="the replica's snapshot and its mark")
        return replica


class ReplicaRestartTest(ResumeCase):

    def restart_continues(self, tear_tail):
        with BloomgateServer(["--save", "", "--appendonly", "no"]) as primary:
            p = primary.client()
            write_batch(p, "before-sync")
            data = self.data_dir("replica")
            replica = self.synced_replica(primary, data)
            write_batch(p, "streamed")  # in the replica's log after its snapshot
            self.caught_up(primary, replica)
            wait_until(lambda: newest_log_size(data) > LOG_HEADER_BYTES, SYNC_DEADLINE_S,
                       interval_s=0.05, what="the replica's log to hold streamed records")
            before = fields(p, "stats")
            replica.kill9()
            if tear_tail:
                # The newest log ends inside its last record: cut off at
                # start-up, and the primary sends that record again.
                with open(newest_log(data), "r+b") as f:
                    f.truncate(newest_log_size(data) - 7)
            write_batch(p, "while-down")  # acknowledged while the replica is down
            replica = self.keep(PersistentServer(data, self.replica_args(primary)).start())
            self.assert_same(primary, replica)
            after = fields(p, "stats")
            self.assertEqual(int(after["sync_partial_ok"]), int(before["sync_partial_ok"]) + 1)
            self.assertEqual(int(after["sync_full"]), int(before["sync_full"]))
            self.assertIn("continuing from offset", replica.log())
            if tear_tail:
                self.assertIn("torn", replica.log())
            # The replica continues the primary's id and offsets.
            self.assertEqual(fields(replica.client())["master_replid"],
                             fields(p)["master_replid"])
            write_batch(p, "after")
            self.assert_same(primary, replica)

    def test_a_replica_killed_with_kill_9_continues_with_psync(self):
        self.restart_continues(tear_tail=False)

    def test_a_replica_whose_log_ends_torn_continues_with_psync(self):
        self.restart_continues(tear_tail=True)

    def test_a_replica_restarted_toward_a_primary_that_does_not_know_its_id_syncs_in_full(self):
        with BloomgateServer(["--save", "", "--appendonly", "no"]) as first, \
                BloomgateServer(["--save", "", "--appendonly", "no"]) as other:
            write_batch(first.client(), "first")
            write_batch(other.client(), "other")
            data = self.data_dir("replica")
            replica = self.synced_replica(first, data)
            replica.kill9()
            replica = self.keep(PersistentServer(data, self.replica_args(other)).start())
            self.assert_same(other, replica)
            stats = fields(other.client(), "stats")
            self.assertEqual(int(stats["sync_full"]), 1)
            self.assertEqual(int(stats["sync_partial_ok"]), 0)
            self.assertEqual(int(stats["sync_partial_err"]), 1)


class PrimaryRestartTest(ResumeCase):

    def test_a_primary_restarted_with_its_log_keeps_its_id_and_replicas_continue(self):
        data = self.data_dir("primary")
        port_probe = BloomgateServer().start()
        port = port_probe.port
        port_probe.stop()
        args = ["--appendonly", "yes", "--appendfsync", "always", "--save", ""]
        primary = self.keep(FixedPortServer(data, port, args).start())
        with BloomgateServer() as replica:
            p = primary.client()
            write_batch(p, "snapshot")
            p.save()  # the mark: the id and the offset at the cut
            write_batch(p, "log")  # the log after it
            replica.client().execute_command("REPLICAOF", "127.0.0.1", port)
            self.assert_same(primary, replica)
            old_id = fields(p)["master_replid"]
            offset = offset_of(p)
            primary.kill9()
            primary = self.keep(FixedPortServer(data, port, args).start())
            p = primary.client()
            f = fields(p)
            # Redis 7 after a restart from data with a replication id.
            self.assertEqual(f["master_replid2"], old_id)
            self.assertNotEqual(f["master_replid"], old_id)
            self.assertEqual(int(f["master_repl_offset"]), offset)
            self.assertEqual(int(f["second_repl_offset"]), offset + 1)
            self.assert_same(primary, replica)
            stats = fields(p, "stats")
            self.assertEqual(int(stats["sync_partial_ok"]), 1)
            self.assertEqual(int(stats["sync_full"]), 0)
            write_batch(p, "after")
            self.assert_same(primary, replica)
            self.assertEqual(fields(replica.client())["master_replid"], f["master_replid"])

    def test_a_primary_that_lost_writes_gives_its_replica_a_full_sync_not_a_gap(self):
        data = self.data_dir("primary")
        port_probe = BloomgateServer().start()
        port = port_probe.port
        port_probe.stop()
        # Snapshots only: what came after the SAVE is lost with the process.
        args = ["--appendonly", "no", "--save", ""]
        primary = self.keep(FixedPortServer(data, port, args).start())
        with BloomgateServer() as replica:
            p = primary.client()
            write_batch(p, "saved")
            replica.client().execute_command("REPLICAOF", "127.0.0.1", port)
            self.caught_up(primary, replica)
            p.save()
            saved_offset = offset_of(p)
            write_batch(p, "lost")
            self.caught_up(primary, replica)
            self.assertGreater(offset_of(replica.client()), saved_offset)
            primary.kill9()
            primary = self.keep(FixedPortServer(data, port, args).start())
            p = primary.client()
            self.assertEqual(int(fields(p)["second_repl_offset"]), saved_offset + 1)
            self.assertEqual(p.exists("bf:lost"), 0)
            self.assert_same(primary, replica)  # the lost keys are gone there too
            stats = fields(p, "stats")
            self.assertEqual(int(stats["sync_full"]), 1)
            self.assertEqual(int(stats["sync_partial_ok"]), 0)


class PrimaryPingTest(unittest.TestCase):
    PING_PERIOD_S = 1
    REPL_TIMEOUT_S = 4

    def test_an_idle_primary_keeps_the_link_and_a_stopped_one_is_found_gone(self):
        with BloomgateServer(["--repl-ping-replica-period", self.PING_PERIOD_S]) as primary, \
                BloomgateServer(["--repl-timeout", self.REPL_TIMEOUT_S]) as replica:
            p = primary.client()
            r = replica.client()
            p.execute_command("BF.ADD", "k", "x")
            r.execute_command("REPLICAOF", "127.0.0.1", primary.port)
            wait_until(lambda: link_up(r) and offset_of(r) == offset_of(p), SYNC_DEADLINE_S,
                       interval_s=0.05, what="the first sync")
            before = fields(p, "stats")
            # No writes for twice repl-timeout: the PINGs keep the link.
            deadline = time.monotonic() + 2 * self.REPL_TIMEOUT_S
            while time.monotonic() < deadline:
                self.assertTrue(link_up(r))
                time.sleep(0.2)
            self.assertEqual(fields(p, "stats")["sync_partial_ok"], before["sync_partial_ok"])
            self.assertGreater(offset_of(p), 0)
            wait_until(lambda: offset_of(r) == offset_of(p), 5.0, interval_s=0.05,
                       what="the replica to apply the PINGs")

            os.kill(primary.proc.pid, signal.SIGSTOP)
            try:
                stopped = time.monotonic()
                # Silent from the last PING on: down within repl-timeout after
                # it, checked once a second (the replica's ACK interval).
                bound = self.REPL_TIMEOUT_S + self.PING_PERIOD_S + 1 + 2
                wait_until(lambda: not link_up(r), bound, interval_s=0.1,
                           what="the replica to find its primary gone")
                self.assertGreaterEqual(time.monotonic() - stopped,
                                        self.REPL_TIMEOUT_S - self.PING_PERIOD_S - 0.5)
            finally:
                os.kill(primary.proc.pid, signal.SIGCONT)
            wait_until(lambda: link_up(r) and offset_of(r) == offset_of(p), SYNC_DEADLINE_S,
                       interval_s=0.05, what="the link to come back")
            after = fields(p, "stats")
            self.assertGreater(int(after["sync_partial_ok"]), int(before["sync_partial_ok"]))
            self.assertEqual(int(after["sync_full"]), int(before["sync_full"]))
            self.assertIn("repl-timeout", replica.log())


if __name__ == "__main__":
    unittest.main()
