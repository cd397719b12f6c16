"""A Bloomgate primary, two replicas and three Debian redis-sentinel processes
on loopback, for the failover test and bench/failover_bench.py.

Every node keeps its port across restarts (Sentinel knows nodes by address)
and starts from a YAML file of its own, so the CONFIG REWRITE inside
Sentinel's reconfiguration transaction has a file to write. A writer thread
sends BF.ADD through redis-py's Sentinel client, each write followed by
`WAIT 1`, and records which writes were acknowledged and how."""

import os
import signal
import subprocess
import threading
import time

import redis
from redis.sentinel import Sentinel as SentinelClient

from harness import free_port, server_binary, stop_process, wait_until

MASTER_NAME = "bloomgate"
QUORUM = 2
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 5000
WAIT_MS = 500
FILTER_KEY = "failover:bf"
STOP_GRACE_S = 5.0
START_DEADLINE_S = 10.0
# Sentinels read a master's INFO every 10 s (that is how they learn its
# replicas) and hello every 2 s: three INFO periods on a loaded machine.
TOPOLOGY_DEADLINE_S = 30.0
# Subjective down after DOWN_AFTER_MS, then the vote (Sentinel waits a random
# delay of up to 1 s before asking), promotion and reconfiguration, which may
# be retried after 2 x failover-timeout if a first attempt stalls; doubled
# for 2 shared cores.
FAILOVER_DEADLINE_S = 2 * (DOWN_AFTER_MS / 1000 + 1 + 2 * FAILOVER_TIMEOUT_MS / 1000)
# A returning old master is reconfigured once Sentinel has seen it report
# the master role for four hello periods (8 s, sentinel.c's wait before a
# convert-to-slave) on an INFO it reads every 10 s, then it syncs: those,
# doubled for 2 shared cores (a run at 35 s timed out once), plus the
# failover-timeout and 10 s for the sync.
REJOIN_DEADLINE_S = 2 * (8 + 10) + FAILOVER_TIMEOUT_MS / 1000 + 10


class Node:
    """One Bloomgate process on a fixed port, with its own dir and YAML file."""

    def __init__(self, directory):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        self.port = free_port()
        self.config = os.path.join(directory, "bloomgate.yaml")
        with open(self.config, "w") as f:
            f.write("# a node of the failover set-up (Sentinel rewrites this file)\n")
        self.log_path = os.path.join(directory, "bloomgate.log")
        self.proc = None
        self.starts = 0

    def start(self):
        self.starts += 1
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(
                [server_binary(), "--config", self.config, "--port", str(self.port),
                 "--bind", "127.0.0.1", "--threads", "2", "--appendonly", "no", "--save", ""],
                cwd=self.dir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        finally:
            log.close()
        wait_until(self._answers, START_DEADLINE_S, interval_s=0.02,
                   what=f"bloomgate on port {self.port} to answer")
        return self

    def _answers(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"bloomgate on port {self.port} exited with "
                                 f"{self.proc.returncode}\n{self.log()}")
        try:
            return self.client().ping()
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            return False
        except redis.exceptions.BusyLoadingError:
            return True

    def kill9(self):
        """SIGKILL; returns the pid that was killed once it is gone."""
        pid = self.proc.pid
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=STOP_GRACE_S)
        return pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is not None:
            stop_process(self.proc, grace_s=STOP_GRACE_S)

    def client(self):
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5,
                           socket_connect_timeout=5, decode_responses=True)

    def replication(self):
        with self.client() as c:
            return c.info("replication")

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-6000:].decode("utf-8", "replace")
        except OSError:
            return "<no log>"


class SentinelProcess:
    def __init__(self, directory, master_port):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        self.port = free_port()
        self.config = os.path.join(directory, "sentinel.conf")
        self.log_path = os.path.join(directory, "sentinel.log")
        with open(self.config, "w") as f:
            f.write(f"port {self.port}\n"
                    "bind 127.0.0.1\n"
                    "daemonize no\n"
                    f"dir {directory}\n"
                    f"logfile {self.log_path}\n"
                    f"sentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} {QUORUM}\n"
                    f"sentinel down-after-milliseconds {MASTER_NAME} {DOWN_AFTER_MS}\n"
                    f"sentinel failover-timeout {MASTER_NAME} {FAILOVER_TIMEOUT_MS}\n"
                    f"sentinel parallel-syncs {MASTER_NAME} 1\n")
        self.proc = subprocess.Popen(["redis-sentinel", self.config], cwd=directory,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.STDOUT)
        self.client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5,
                                  socket_connect_timeout=5, decode_responses=True)

    def answers(self):
        try:
            return self.client.ping()
        except redis.exceptions.ConnectionError:
            return False

    def _fields(self, entry):
        return entry if isinstance(entry, dict) else dict(zip(entry[::2], entry[1::2]))

    def my_id(self):
        return self.client.execute_command("SENTINEL", "MYID")

    def other_ids(self):
        entries = self.client.execute_command("SENTINEL", "SENTINELS", MASTER_NAME)
        return {self._fields(entry)["runid"] for entry in entries}

    def knows(self, sentinels, replicas):
        """This Sentinel lists `sentinels` other Sentinels and `replicas` replicas."""
        others = self.client.execute_command("SENTINEL", "SENTINELS", MASTER_NAME)
        known = self.client.execute_command("SENTINEL", "REPLICAS", MASTER_NAME)
        up = [r for r in map(self._fields, known) if "s_down" not in r["flags"]
              and "disconnected" not in r["flags"]]
        return len(others) >= sentinels and len(up) >= replicas

    def master_address(self):
        host, port = self.client.execute_command(
            "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME)
        return host, int(port)

    def log(self):
        try:
            with open(self.log_path) as f:
                return f.read()[-5000:]
        except OSError:
            return "<no log>"

    def stop(self):
        self.client.close()
        stop_process(self.proc, grace_s=STOP_GRACE_S)


class FailoverSet:
    """Three Bloomgate nodes (node 0 the first primary) and three Sentinels.
    Register stop() as a cleanup before calling start()."""

    def __init__(self, directory):
        self.nodes = [Node(os.path.join(directory, f"node{i}")) for i in range(3)]
        self.sentinels = []
        self.directory = directory

    def start(self):
        for node in self.nodes:
            node.start()
        primary = self.nodes[0]
        for replica in self.nodes[1:]:
            with replica.client() as c:
                c.execute_command("REPLICAOF", "127.0.0.1", primary.port)
        wait_until(lambda: all(n.replication().get("master_link_status") == "up"
                               for n in self.nodes[1:]),
                   START_DEADLINE_S, interval_s=0.05, what="both replicas to sync")
        with primary.client() as c:
            c.execute_command("BF.RESERVE", FILTER_KEY, "0.001", "1000000")
        for i in range(3):
            s = SentinelProcess(os.path.join(self.directory, f"sentinel{i}"), primary.port)
            self.sentinels.append(s)
        for s in self.sentinels:
            wait_until(s.answers, START_DEADLINE_S, interval_s=0.05,
                       what=f"sentinel on port {s.port} to answer")
        wait_until(lambda: all(s.knows(2, 2) for s in self.sentinels), TOPOLOGY_DEADLINE_S,
                   interval_s=0.2, what="every sentinel to know 2 sentinels and 2 replicas")
        return self

    def stop(self):
        for s in self.sentinels:
            s.stop()
        for node in self.nodes:
            node.stop()

    def node_on(self, port):
        return next(n for n in self.nodes if n.port == port)

    def master_everywhere(self):
        """The address all three Sentinels agree on, or None."""
        addresses = {s.master_address() for s in self.sentinels}
        return addresses.pop() if len(addresses) == 1 else None

    def sentinel_client(self):
        return SentinelClient([("127.0.0.1", s.port) for s in self.sentinels],
                              socket_timeout=2, socket_connect_timeout=2)

    def logs(self):
        parts = [f"--- sentinel {i} ---\n{s.log()}" for i, s in enumerate(self.sentinels)]
        parts += [f"--- node {i} (port {n.port}) ---\n{n.log()}" for i, n in enumerate(self.nodes)]
        return "\n".join(parts)


class Writer(threading.Thread):
    """BF.ADD of item-0, item-1, ... through the Sentinel client, each followed
    by `WAIT 1 WAIT_MS`. acked: items BF.ADD answered; waited: items whose WAIT
    reported at least one replica. first_ok_after(t): monotonic time at which
    the first write sent after t was acknowledged."""

    def __init__(self, sentinel_client):
        super().__init__(daemon=True)
        self.master = sentinel_client.master_for(MASTER_NAME, socket_timeout=2,
                                                 socket_connect_timeout=1)
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.acked = []
        self.waited = []
        self.ok_times = []
        self.errors = 0
        self.last_error = None
        self.next_item = 0

    def run(self):
        while not self.stopping.is_set():
            item = f"item-{self.next_item}"
            self.next_item += 1
            started = time.monotonic()
            try:
                self.master.execute_command("BF.ADD", FILTER_KEY, item)
            except redis.exceptions.RedisError as e:
                self.errors += 1
                self.last_error = e
                # A dead primary refuses at once: pace retries while the
                # Sentinels are electing (the wait ends early on stop()).
                self.stopping.wait(0.02)
                continue
            with self.lock:
                self.acked.append(item)
                self.ok_times.append((started, time.monotonic()))
            try:
                if int(self.master.execute_command("WAIT", 1, WAIT_MS)) >= 1:
                    with self.lock:
                        self.waited.append(item)
            except redis.exceptions.RedisError as e:
                self.errors += 1
                self.last_error = e

    def first_ok_after(self, t):
        with self.lock:
            return next((done for sent, done in self.ok_times if sent > t), None)

    def writes(self):
        with self.lock:
            return len(self.acked)

    def stop(self):
        self.stopping.set()
        self.join(timeout=10)
