#!/usr/bin/python3
"""Replication benchmark: lag under load, what replicas cost the primary, full sync.

Every server is a Bloomgate started by this script on a free loopback port in
a temporary directory, and stopped whatever happens (SIGTERM; a clean exit is
checked). Each measurement runs --rounds times (3) and the report gives the
median with the min-max over rounds. The machine is shared, so the figures to
trust are the ratios taken inside a round and the CPU per request.

1. Lag under load. A primary and one replica; `redis-benchmark -c 50 -P 16
   -r K BF.ADD bf:__rand_int__ __rand_int__` against the primary while a
   sampler sends INFO replication to both every ~10 ms (both requests go out
   before either reply is read, so a sample is one instant). Lag in bytes =
   the primary's master_repl_offset - the replica's slave_repl_offset of the
   same sample; lag in ms = for each primary sample taken during the load, the
   time until a replica sample reached its offset (resolution: the sampling
   period). Also the stream bytes per BF.ADD (the primary's offset delta over
   the requests). A replica that has not caught up --catchup-deadline seconds
   after the load is a failure, reported with the commands that showed it.
2. Throughput with 0, 1 and 2 replicas. Three primaries run at once, with
   none, one and two replicas of their own, each with `BF.RESERVE bf 0.01
   10000000`; every redis-benchmark row (BF.ADD and BF.EXISTS, -P 16 and -P 1)
   goes to the three in turn (the order rotates per round), and waits for the
   replicas to catch up before the next row. Requests/s, and the primary's CPU
   (utime+stime from /proc/PID/stat, read once its replicas caught up, so the
   stream it still had to send is counted) per request, as ratios to the
   primary without replicas in the same round; the replicas' CPU per request
   beside them.
3. Full sync of a big Bloom filter (--sync-size, default 1 GiB): BF.RESERVE
   sized with BF.INFO, then BF.MADD of one item per --bytes-per-item (1 KiB)
   of filter: each item sets bits in one 64-byte block, so 4 items per 4 KiB
   page on average and ~98% of the pages hold set bits (the RSS after the fill
   says so): the sync reads real memory, not the shared zero page. Per round:
   SAVE (bytes and duration from INFO persistence; a file on a real disk), then
   a fresh, empty replica told REPLICAOF: the time from the command until its
   INFO says master_link_status:up and master_sync_in_progress:0, MB/s of the
   snapshot bytes the replica's log reports, and the primary's worst PING round
   trip during the sync (a client sending PING every 10 ms throughout) against
   its worst in an equal window just before.

Usage (from the repository root):
  /usr/bin/python3 bench/replication_bench.py --bin build/server/bloomgate   # ~5 min, ~3 GB RAM
  /usr/bin/python3 bench/replication_bench.py --smoke --bin build/server/bloomgate   # ~5 s, CI

Prints markdown tables; --out FILE also writes them there. --smoke runs every
part once at tiny sizes and exits non-zero on any failure or missing figure.
Python standard library only (plus server_bench.py and durability_bench.py
next to it); needs redis-benchmark.
"""

import argparse
import os
import re
import shlex
import shutil
import sys
import tempfile
import time

from durability_bench import (GIB, MB, MIB, Bloomgate, Probe, RedisBenchmark, add_items, call_ok,
                              field_map, info_section, med, mem_available_bytes, parse_size,
                              pick_data_base, reserve_sized, table)
from server_bench import BenchError, Conn, free_port, machine_facts, version_of

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import wait_until  # noqa: E402

REPLICA_COUNTS = (0, 1, 2)
THROUGHPUT_ROWS = (  # (label, redis-benchmark command, -P)
    ("BF.ADD bf r", ["BF.ADD", "bf", "__rand_int__"], 16),
    ("BF.ADD bf r", ["BF.ADD", "bf", "__rand_int__"], 1),
    ("BF.EXISTS bf r", ["BF.EXISTS", "bf", "__rand_int__"], 16),
    ("BF.EXISTS bf r", ["BF.EXISTS", "bf", "__rand_int__"], 1),
)
LAG_COMMAND = ["BF.ADD", "bf:__rand_int__", "__rand_int__"]
SYNCED_DEADLINE_S = 30.0
STARTED = time.monotonic()


def progress(text):
    print(f"[{time.monotonic() - STARTED:6.1f} s] {text}", flush=True)


# ---------------------------------------------------------------------------
# Servers and their replication state.

class Node:
    """One Bloomgate process in its own directory."""

    def __init__(self, args, root, name):
        self.name = name
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir)
        port = free_port()
        argv = [args.bin, "--port", str(port), "--bind", "127.0.0.1", "--dir", self.dir,
                "--save", "", "--appendonly", "no", "--maxmemory", "0",
                "--max-filter-memory", "4gb", "--threads", str(args.threads)]
        self.server = Bloomgate(name, argv, port, os.path.join(root, name + ".log"))
        self.port = port
        self.conn = None
        self.following = None

    def start(self, deadline_s):
        try:
            self.server.start_timed(self.dir, deadline_s)
            self.conn = Conn(self.port, timeout=deadline_s)
        except BaseException:
            self.server.stop()  # a process that started but never answered
            raise
        return self

    def stop(self):
        try:
            if self.conn is not None and self.following is not None and self.server.alive():
                # A replica whose link is up takes the server's whole 5 s stop
                # grace on SIGTERM (its link counts as a client that never
                # finishes); detached first, it stops at once.
                call_ok(self.conn, "REPLICAOF", "NO", "ONE")
        finally:
            if self.conn is not None:
                self.conn.close()
                self.conn = None
            self.server.stop_checked()

    def replication(self):
        return info_section(self.conn, "replication")

    def offset(self):
        fields = self.replication()
        return int(fields["slave_repl_offset" if fields["role"] == "slave" else "master_repl_offset"])

    def cpu_seconds(self):
        return self.server.cpu_seconds()

    def alive_or_fail(self, doing):
        if not self.server.alive():
            raise BenchError(f"{self.name} died during {doing}; log:\n{self.server.log_text()}")


def follow(replica, primary):
    call_ok(replica.conn, "REPLICAOF", "127.0.0.1", str(primary.port))
    replica.following = primary


def synced(replica):
    fields = replica.replication()
    return fields.get("master_link_status") == "up" and fields.get("master_sync_in_progress") == "0"


def wait_or_fail(predicate, deadline_s, what, details):
    """harness.wait_until, failing as a BenchError that adds details() (the
    state seen and the servers' logs)."""
    try:
        wait_until(predicate, deadline_s, interval_s=0.01, what=what)
    except AssertionError as e:
        raise BenchError(f"{e}: {details()}") from None


def logs(*nodes):
    return "\n".join(f"{n.name} log:\n{n.server.log_text()}" for n in nodes)


def wait_caught_up(primary, replicas, deadline_s, what):
    """Until every replica's link is up and its offset equals the primary's;
    a primary with no replicas is caught up at once."""
    seen = {}

    def caught_up():
        for node in [primary] + replicas:
            node.alive_or_fail(what)
        seen["primary"] = primary.offset()
        seen.update((r.name, r.replication()) for r in replicas)
        return all(seen[r.name].get("master_link_status") == "up"
                   and int(seen[r.name]["slave_repl_offset"]) >= seen["primary"] for r in replicas)

    wait_or_fail(caught_up, deadline_s, f"{what}: replicas catching up with {primary.name}",
                 lambda: f"primary offset {seen.get('primary')}; " + "; ".join(
                     f"{r.name}: link {seen[r.name].get('master_link_status')}, offset "
                     f"{seen[r.name].get('slave_repl_offset')}" for r in replicas if r.name in seen))


# ---------------------------------------------------------------------------
# Part 1: lag under load.

OFFSET_RE = {"master": re.compile(rb"master_repl_offset:(\d+)"),
             "slave": re.compile(rb"slave_repl_offset:(\d+)")}


class OffsetPair:
    """Both nodes' offsets at one instant: INFO replication goes to both
    before either reply is read. Keeps (time, primary offset, replica offset)."""

    def __init__(self, primary_conn, replica_port):
        self.primary = primary_conn
        self.replica = Conn(replica_port, timeout=60)
        self.samples = []

    @staticmethod
    def _offset(reply, role):
        m = OFFSET_RE[role].search(reply if isinstance(reply, bytes) else str(reply).encode())
        if m is None:
            raise BenchError(f"no {role} offset in INFO replication: {reply!r:.300}")
        return int(m.group(1))

    def call(self, *command):
        request = Conn.encode(*command)
        t0 = time.monotonic()
        self.primary.sock.sendall(request)
        self.replica.sock.sendall(request)
        p, r = self.primary.read(), self.replica.read()
        t1 = time.monotonic()
        self.samples.append(((t0 + t1) / 2, self._offset(p, "master"), self._offset(r, "slave")))

    def close(self):
        self.primary.close()
        self.replica.close()


class OffsetSampler(Probe):
    """durability_bench's probe loop (its own thread, period_s between round
    trips) sampling both offsets; the samples are in .offsets.samples."""

    def __init__(self, primary, replica, period_s):
        super().__init__(primary.port, ["INFO", "replication"], gap_s=period_s)
        self.conn = self.offsets = OffsetPair(self.conn, replica.port)


def lag_figures(samples, t_from, t_to):
    """Byte lag of every sample in [t_from, t_to]; time lag of each of those
    primary offsets: until the first later sample whose replica offset
    reached it (None when none did)."""
    lag_bytes, lag_ms, unreached = [], [], 0
    j = 0
    for i, (t, primary_offset, replica_offset) in enumerate(samples):
        if not t_from <= t <= t_to:
            continue
        lag_bytes.append(primary_offset - replica_offset)
        j = max(j, i)
        while j < len(samples) and samples[j][2] < primary_offset:
            j += 1
        if j == len(samples):
            unreached += 1
        else:
            lag_ms.append((samples[j][0] - t) * 1e3)
    return lag_bytes, lag_ms, unreached


def percentile(values, q):
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def lag_round(args, rb, primary, replica):
    call_ok(primary.conn, "FLUSHALL")
    wait_caught_up(primary, [replica], SYNCED_DEADLINE_S, "before the lag load")
    sampler = OffsetSampler(primary, replica, args.sample_period).start()
    try:
        time.sleep(5 * args.sample_period)
        offset_before = primary.offset()
        argv = rb.argv(primary.port, args.lag_requests, 16, args.lag_keyspace, LAG_COMMAND)
        t0 = time.monotonic()
        result = rb.finish(rb.start(argv), argv, t0)
        t1 = time.monotonic()
        offset_after = primary.offset()
        samples = sampler.offsets.samples

        def closed():
            for node in (primary, replica):
                node.alive_or_fail("the lag load")
            return samples[-1][2] >= offset_after

        wait_or_fail(closed, args.catchup_deadline, "the replication lag to close", lambda: (
            f"the replica's offset is {samples[-1][2]}, the primary's {offset_after} (reproduce: "
            f"a primary and a replica started as `{shlex.join(primary.server.argv)}`, REPLICAOF, "
            f"then `{shlex.join(['redis-benchmark'] + argv[1:])}`)\n{logs(primary, replica)}"))
    finally:
        sampler.stop()
    lag_bytes, lag_ms, unreached = lag_figures(samples, t0, t1)
    if not lag_bytes or unreached:
        raise BenchError(f"lag round: {len(lag_bytes)} samples during the load, {unreached} never reached")
    caught_up_at = next(t for t, _, replica_offset in samples if replica_offset >= offset_after)
    return {"rps": result["rps"], "seconds": t1 - t0, "samples": len(lag_bytes),
            "catchup_s": max(0.0, caught_up_at - t1),
            # The same bytes over the time the replica took to have them all.
            "replica_rate": (t1 - t0) / (caught_up_at - t0),
            "bytes_per_add": (offset_after - offset_before) / args.lag_requests,
            "bytes": {q: percentile(lag_bytes, q) for q in (50, 99, 100)},
            "ms": {q: percentile(lag_ms, q) for q in (50, 99, 100)}}


# ---------------------------------------------------------------------------
# Part 2: throughput with 0, 1 and 2 replicas.

def throughput_row(args, rb, group, command, pipeline, requests):
    primary, replicas = group
    offset0 = primary.offset()
    cpu0 = primary.cpu_seconds()
    replica_cpu0 = sum(r.cpu_seconds() for r in replicas)
    argv = rb.argv(primary.port, requests, pipeline, args.keyspace, command)
    result = rb.run(argv)
    wait_caught_up(primary, replicas, args.catchup_deadline, shlex.join(command))
    for node in [primary] + replicas:
        node.alive_or_fail(shlex.join(command))
    return {"rps": result["rps"], "stream_bytes": (primary.offset() - offset0) / requests,
            "cpu_us": (primary.cpu_seconds() - cpu0) / requests * 1e6,
            "replica_cpu_us": (sum(r.cpu_seconds() for r in replicas) - replica_cpu0) / requests * 1e6}


def throughput_part(args, rb, groups, results):
    for rnd in range(args.rounds):
        order = REPLICA_COUNTS[rnd % 3:] + REPLICA_COUNTS[:rnd % 3]
        for label, command, pipeline in THROUGHPUT_ROWS:
            requests = args.requests_p16 if pipeline > 1 else args.requests_p1
            for count in order:
                row = throughput_row(args, rb, groups[count], command, pipeline, requests)
                results.setdefault((label, pipeline, count), []).append(row)
            progress(f"[2] round {rnd + 1} {label} -P {pipeline}: "
                     + ", ".join(f"{c} replicas {results[(label, pipeline, c)][-1]['rps']:,.0f} req/s "
                                 f"{results[(label, pipeline, c)][-1]['cpu_us']:.2f} us CPU/req"
                                 for c in REPLICA_COUNTS))


# ---------------------------------------------------------------------------
# Part 3: full sync of a big filter, beside SAVE.

SYNC_LOG_RE = re.compile(r"full sync: (\d+) keys, (\d+) bytes loaded in ([\d.]+) s")
SENT_LOG_RE = re.compile(r"full sync to replica \S+: snapshot of (\d+) bytes at offset \d+ sent in "
                         r"([\d.]+) s")


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def save_round(primary, deadline_s):
    cpu0 = primary.cpu_seconds()
    t0 = time.monotonic()
    call_ok(primary.conn, "SAVE")
    wall = time.monotonic() - t0
    cpu = primary.cpu_seconds() - cpu0
    info = info_section(primary.conn, "persistence")
    nbytes, ms = int(info["last_save_bytes"]), int(info["last_save_duration_ms"])
    if wall > deadline_s or nbytes <= 0:
        raise BenchError(f"SAVE: {nbytes} bytes in {wall:.1f} s")
    return {"bytes": nbytes, "seconds": max(ms, 1) / 1e3, "wall": wall, "cpu": cpu}


def sync_round(args, root, primary, rnd, items):
    replica = Node(args, root, f"sync-replica-{rnd}").start(args.run_timeout)
    probe = Probe(primary.port, ["PING"], gap_s=0.01).start()
    try:
        time.sleep(args.pause_window)
        cpu0 = primary.cpu_seconds(), replica.cpu_seconds()
        t0 = time.monotonic()
        follow(replica, primary)

        def sync_done():
            for node in (primary, replica):
                node.alive_or_fail("the full sync")
            try:
                return synced(replica)
            except BenchError as e:  # the replica answers -LOADING while it loads
                if str(e).startswith("LOADING"):
                    return False
                raise

        wait_or_fail(sync_done, args.run_timeout, "the full sync", lambda: (
            f"INFO replication {replica.replication()}\n{logs(primary, replica)}"))
        t1 = time.monotonic()
        cpu = primary.cpu_seconds() - cpu0[0], replica.cpu_seconds() - cpu0[1]
        # The window during the sync is at least as long as the one before it.
        time.sleep(max(0.0, t0 + args.pause_window - time.monotonic()))
    finally:
        probe.stop()
    try:
        m = SYNC_LOG_RE.search(replica.server.log_text(limit=1 << 20))
        if m is None or int(m.group(1)) != 1:
            raise BenchError(f"no 'full sync: 1 keys' line in the replica's log:\n{logs(replica)}")
        nbytes = int(m.group(2))
        # The primary logs its send once the last byte is out: maybe just after
        # the replica reports the sync done.
        sent = []

        def send_logged():
            sent[:] = SENT_LOG_RE.findall(primary.server.log_text(limit=1 << 20))
            return len(sent) > rnd

        wait_or_fail(send_logged, 5.0, "the primary's log of the full sync", lambda: logs(primary))
        if int(sent[-1][0]) != nbytes:
            raise BenchError(f"the primary's log has no full sync of {nbytes} bytes:\n{logs(primary)}")
        sample = items[::max(1, len(items) // 1000)]
        present = replica.conn.call("BF.MEXISTS", "big", *sample)
        ours, theirs = (field_map(n.conn.call("BF.INFO", "big")) for n in (primary, replica))
        if present != [1] * len(sample) or ours != theirs:
            raise BenchError(f"the replica differs after the full sync: BF.INFO {theirs} against "
                             f"{ours}, {present.count(1)} of {len(sample)} items present")
    finally:
        replica.stop()
        shutil.rmtree(replica.dir, ignore_errors=True)
    worst_before, _ = probe.worst_before(t0 - args.pause_window, t0)
    worst_during, pings = probe.worst_from(t0, t1)
    p99_before = percentile([lat for t, lat in probe.samples if t0 - args.pause_window <= t < t0], 99)
    p99_during = percentile([lat for t, lat in probe.samples if t0 <= t < t1], 99)
    # When in the sync the worst PING started: at its start (the cut) or along the stream.
    worst_at = max(((lat, t - t0) for t, lat in probe.samples if t < t1 and t + lat >= t0),
                   default=(0.0, float("nan")))[1]
    return {"bytes": nbytes, "seconds": t1 - t0, "load_seconds": float(m.group(3)),
            "send_seconds": float(sent[-1][1]), "primary_cpu": cpu[0], "replica_cpu": cpu[1],
            "ping_before_ms": worst_before * 1e3, "ping_during_ms": worst_during * 1e3,
            "ping_p99_before_ms": p99_before * 1e3, "ping_p99_during_ms": p99_during * 1e3,
            "worst_at_s": worst_at,
            "pings": pings}


def sync_part(args, root, report):
    primary = Node(args, root, "sync-primary").start(args.run_timeout)
    report.setdefault("argv", primary.server.argv)
    try:
        rss0 = rss_bytes(primary.server.proc.pid)
        capacity, size = reserve_sized(primary.conn, "BF", "big", args.sync_bytes, args.probe_capacity)
        items = [f"item:{i}" for i in range(args.sync_items)]
        add_items(primary.conn, "BF.MADD", "big", args.sync_items)
        rss1 = rss_bytes(primary.server.proc.pid)
        report["sync_filter"] = {"capacity": capacity, "size": size, "rss_growth": rss1 - rss0}
        progress(f"[3] BF.RESERVE big 0.01 {capacity}: Size {size:,} bytes; {args.sync_items:,} items "
              f"added; RSS grew {(rss1 - rss0) / MIB:,.0f} MiB")
        for rnd in range(args.rounds):
            save = save_round(primary, args.run_timeout)
            sync = sync_round(args, root, primary, rnd, items)
            report["save"].append(save)
            report["sync"].append(sync)
            progress(f"[3] round {rnd + 1}: SAVE {save['bytes']:,} bytes in {save['seconds']:.2f} s "
                  f"({save['bytes'] / MB / save['seconds']:,.0f} MB/s); full sync {sync['bytes']:,} "
                  f"bytes in {sync['seconds']:.2f} s ({sync['bytes'] / MB / sync['seconds']:,.0f} "
                  f"MB/s), worst PING {sync['ping_during_ms']:.1f} ms (before: "
                  f"{sync['ping_before_ms']:.1f} ms)")
    finally:
        primary.stop()


# ---------------------------------------------------------------------------
# Report.

def spread(values, digits=2, unit=""):
    """'median (min-max)' over rounds; the bare median for one round."""
    if not values:
        return "-"
    text = f"{med(values):,.{digits}f}{unit}"
    if len(values) > 1:
        text += f" ({min(values):,.{digits}f}-{max(values):,.{digits}f})"
    return text


def build_report(args, report, rb):
    lines = []
    w = lines.append
    f = report["facts"]
    w("# Replication benchmark\n")
    w(f"- date: {f['date']}; machine: nproc {f['nproc']}, {f['cpu']}, {f['mem']} RAM, kernel "
      f"{f['kernel']}; load average at start {', '.join(f'{x:.2f}' for x in f['load_start'])}, at "
      f"end {', '.join(f'{x:.2f}' for x in f['load_end'])} (shared machine: other jobs ran)")
    w(f"- bloomgate: {f['bloomgate']}; every server started as `{shlex.join(report['argv'])}`")
    w(f"- this run: `{shlex.join(['/usr/bin/python3'] + sys.argv)}`; {args.rounds} round(s), "
      "median (min-max over rounds)\n")

    if args.part_lag:
        report_lag(args, report["lag"], w)
    if args.part_throughput:
        report_throughput(args, report["throughput"], w)
    if args.part_sync:
        report_sync(args, report, w)
    if rb.commands:
        w("redis-benchmark commands (ports vary):\n")
        w("```sh")
        lines.extend(rb.commands)
        w("```")
    return "\n".join(lines)


def report_lag(args, lag, w):
    w(f"## Replication lag under load (1 replica; {args.lag_requests:,} BF.ADD at -P 16, "
      f"-r {args.lag_keyspace:,}; INFO sampled every {args.sample_period * 1e3:.0f} ms)\n")
    rows = []
    for unit, digits in (("bytes", 0), ("ms", 1)):
        for q, name in ((50, "p50"), (99, "p99"), (100, "max")):
            rows.append([f"lag {name} ({unit})", spread([r[unit][q] for r in lag], digits)])
    rows.append(["the replica caught up, seconds after the load", spread([r["catchup_s"] for r in lag], 2)])
    rows.append(["the replica's rate / the primary's (stream bytes per second)",
                 spread([r["replica_rate"] for r in lag], 2, "x")])
    rows.append(["stream bytes per BF.ADD", spread([r["bytes_per_add"] for r in lag], 1)])
    rows.append(["load req/s", spread([r["rps"] for r in lag], 0)])
    rows.append(["samples during the load", spread([r["samples"] for r in lag], 0)])
    w(table(["figure", "median (min-max)"], rows))
    w("")


def report_throughput(args, res, w):
    w(f"## The primary with 0, 1 and 2 replicas (-c 50, -r {args.keyspace:,}; "
      f"-P 16: {args.requests_p16:,} requests, -P 1: {args.requests_p1:,})\n")
    rows = []
    for label, _, pipeline in THROUGHPUT_ROWS:
        base = res[(label, pipeline, 0)]
        cells = [f"{label} -P {pipeline}", f"{med([r['rps'] for r in base]):,.0f}"]
        for count in (1, 2):
            cur = res[(label, pipeline, count)]
            cells.append(spread([c["rps"] / b["rps"] for c, b in zip(cur, base)], 2, "x"))
        cells.append(f"{med([r['cpu_us'] for r in base]):.2f}")
        for count in (1, 2):
            cur = res[(label, pipeline, count)]
            cells.append(spread([c["cpu_us"] / b["cpu_us"] for c, b in zip(cur, base) if b["cpu_us"] > 0],
                                2, "x"))
        cells.append(" / ".join(f"{med([r['replica_cpu_us'] for r in res[(label, pipeline, c)]]):.2f}"
                                for c in (1, 2)))
        cells.append(f"{med([r['stream_bytes'] for r in res[(label, pipeline, 1)]]):.1f}")
        rows.append(cells)
    w(table(["row", "req/s, 0 replicas", "req/s 1 / 0", "req/s 2 / 0", "primary CPU us/req, 0",
             "CPU/req 1 / 0", "CPU/req 2 / 0", "replicas' CPU us/req (1 / 2)",
             "stream bytes/req"], rows))
    w("")


def report_sync(args, report, w):
    fil, save, sync = report["sync_filter"], report["save"], report["sync"]
    w(f"## Full sync of a {fil['size'] / GIB:.2f} GiB Bloom filter beside SAVE\n")
    w(f"`BF.RESERVE big 0.01 {fil['capacity']}` (BF.INFO Size {fil['size']:,} bytes), "
      f"{args.sync_items:,} items by BF.MADD (the primary's RSS grew "
      f"{fil['rss_growth'] / MIB:,.0f} MiB); a fresh replica per round.\n")
    rows = [
        ["SAVE MB/s (INFO last_save_bytes / last_save_duration_ms, to disk)",
         spread([s["bytes"] / MB / s["seconds"] for s in save], 0)],
        ["full sync MB/s (snapshot bytes / REPLICAOF until link up and sync done)",
         spread([s["bytes"] / MB / s["seconds"] for s in sync], 0)],
        ["full sync / SAVE", spread([y["bytes"] / y["seconds"] / (x["bytes"] / x["seconds"])
                                     for x, y in zip(save, sync)], 2, "x")],
        ["full sync seconds", spread([s["seconds"] for s in sync], 2)],
        ["the primary's send, its log (s)", spread([s["send_seconds"] for s in sync], 2)],
        ["the replica's load, its log (s)", spread([s["load_seconds"] for s in sync], 2)],
        ["CPU seconds per GB: SAVE (the server)",
         spread([s["cpu"] / (s["bytes"] / 1e9) for s in save], 2)],
        ["CPU seconds per GB: full sync, primary / replica",
         f"{spread([s['primary_cpu'] / (s['bytes'] / 1e9) for s in sync], 2)} / "
         f"{spread([s['replica_cpu'] / (s['bytes'] / 1e9) for s in sync], 2)}"],
        ["snapshot bytes streamed", spread([s["bytes"] for s in sync], 0)],
        ["primary's worst PING during the sync (ms)", spread([s["ping_during_ms"] for s in sync], 1)],
        ["the worst PING started, seconds into the sync",
         ", ".join(f"{s['worst_at_s']:.1f}" for s in sync) + f" of {spread([s['seconds'] for s in sync], 1)}"],
        ["worst PING in as long a window before it (ms)", spread([s["ping_before_ms"] for s in sync], 1)],
        ["PING p99 during the sync / before it (ms)",
         f"{spread([s['ping_p99_during_ms'] for s in sync], 1)} / "
         f"{spread([s['ping_p99_before_ms'] for s in sync], 1)}"],
    ]
    w(table(["figure", "median (min-max)"], rows))
    w("")


def check_figures(args, report):
    """--smoke: every figure of the parts that ran present and sane."""
    lag = report["lag"]
    if args.part_lag and (not lag or any(r["samples"] < 1 or r["bytes_per_add"] <= 0 for r in lag)):
        raise BenchError(f"lag figures missing: {lag}")
    throughput = report["throughput"]
    if args.part_throughput and (len(throughput) != len(THROUGHPUT_ROWS) * len(REPLICA_COUNTS) or any(
            not rows or any(r["rps"] <= 0 for r in rows) for rows in throughput.values())):
        raise BenchError(f"throughput rows missing: {throughput}")
    if args.part_sync and (not report["sync"]
                           or any(s["bytes"] <= 0 or s["pings"] < 1 for s in report["sync"])):
        raise BenchError(f"full sync figures missing: {report['sync']}")


# ---------------------------------------------------------------------------

def run_all(args, root, rb, report):
    if args.part_lag or args.part_throughput:
        run_replica_groups(args, root, rb, report)
    if args.part_sync:
        sync_part(args, root, report)


def run_replica_groups(args, root, rb, report):
    """Parts 1 and 2, on three primaries with 0, 1 and 2 replicas."""
    nodes = []
    try:
        groups = {}
        for count in REPLICA_COUNTS:
            primary = Node(args, root, f"primary-{count}")
            nodes.append(primary)
            primary.start(args.run_timeout)
            replicas = []
            for i in range(count):
                replica = Node(args, root, f"replica-{count}-{i}")
                nodes.append(replica)
                replica.start(args.run_timeout)
                follow(replica, primary)
                replicas.append(replica)
            groups[count] = (primary, replicas)
        report["argv"] = nodes[0].server.argv
        for primary, replicas in groups.values():
            wait_caught_up(primary, replicas, SYNCED_DEADLINE_S, "the first sync")
            call_ok(primary.conn, "BF.RESERVE", "bf", "0.01", "10000000")
            wait_caught_up(primary, replicas, SYNCED_DEADLINE_S, "BF.RESERVE")
        progress(f"{len(nodes)} servers up, replicas in sync")

        primary, (replica,) = groups[1]
        for rnd in range(args.rounds if args.part_lag else 0):
            figures = lag_round(args, rb, primary, replica)
            report["lag"].append(figures)
            progress(f"[1] round {rnd + 1}: {figures['samples']} samples, lag bytes p50/p99/max "
                     f"{figures['bytes'][50]:,}/{figures['bytes'][99]:,}/{figures['bytes'][100]:,}, ms "
                     f"{figures['ms'][50]:.1f}/{figures['ms'][99]:.1f}/{figures['ms'][100]:.1f}; "
                     f"{figures['bytes_per_add']:.1f} stream bytes per BF.ADD")
        call_ok(primary.conn, "FLUSHALL")
        call_ok(primary.conn, "BF.RESERVE", "bf", "0.01", "10000000")
        wait_caught_up(primary, [replica], SYNCED_DEADLINE_S, "BF.RESERVE")

        if args.part_throughput:
            throughput_part(args, rb, groups, report["throughput"])
    finally:
        errors = []
        for node in nodes:
            try:
                node.stop()
            except (BenchError, OSError) as e:  # every node is stopped whatever one did
                errors.append(f"{node.name}: {e}")
        if errors and sys.exc_info()[0] is None:
            raise BenchError("; ".join(errors))


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=os.environ.get("BLOOMGATE_BIN", "build/server/bloomgate"))
    parser.add_argument("--redis-benchmark", default="redis-benchmark")
    parser.add_argument("--threads", type=int, default=0, help="bloomgate --threads (0 = one per core)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=("lag", "throughput", "sync"), help="run one part")
    parser.add_argument("--lag-requests", type=int, default=1_000_000)
    parser.add_argument("--lag-keyspace", type=int, default=10_000,
                        help="-r of the lag load: keys and items are each drawn from it")
    parser.add_argument("--sample-period", type=float, default=0.01, help="seconds between INFO samples")
    parser.add_argument("--keyspace", type=int, default=100_000_000, help="-r of the throughput rows")
    parser.add_argument("--requests-p16", type=int, default=600_000)
    parser.add_argument("--requests-p1", type=int, default=100_000)
    parser.add_argument("--sync-size", default="1g", help="the full-sync filter's Size (default 1g)")
    parser.add_argument("--bytes-per-item", type=int, default=1024,
                        help="filter bytes per item added before the sync")
    parser.add_argument("--catchup-deadline", type=float, default=60.0,
                        help="seconds a replica may take to catch up after a load")
    parser.add_argument("--run-timeout", type=float, default=600.0, help="seconds before a step fails")
    parser.add_argument("--data-dir", help="where to create the temporary directory (default: the "
                        "system temporary directory unless it is in memory)")
    parser.add_argument("--out", help="also write the report to this file")
    parser.add_argument("--smoke", action="store_true",
                        help="every part once at tiny sizes; exits non-zero on any failure")
    args = parser.parse_args(argv)
    args.sync_bytes = parse_size(args.sync_size)
    args.part_lag, args.part_throughput, args.part_sync = (
        args.only in (None, part) for part in ("lag", "throughput", "sync"))
    args.probe_capacity = 1_000_000
    args.pause_window = 3.0
    if args.smoke:
        args.rounds = 1
        args.lag_requests = min(args.lag_requests, 20_000)
        args.requests_p16 = min(args.requests_p16, 4_000)
        args.requests_p1 = min(args.requests_p1, 1_000)
        args.sync_bytes = min(args.sync_bytes, 8 * MIB)
        args.probe_capacity = 100_000
        args.pause_window = 0.2
        args.catchup_deadline = min(args.catchup_deadline, 30.0)
        args.run_timeout = min(args.run_timeout, 30.0)
    args.sync_items = max(1, args.sync_bytes // args.bytes_per_item)
    return args


def check_needs(args):
    """The server binary, redis-benchmark, and memory for the big filter on two servers."""
    needs = [(os.access(args.bin, os.X_OK), f"an executable bloomgate at {args.bin} (--bin)"),
             (shutil.which(args.redis_benchmark), f"{args.redis_benchmark} (Debian redis-tools)"),
             (mem_available_bytes() >= 3 * args.sync_bytes,
              f"MemAvailable of 3x --sync-size ({3 * args.sync_bytes / GIB:.1f} GiB; there is "
              f"{mem_available_bytes() / GIB:.1f})")]
    missing = [what for ok, what in needs if not ok]
    if missing:
        raise BenchError("missing: " + "; ".join(missing))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    started = time.monotonic()
    sys.setswitchinterval(0.0005)  # the probe threads: a GIL hand-off must not look like a pause
    args.bin = os.path.abspath(args.bin)
    report = {"lag": [], "throughput": {}, "save": [], "sync": []}
    try:
        check_needs(args)
        report["facts"] = facts = machine_facts()
        facts.update(date=time.strftime("%Y-%m-%d %H:%M:%S %Z"), load_start=os.getloadavg(),
                     bloomgate=version_of([args.bin, "--version"]))
        rb = RedisBenchmark(args)
        # SAVE writes to a real disk: not to a directory in memory.
        with tempfile.TemporaryDirectory(prefix="bloomgate-replication-",
                                         dir=pick_data_base(args)) as root:
            run_all(args, root, rb, report)
        facts["load_end"] = os.getloadavg()
        if args.smoke:
            check_figures(args, report)
    except BenchError as e:
        print(f"replication_bench: FAILED: {e}", file=sys.stderr)
        return 1
    text = build_report(args, report, rb)
    print("\n" + text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(f"\nreplication_bench{' --smoke' if args.smoke else ''}: OK "
          f"({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
