#!/usr/bin/python3
"""Durability benchmark: what snapshots and the append-only log cost.

Three measurements, each a ratio or a pair taken side by side in one run
(the machine is shared, so a lone figure means little):

1. Snapshot throughput. A Bloom filter of --big-size (default 1 GiB, sized
   with BF.INFO), 1M items added with BF.MADD; then SAVE (timed by the client
   and by INFO last_save_duration_ms) and BGSAVE (polled until done); then the
   server is restarted on the same directory twice, first after dropping the
   page cache (if permitted), then warm: last_load_duration_ms and the wall
   time from the process start to its first PONG. The cut of a BGSAVE pauses
   every keyed command while it records the keys (counting and cuckoo filters
   are then copied on write), so a counting filter of --cbf-size (default
   256 MiB) is saved too, and the pause is read
   from a keyed-read probe loop (and a PING loop) running during the BGSAVE,
   against the same loops' worst latency just before it.
2. BF.EXISTS latency during a BGSAVE of the big filter against none:
   redis-benchmark (-c 50 -P 1, --csv percentiles) sized to last about as
   long as the BGSAVE, the two runs alternating, 3 rounds.
3. Throughput cost of the log: BF.ADD and CF.ADD at -P 1 and -P 16 against 4
   servers started the same way except appendonly no / appendfsync no /
   everysec / always, round robin, 3 rounds; req/s and server CPU seconds per
   1M requests (utime+stime from /proc/PID/stat), as ratios to appendonly no.

The data directory is a fresh temporary directory on a real disk (the system
temporary directory unless that is tmpfs, else one inside the repository),
removed at the end; the report names its filesystem.

Usage (from the repository root):
  bench/durability_bench.py --bin build/server/bloomgate        # ~4 min
  bench/durability_bench.py --smoke --bin build/server/bloomgate # ~10 s, CI
  bench/durability_bench.py --only log --rounds 1               # part 3 only

The full run prints a report and writes it, with the machine, the filesystem
and the exact commands, to bench/results/durability-<date>.md (--out to
change, --no-write to skip). --smoke runs every part at tiny sizes, never
drops caches, writes only where --out says, and exits non-zero on any
failure or on a figure that is missing or not positive.
Python standard library only (plus server_bench.py next to it); needs
redis-benchmark.
"""

import argparse
import csv
import io
import os
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from server_bench import (BenchError, Conn, Server, free_port, machine_facts, version_of)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIB = 1 << 30
MIB = 1 << 20
MB = 1e6  # throughput is in MB/s (10^6 bytes), as the server's log prints it
RB_IGNORED_STDERR = ("WARNING: Could not fetch server CONFIG",)
# Filesystems that never reach a disk: fsync there measures nothing.
MEMORY_FILESYSTEMS = {"tmpfs", "ramfs", "devtmpfs", "hugetlbfs"}

LOG_CONFIGS = (  # (name, --appendonly, --appendfsync), the reference first
    ("appendonly no", "no", "everysec"),
    ("appendfsync no", "yes", "no"),
    ("appendfsync everysec", "yes", "everysec"),
    ("appendfsync always", "yes", "always"),
)


# ---------------------------------------------------------------------------
# Small helpers.

def med(values):
    return statistics.median(values) if values else float("nan")


def spread(values, digits=2, unit="x"):
    """'median (min–max)' of per-round values; the bare median for one."""
    if not values:
        return "—"
    m = med(values)
    if len(values) == 1:
        return f"{m:.{digits}f}{unit}"
    return f"{m:.{digits}f}{unit} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def num(v, digits=0):
    if v is None or v != v:
        return "—"
    return f"{v:,.{digits}f}"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def as_text(v):
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


def field_map(reply):
    """A flat [name, value, ...] reply (BF.INFO, CF.INFO) as a dict keyed by
    lower-case name."""
    return {as_text(reply[i]).lower(): reply[i + 1] for i in range(0, len(reply) - 1, 2)}


def info_section(conn, section):
    text = as_text(conn.call("INFO", section))
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v.strip()
    return out


def call_ok(conn, *args):
    reply = conn.call(*args)
    if reply not in ("OK", "Background saving started") and not isinstance(reply, int):
        raise BenchError(f"{args[0]}: unexpected reply {reply!r}")
    return reply


def filesystem_of(path):
    """(fstype, source, mount point) of the mount holding path, from
    /proc/self/mountinfo (the longest mount point that is a prefix)."""
    path = os.path.realpath(path)
    best = ("?", "?", "")
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, right = line.split(" - ", 1)
                mount_point = left.split()[4].replace("\\040", " ")
                fstype, source = right.split()[:2]
                inside = path == mount_point or path.startswith(mount_point.rstrip("/") + "/")
                if inside and len(mount_point) >= len(best[2]):
                    best = (fstype, source, mount_point)
    except OSError:
        pass
    return best


def mem_available_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def drop_caches():
    """sync + drop the page cache (needs root and a writable /proc/sys).
    Returns None on success, else why it was not done."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return None
    except OSError as e:
        return f"{type(e).__name__}: {e.strerror or e}"


# ---------------------------------------------------------------------------
# Servers.

class Bloomgate(Server):
    """server_bench's Server, with a start that reports how long the process
    took to answer its first PING (a snapshot load comes before the port
    opens, so this is the load as a client sees it)."""

    def __init__(self, name, argv, port, log_path):
        super().__init__(name, argv, port, log_path)
        self.started_at_log_byte = 0

    def start_timed(self, cwd, deadline_s, poll_s=0.01):
        self.started_at_log_byte = os.path.getsize(self.log_path) if os.path.exists(self.log_path) else 0
        self.log = open(self.log_path, "ab")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(self.argv, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        while True:
            if self.proc.poll() is not None:
                raise BenchError(f"{self.name} exited with {self.proc.returncode} at start-up; "
                                 f"log:\n{self.log_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64).startswith(b"+PONG"):
                        return time.monotonic() - t0
            except OSError:
                pass
            if time.monotonic() - t0 > deadline_s:
                raise BenchError(f"{self.name} not answering PING on port {self.port} after "
                                 f"{deadline_s:.0f}s; log:\n{self.log_text()}")
            time.sleep(poll_s)

    def log_since_start(self):
        with open(self.log_path, "rb") as f:
            f.seek(self.started_at_log_byte)
            return f.read().decode(errors="replace")

    def stop_checked(self):
        self.stop()
        if self.shutdown_error:
            raise BenchError(f"{self.name} {self.shutdown_error}")


def bloomgate_argv(args, port, data_dir, appendonly, appendfsync, dbfilename="dump.bgs"):
    return [args.bin, "--port", str(port), "--bind", "127.0.0.1", "--dir", data_dir,
            "--dbfilename", dbfilename, "--save", "", "--appendonly", appendonly,
            "--appendfsync", appendfsync, "--maxmemory", "8gb", "--max-filter-memory", "4gb",
            "--threads", str(args.threads)]


def make_server(args, root, name, appendonly, appendfsync):
    data_dir = os.path.join(root, name.replace(" ", "-"))
    os.makedirs(data_dir)
    port = free_port()
    argv = bloomgate_argv(args, port, data_dir, appendonly, appendfsync)
    return Bloomgate(name, argv, port, os.path.join(root, name.replace(" ", "-") + ".log")), data_dir


# ---------------------------------------------------------------------------
# Load generation and probes.

class RedisBenchmark:
    def __init__(self, args):
        self.path = shutil.which(args.redis_benchmark) or args.redis_benchmark
        self.timeout = args.run_timeout
        self.commands = []  # every distinct command line, for the report (ports vary)

    def argv(self, port, n, pipeline, keyspace, command, clients=50):
        return [self.path, "-h", "127.0.0.1", "-p", str(port), "-c", str(clients), "-n", str(n),
                "-P", str(pipeline), "-r", str(keyspace), "--precision", "3", "--csv", "-q"] + command

    def note(self, argv):
        shown = shlex.join(["redis-benchmark"] + argv[1:])
        shown = re.sub(r"-p \d+", "-p PORT", shown)
        shown = re.sub(r"-n \d+", "-n N", shown)
        if shown not in self.commands:
            self.commands.append(shown)

    def start(self, argv):
        self.note(argv)
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)

    def finish(self, proc, argv, t0):
        try:
            out, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise BenchError(f"redis-benchmark timed out after {self.timeout}s: {shlex.join(argv)}")
        wall = time.monotonic() - t0
        out = out.decode(errors="replace")
        err = "\n".join(line for line in err.decode(errors="replace").splitlines()
                        if line.strip() and not line.startswith(RB_IGNORED_STDERR))
        if proc.returncode != 0 or err:
            raise BenchError(f"redis-benchmark failed ({proc.returncode}): {shlex.join(argv)}\n"
                             f"{out[-500:]}\n{err[:500]}")
        row = None
        for rec in csv.DictReader(io.StringIO("\n".join(l for l in out.splitlines() if l.startswith('"')))):
            row = rec
        if row is None or float(row.get("rps", 0) or 0) <= 0:
            raise BenchError(f"no result from {shlex.join(argv)}: {out[:300]!r}")
        return {"rps": float(row["rps"]), "p50": float(row["p50_latency_ms"]),
                "p99": float(row["p99_latency_ms"]), "max": float(row["max_latency_ms"]),
                "wall": wall}

    def run(self, argv):
        t0 = time.monotonic()
        return self.finish(self.start(argv), argv, t0)


class Probe:
    """A thread sending one command in a loop on its own connection, pausing
    `gap_s` between round trips (so that it barely loads the server it
    watches), and keeping (start time, latency) of every round trip."""

    def __init__(self, port, command, gap_s=0.001):
        self.conn = Conn(port, timeout=300)
        self.command = command
        self.gap_s = gap_s
        self.samples = []
        self.error = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        try:
            while not self._stop.is_set():
                t = time.monotonic()
                self.conn.call(*self.command)
                self.samples.append((t, time.monotonic() - t))
                time.sleep(self.gap_s)
        except Exception as e:  # reported by stop()
            self.error = e

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=300)
        self.conn.close()
        if self.error:
            raise BenchError(f"probe {' '.join(self.command)} failed: {self.error}")

    def worst_before(self, t_from, t_at):
        """Largest latency of the round trips that started at or after
        t_from and ended before t_at; and how many there were."""
        lats = [lat for t, lat in self.samples if t >= t_from and t + lat < t_at]
        return (max(lats) if lats else float("nan")), len(lats)

    def worst_from(self, t_at, t_to):
        """Largest latency of the round trips still running at t_at or
        started before t_to; and how many there were."""
        lats = [lat for t, lat in self.samples if t < t_to and t + lat >= t_at]
        return (max(lats) if lats else float("nan")), len(lats)


def wait_bgsave(conn, deadline_s, poll_s=0.02):
    """Polls INFO until no BGSAVE runs; returns the time it was seen done."""
    t0 = time.monotonic()
    while True:
        info = info_section(conn, "persistence")
        if info.get("rdb_bgsave_in_progress") == "0":
            if info.get("rdb_last_bgsave_status") != "ok":
                raise BenchError(f"BGSAVE failed: INFO persistence {info}")
            return time.monotonic()
        if time.monotonic() - t0 > deadline_s:
            raise BenchError(f"BGSAVE still running after {deadline_s:.0f}s")
        time.sleep(poll_s)


# ---------------------------------------------------------------------------
# Part 1 and 2: the big filter.

def disk_reference(dir_path, nbytes, drop):
    """The filesystem's own rates next to the snapshot: a file of nbytes
    written in 4 MiB pieces and fdatasync'd, then read back cold (page cache
    dropped, when `drop` and permitted) and warm, 4 MiB at a time."""
    path = os.path.join(dir_path, "disk-reference.bin")
    piece = os.urandom(4 * MIB)
    out = {"bytes": nbytes}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        t0 = time.monotonic()
        written = 0
        while written < nbytes:
            written += os.write(fd, piece[:min(len(piece), nbytes - written)])
        os.fdatasync(fd)
        out["write_s"] = time.monotonic() - t0
    finally:
        os.close(fd)
    buf = bytearray(4 * MIB)
    try:
        for kind in ("cold", "warm"):
            if kind == "cold":
                out["dropped"] = drop and drop_caches() is None
            t0 = time.monotonic()
            with open(path, "rb", buffering=0) as f:
                while f.readinto(buf):
                    pass
            out[kind + "_read_s"] = time.monotonic() - t0
    finally:
        os.remove(path)
    return out

def reserve_sized(conn, family, key, target_bytes, probe_capacity):
    """Reserves `key` at 1% with the capacity whose INFO Size is closest to
    target_bytes (Size is linear in capacity: measured on a probe key)."""
    reserve, info = f"{family}.RESERVE", f"{family}.INFO"
    probe = key + ":sizing-probe"
    call_ok(conn, reserve, probe, "0.01", str(probe_capacity))
    probe_size = field_map(conn.call(info, probe))["size"]
    conn.call("DEL", probe)
    capacity = int(probe_capacity * target_bytes / probe_size)
    call_ok(conn, reserve, key, "0.01", str(capacity))
    size = field_map(conn.call(info, key))["size"]
    if abs(size / target_bytes - 1) > 0.05:
        raise BenchError(f"{info} {key} Size = {size}, wanted about {target_bytes}")
    return capacity, size


def add_items(conn, command, key, count, batch=1000):
    commands = []
    for start in range(0, count, batch):
        commands.append([command, key] + [f"item:{i}" for i in range(start, min(start + batch, count))])
    replies = conn.pipeline(commands, chunk=20)
    bad = [r for r in replies if isinstance(r, BenchError)]
    if bad:
        raise BenchError(f"{command} failed: {bad[0]}")


def measure_pause(conn, port, key_command, window_s, deadline_s):
    """A BGSAVE with two probe loops running (a keyed read and PING):
    worst latency during the BGSAVE against the worst of an equal window just
    before it. Returns a dict of figures."""
    keyed = Probe(port, key_command).start()
    ping = Probe(port, ["PING"]).start()
    try:
        time.sleep(window_s)
        t0 = time.monotonic()
        call_ok(conn, "BGSAVE")
        t_cut = time.monotonic()
        t_end = wait_bgsave(conn, deadline_s)
        # The during-window is at least as long as the before-window, so a
        # short BGSAVE is not favoured by a shorter window.
        t_to = max(t_end, t0 + window_s)
        while time.monotonic() < t_to:
            time.sleep(0.01)
    finally:
        keyed.stop()
        ping.stop()
    kb, kb_n = keyed.worst_before(t0 - window_s, t0)
    kd, kd_n = keyed.worst_from(t0, t_to)
    pb, _ = ping.worst_before(t0 - window_s, t0)
    pd, _ = ping.worst_from(t0, t_to)
    if kb_n == 0 or kd_n == 0:
        raise BenchError("the probe loop made no round trips")
    return {"bgsave_reply_s": t_cut - t0, "bgsave_wall_s": t_end - t0,
            "keyed_before_s": kb, "keyed_during_s": kd, "ping_before_s": pb, "ping_during_s": pd,
            "keyed_round_trips": kd_n}


def part_big(args, root, rb, report):
    """Part 1 (save/load of the big filter, the counting-filter pause) and
    part 2 (BF.EXISTS p99 during BGSAVE)."""
    server, data_dir = make_server(args, root, "snapshot", "no", "everysec")
    report["argv"]["snapshot"] = server.argv
    deadline = args.run_timeout
    out = report["big"] = {}
    conn = None
    try:
        server.start_timed(root, deadline)
        conn = Conn(server.port, timeout=deadline)
        capacity, size = reserve_sized(conn, "BF", "big", args.big_bytes, args.probe_capacity)
        out["capacity"], out["size"] = capacity, size
        print(f"[1] BF.RESERVE big 0.01 {capacity}: Size {size:,} bytes", flush=True)
        t0 = time.monotonic()
        add_items(conn, "BF.MADD", "big", args.items)
        out["madd_s"] = time.monotonic() - t0
        out["rss_mib"] = server.rss_mib()
        may_drop = not (args.smoke or args.no_drop_caches)
        disk = out["disk"] = disk_reference(data_dir, args.disk_ref_bytes, may_drop)
        print(f"[1] disk reference, {disk['bytes'] / MIB:.0f} MiB: write+fdatasync "
              f"{disk['bytes'] / MB / disk['write_s']:,.0f} MB/s, read "
              f"{'cold' if disk['dropped'] else 'cached'} {disk['bytes'] / MB / disk['cold_read_s']:,.0f} "
              f"MB/s, warm {disk['bytes'] / MB / disk['warm_read_s']:,.0f} MB/s", flush=True)

        # SAVE, then BGSAVE (with the probe loops: the cut copies no filter bytes).
        t0 = time.monotonic()
        call_ok(conn, "SAVE")
        out["save_wall_s"] = time.monotonic() - t0
        info = info_section(conn, "persistence")
        out["save_bytes"] = int(info["last_save_bytes"])
        out["save_ms"] = int(info["last_save_duration_ms"])
        print(f"[1] SAVE: {out['save_bytes']:,} bytes, {out['save_ms']} ms "
              f"(client {out['save_wall_s']:.2f} s)", flush=True)
        pause = measure_pause(conn, server.port, ["BF.EXISTS", "big", "probe"],
                              args.pause_window, deadline)
        info = info_section(conn, "persistence")
        out["bgsave_ms"] = int(info["last_save_duration_ms"])
        out["bgsave_bytes"] = int(info["last_save_bytes"])
        out["bgsave_wall_s"] = pause["bgsave_wall_s"]
        out["bloom_pause"] = pause
        print(f"[1] BGSAVE: {out['bgsave_bytes']:,} bytes, {out['bgsave_ms']} ms "
              f"(reply after {pause['bgsave_reply_s'] * 1e3:.1f} ms; keyed read worst "
              f"{pause['keyed_before_s'] * 1e3:.1f} ms before, {pause['keyed_during_s'] * 1e3:.1f} ms during)",
              flush=True)
        conn.close()
        conn = None
        server.stop_checked()
        snapshot = os.path.join(data_dir, "dump.bgs")
        out["file_bytes"] = os.path.getsize(snapshot)

        # Loads: cold (page cache dropped, if permitted), then warm.
        out["loads"] = []
        for kind in ("cold", "warm"):
            why_not = None
            if kind == "cold":
                why_not = "--smoke" if args.smoke else ("--no-drop-caches" if args.no_drop_caches
                                                        else drop_caches())
                out["drop_caches"] = why_not
            ready_s = server.start_timed(root, deadline)
            conn = Conn(server.port, timeout=deadline)
            info = info_section(conn, "persistence")
            load_ms = int(info["last_load_duration_ms"])
            m = re.search(r"loaded snapshot .*", server.log_since_start())
            load = {"kind": kind if why_not is None else "after the save (cache not dropped)",
                    "ready_s": ready_s, "load_ms": load_ms, "log": m.group(0).strip() if m else "",
                    "keys": int(info.get("rdb_last_load_keys_loaded", "0"))}
            out["loads"].append(load)
            print(f"[1] load ({load['kind']}): {load_ms} ms in the server, first PONG after "
                  f"{ready_s:.2f} s", flush=True)
            check = conn.pipeline([["BF.EXISTS", "big", f"item:{i}"]
                                   for i in range(0, args.items, max(1, args.items // 1000))])
            if any(r != 1 for r in check) or load["keys"] != 1:
                raise BenchError(f"the loaded snapshot lost items or keys: {load}")
            if kind == "cold":
                conn.close()
                conn = None
                server.stop_checked()

        part_p99(args, conn, server, rb, out)

        # The counting filter: its cut is a copy made while keyed commands wait.
        conn.call("FLUSHALL")
        capacity, size = reserve_sized(conn, "CBF", "cbf", args.cbf_bytes, args.probe_capacity)
        out["cbf_capacity"], out["cbf_size"] = capacity, size
        add_items(conn, "CBF.MADD", "cbf", min(args.items, 100_000))
        print(f"[1] CBF.RESERVE cbf 0.01 {capacity}: Size {size:,} bytes", flush=True)
        out["cbf_pauses"] = []
        for _ in range(args.rounds):
            p = measure_pause(conn, server.port, ["CBF.EXISTS", "cbf", "probe"], args.pause_window,
                              deadline)
            info = info_section(conn, "persistence")
            p["save_bytes"], p["save_ms"] = int(info["last_save_bytes"]), int(info["last_save_duration_ms"])
            out["cbf_pauses"].append(p)
            print(f"[1] CBF BGSAVE: reply after {p['bgsave_reply_s'] * 1e3:.1f} ms; keyed read worst "
                  f"{p['keyed_before_s'] * 1e3:.1f} ms before, {p['keyed_during_s'] * 1e3:.1f} ms during; "
                  f"PING worst {p['ping_before_s'] * 1e3:.1f} / {p['ping_during_s'] * 1e3:.1f} ms", flush=True)
        out["saves_log"] = re.findall(r"snapshot \S+ written.*", server.log_since_start())
        conn.close()
        conn = None
        server.stop_checked()
    finally:
        if conn is not None:
            conn.close()
        server.stop()


def part_p99(args, conn, server, rb, out):
    """BF.EXISTS big at -P 1: a run started right after BGSAVE returns
    against one with no save, alternating, args.rounds pairs."""
    command = ["BF.EXISTS", "big", "__rand_int__"]
    # Size -n so a run lasts about as long as the BGSAVE measured above.
    calib = rb.run(rb.argv(server.port, args.p99_calibration, 1, 1_000_000, command))
    n = int(calib["rps"] * max(out["save_ms"] / 1e3, 0.5))
    n = max(args.p99_calibration, min(n, args.max_requests))
    out["p99_n"] = n
    runs = out["p99_runs"] = {"none": [], "bgsave": []}
    for rnd in range(args.rounds):
        order = ("none", "bgsave") if rnd % 2 == 0 else ("bgsave", "none")
        for kind in order:
            argv = rb.argv(server.port, n, 1, 1_000_000, command)
            if kind == "none":
                r = rb.run(argv)
            else:
                r = run_during_bgsave(conn, rb, argv, args.run_timeout)
            runs[kind].append(r)
            extra = (f", BGSAVE {r['bgsave_s']:.2f} s, overlap {r['overlap'] * 100:.0f}%"
                     if kind == "bgsave" else "")
            print(f"[2] round {rnd + 1}/{args.rounds} BF.EXISTS -P 1, {kind:6}: {r['rps']:>10,.0f} req/s "
                  f"p50 {r['p50']:.3f} p99 {r['p99']:.3f} max {r['max']:.3f} ms ({r['wall']:.2f} s{extra})",
                  flush=True)


def run_during_bgsave(conn, rb, argv, deadline_s):
    t0 = time.monotonic()
    call_ok(conn, "BGSAVE")
    t_bench = time.monotonic()
    proc = rb.start(argv)
    seen_running, t_done = False, None
    while proc.poll() is None:
        info = info_section(conn, "persistence")
        now = time.monotonic()
        if info.get("rdb_bgsave_in_progress") == "1":
            seen_running = True
        elif t_done is None:
            t_done = now
        time.sleep(0.05)
    r = rb.finish(proc, argv, t_bench)
    t_bench_end = t_bench + r["wall"]
    if t_done is None:
        t_done = wait_bgsave(conn, deadline_s)
    elif info_section(conn, "persistence").get("rdb_last_bgsave_status") != "ok":
        raise BenchError("BGSAVE during the benchmark failed")
    if not seen_running:
        raise BenchError("rdb_bgsave_in_progress was never 1 while the benchmark ran")
    r["bgsave_s"] = t_done - t0
    r["overlap"] = max(0.0, min(t_done, t_bench_end) - t_bench) / max(r["wall"], 1e-9)
    return r


# ---------------------------------------------------------------------------
# Part 3: the log's cost.

def part_log(args, root, rb, report):
    servers, conns = [], []
    out = report["log"] = {"runs": {}, "n": {}, "servers": {}}
    try:
        for name, appendonly, fsync in LOG_CONFIGS:
            s, _ = make_server(args, root, "log " + name, appendonly, fsync)
            s.start_timed(root, args.run_timeout)
            servers.append(s)
            report["argv"]["log " + name] = s.argv
            c = Conn(s.port, timeout=args.run_timeout)
            conns.append(c)
            call_ok(c, "BF.RESERVE", "bf", "0.01", "10000000")
            call_ok(c, "CF.RESERVE", "cf", str(args.cf_capacity))
        rows = [("BF.ADD", ["BF.ADD", "bf", "__rand_int__"]), ("CF.ADD", ["CF.ADD", "cf", "__rand_int__"])]
        # Distinct items: CF.ADD stores a repeated item again, and a cuckoo
        # bucket pair holds only a few copies of one fingerprint.
        keyspace = 100_000_000
        for label, command in rows:
            for p in args.pipelines:
                for i, s in enumerate(servers):
                    if args.smoke:
                        n = args.smoke_requests * (4 if p > 1 else 1)
                    else:
                        n0 = args.log_calibration * (4 if p > 1 else 1)
                        r = rb.run(rb.argv(s.port, n0, p, keyspace, command))
                        n = max(n0, min(int(r["rps"] * args.seconds), args.max_requests))
                    out["n"][(label, p, i)] = n
        for rnd in range(args.rounds):
            for label, command in rows:
                for p in args.pipelines:
                    k = len(servers)
                    for i in [(rnd + j) % k for j in range(k)]:  # a different first server each round
                        s = servers[i]
                        argv = rb.argv(s.port, out["n"][(label, p, i)], p, keyspace, command)
                        cpu0 = s.cpu_seconds()
                        r = rb.run(argv)
                        r["cpu"] = s.cpu_seconds() - cpu0
                        r["n"] = out["n"][(label, p, i)]
                        r["cpu_per_m"] = r["cpu"] / r["n"] * 1e6
                        if not s.alive():
                            raise BenchError(f"{s.name} died; log:\n{s.log_text()}")
                        out["runs"].setdefault((label, p, i), []).append(r)
                        print(f"[3] round {rnd + 1}/{args.rounds} {label} -P {p:<2} {LOG_CONFIGS[i][0]:21} "
                              f"{r['rps']:>10,.0f} req/s  p99 {r['p99']:.3f} ms  CPU {r['cpu_per_m']:.2f} s/1M",
                              flush=True)
        for i, (s, c) in enumerate(zip(servers, conns)):
            info = info_section(c, "persistence")
            out["servers"][i] = {"aof_bytes": int(info.get("aof_current_size", "0")),
                                 "saves": int(info.get("rdb_saves", "0")),
                                 "aof_status": info.get("aof_last_write_status", "?")}
            if info.get("aof_last_write_status", "ok") != "ok":
                raise BenchError(f"{s.name}: the log reports a write error: {info}")
    finally:
        for c in conns:
            c.close()
        for s in servers:
            s.stop()
    for s in servers:
        if s.shutdown_error:
            raise BenchError(f"{s.name} {s.shutdown_error}")


# ---------------------------------------------------------------------------
# Report.

def build_report(args, report):
    lines = []
    w = lines.append
    f = report["facts"]
    w("# Durability benchmark: snapshots and the append-only log\n")
    w(f"- date: {f['date']}")
    w(f"- machine: nproc {f['nproc']}, {f['cpu']}, {f['mem']} RAM, kernel {f['kernel']}; "
      f"load average {', '.join(f'{x:.2f}' for x in f['load_start'])} at the start, "
      f"{', '.join(f'{x:.2f}' for x in f.get('load_end', (0, 0, 0)))} at the end (shared machine)")
    fs = f["filesystem"]
    w(f"- data directory: a fresh directory under `{f['data_base']}`, filesystem **{fs[0]}** on "
      f"`{fs[1]}` (mounted at `{fs[2]}`), removed afterwards")
    w(f"- bloomgate: {f['bloomgate']}; load generator: {f['redis_benchmark']}, one process on the "
      "same 2 cores as the server")
    w(f"- this run: `{shlex.join(['bench/durability_bench.py'] + sys.argv[1:])}` "
      f"({args.rounds} round(s), {report['elapsed_s']:.0f} s)")
    w("")

    big = report.get("big")
    if big:
        w("## 1. Snapshot save and load\n")
        w(f"`BF.RESERVE big 0.01 {big['capacity']}` (BF.INFO Size {big['size']:,} bytes = "
          f"{big['size'] / GIB:.3f} GiB), {args.items:,} items added with `BF.MADD` "
          f"(1,000 per command, pipelined); server RSS {big['rss_mib']:,.0f} MiB; snapshot file "
          f"{big['file_bytes']:,} bytes. MB = 10^6 bytes. Save figures are INFO "
          "`last_save_duration_ms` (writing the file, fsync, rename, directory fsync); "
          "load figures are INFO `last_load_duration_ms` and, for what a client sees, the wall time "
          "from starting the process to its first PONG (polled every 10 ms).\n")
        rows = [
            ["SAVE", num(big["save_bytes"]), f"{big['save_ms']:,} ms",
             f"**{big['save_bytes'] / MB / (max(big['save_ms'], 1) / 1e3):,.0f}**",
             f"client: {big['save_wall_s']:.2f} s for the SAVE command"],
            ["BGSAVE", num(big["bgsave_bytes"]), f"{big['bgsave_ms']:,} ms",
             f"**{big['bgsave_bytes'] / MB / (max(big['bgsave_ms'], 1) / 1e3):,.0f}**",
             f"reply after {big['bloom_pause']['bgsave_reply_s'] * 1e3:.1f} ms; done (INFO polled) after "
             f"{big['bgsave_wall_s']:.2f} s"],
        ]
        for load in big["loads"]:
            rows.append([f"load, {load['kind']}", num(big["file_bytes"]), f"{load['load_ms']:,} ms",
                         f"**{big['file_bytes'] / MB / (max(load['load_ms'], 1) / 1e3):,.0f}**",
                         f"first PONG {load['ready_s']:.2f} s after the process start "
                         f"({big['file_bytes'] / MB / load['ready_s']:,.0f} MB/s)"])
        disk = big["disk"]
        mbps = lambda key: disk["bytes"] / MB / disk[key]  # noqa: E731
        rows.append([f"(reference) the filesystem, a {disk['bytes'] / MIB:,.0f} MiB file", num(disk["bytes"]),
                     f"write {disk['write_s'] * 1e3:,.0f} ms",
                     f"write+fdatasync {mbps('write_s'):,.0f}; read "
                     f"{'cold' if disk['dropped'] else 'cached'} {mbps('cold_read_s'):,.0f}, "
                     f"warm {mbps('warm_read_s'):,.0f}",
                     "Python os.write / readinto in 4 MiB pieces, same directory, just before the SAVE"])
        w(table(["step", "bytes", "server time", "MB/s", "also"], rows))
        w("")
        cold, warm = big["loads"][0], big["loads"][1]
        why = big.get("drop_caches")
        w("Page cache before the first load: " + (
            "dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`, permitted)." if why is None
            else f"**not** dropped ({why}); both loads read a cached file."))
        save_mbps = big["save_bytes"] / MB / (max(big["save_ms"], 1) / 1e3)
        load_mbps = lambda load: big["file_bytes"] / MB / (max(load["load_ms"], 1) / 1e3)  # noqa: E731
        w(f"Ratios in this run: BGSAVE / SAVE time {big['bgsave_ms'] / max(big['save_ms'], 1):.2f}x; "
          f"{cold['kind']} load / warm load time {cold['load_ms'] / max(warm['load_ms'], 1):.2f}x; "
          f"SAVE MB/s / the filesystem's write+fdatasync MB/s **{save_mbps / mbps('write_s'):.2f}x**; "
          f"load MB/s / the filesystem's read MB/s **{load_mbps(cold) / mbps('cold_read_s'):.2f}x** "
          f"({cold['kind']}), **{load_mbps(warm) / mbps('warm_read_s'):.2f}x** (warm).\n")
        w("Server log lines:\n")
        w("```")
        for load in big["loads"]:
            w(load["log"])
        for line in big.get("saves_log", [])[:1]:
            w(line)
        w("```\n")

        w("### The cut's pause\n")
        w("A BGSAVE's cut holds every key lock while it records the keys and starts a new log "
          "generation; no filter bytes are copied then (Bloom filters are written in place, "
          "counting and cuckoo filters are copied on their first write after the cut or by "
          "the saver). Two probe loops run on their own connections "
          "during the BGSAVE: a keyed read (`BF.EXISTS big probe` / `CBF.EXISTS cbf probe`, "
          "which waits for the cut) and `PING` (takes no key lock), each pausing 1 ms between "
          "round trips. Worst round trip in flight during the BGSAVE against the worst completed "
          f"in the {args.pause_window:.1f} s just before it, same loop; \"reply\" is how long the "
          "BGSAVE command itself took (the cut).\n")
        cbf = big.get("cbf_pauses", [])
        rows = []
        bp = big["bloom_pause"]
        rows.append([f"BF {big['size'] / MIB:,.0f} MiB (1 run)", f"{bp['bgsave_reply_s'] * 1e3:.1f}",
                     f"{bp['keyed_during_s'] * 1e3:.1f}", f"{bp['keyed_before_s'] * 1e3:.1f}",
                     f"{bp['keyed_during_s'] / bp['keyed_before_s']:.1f}x",
                     f"{bp['ping_during_s'] * 1e3:.1f} / {bp['ping_before_s'] * 1e3:.1f}"])
        if cbf:
            rows.append([f"CBF {big['cbf_size'] / MIB:,.0f} MiB (median of {len(cbf)})",
                         spread([p["bgsave_reply_s"] * 1e3 for p in cbf], 1, ""),
                         spread([p["keyed_during_s"] * 1e3 for p in cbf], 1, ""),
                         spread([p["keyed_before_s"] * 1e3 for p in cbf], 1, ""),
                         spread([p["keyed_during_s"] / p["keyed_before_s"] for p in cbf], 1),
                         f"{med([p['ping_during_s'] for p in cbf]) * 1e3:.1f} / "
                         f"{med([p['ping_before_s'] for p in cbf]) * 1e3:.1f}"])
        w(table(["filter", "BGSAVE reply ms", "keyed read worst during, ms", "worst before, ms",
                 "during / before", "PING worst during / before, ms"], rows))
        if cbf:
            w(f"\nCBF: `CBF.RESERVE cbf 0.01 {big['cbf_capacity']}` (CBF.INFO Size {big['cbf_size']:,}), "
              f"{min(args.items, 100_000):,} items; its BGSAVE wrote {med([p['save_bytes'] for p in cbf]):,.0f} "
              f"bytes in {med([p['save_ms'] for p in cbf]):,.0f} ms (median).")
        w("")

        runs = big.get("p99_runs")
        if runs:
            w("## 2. BF.EXISTS latency during a BGSAVE of the big filter\n")
            w(f"redis-benchmark `-c 50 -P 1 -r 1000000 -n {big['p99_n']:,}` on `BF.EXISTS big "
              "__rand_int__` (nearly all negative), sized to last about as long as the SAVE above "
              "(a BGSAVE under this load takes longer, so the run falls inside it); "
              "the `bgsave` run starts right after the BGSAVE command returns, and INFO "
              "`rdb_bgsave_in_progress` was checked to be 1 while it ran. Runs alternate "
              f"(none, bgsave / bgsave, none ...), {len(runs['none'])} pairs.\n")
            rows = []
            for kind in ("none", "bgsave"):
                rs = runs[kind]
                rows.append([kind, num(med([r["rps"] for r in rs])), f"{med([r['p50'] for r in rs]):.3f}",
                             f"**{med([r['p99'] for r in rs]):.3f}**", f"{med([r['max'] for r in rs]):.3f}",
                             ", ".join(f"{r['p99']:.3f}" for r in rs)])
            w(table(["save running", "req/s", "p50 ms", "p99 ms", "max ms", "p99 per round"], rows))
            pairs = list(zip(runs["bgsave"], runs["none"]))
            w("")
            w(f"- p99 with BGSAVE / without (per pair): **{spread([a['p99'] / b['p99'] for a, b in pairs])}**")
            w(f"- p50 ratio {spread([a['p50'] / b['p50'] for a, b in pairs])}; req/s ratio "
              f"{spread([a['rps'] / b['rps'] for a, b in pairs])}")
            overlaps = ", ".join("%.0f%%" % (r["overlap"] * 100) for r in runs["bgsave"])
            took = ", ".join("%.1f" % r["bgsave_s"] for r in runs["bgsave"])
            w(f"- share of each `bgsave` run that overlapped the save: {overlaps} "
              f"(BGSAVE took {took} s)")
            w("")

    log = report.get("log")
    if log and log["runs"]:
        w("## 3. Throughput cost of the append-only log\n")
        w(f"Four servers started the same way except for `--appendonly` / `--appendfsync`, each with "
          f"`BF.RESERVE bf 0.01 10000000` and `CF.RESERVE cf {args.cf_capacity}`; redis-benchmark "
          f"`-c 50 -r 100000000` at -P 1 and -P 16, -n sized per server so a run takes about "
          f"{args.seconds:.1f} s; the servers take turns (a different one first each round), "
          f"{args.rounds} round(s). Ratios are taken within a round against `appendonly no`, then "
          "the median (min–max) over rounds. CPU: utime+stime of the server (all threads) per "
          "1M requests.\n")
        rows = []
        for label in ("BF.ADD", "CF.ADD"):
            for p in args.pipelines:
                base = log["runs"].get((label, p, 0), [])
                for i, (name, _, _) in enumerate(LOG_CONFIGS):
                    rs = log["runs"].get((label, p, i), [])
                    if not rs:
                        continue
                    rps_ratio = [a["rps"] / b["rps"] for a, b in zip(rs, base)]
                    cpu_ratio = [a["cpu_per_m"] / b["cpu_per_m"] for a, b in zip(rs, base) if b["cpu_per_m"]]
                    rows.append([label, str(p), name, num(med([r["rps"] for r in rs])),
                                 "1 (reference)" if i == 0 else f"**{spread(rps_ratio)}**",
                                 f"{med([r['p99'] for r in rs]):.3f}",
                                 f"{med([r['cpu_per_m'] for r in rs]):.2f}",
                                 "1 (reference)" if i == 0 else spread(cpu_ratio)])
        w(table(["command", "-P", "server", "req/s", "req/s vs appendonly no", "p99 ms",
                 "CPU s / 1M req", "CPU vs appendonly no"], rows))
        w("")
        w("At the end: " + "; ".join(
            f"{LOG_CONFIGS[i][0]}: log {v['aof_bytes'] / MIB:,.1f} MiB, {v['saves']} automatic "
            "snapshot(s) (log rewrites)" for i, v in sorted(log["servers"].items())) + ".\n")

    w("## Commands\n")
    w("Servers (ports and directories are picked fresh each run):\n")
    w("```sh")
    for name, argv in report["argv"].items():
        shown = [a if a != args.bin else "bloomgate" for a in argv]
        w(f"# {name}")
        w(shlex.join(shown))
    w("```\n")
    w("Load (every distinct redis-benchmark line; N as stated above):\n")
    w("```sh")
    for c in report["commands"]:
        w(c)
    w("```\n")
    if big:
        w("Set-up sent by the script: `BF.RESERVE big 0.01 <capacity>` (capacity from the Size of "
          f"`BF.RESERVE big:sizing-probe 0.01 {args.probe_capacity}`, scaled), "
          f"`BF.MADD big item:0 … item:999` × {args.items // 1000:,}, `SAVE`, `BGSAVE`, "
          "`INFO persistence` polled every 20 ms until `rdb_bgsave_in_progress:0`; "
          "before the cold load: `sync; echo 3 > /proc/sys/vm/drop_caches`.")
    return "\n".join(lines)


# ---------------------------------------------------------------------------

def check_figures(report):
    """--smoke: every part produced positive numbers."""
    figures = []
    big = report.get("big") or {}
    if "big" in report:
        figures += [big.get("save_ms"), big.get("bgsave_ms"), big.get("save_bytes")]
        figures += [l["load_ms"] + 1 for l in big.get("loads", [])]  # a tiny load can take 0 ms
        figures += [l["ready_s"] for l in big.get("loads", [])]
        runs = big.get("p99_runs") or {}
        figures += [r["p99"] for k in ("none", "bgsave") for r in runs.get(k, [])] or [None]
        figures += [p["keyed_during_s"] for p in big.get("cbf_pauses", [])] or [None]
    if "log" in report:
        runs = report["log"]["runs"]
        want = len(LOG_CONFIGS) * 2 * 2
        if len(runs) != want:
            figures.append(None)
        figures += [r["rps"] for rs in runs.values() for r in rs]
    bad = [x for x in figures if x is None or x != x or x <= 0]
    if bad or not figures:
        raise BenchError(f"missing or non-positive figures: {len(bad)} of {len(figures)}")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=os.environ.get("BLOOMGATE_BIN", "build/server/bloomgate"),
                        help="bloomgate binary (default: $BLOOMGATE_BIN or build/server/bloomgate)")
    parser.add_argument("--redis-benchmark", default="redis-benchmark")
    parser.add_argument("--threads", type=int, default=0, help="bloomgate --threads (0 = one per core)")
    parser.add_argument("--only", choices=("snapshot", "log"), help="run only parts 1-2 or only part 3")
    parser.add_argument("--big-size", default="1g", help="the big Bloom filter's Size (default 1g)")
    parser.add_argument("--cbf-size", default="256m", help="the counting filter's Size (default 256m)")
    parser.add_argument("--items", type=int, default=1_000_000, help="items added to the big filter")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.5, help="length of one part-3 run")
    parser.add_argument("--data-dir", help="where to create the temporary data directory "
                        "(default: the system temporary directory unless it is in memory)")
    parser.add_argument("--no-drop-caches", action="store_true",
                        help="do not drop the page cache before the cold load")
    parser.add_argument("--max-requests", type=int, default=5_000_000, help="cap on -n")
    parser.add_argument("--run-timeout", type=float, default=300.0, help="seconds before a step fails")
    parser.add_argument("--out", help="results file (default bench/results/durability-<date>.md; "
                        "with --smoke, none unless given)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--smoke", action="store_true",
                        help="every part once at tiny sizes; exits non-zero on any failure")
    args = parser.parse_args(argv)
    args.pipelines = (1, 16)
    args.big_bytes = parse_size(args.big_size)
    args.cbf_bytes = parse_size(args.cbf_size)
    args.probe_capacity = 1_000_000
    args.p99_calibration = 20_000
    args.log_calibration = 2_000
    args.pause_window = 2.0
    args.cf_capacity = 8_000_000
    args.smoke_requests = 500
    args.disk_ref_bytes = 256 * MIB
    if args.smoke:
        args.big_bytes, args.cbf_bytes = min(args.big_bytes, 16 * MIB), min(args.cbf_bytes, 4 * MIB)
        args.items = min(args.items, 20_000)
        args.rounds = 1
        args.probe_capacity = 100_000
        args.p99_calibration = 2_000
        args.max_requests = 5_000
        args.pause_window = 0.3
        args.cf_capacity = 100_000
        args.disk_ref_bytes = 4 * MIB
        args.run_timeout = min(args.run_timeout, 30.0)
    return args


def parse_size(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmg]?)i?b?", text.strip().lower())
    if not m:
        raise SystemExit(f"bad size {text!r} (e.g. 1g, 256m)")
    return int(float(m.group(1)) * {"": 1, "k": 1 << 10, "m": MIB, "g": GIB}[m.group(2)])


def pick_data_base(args):
    if args.data_dir:
        return args.data_dir
    base = tempfile.gettempdir()
    if filesystem_of(base)[0] in MEMORY_FILESYSTEMS:
        base = REPO  # fsync must reach a disk
    return base


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    started = time.monotonic()
    sys.setswitchinterval(0.0005)  # probe threads: a GIL hand-off must not look like a pause
    args.bin = os.path.abspath(args.bin if os.path.isabs(args.bin) or os.path.exists(args.bin)
                               else os.path.join(REPO, args.bin))
    report = {"argv": {}}
    root = None
    try:
        if not os.access(args.bin, os.X_OK):
            raise BenchError(f"bloomgate binary not found or not executable: {args.bin} "
                             "(build it, or pass --bin / set BLOOMGATE_BIN)")
        if shutil.which(args.redis_benchmark) is None:
            raise BenchError(f"{args.redis_benchmark} not found (Debian package redis-tools)")
        base = pick_data_base(args)
        fs = filesystem_of(base)
        if fs[0] in MEMORY_FILESYSTEMS:
            raise BenchError(f"{base} is on {fs[0]}: fsync would not reach a disk (--data-dir)")
        need = 2.5 * args.big_bytes + args.cbf_bytes * 2.5
        if args.only != "log" and shutil.disk_usage(base).free < need:
            raise BenchError(f"{base}: {shutil.disk_usage(base).free / GIB:.1f} GiB free, need "
                             f"{need / GIB:.1f} GiB")
        if args.only != "log" and mem_available_bytes() < 2.5 * args.big_bytes + 2 * args.cbf_bytes:
            raise BenchError(f"MemAvailable {mem_available_bytes() / GIB:.1f} GiB is too little for a "
                             f"{args.big_bytes / GIB:.2f} GiB filter (--big-size)")
        facts = machine_facts()
        facts.update(date=time.strftime("%Y-%m-%d %H:%M:%S %Z"), load_start=os.getloadavg(),
                     data_base=base, filesystem=fs, bloomgate=version_of([args.bin, "--version"]),
                     redis_benchmark=version_of([shutil.which(args.redis_benchmark), "--version"]))
        report["facts"] = facts
        root = tempfile.mkdtemp(prefix="bloomgate-durability-", dir=base)
        rb = RedisBenchmark(args)
        print(f"data directory {root} ({fs[0]} on {fs[1]})", flush=True)
        if args.only in (None, "snapshot"):
            part_big(args, root, rb, report)
        if args.only in (None, "log"):
            part_log(args, root, rb, report)
        report["commands"] = rb.commands
        facts["load_end"] = os.getloadavg()
        report["elapsed_s"] = time.monotonic() - started
        if args.smoke:
            check_figures(report)
        text = build_report(args, report)
    except BenchError as e:
        print(f"durability_bench: FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        if root:
            shutil.rmtree(root, ignore_errors=True)
    print()
    print(text)
    out = args.out
    if not args.smoke and not args.no_write and not out:
        out = os.path.join(REPO, "bench", "results", f"durability-{time.strftime('%Y-%m-%d')}.md")
    if out and not args.no_write:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as f:
            f.write(text + "\n")
        print(f"\nwritten to {out}")
    if args.smoke:
        print(f"\ndurability_bench --smoke: OK, every part ran ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
