#!/usr/bin/env python3
"""Cluster failover figures: six Bloomgate nodes, three masters with a
replica each (`redis-cli --cluster create --cluster-replicas 1`, the set-up
of tests/e2e/test_cluster_failover.py), redis-py's RedisCluster and ioredis's
Cluster writing BF.ADD of keys of their own on all three masters,
sequentially and without WAIT (failover_support.py's writers, wait=False).

  /usr/bin/python3 bench/cluster_failover_bench.py [--bin build/server/bloomgate]
      [--node-timeout 1500] [--kills 10] [--stops 3] [--manual 5] [--bus-seconds 10]
      [--only-bus] [--smoke]

Phases, in order:
- bus: bytes on the bus ports over --bus-seconds of the settled cluster
  (idle: no fault), then over --bus-seconds from a master's kill -9 (its
  failure detected and reported, the election, then five nodes running with
  one peer gone), the killed node restarted afterwards. Bytes are `ss -tin`'s
  bytes_acked + bytes_received of every established TCP socket whose local
  port is a bus port (a bus link has its listening end on exactly one bus
  port, so each link is counted once, both directions), the difference
  between two samples per socket (a socket opened meanwhile counts from 0; a
  socket closed meanwhile is missed). Per node per second: that sum over
  the running nodes and the seconds. The CLUSTER INFO message counters of every node
  over the same windows, by type, are printed beside it.
- kills: --kills times kill -9 of a master (in turn), the time until its
  replica says it is master of its slots (CLUSTER NODES, polled every 20 ms),
  the old master restarted and healed; the writes lost, counted exactly
  (EXISTS of each acknowledged write's key) once the cluster healed.
- stops: --stops times SIGSTOP of a master until its replica is master,
  SIGCONT, healed; the failover time and the writes lost.
- manual: --manual times CLUSTER FAILOVER on a replica, the time until it
  says it is master; writes lost (must be none).
--smoke: one of each, a 2 s bus window; fails if a manual failover loses a
write.
"""
import argparse
import collections
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import redis

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from cluster_support import LocalCluster  # noqa: E402
from harness import wait_until  # noqa: E402
import failover_support as fs  # noqa: E402

STAT = re.compile(r"cluster_stats_messages_([a-z_-]+)_(sent|received):(\d+)")


def bus_bytes(cports):
    """{socket: bytes both ways} of the established sockets on a bus port."""
    out = subprocess.run(["ss", "-tinH", "state", "established"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    sockets = {}
    for address, info in zip(out[::2], out[1::2]):
        fields = address.split()
        local, peer = fields[2], fields[3]
        if int(local.rsplit(":", 1)[1]) not in cports:
            continue
        counters = dict(re.findall(r"(bytes_acked|bytes_received):(\d+)", info))
        sockets[(local, peer)] = sum(int(v) for v in counters.values())
    return sockets


def message_counts(cluster):
    """{type: messages sent by all live nodes}, from CLUSTER INFO."""
    counts = collections.Counter()
    for node in cluster.nodes:
        if not fs.node_alive(node):
            continue
        for name, way, n in STAT.findall(fs.node_client(node).execute_command("CLUSTER",
                                                                               "INFO")):
            if way == "sent":
                counts[name] += int(n)
    return counts


class BusWindow:
    """Bytes and messages on the bus between start() and stop()."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.cports = {n.cport for n in cluster.nodes}

    def start(self):
        self.bytes0, self.msgs0, self.t0 = (bus_bytes(self.cports), message_counts(self.cluster),
                                            time.monotonic())

    def stop(self):
        """Ends the window (the figures are read from this object)."""
        bytes1, msgs1 = bus_bytes(self.cports), message_counts(self.cluster)
        self.running = sum(1 for n in self.cluster.nodes if fs.node_alive(n))
        self.seconds = time.monotonic() - self.t0
        self.bytes = sum(v - self.bytes0.get(k, 0) for k, v in bytes1.items())
        # The killed node's counters restart from 0: its own are left out.
        self.messages = {k: msgs1[k] - self.msgs0.get(k, 0) for k in msgs1}

    def per_node_s(self):
        """Bytes per running node per second (a node killed in the window
        counts for none of it)."""
        return self.bytes / self.running / self.seconds

    def describe(self):
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.messages.items()) if v > 0)
        sent = sum(self.messages.values())
        return (f"{self.bytes} bytes in {self.seconds:.1f} s over {self.running} running nodes "
                f"= {self.per_node_s():.0f} bytes per node per second; {sent} messages sent "
                f"({self.bytes / max(sent, 1):.0f} bytes each on average): {kinds}")


def a_shard(cluster, index):
    masters = fs.current_masters(cluster)
    master = masters[index % len(masters)]
    _, replicas = fs.shard_of(cluster, master)
    return master, fs.claims_master(fs.node_client(master)), replicas[0]


def lost_since(cluster, ledger, known):
    report = fs.check_writes(cluster, ledger)
    new = [w for w in report.lost if w.key not in known]
    known.update(w.key for w in new)
    return new, report


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=os.environ.get("BLOOMGATE_BIN", "build/server/bloomgate"))
    parser.add_argument("--node-timeout", type=int, default=1500)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--stops", type=int, default=3)
    parser.add_argument("--manual", type=int, default=5)
    parser.add_argument("--bus-seconds", type=float, default=10.0)
    parser.add_argument("--only-bus", action="store_true",
                        help="the two bus windows only (e.g. to compare another build idle)")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.kills, args.stops, args.manual, args.bus_seconds = 1, 1, 1, 2.0
    os.environ["BLOOMGATE_BIN"] = os.path.abspath(args.bin)
    timeout_s = args.node_timeout / 1000
    wait_s = 4 * (timeout_s + 2)
    heal_s = 10 * timeout_s + 10
    known_lost = set()
    with tempfile.TemporaryDirectory(prefix="bloomgate-failover-bench-") as tmp, \
            LocalCluster(tmp, nodes=6, node_timeout_ms=args.node_timeout) as cluster:
        writers = []
        try:
            cluster.create("--cluster-replicas", "1")
            fs.wait_healthy(cluster, heal_s)
            print(f"node timeout {args.node_timeout} ms, 6 nodes (3 masters, 3 replicas)",
                  flush=True)

            idle = BusWindow(cluster)
            idle.start()
            time.sleep(args.bus_seconds)  # the measuring window itself
            idle.stop()
            print(f"bus, idle: {idle.describe()}", flush=True)
            master, slots, replica = a_shard(cluster, 0)
            fault = BusWindow(cluster)
            fault.start()
            fs.kill9(master)
            time.sleep(args.bus_seconds)  # the measuring window itself
            fault.stop()
            promoted = slots <= fs.claims_master(fs.node_client(replica))
            print(f"bus, from a master's kill -9 (its replica "
                  f"{'promoted' if promoted else 'not promoted'} in the window): "
                  f"{fault.describe()}", flush=True)
            print(f"bus, the fault's window against idle: {fault.per_node_s():.0f} against "
                  f"{idle.per_node_s():.0f} bytes per running node per second", flush=True)
            master.start()
            fs.wait_healthy(cluster, heal_s)
            if args.only_bus:
                return 0

            ledger = fs.Ledger()
            tags = fs.spread_tags(fs.node_client(cluster.nodes[0]))
            writers = fs.start_writers([n.address for n in cluster.nodes], tags, ledger,
                                       wait=False)
            results = {"kill": ([], []), "stop": ([], []), "manual": ([], [])}

            def measure(kind, round_no, fault):
                master, slots, replica = a_shard(cluster, round_no)
                before = ledger.count()
                wait_until(lambda: ledger.count() >= before + 200, 30.0, interval_s=0.01,
                              what="writes before the fault")
                started = fault(master)
                _, promoted_at = fs.wait_promoted(cluster, slots, [replica], wait_s,
                                                  f"{kind}: the replica master")
                if kind == "stop":
                    fs.sigcont(master)
                if kind == "kill":
                    master.start()
                fs.wait_healthy(cluster, heal_s)
                lost, report = lost_since(cluster, ledger, known_lost)
                results[kind][0].append(promoted_at - started)
                results[kind][1].append(len(lost))
                print(f"{kind} {round_no + 1}: master {master.port} -> {replica.port} in "
                      f"{promoted_at - started:.3f} s; writes lost: {len(lost)} "
                      f"({report.acked} acknowledged so far)", flush=True)

            def manual(master):
                t = time.monotonic()
                _, replicas = fs.shard_of(cluster, master)
                fs.node_client(replicas[0], timeout_s=10).execute_command("CLUSTER", "FAILOVER")
                return t

            for i in range(args.kills):
                measure("kill", i, fs.kill9)
            for i in range(args.stops):
                measure("stop", i, fs.sigstop)
            for i in range(args.manual):
                try:
                    measure("manual", i, manual)
                except redis.exceptions.ResponseError as e:
                    if not str(e).startswith("unknown subcommand 'FAILOVER'"):
                        raise
                    print("manual: this build has no CLUSTER FAILOVER", flush=True)
                    fs.wait_healthy(cluster, heal_s)
                    break
            fs.stop_writers(writers)
            text = cluster.check()
            print(text.splitlines()[-1])
        except BaseException:
            fs.continue_all(cluster)
            fs.stop_writers(writers)
            print(cluster.logs()[-20000:], file=sys.stderr)
            raise
        finally:
            fs.continue_all(cluster)
    for kind, (times, lost) in results.items():
        if times:
            print(f"{kind}: failover median {statistics.median(times):.3f} s, max "
                  f"{max(times):.3f} s over {len(times)}; writes lost without WAIT: "
                  f"{sum(lost)} ({', '.join(map(str, lost))})")
    for writer in writers:
        print(writer.summary())
    return 1 if sum(results["manual"][1]) else 0


if __name__ == "__main__":
    sys.exit(main())
