#!/usr/bin/env python3
"""Failover time under Redis Sentinel, kill after kill.

  /usr/bin/python3 bench/failover_bench.py [--bin build/server/bloomgate] [--kills 10] [--smoke]

The set-up of tests/e2e/test_sentinel_failover.py: a Bloomgate primary, two
replicas, three Debian redis-sentinel processes (quorum 2,
down-after-milliseconds 1000) and a redis-py Sentinel client writing BF.ADD,
each write followed by WAIT 1. Each round kill -9s the current primary, waits
for the client's first write after the kill, restarts the killed node on its
port and waits until it has rejoined as a replica. Prints each failover time
(kill to first acknowledged write), their median and max, and the writes lost:
acknowledged with WAIT >= 1 (must be 0) and acknowledged without it.
--smoke: one kill, for bench/run.sh --smoke; fails if a WAIT-acknowledged write is lost.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import wait_until  # noqa: E402
from sentinel_cluster import (FAILOVER_DEADLINE_S, FILTER_KEY, REJOIN_DEADLINE_S,  # noqa: E402
                              FailoverSet, Writer)

BATCH = 1000


def current_primary(cluster, previous_port):
    def moved():
        address = cluster.master_everywhere()
        return address is not None and address[1] != previous_port
    wait_until(moved, FAILOVER_DEADLINE_S, interval_s=0.05, what="a new master")
    return cluster.node_on(cluster.master_everywhere()[1])


def rejoined(node, primary):
    fields = node.replication()
    return (fields["role"] == "slave" and int(fields["master_port"]) == primary.port
            and fields["master_link_status"] == "up")


def missing_on(primary, items):
    with primary.client() as c:
        present = []
        for i in range(0, len(items), BATCH):
            present += c.execute_command("BF.MEXISTS", FILTER_KEY, *items[i:i + BATCH])
    return [item for item, there in zip(items, present) if not there]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=os.environ.get("BLOOMGATE_BIN", "build/server/bloomgate"))
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.kills = 1
    # The nodes run in directories of their own: the binary's path must not be relative.
    os.environ["BLOOMGATE_BIN"] = os.path.abspath(args.bin)
    times = []
    with tempfile.TemporaryDirectory(prefix="bloomgate-failover-bench-") as tmp:
        cluster = FailoverSet(tmp)
        writer = None
        try:
            cluster.start()
            writer = Writer(cluster.sentinel_client())
            writer.start()
            primary = cluster.nodes[0]
            for round_no in range(1, args.kills + 1):
                before = len(writer.waited)
                wait_until(lambda: len(writer.waited) >= before + 20, 30.0, interval_s=0.02,
                           what="writes before the kill")
                victim = primary
                victim.kill9()
                killed_at = time.monotonic()
                primary = current_primary(cluster, victim.port)
                wait_until(lambda: writer.first_ok_after(killed_at) is not None,
                           FAILOVER_DEADLINE_S, interval_s=0.01, what="a write after the kill")
                seconds = writer.first_ok_after(killed_at) - killed_at
                times.append(seconds)
                print(f"kill {round_no}: port {victim.port} -> {primary.port}: "
                      f"{seconds:.3f} s to the first write", flush=True)
                victim.start()
                wait_until(lambda: rejoined(victim, primary), REJOIN_DEADLINE_S, interval_s=0.1,
                           what="the killed node to rejoin")
            writer.stop()
            waited = list(writer.waited)
            waited_set = set(waited)
            unwaited = [item for item in writer.acked if item not in waited_set]
            lost_waited = missing_on(primary, waited)
            lost_unwaited = missing_on(primary, unwaited)
        except Exception:
            print(cluster.logs(), file=sys.stderr)
            raise
        finally:
            if writer is not None:
                writer.stop()
            cluster.stop()
    print(f"failover time over {len(times)} kills: median {statistics.median(times):.3f} s, "
          f"max {max(times):.3f} s")
    print(f"writes acknowledged: {len(writer.acked)} ({len(waited)} with WAIT >= 1); "
          f"lost with WAIT: {len(lost_waited)}; lost without WAIT: {len(lost_unwaited)} "
          f"of {len(unwaited)}")
    return 1 if lost_waited else 0


if __name__ == "__main__":
    sys.exit(main())
