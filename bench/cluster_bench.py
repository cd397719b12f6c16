#!/usr/bin/env python3
"""What a Redis Cluster of Bloomgate nodes costs: resharding speed, the added
latency of a -MOVED / -ASK redirect, and throughput of 1 against 3 nodes.

  /usr/bin/python3 bench/cluster_bench.py --bin build/server/bloomgate [PART ...]
  /usr/bin/python3 bench/cluster_bench.py --bin build/server/bloomgate --smoke

With the nodes on a disk each slot rewrites nodes.conf several times (fsynced
only when an epoch moves): 310-375 slots/s on a shared VM's disk against
574-1,067 with `--dir /dev/shm`.

PART is any of `reshard`, `redirect`, `throughput` (default: all three, in
that order, on one 3-master cluster, flushed between parts). Every node runs
`--threads 1 --save "" --appendonly no` on loopback (tests/e2e/cluster_support's
LocalCluster); every node and tool is stopped whatever happens.

reshard: first moves --slots empty slots there and back (the per-slot floor:
SETSLOTs, each rewriting nodes.conf, and the bus), then fills the
cluster with --keys filters (a third each of `BF.INSERT k CAPACITY 2000` ~3 KB,
`CF.INSERT k CAPACITY 1000` ~1.1 KB, `CMS.INITBYDIM k 400 4` ~6.5 KB, plus --big
NONSCALING Bloom filters of 875,000 items, ~1.1 MB), then times `redis-cli
--cluster reshard ... --cluster-slots S --cluster-yes --cluster-pipeline P`
from the first master to the second and back, once per pipeline value a round.
MB are the moved keys' DUMP lengths (the payload MIGRATE sends; DUMP is not
compressed), read before the move. After each move
every key is asked for (EXISTS) on the node that owns its slot, and each
node's DBSIZE must equal the keys of its slots: a figure is only printed for a
complete move.

redirect: a raw-socket client (persistent connections to every node, no slot
cache) sends BF.EXISTS for a key on node B (a) straight to B; (b) to A, which
answers -MOVED, then to B; (c) for a key whose slot B is migrating to C and
which has already moved, to B, which answers -ASK, then ASKING + BF.EXISTS
(one write) to C. The three are interleaved so they see the same load;
median and p99 in microseconds and the extra of (b) and (c) over (a).

throughput: `redis-benchmark -c 50 -P 1|16 --threads 2 -r 16384` of BF.ADD
then BF.EXISTS, on one node owning all 16384 slots (redis-benchmark refuses
`--cluster` with one master, so that node gets the plain form with keys
`bf:__rand_int__`) and with `--cluster` on the three (keys `bf:{tag}`:
redis-benchmark puts a hash tag of one of the connection's node's slots in
place of `{tag}`, one slot per pipelined batch, and exits on any other error
than a redirect, so a custom command without `{tag}` cannot be routed). Both
see 16,384 keys, but a -P 16 batch of the 3-node run is 16 requests to one
key, so the one node also runs the literal key `bf:{tag}` (every request on
one filter, "1 node, 1 key"), the bound for that locality. The set-ups take
turns; requests/s, and server CPU microseconds per request (utime+stime of
every node from /proc, the figure that stays honest when 3 nodes and the
client share 2 cores).
"""

import argparse
import csv
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import RawConnection, RespError, wait_until  # noqa: E402
from cluster_support import (SLOTS, LocalCluster, cli, key_in_slot, key_slot,  # noqa: E402
                             node_lines)
from cluster_nodes_bench import proc_stat  # noqa: E402

SERVER_ARGS = ["--save", "", "--appendonly", "no"]
RESHARD_DEADLINE_S = 900.0
BENCH_DEADLINE_S = 300.0
BIG_CAPACITY = 875_000  # 1.1 MB of bits at error 0.01
PIPE_BATCH = 500
PARTS = ("reshard", "redirect", "throughput")
IDLE_WINDOW_S = 3.0


# ---------------------------------------------------------------- the cluster

def slot_owners(client):
    """[node id of slot 0, ..., of slot 16383] and {node id: port}, from CLUSTER NODES."""
    owners = [None] * SLOTS
    ports = {}
    for fields in node_lines(client):
        ports[fields[0]] = int(fields[1].split("@")[0].rsplit(":", 1)[1])
        for part in fields[8:]:
            if part.startswith("["):
                continue
            lo, _, hi = part.partition("-")
            for slot in range(int(lo), int(hi or lo) + 1):
                owners[slot] = fields[0]
    return owners, ports


def cpu_seconds(pid):
    return proc_stat(pid)[1]


def children_cpu_seconds():
    """CPU seconds of every waited-for child so far (redis-cli, redis-benchmark)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def flush(cluster):
    for c in cluster.clients():
        c.flushall()


def one_node_cluster(directory):
    """One cluster-enabled node owning every slot (redis-cli --cluster create
    wants 3 masters, so its slots are added by hand)."""
    cluster = LocalCluster(directory, nodes=1, args=SERVER_ARGS)
    try:
        client = cluster.nodes[0].client(decode_responses=True)
        client.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, SLOTS - 1)
        wait_until(lambda: "cluster_state:ok" in client.execute_command("CLUSTER", "INFO"),
                   30, interval_s=0.05, what="the one-node cluster to be ok")
    except BaseException:
        cluster.stop()
        raise
    return cluster


# ------------------------------------------------------------------ resharding

def slot_tags(count):
    """"{k<n>}" hash tags of slots 0 .. count-1, found in one scan."""
    tags = {}
    n = 0
    while len(tags) < count:
        slot = key_slot(f"k{n}")
        if slot < count and slot not in tags:
            tags[slot] = "{k%d}" % n
        n += 1
    return [tags[s] for s in range(count)]


def fill(cluster, keys, big, tags=None):
    """Creates the filters, each on its slot's owner; returns {key: DUMP length}.
    With `tags`, key i carries tags[i % len(tags)], so every key is in those slots."""
    owners, ports = slot_owners(cluster.nodes[0].client(decode_responses=True))
    by_port = {n.port: n.client() for n in cluster.nodes}
    pipes = {port: c.pipeline(transaction=False) for port, c in by_port.items()}
    names = []
    for i in range(keys):
        if i < big:
            key = f"big:{i}"
            cmds = [("BF.RESERVE", key, "0.01", BIG_CAPACITY, "NONSCALING")]
        elif i % 3 == 0:
            key = f"bf:{i}"
            cmds = [("BF.INSERT", key, "CAPACITY", 2000, "ERROR", "0.01", "ITEMS", "a", "b", i)]
        elif i % 3 == 1:
            key = f"cf:{i}"
            cmds = [("CF.INSERT", key, "CAPACITY", 1000, "ITEMS", "a", "b", i)]
        else:
            key = f"cms:{i}"
            cmds = [("CMS.INITBYDIM", key, 400, 4), ("CMS.INCRBY", key, "a", 1, i, 2)]
        if tags:
            key = tags[i % len(tags)] + key
            cmds = [(cmd[0], key, *cmd[2:]) for cmd in cmds]
        pipe = pipes[ports[owners[key_slot(key)]]]
        for cmd in cmds:
            pipe.execute_command(*cmd)
        names.append(key)
        if len(pipe) >= PIPE_BATCH:
            pipe.execute()
    for pipe in pipes.values():
        pipe.execute()
    sizes = {}
    for start in range(0, len(names), PIPE_BATCH):
        batch = names[start:start + PIPE_BATCH]
        per_port = {}
        for key in batch:
            per_port.setdefault(ports[owners[key_slot(key)]], []).append(key)
        for port, group in per_port.items():
            pipe = by_port[port].pipeline(transaction=False)
            for key in group:
                pipe.dump(key)
            for key, payload in zip(group, pipe.execute()):
                if payload is None:
                    raise SystemExit(f"fill: {key} missing on its owner (port {port})")
                sizes[key] = len(payload)
    for c in by_port.values():
        c.close()
    return sizes


def verify_placement(cluster, keys):
    """Every key answers EXISTS on its slot's owner, and each node holds
    exactly the keys of its slots; returns {port: key count}."""
    owners, ports = slot_owners(cluster.nodes[0].client(decode_responses=True))
    expected = {port: [] for port in ports.values()}
    for key in keys:
        expected[ports[owners[key_slot(key)]]].append(key)
    counts = {}
    for node in cluster.nodes:
        client = node.client()
        wanted = expected.get(node.port, [])
        for start in range(0, len(wanted), PIPE_BATCH):
            pipe = client.pipeline(transaction=False)
            for key in wanted[start:start + PIPE_BATCH]:
                pipe.exists(key)
            missing = [k for k, e in zip(wanted[start:start + PIPE_BATCH], pipe.execute()) if not e]
            if missing:
                raise SystemExit(f"after resharding, {len(missing)} keys missing on port "
                                 f"{node.port}, e.g. {missing[:3]}")
        held = client.dbsize()
        if held != len(wanted):
            raise SystemExit(f"after resharding, port {node.port} holds {held} keys, "
                             f"its slots have {len(wanted)}")
        counts[node.port] = held
        client.close()
    return counts


def reshard_once(cluster, source, target, slots, pipeline, sizes):
    before, _ = slot_owners(cluster.nodes[0].client(decode_responses=True))
    src_id, dst_id = source.my_id(), target.my_id()
    cmd = ["--cluster", "reshard", source.address, "--cluster-from", src_id,
           "--cluster-to", dst_id, "--cluster-slots", slots, "--cluster-yes",
           "--cluster-pipeline", pipeline]
    pids = [n.proc.pid for n in cluster.nodes]
    cpu_before = sum(cpu_seconds(p) for p in pids)
    cli_before = children_cpu_seconds()
    started = time.monotonic()
    out = cli(*cmd, deadline_s=RESHARD_DEADLINE_S)
    seconds = time.monotonic() - started
    server_cpu = sum(cpu_seconds(p) for p in pids) - cpu_before
    cli_cpu = children_cpu_seconds() - cli_before
    if out.returncode != 0:
        raise SystemExit(f"redis-cli {' '.join(map(str, cmd))} failed:\n"
                         f"{(out.stdout + out.stderr)[-3000:]}")
    cluster.wait_agreement()
    after, _ = slot_owners(cluster.nodes[0].client(decode_responses=True))
    moved_slots = sum(1 for s in range(SLOTS) if before[s] == src_id and after[s] == dst_id)
    if moved_slots != slots:
        raise SystemExit(f"reshard moved {moved_slots} slots, asked for {slots}")
    moved = [k for k in sizes if before[key_slot(k)] == src_id and after[key_slot(k)] == dst_id]
    counts = verify_placement(cluster, sizes)
    cluster.check()
    megabytes = sum(sizes[k] for k in moved) / 1e6
    return {"pipeline": pipeline, "seconds": seconds, "keys": len(moved), "mb": megabytes,
            "counts": counts, "from": source.port, "to": target.port,
            "server_cpu": server_cpu, "cli_cpu": cli_cpu}


def run_reshard(cluster, args):
    flush(cluster)
    a, b = cluster.nodes[0], cluster.nodes[1]
    # The floor: the same slots moved there and back with no keys in them, so
    # the filled moves' extra CPU is the keys' own.
    empty = [reshard_once(cluster, a, b, args.slots, args.pipelines[0], {}),
             reshard_once(cluster, b, a, args.slots, args.pipelines[0], {})]
    print(f"reshard of {args.slots} empty slots there and back (--cluster-pipeline "
          f"{args.pipelines[0]}): {empty[0]['seconds']:.2f} s and {empty[1]['seconds']:.2f} s "
          f"= {2 * args.slots / (empty[0]['seconds'] + empty[1]['seconds']):.0f} slots/s; "
          f"CPU ms per slot: nodes "
          f"{sum(e['server_cpu'] for e in empty) / (2 * args.slots) * 1000:.2f}, redis-cli "
          f"{sum(e['cli_cpu'] for e in empty) / (2 * args.slots) * 1000:.2f}")
    started = time.monotonic()
    # Smoke: every key in the slots the first move takes (create() gives the first
    # master slots 0-5460 and redis-cli moves a source's lowest slots first).
    sizes = fill(cluster, args.keys, args.big, slot_tags(args.slots) if args.smoke else None)
    fill_s = time.monotonic() - started
    counts = verify_placement(cluster, sizes)
    total_mb = sum(sizes.values()) / 1e6
    print(f"reshard: {len(sizes)} filters ({args.big} of ~1.1 MB), {total_mb:.1f} MB of DUMP "
          f"payload, filled in {fill_s:.1f} s; keys per node {sorted(counts.values())}")
    pids = [n.proc.pid for n in cluster.nodes]
    idle_before, idle_started = sum(cpu_seconds(p) for p in pids), time.monotonic()
    time.sleep(0.3 if args.smoke else IDLE_WINDOW_S)  # a measurement window, not a wait
    idle = (sum(cpu_seconds(p) for p in pids) - idle_before) / (time.monotonic() - idle_started)
    print(f"  idle cluster (bus pings): {idle * 1000:.1f} CPU ms/s of the nodes together")
    results = []
    for r in range(args.rounds):
        order = args.pipelines if r % 2 == 0 else list(reversed(args.pipelines))
        for pipeline in order:
            source, target = (a, b) if len(results) % 2 == 0 else (b, a)
            res = reshard_once(cluster, source, target, args.slots, pipeline, sizes)
            results.append(res)
            print(f"  round {r + 1}: --cluster-pipeline {pipeline:>3} {res['from']}->{res['to']}: "
                  f"{args.slots} slots, {res['keys']} keys, {res['mb']:.1f} MB in "
                  f"{res['seconds']:.2f} s = {res['keys'] / res['seconds']:.0f} keys/s, "
                  f"{res['mb'] / res['seconds']:.2f} MB/s, {args.slots / res['seconds']:.0f} "
                  f"slots/s; CPU s: nodes {res['server_cpu']:.2f}, redis-cli "
                  f"{res['cli_cpu']:.2f}; afterwards every key on its owner, keys per node "
                  f"{[res['counts'][n.port] for n in cluster.nodes]}")
    floor_cpu = (empty[0]["server_cpu"] + empty[1]["server_cpu"]) / 2
    for pipeline in args.pipelines:
        mine = [r for r in results if r["pipeline"] == pipeline]
        # Wall time on a shared machine swings 3x between moves; CPU does not.
        cpu_over = statistics.median(r["server_cpu"] for r in mine) - floor_cpu
        if mine[0]["mb"] > 0:
            print(f"reshard --cluster-pipeline {pipeline}: the keys cost the nodes {cpu_over:.2f} "
                  f"CPU s beyond the empty move's (medians) = "
                  f"{cpu_over / mine[0]['mb'] * 1000:.1f} CPU ms per MB")
        print(f"reshard --cluster-pipeline {pipeline}: median "
              f"{statistics.median(r['keys'] / r['seconds'] for r in mine):.0f} keys/s, "
              f"{statistics.median(r['mb'] / r['seconds'] for r in mine):.2f} MB/s, "
              f"{statistics.median(args.slots / r['seconds'] for r in mine):.0f} slots/s; "
              f"CPU ms per slot: nodes "
              f"{statistics.median(r['server_cpu'] / args.slots for r in mine) * 1000:.2f}, "
              f"redis-cli {statistics.median(r['cli_cpu'] / args.slots for r in mine) * 1000:.2f}"
              f" (over {len(mine)} moves)")
    # Leave the slot layout as create() made it for the parts after this one.
    if len(results) % 2 == 1:
        reshard_once(cluster, b, a, args.slots, args.pipelines[0], sizes)
    flush(cluster)


# ------------------------------------------------------------------- redirects

class Router:
    """Persistent raw connections to every node of the cluster, by port."""

    def __init__(self, ports):
        self.conns = {port: RawConnection(port) for port in ports}

    def close(self):
        for conn in self.conns.values():
            conn.close()

    def direct(self, port, key):
        return self.conns[port].call("BF.EXISTS", key, "x")

    def follow(self, port, key):
        """Sends to `port`; follows one -MOVED or -ASK as a client without a
        slot cache does. Returns (final reply, the redirect's kind)."""
        reply = self.conns[port].call("BF.EXISTS", key, "x")
        if not isinstance(reply, RespError):
            return reply, None
        kind, _slot, address = str(reply).split(" ")
        target = self.conns[int(address.rsplit(":", 1)[1])]
        if kind == "MOVED":
            return target.call("BF.EXISTS", key, "x"), kind
        if kind == "ASK":
            target.send(b"*1\r\n$6\r\nASKING\r\n*3\r\n$9\r\nBF.EXISTS\r\n$%d\r\n%s\r\n$1\r\nx\r\n"
                        % (len(key), key.encode()))
            asking = target.read_reply()
            if asking != "OK":
                raise SystemExit(f"ASKING replied {asking!r}")
            return target.read_reply(), kind
        raise SystemExit(f"unexpected reply {reply!r}")


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def run_redirect(cluster, args):
    flush(cluster)
    a, b, c = cluster.nodes[:3]
    owners, _ = slot_owners(a.client(decode_responses=True))
    b_id, c_id = b.my_id(), c.my_id()
    b_slots = [s for s in range(SLOTS) if owners[s] == b_id]
    moved_key = key_in_slot(b_slots[0])
    ask_slot = b_slots[1]
    ask_key = key_in_slot(ask_slot)
    rb = b.client()
    for key in (moved_key, ask_key):
        rb.execute_command("BF.RESERVE", key, "0.01", 1000)
        rb.execute_command("BF.ADD", key, "x")
    rc = c.client()
    rc.execute_command("CLUSTER", "SETSLOT", ask_slot, "IMPORTING", b_id)
    rb.execute_command("CLUSTER", "SETSLOT", ask_slot, "MIGRATING", c_id)
    if rb.execute_command("MIGRATE", "127.0.0.1", c.port, ask_key, 0, 5000) != b"OK":
        raise SystemExit("MIGRATE of the -ASK key failed")
    router = Router([n.port for n in cluster.nodes])
    times = {"direct": [], "moved": [], "ask": []}
    try:
        for i in range(args.samples + args.samples // 10):
            record = i >= args.samples // 10  # the first tenth warms up
            t0 = time.perf_counter_ns()
            r_direct = router.direct(b.port, moved_key)
            t1 = time.perf_counter_ns()
            r_moved, k_moved = router.follow(a.port, moved_key)
            t2 = time.perf_counter_ns()
            r_ask, k_ask = router.follow(b.port, ask_key)
            t3 = time.perf_counter_ns()
            if (r_direct, r_moved, r_ask, k_moved, k_ask) != (1, 1, 1, "MOVED", "ASK"):
                raise SystemExit(f"redirect replies {(r_direct, r_moved, r_ask, k_moved, k_ask)!r}")
            if record:
                times["direct"].append((t1 - t0) / 1000)
                times["moved"].append((t2 - t1) / 1000)
                times["ask"].append((t3 - t2) / 1000)
    finally:
        router.close()
    # Finish the migration the way redis-cli does, so the cluster is whole again.
    for node in cluster.nodes:
        node.client().execute_command("CLUSTER", "SETSLOT", ask_slot, "NODE", c_id)
    cluster.wait_agreement()
    med = {k: statistics.median(v) for k, v in times.items()}
    p99 = {k: percentile(v, 99) for k, v in times.items()}
    print(f"redirect: {args.samples} samples of each, BF.EXISTS from a Python raw-socket client")
    for kind, label in (("direct", "(a) straight to the owner"),
                        ("moved", "(b) -MOVED, then the owner"),
                        ("ask", "(c) -ASK, then ASKING + command")):
        extra = "" if kind == "direct" else (
            f"; extra over (a): median {med[kind] - med['direct']:.1f} us, "
            f"p99 {p99[kind] - p99['direct']:.1f} us")
        print(f"  {label}: median {med[kind]:.1f} us, p99 {p99[kind]:.1f} us{extra}")
    flush(cluster)


# ------------------------------------------------------------------ throughput

def redis_benchmark(port, command, requests, pipeline, keyspace, cluster_mode):
    cmd = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-n", str(requests),
           "-c", "50", "-P", str(pipeline), "--threads", "2", "-r", str(keyspace), "--csv"]
    if cluster_mode:
        cmd.insert(1, "--cluster")
    cmd += command
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=BENCH_DEADLINE_S,
                         stdin=subprocess.DEVNULL)
    rows = [r for r in csv.reader(l for l in out.stdout.splitlines() if l.startswith('"'))
            if r and r[0] != "test"]
    if out.returncode != 0 or not rows:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return float(rows[-1][1]), cmd


def command_stats(nodes, verb):
    """(calls, rejected + failed calls) of `verb` summed over the nodes."""
    calls = errors = 0
    for node in nodes:
        client = node.client(decode_responses=True)
        row = client.info("commandstats").get(f"cmdstat_{verb.lower()}", {})
        client.close()
        calls += row.get("calls", 0)
        errors += row.get("rejected_calls", 0) + row.get("failed_calls", 0)
    return calls, errors


def measure(nodes, port, command, requests, pipeline, keyspace, cluster_mode):
    pids = [n.proc.pid for n in nodes]
    calls_before, errors_before = command_stats(nodes, command[0])
    before = sum(cpu_seconds(p) for p in pids)
    client_before = children_cpu_seconds()
    rps, cmd = redis_benchmark(port, command, requests, pipeline, keyspace, cluster_mode)
    client_cpu = children_cpu_seconds() - client_before
    server_cpu = sum(cpu_seconds(p) for p in pids) - before
    if any(not n.alive() for n in nodes):
        raise SystemExit("a node died during redis-benchmark")
    # redis-benchmark --cluster counts an error reply as a finished request
    # when the command has {tag}: the servers' own counts say what was served.
    calls, errors = command_stats(nodes, command[0])
    if errors != errors_before or calls - calls_before < requests:
        raise SystemExit(f"{' '.join(cmd)}: the nodes served {calls - calls_before} of "
                         f"{requests} requests, {errors - errors_before} with an error")
    return {"rps": rps, "server_us": server_cpu / requests * 1e6,
            "client_us": client_cpu / requests * 1e6, "cmd": cmd}


def run_throughput(three, one, args):
    flush(three)
    flush(one)
    # "1 key": the literal key bf:{tag} without --cluster, every request on one
    # filter: the bound for --cluster's one key per pipelined batch.
    setups = [("1 node", one.nodes, one.nodes[0].port, False, "bf:__rand_int__"),
              ("1 node, 1 key", one.nodes, one.nodes[0].port, False, "bf:{tag}"),
              ("3 nodes", three.nodes, three.nodes[0].port, True, "bf:{tag}")]
    results = {}
    print(f"throughput: redis-benchmark -c 50 --threads 2 -r {args.keyspace}, "
          f"{args.rounds_bench} rounds, the set-ups taking turns")
    for verb in ("BF.ADD", "BF.EXISTS"):
        for pipeline in (1, 16):
            requests = args.requests * (4 if pipeline == 16 else 1)
            for r in range(args.rounds_bench):
                order = setups[r % len(setups):] + setups[:r % len(setups)]
                for name, nodes, port, cluster_mode, key in order:
                    res = measure(nodes, port, [verb, key, "__rand_int__"], requests, pipeline,
                                  args.keyspace, cluster_mode)
                    results.setdefault((verb, pipeline, name), []).append(res)
    for (verb, pipeline, name), rows in results.items():
        print(f"  {verb:<9} -P {pipeline:<2} {name:<13}: "
              f"{statistics.median(r['rps'] for r in rows):>9.0f} req/s, server CPU "
              f"{statistics.median(r['server_us'] for r in rows):.2f} us/req, redis-benchmark CPU "
              f"{statistics.median(r['client_us'] for r in rows):.2f} us/req   "
              f"[{' '.join(rows[0]['cmd'])}]")
    for verb in ("BF.ADD", "BF.EXISTS"):
        for pipeline in (1, 16):
            three_rows = results[(verb, pipeline, "3 nodes")]
            for base in ("1 node", "1 node, 1 key"):
                pairs = list(zip(results[(verb, pipeline, base)], three_rows))
                rps = statistics.median(t["rps"] / o["rps"] for o, t in pairs)
                cpu = statistics.median(t["server_us"] / o["server_us"] if o["server_us"] else 0
                                        for o, t in pairs)
                print(f"  {verb} -P {pipeline}: 3 nodes / {base}: req/s {rps:.2f}x, server CPU "
                      f"per request {cpu:.2f}x (per-round ratios, median)")


# ------------------------------------------------------------------------ main

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("parts", nargs="*", metavar="PART",
                        help="reshard, redirect, throughput (default: all three)")
    parser.add_argument("--bin", default=os.environ.get("BLOOMGATE_BIN", "build/server/bloomgate"))
    parser.add_argument("--smoke", action="store_true",
                        help="every part at tiny sizes (~15 s): CI, never a figure")
    parser.add_argument("--dir", default=None,
                        help="where the nodes' directories go (default: the system's temp "
                             "directory); every SETSLOT rewrites nodes.conf there")
    parser.add_argument("--keys", type=int, default=20000)
    parser.add_argument("--big", type=int, default=60, help="how many of --keys are ~1.1 MB")
    parser.add_argument("--slots", type=int, default=5461, help="slots per reshard")
    parser.add_argument("--pipelines", default="10,100", help="--cluster-pipeline values")
    parser.add_argument("--rounds", type=int, default=2, help="reshard rounds")
    parser.add_argument("--samples", type=int, default=20000, help="redirect samples")
    parser.add_argument("--requests", type=int, default=100000,
                        help="redis-benchmark -n at -P 1 (4x at -P 16)")
    parser.add_argument("--keyspace", type=int, default=16384)
    parser.add_argument("--rounds-bench", type=int, default=3, help="throughput rounds")
    args = parser.parse_args()
    args.pipelines = [int(p) for p in args.pipelines.split(",")]
    parts = args.parts or list(PARTS)
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        parser.error(f"unknown part {unknown[0]!r}: choose from {', '.join(PARTS)}")
    if args.smoke:
        args.keys, args.big, args.slots, args.rounds = 300, 2, 8, 1
        args.samples, args.requests, args.rounds_bench = 200, 1000, 1
    os.environ["BLOOMGATE_BIN"] = os.path.abspath(args.bin)
    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="bloomgate-cluster-bench-", dir=args.dir)
    three = one = None
    try:
        three = LocalCluster(os.path.join(tmp, "three"), nodes=3, args=SERVER_ARGS)
        three.create()
        three.wait_agreement()
        print(f"3 masters made one cluster in {time.monotonic() - started:.1f} s")
        for part in parts:
            part_started = time.monotonic()
            if part == "reshard":
                run_reshard(three, args)
            elif part == "redirect":
                run_redirect(three, args)
            else:
                one = one_node_cluster(os.path.join(tmp, "one"))
                run_throughput(three, one, args)
            print(f"({part}: {time.monotonic() - part_started:.1f} s)")
        for cluster in (three, one):
            if cluster is not None and any(not n.alive() for n in cluster.nodes):
                raise SystemExit(f"a node died\n{cluster.logs()}")
        print(f"cluster_bench: {' '.join(parts)} done in {time.monotonic() - started:.1f} s")
    finally:
        for cluster in (one, three):
            if cluster is not None:
                cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
