#!/usr/bin/env python3
"""One routed request per cluster client library: the latency of BF.EXISTS
on one key, sent one after the other, through redis-py's RedisCluster,
node-redis's createCluster and ioredis's Cluster, each beside the same
requests through that language's plain client straight to the key's node,
on a 3-master cluster of real Bloomgate nodes (tests/e2e/cluster_support.py).
It also counts the -MOVED replies the nodes gave during each run (INFO
errorstats): ioredis sends commands it does not know (BF.*) to any node.

  /usr/bin/python3 bench/cluster_clients_bench.py --bin build/server/bloomgate
  /usr/bin/python3 bench/cluster_clients_bench.py --bin build/server/bloomgate --smoke

Timings are taken inside each client's process (perf_counter in python,
hrtime in node), so the interpreters' own costs are in them; compare a
library with its own plain client, not across languages. Every process and
node is stopped at the end, whatever happens.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e"))
from cluster_support import LocalCluster, moved_replies  # noqa: E402
import node_clients  # noqa: E402
from node_clients import NodeClusterClient  # noqa: E402

import redis  # noqa: E402
from redis.cluster import RedisCluster  # noqa: E402

KEY = "bench:routed"


def time_python(call, count):
    took = []
    for _ in range(count):
        start = time.perf_counter()
        call()
        took.append((time.perf_counter() - start) * 1e6)
    took.sort()
    return {"count": count, "median_us": statistics.median(took),
            "p99_us": took[int(count * 0.99)]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true", help="100 requests: CI's check")
    parser.add_argument("--out", help="also write the table here (markdown)")
    args = parser.parse_args()
    os.environ["BLOOMGATE_BIN"] = os.path.abspath(args.bin)
    count = 100 if args.smoke else args.requests
    reason = node_clients.installed_reason()
    if reason:
        sys.exit(f"cluster_clients_bench: {reason}")

    rows = []
    with tempfile.TemporaryDirectory(prefix="bloomgate-clients-bench-") as tmp, \
            LocalCluster(tmp, nodes=3) as cluster:
        cluster.create()
        cluster.wait_agreement()
        seed = cluster.nodes[0].address
        direct = cluster.clients()
        try:
            slot = direct[0].execute_command("CLUSTER", "KEYSLOT", KEY)
            owner = next(n for n, c in zip(cluster.nodes, direct)
                         if any(s <= slot <= e and int(rest[0][1]) == n.port
                                for s, e, *rest in c.execute_command("CLUSTER", "SLOTS")))
            bf = ["BF.EXISTS", KEY, "x"]

            def measure(name, run):
                before = moved_replies(direct)
                result = run()
                result["moved"] = moved_replies(direct) - before
                rows.append((name, result))

            rc = RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)
            plain = redis.Redis(host="127.0.0.1", port=owner.port)
            try:
                rc.execute_command("BF.ADD", KEY, "x")
                rc.execute_command(*bf)  # the key positions (COMMAND) are read now
                measure(f"redis-py {redis.__version__} RedisCluster",
                        lambda: time_python(lambda: rc.execute_command(*bf), count))
                measure(f"redis-py {redis.__version__} Redis, to the key's node",
                        lambda: time_python(lambda: plain.execute_command(*bf), count))
            finally:
                rc.close()
                plain.close()
            for library, routed in (("node-redis", "createCluster"), ("ioredis", "Cluster")):
                version = node_clients.package_version(library)
                with NodeClusterClient(library, seed) as client:
                    client.call(bf)  # connected, slots read
                    measure(f"{library} {version} {routed}", lambda: client.request(
                        op="bench", args=bf, key=KEY, readonly=True, count=count,
                        deadline_s=120))
                    measure(f"{library} {version} plain client, to the key's node",
                            lambda: client.request(op="bench_direct", args=bf,
                                                   address=owner.address, count=count,
                                                   deadline_s=120))
        finally:
            for c in direct:
                c.close()

    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    lines = [f"BF.EXISTS on one key, {count} requests one after the other, "
             f"3-master cluster on loopback (load average {load} on {os.cpu_count()} cores)",
             "", "    /usr/bin/python3 " + " ".join(sys.argv), "", "| client | median µs | p99 µs | -MOVED replies |", "|---|---:|---:|---:|"]
    for name, r in rows:
        if not (r["count"] == count and r["median_us"] > 0):
            sys.exit(f"cluster_clients_bench: no figure for {name}: {r}")
        lines.append(f"| {name} | {r['median_us']:.0f} | {r['p99_us']:.0f} | {r['moved']} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
