#!/usr/bin/python3
"""Server benchmark: Bloomgate against a stock redis-server, side by side.

Starts Bloomgate and /usr/bin/redis-server (--save '' --appendonly no) on free
loopback ports, pre-reserves a 10M/1% filter, and drives both with
redis-benchmark (-c 50, -P 1 and -P 16, random keys). For every scenario it
records requests/s, p50/p99 latency (redis-benchmark's --csv columns) and the
server process's CPU time per million requests (utime+stime from
/proc/PID/stat before and after the run), which stays meaningful when the load
generator, not the server, is the bottleneck. Every target is a ratio between
two rows of the same round; rounds alternate the two servers so that drift on
a shared machine hits both.

Usage (from the repository root):
  bench/server_bench.py                     # full run, ~3 s per row, 3 rounds
  bench/server_bench.py --smoke             # every scenario with tiny -n, for CI
  BLOOMGATE_BIN=build/server/bloomgate bench/server_bench.py --bin PATH --rounds 1
  bench/server_bench.py --baseline /tmp/before/bloomgate   # every Bloomgate row also on a
                                            # "before" build, in turn within each round

The full run prints a table and writes it, with the machine and the exact
commands, to bench/results/server-<date>.md (--out to change, --no-write to
skip). --smoke exits non-zero on any failure (a server that does not start,
dies, or does not exit 0 on SIGTERM; a row without a result) and writes its
table only where --out says (CI keeps it in the build directory).
Python standard library only; needs redis-server and redis-benchmark.
"""

import argparse
import csv
import io
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READY_DEADLINE_S = 15.0
STOP_DEADLINE_S = 15.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
RB_IGNORED_STDERR = ("WARNING: Could not fetch server CONFIG",)


class BenchError(Exception):
    pass


# ---------------------------------------------------------------------------
# A tiny RESP client: enough to set up keys and check results.

class Conn:
    def __init__(self, port, timeout=30.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    @staticmethod
    def encode(*args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise BenchError("server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise BenchError("server closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return BenchError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind in (b"*", b"~", b">"):
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        if kind == b"%":
            return [self.read() for _ in range(2 * int(rest))]
        if kind == b"_":
            return None
        raise BenchError(f"unexpected reply {line[:40]!r}")

    def call(self, *args):
        self.sock.sendall(self.encode(*args))
        reply = self.read()
        if isinstance(reply, BenchError):
            raise reply
        return reply

    def pipeline(self, commands, chunk=1000):
        """Sends commands in chunks; returns every reply (errors as BenchError values)."""
        replies = []
        for i in range(0, len(commands), chunk):
            part = commands[i:i + chunk]
            self.sock.sendall(b"".join(self.encode(*c) for c in part))
            replies.extend(self.read() for _ in part)
        return replies


# ---------------------------------------------------------------------------
# Servers.

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, name, argv, port, log_path):
        self.name, self.argv, self.port, self.log_path = name, argv, port, log_path
        self.proc = None
        self.stopped_proc = None    # the process stop() last handled
        self.shutdown_error = None  # why that stop was not clean, if it was not

    def start(self, cwd):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.argv, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + READY_DEADLINE_S
        while True:
            if self.proc.poll() is not None:
                raise BenchError(f"{self.name} exited with {self.proc.returncode} at start-up; "
                                 f"log:\n{self.log_text()}")
            try:
                c = Conn(self.port, timeout=2)
                try:
                    if c.call("PING") == "PONG":
                        return
                finally:
                    c.close()
            except (OSError, BenchError):
                pass
            if time.monotonic() > deadline:
                raise BenchError(f"{self.name} not answering PING on port {self.port} "
                                 f"after {READY_DEADLINE_S}s; log:\n{self.log_text()}")
            time.sleep(0.05)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def cpu_seconds(self):
        """utime + stime of the whole process (all threads), in seconds."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def rss_mib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def stop(self):
        """SIGTERM, then wait. A clean stop is exit status 0 within the
        deadline (both servers shut down gracefully on SIGTERM); anything else
        (a crash on the way out, a hang, an earlier death) is kept in
        shutdown_error for the caller to check. A second call for the same
        process does nothing."""
        if self.proc is None or self.proc is self.stopped_proc:
            return
        self.stopped_proc = self.proc
        self.shutdown_error = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_DEADLINE_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=STOP_DEADLINE_S)
                self.shutdown_error = f"did not exit within {STOP_DEADLINE_S}s of SIGTERM (killed)"
        self.log.close()
        if self.shutdown_error is None and self.proc.returncode != 0:
            self.shutdown_error = f"exited with status {self.proc.returncode} (0 expected after SIGTERM)"
        if self.shutdown_error:
            self.shutdown_error += f"; log:\n{self.log_text()}"

    def log_text(self, limit=4000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-limit:].decode(errors="replace")
        except OSError:
            return "(no log)"


# RedisBloom's server CPU per item of a 100-item command, as a multiple of
# redis's CPU per GET (reads) or SET (writes) in the same round. Issue 14
# measured RedisBloom 2.4.23 beside Bloomgate: BF.EXISTS 0.8x a GET, BF.ADD
# 0.58x a SET; Bloomgate's CPU / RedisBloom's: BF.EXISTS 0.90x, BF.ADD 0.96x,
# BF.MEXISTS x100 per item 0.49x (11.6M vs 5.7M items per CPU-s), BF.MADD
# x100 0.72x (7.0M vs 5.1M). So RedisBloom's per-item MEXISTS cost is
#   (Bloomgate's per-item MEXISTS / its BF.EXISTS) x 0.90 / 0.49 x 0.8 GETs,
# and Bloomgate's own ratio in brackets was measured with the code the issue
# measured (commit be85b72, --threads 1, -P 16, 3 rounds; 2026-12-01, see
# bench/results/batches-2026-12-01.md): MEXISTS per item / BF.EXISTS = B_MX,
# MADD per item / BF.ADD = B_MA. (key: (redis row, factor, what it stands for))
B_MX = 0.19
B_MA = 0.17
REDISBLOOM_PER_ITEM = {
    "bf.mexists100": ("get", 0.8 * 0.90 / 0.49 * B_MX, "RedisBloom BF.MEXISTS"),
    "cf.mexists100": ("get", 0.8 * 0.90 / 0.49 * B_MX, "RedisBloom BF.MEXISTS"),
    "bf.madd100": ("set", 0.58 * 0.96 / 0.72 * B_MA, "RedisBloom BF.MADD"),
    "cbf.madd100": ("set", 0.58 * 0.96 / 0.72 * B_MA, "RedisBloom BF.MADD"),
}

# ---------------------------------------------------------------------------
# Scenarios.

def rand_items(n):
    return ["__rand_int__"] * n


class Scenario:
    """One row: a command line sent to one server."""

    def __init__(self, key, server, label, args, items=1, keyspace=1_000_000, n_floor=20_000,
                 optional=False):
        # Keys name a row in results and ratios; the server is part of it.
        self.key = f"{server}:{key}"
        self.server, self.label, self.args = server, label, args
        # Rows of families still being built (CBF.*, CF.*): in a full run a
        # failure there is reported in the table instead of ending the run.
        self.optional = optional
        self.items = items          # items (or keys) per request
        self.keyspace = keyspace    # redis-benchmark -r
        self.n_floor = n_floor      # requests of the calibration run


def main_scenarios(cf_commands):
    S = Scenario
    rows = [
        S("ping", "redis", "PING", ["PING"]),
        S("ping", "bloomgate", "PING", ["PING"]),
        S("set", "redis", "SET key:r v:r", ["SET", "key:__rand_int__", "__rand_int__"]),
        S("bf.add", "bloomgate", "BF.ADD bf (10M/1%) r", ["BF.ADD", "bf", "__rand_int__"]),
        S("bf.add.auto", "bloomgate", "BF.ADD auto r (auto-created)", ["BF.ADD", "auto", "__rand_int__"]),
        S("get", "redis", "GET key:r", ["GET", "key:__rand_int__"]),
        S("bf.exists", "bloomgate", "BF.EXISTS bf r", ["BF.EXISTS", "bf", "__rand_int__"]),
        S("bf.exists.auto", "bloomgate", "BF.EXISTS auto r", ["BF.EXISTS", "auto", "__rand_int__"]),
    ]
    for m in (10, 100):
        floor = 20_000 if m == 10 else 4_000
        mset = ["MSET"]
        for _ in range(m):
            mset += ["key:__rand_int__", "__rand_int__"]
        rows += [
            S(f"mset{m}", "redis", f"MSET {m} keys", mset, items=m, n_floor=floor),
            S(f"bf.madd{m}", "bloomgate", f"BF.MADD bf {m} items", ["BF.MADD", "bf"] + rand_items(m),
              items=m, n_floor=floor),
            S(f"mget{m}", "redis", f"MGET {m} keys", ["MGET"] + ["key:__rand_int__"] * m, items=m,
              n_floor=floor),
            S(f"bf.mexists{m}", "bloomgate", f"BF.MEXISTS bf {m} items",
              ["BF.MEXISTS", "bf"] + rand_items(m), items=m, n_floor=floor),
        ]
    # Counting Bloom and cuckoo filters, once the server has them: pre-reserved
    # keys (setup_round), compared with SET / GET like BF.ADD / BF.EXISTS.
    if {"cbf.reserve", "cbf.add", "cbf.exists"} <= cf_commands:
        rows += [
            S("cbf.add", "bloomgate", "CBF.ADD cbf (10M/1%) r", ["CBF.ADD", "cbf", "__rand_int__"],
              optional=True),
            S("cbf.exists", "bloomgate", "CBF.EXISTS cbf r", ["CBF.EXISTS", "cbf", "__rand_int__"],
              optional=True),
            # Issue 14's target 2: the multi-item form of each family.
            S("cbf.madd100", "bloomgate", "CBF.MADD cbf 100 items",
              ["CBF.MADD", "cbf"] + rand_items(100), items=100, n_floor=4_000, optional=True),
        ]
    if {"cf.reserve", "cf.add", "cf.exists"} <= cf_commands:
        rows += [
            S("cf.add", "bloomgate", "CF.ADD cf (2M) r", ["CF.ADD", "cf", "__rand_int__"], optional=True),
            S("cf.exists", "bloomgate", "CF.EXISTS cf r", ["CF.EXISTS", "cf", "__rand_int__"],
              optional=True),
            S("cf.mexists100", "bloomgate", "CF.MEXISTS cf 100 items",
              ["CF.MEXISTS", "cf"] + rand_items(100), items=100, n_floor=4_000, optional=True),
        ]
    # Count-min sketch and top-k, per item beside BF.ADD / BF.MADD (issue 12):
    # one item per request, then 100 per request so the request's own cost
    # is spread thin. Keys pre-created by setup_round.
    if {"cms.initbyprob", "cms.incrby", "topk.reserve", "topk.add"} <= cf_commands:
        rows += [
            S("cms.incrby", "bloomgate", "CMS.INCRBY cms (2000x7) r 1",
              ["CMS.INCRBY", "cms", "__rand_int__", "1"], optional=True),
            S("topk.add", "bloomgate", "TOPK.ADD topk (k 10, 2000x7) r",
              ["TOPK.ADD", "topk", "__rand_int__"], optional=True),
            S("cms.incrby100", "bloomgate", "CMS.INCRBY cms 100 items",
              ["CMS.INCRBY", "cms"] + ["__rand_int__", "1"] * 100, items=100, n_floor=4_000,
              optional=True),
            S("topk.add100", "bloomgate", "TOPK.ADD topk 100 items",
              ["TOPK.ADD", "topk"] + rand_items(100), items=100, n_floor=4_000, optional=True),
        ]
    return rows


def keyspace_scenario(count, server="bloomgate"):
    # Key and item are both drawn from [0, count): with one filter the item
    # repeats too, so the 1-filter row is the hottest possible case.
    return Scenario(f"keyspace{count}", server, f"BF.EXISTS over {count:,} filters",
                    ["BF.EXISTS", "ks:__rand_int__", "__rand_int__"], keyspace=count)


def with_baseline_rows(scenarios):
    """Every Bloomgate row followed by the same row on the "before" build,
    so the two take turns within each round."""
    out = []
    for sc in scenarios:
        out.append(sc)
        if sc.server == "bloomgate":
            out.append(Scenario(sc.key.split(":", 1)[1], "before", sc.label, sc.args,
                                items=sc.items, keyspace=sc.keyspace, n_floor=sc.n_floor,
                                optional=sc.optional))
    return out


def keyspace_key(i):
    return "ks:%012d" % i  # redis-benchmark expands __rand_int__ to 12 digits


# ---------------------------------------------------------------------------
# Running redis-benchmark.

class Bench:
    def __init__(self, args, servers):
        self.args = args
        self.servers = servers
        self.rb = shutil.which(args.redis_benchmark) or args.redis_benchmark
        self.commands = {}  # (scenario key, pipeline) -> command line

    def command(self, sc, pipeline, n):
        server = self.servers[sc.server]
        return [self.rb, "-h", "127.0.0.1", "-p", str(server.port), "-c", str(self.args.clients),
                "-n", str(n), "-P", str(pipeline), "-r", str(sc.keyspace), "--csv", "-q"] + sc.args

    def run(self, sc, pipeline, n):
        server = self.servers[sc.server]
        argv = self.command(sc, pipeline, n)
        self.commands[(sc.key, pipeline)] = argv
        cpu0 = server.cpu_seconds()
        t0 = time.monotonic()
        try:
            # stdout is captured: redis-benchmark draws progress with \r on a tty.
            done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  stdin=subprocess.DEVNULL, timeout=self.args.run_timeout)
        except subprocess.TimeoutExpired:
            raise BenchError(f"{sc.label} (-P {pipeline}) timed out after {self.args.run_timeout}s: "
                             f"{shlex.join(argv)}")
        wall = time.monotonic() - t0
        cpu = server.cpu_seconds() - cpu0
        out = done.stdout.decode(errors="replace")
        err = "\n".join(line for line in done.stderr.decode(errors="replace").splitlines()
                        if line.strip() and not line.startswith(RB_IGNORED_STDERR))
        if done.returncode != 0:
            raise BenchError(f"redis-benchmark exited {done.returncode}: {shlex.join(argv)}\n{out}\n{err}")
        if err:
            raise BenchError(f"redis-benchmark reported errors for {sc.label}: {err[:500]}")
        if not server.alive():
            raise BenchError(f"{server.name} died during {sc.label}; log:\n{server.log_text()}")
        row = None
        for rec in csv.DictReader(io.StringIO("\n".join(l for l in out.splitlines() if l.startswith('"')))):
            row = rec
        if row is None or "rps" not in row:
            raise BenchError(f"no CSV result from redis-benchmark for {sc.label}: {out[:300]!r}")
        rps = float(row["rps"])
        if rps <= 0:
            raise BenchError(f"{sc.label}: {rps} requests/s")
        return {
            "n": n, "rps": rps, "wall": wall, "cpu": cpu,
            "p50": float(row.get("p50_latency_ms", "nan")),
            "p99": float(row.get("p99_latency_ms", "nan")),
            "cpu_per_m": cpu / n * 1e6,
            "items_per_cpu_s": (n * sc.items / cpu) if cpu > 0 else float("inf"),
            "items_per_s": rps * sc.items,
        }

    def calibrate(self, sc, pipeline):
        """Request count for a run of about --seconds: a short run at the
        scenario's floor count, scaled by its rate (bounded)."""
        n0 = sc.n_floor * (4 if pipeline > 1 else 1)
        result = self.run(sc, pipeline, n0)
        n = int(result["rps"] * self.args.seconds)
        return max(n0, min(n, self.args.max_requests))


# ---------------------------------------------------------------------------

def setup_round(conns, known, filter_servers):
    for c in conns.values():
        c.call("FLUSHALL")
    extra = 2
    for name in filter_servers:
        extra = reserve_filters(conns[name], known)
    return extra


def reserve_filters(bg, known):
    bg.call("BF.RESERVE", "bf", "0.01", "10000000")
    # -r 1,000,000 distinct items at most: both hold them without growing.
    # A refusal here only loses those (optional) rows, which then fail.
    extra = 2
    for needed, command in (("cbf.reserve", ("CBF.RESERVE", "cbf", "0.01", "10000000")),
                            ("cf.reserve", ("CF.RESERVE", "cf", "2000000")),
                            # CMS.INITBYPROB 0.001 0.01 is 2000 x 7 (RedisBloom's
                            # dimensions); the top-k as RedisBloom's docs size one.
                            ("cms.initbyprob", ("CMS.INITBYPROB", "cms", "0.001", "0.01")),
                            ("topk.reserve", ("TOPK.RESERVE", "topk", "10", "2000", "7", "0.9"))):
        if needed in known:
            try:
                bg.call(*command)
                extra += 1
            except BenchError as e:
                print(f"{' '.join(command)}: {e}", file=sys.stderr)
    return extra


def create_keyspace(conn, have, want):
    commands = [("BF.RESERVE", keyspace_key(i), "0.01", "1000") for i in range(have, want)]
    for reply in conn.pipeline(commands):
        if isinstance(reply, BenchError):
            raise BenchError(f"BF.RESERVE failed: {reply}")


def bloomgate_commands(conn):
    """Lower-case names of the commands the server knows (COMMAND LIST, else COMMAND)."""
    try:
        names = conn.call("COMMAND", "LIST")
        return {n.decode().lower() if isinstance(n, bytes) else str(n).lower() for n in names}
    except BenchError:
        return set()


def machine_facts():
    facts = {"nproc": os.cpu_count(), "cpu": "?", "kernel": platform.release()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    facts["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            facts["mem"] = f.readline().split(":", 1)[1].strip()
    except OSError:
        facts["mem"] = "?"
    return facts


def version_of(argv):
    try:
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=10)
        return out.stdout.decode(errors="replace").strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return "?"


def med(values):
    return statistics.median(values) if values else float("nan")


def fmt(v, digits=0):
    if v != v:  # NaN
        return "—"
    if digits == 0:
        return f"{v:,.0f}"
    return f"{v:,.{digits}f}"


def ratio_text(values, digits=2):
    if not values:
        return "—"
    m = med(values)
    if len(values) == 1:
        return f"{m:.{digits}f}x"
    return f"{m:.{digits}f}x ({min(values):.{digits}f}–{max(values):.{digits}f})"


def run_all(args):
    bin_path = args.bin
    if not os.path.isabs(bin_path) and not os.path.exists(bin_path):
        bin_path = os.path.join(REPO, bin_path)
    # Absolute: the servers run with their data directory as cwd.
    bin_path = os.path.abspath(bin_path)
    if not os.access(bin_path, os.X_OK):
        raise BenchError(f"bloomgate binary not found or not executable: {bin_path} "
                         "(build it, or pass --bin / set BLOOMGATE_BIN)")
    if not os.access(args.redis_server, os.X_OK):
        raise BenchError(f"{args.redis_server} not found (Debian package redis-server)")
    if shutil.which(args.redis_benchmark) is None:
        raise BenchError(f"{args.redis_benchmark} not found (Debian package redis-tools)")

    tmp = tempfile.mkdtemp(prefix="bloomgate-bench-")
    bg_port, redis_port = free_port(), free_port()
    # Persistence off on both sides, so the comparison is like for like (the
    # log's own cost is measured by durability_bench.py).
    bg_argv = [bin_path, "--bind", "127.0.0.1", "--port", str(bg_port), "--loglevel", "warn",
               "--threads", str(args.threads), "--save", "", "--appendonly", "no", "--dir", tmp]
    redis_argv = [args.redis_server, "--bind", "127.0.0.1", "--port", str(redis_port), "--save", "",
                  "--appendonly", "no", "--dir", tmp]
    servers = {
        "bloomgate": Server("bloomgate", bg_argv, bg_port, os.path.join(tmp, "bloomgate.log")),
        "redis": Server("redis-server", redis_argv, redis_port, os.path.join(tmp, "redis.log")),
    }
    if args.baseline:
        # The "before" build: same flags, its own port and data directory.
        before_port = free_port()
        before_dir = os.path.join(tmp, "before")
        os.makedirs(before_dir)
        before_argv = [os.path.abspath(args.baseline)] + bg_argv[1:]
        before_argv[before_argv.index("--port") + 1] = str(before_port)
        before_argv[before_argv.index("--dir") + 1] = before_dir
        servers["before"] = Server("bloomgate (before)", before_argv, before_port,
                                   os.path.join(tmp, "before.log"))
    facts = machine_facts()
    facts["date"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    facts["load_start"] = os.getloadavg()
    facts["bloomgate"] = version_of([bin_path, "--version"])
    if args.baseline:
        facts["before"] = version_of([os.path.abspath(args.baseline), "--version"])
    facts["redis"] = version_of([args.redis_server, "--version"])
    facts["redis_benchmark"] = version_of([shutil.which(args.redis_benchmark), "--version"])

    results = {}  # (key, pipeline) -> [result per round]
    failures = {}  # (key, pipeline) -> why an optional row failed
    keyspace_results = {}  # (count, pipeline) -> [result per round]
    conns = {}
    try:
        for s in servers.values():
            s.start(tmp)
        conns = {name: Conn(s.port) for name, s in servers.items()}
        known = bloomgate_commands(conns["bloomgate"])
        scenarios = main_scenarios(known)
        if args.only:
            pattern = re.compile(args.only)
            scenarios = [sc for sc in scenarios if pattern.search(sc.label)]
        if args.baseline:
            scenarios = with_baseline_rows(scenarios)
        counts = args.keyspace_counts
        bench = Bench(args, servers)
        sizes = {}
        filter_servers = ["bloomgate", "before"] if args.baseline else ["bloomgate"]
        for rnd in range(args.rounds):
            extra_keys = setup_round(conns, known, filter_servers)
            for pipeline in args.pipelines:
                for sc in scenarios:
                    try:
                        if (sc.key, pipeline) not in sizes:
                            sizes[(sc.key, pipeline)] = (
                                args.smoke_requests * (1 if sc.items < 100 else 0.25)
                                if args.smoke else bench.calibrate(sc, pipeline))
                        n = max(50, int(sizes[(sc.key, pipeline)]))
                        r = bench.run(sc, pipeline, n)
                    except BenchError as e:
                        if args.smoke or not sc.optional:
                            raise
                        failures[(sc.key, pipeline)] = str(e).splitlines()[0][:200]
                        print(f"round {rnd + 1}/{args.rounds} -P {pipeline:<2} {sc.label}: FAILED "
                              f"(optional row, run goes on): {failures[(sc.key, pipeline)]}", flush=True)
                        continue
                    results.setdefault((sc.key, pipeline), []).append(r)
                    print(f"round {rnd + 1}/{args.rounds} -P {pipeline:<2} {sc.server:9} "
                          f"{sc.label:30} {r['rps']:>12,.0f} req/s  p99 {r['p99']:.3f} ms  "
                          f"CPU {r['cpu_per_m']:.2f} s/1M", flush=True)
            # Number of filters in the keyspace: created in ascending order, so
            # each row runs with exactly that many ks:* filters present.
            have = 0
            for count in counts:
                for name in filter_servers:
                    create_keyspace(conns[name], have, count)
                have = count
                for pipeline in args.pipelines:
                    for name in filter_servers:
                        sc = keyspace_scenario(count, name)
                        if (sc.key, pipeline) not in sizes:
                            ref = ("bloomgate:keyspace%d" % counts[0], pipeline)
                            if args.smoke:
                                sizes[(sc.key, pipeline)] = args.smoke_requests
                            elif ref in sizes:
                                sizes[(sc.key, pipeline)] = sizes[ref]
                            else:
                                sizes[(sc.key, pipeline)] = bench.calibrate(sc, pipeline)
                        r = bench.run(sc, pipeline, int(sizes[(sc.key, pipeline)]))
                        keyspace_results.setdefault((count, pipeline, name), []).append(r)
                        print(f"round {rnd + 1}/{args.rounds} -P {pipeline:<2} {name:9} "
                              f"{sc.label:30} {r['rps']:>12,.0f} req/s  p99 {r['p99']:.3f} ms  "
                              f"CPU {r['cpu_per_m']:.2f} s/1M", flush=True)
            for name in filter_servers:
                check_state(conns[name], counts[-1], extra_keys,
                            {sc.key.replace(name + ":", "bloomgate:", 1)
                             for sc in scenarios if sc.server == name})
        facts["bloomgate_rss_mib"] = servers["bloomgate"].rss_mib()
        facts["redis_rss_mib"] = servers["redis"].rss_mib()
        facts["load_end"] = os.getloadavg()
        facts["failures"] = failures
        outcome = (facts, scenarios, results, keyspace_results, bench.commands, (bg_argv, redis_argv))
    finally:
        for c in conns.values():
            try:
                c.close()
            except OSError:
                pass
        for s in servers.values():
            s.stop()  # before the rmtree: a failed stop quotes the server's log
        shutil.rmtree(tmp, ignore_errors=True)
    for s in servers.values():
        if s.shutdown_error:
            raise BenchError(f"{s.name} {s.shutdown_error}")
    return outcome


def check_complete(args, scenarios, results, keyspace_results):
    """--smoke: every scenario and keyspace row has a result at every
    pipeline depth, so a run that silently measured nothing fails."""
    if not scenarios:
        raise BenchError("no scenarios ran (check --only)")
    missing = [f"{sc.label} -P {p}" for sc in scenarios for p in args.pipelines
               if not results.get((sc.key, p))]
    missing += [f"keyspace {n} -P {p}" for n in args.keyspace_counts for p in args.pipelines
                if not keyspace_results.get((n, p, "bloomgate"))]
    if missing:
        raise BenchError(f"rows without a result: {', '.join(missing)}")


def check_state(bg, keyspace_count, extra_keys, ran):
    """What the load must have left behind on one Bloomgate; any miss is a
    failure. `ran`: the scenario keys that ran (all of them unless --only),
    named as the "bloomgate" server's."""
    if ran & {"bloomgate:bf.add", "bloomgate:bf.madd10", "bloomgate:bf.madd100"}:
        card = bg.call("BF.CARD", "bf")
        if not isinstance(card, int) or card <= 0:
            raise BenchError(f"BF.CARD bf = {card!r} after the BF.ADD / BF.MADD runs")
    if "bloomgate:bf.add.auto" not in ran:
        extra_keys -= 1  # `auto` was never created
    else:
        check_auto(bg)
    size = bg.call("DBSIZE")
    # bf, auto and the pre-reserved cbf / cf, plus the keyspace rows' filters.
    if size != keyspace_count + extra_keys:
        raise BenchError(f"DBSIZE = {size}, expected {keyspace_count + extra_keys}")
    for i in (0, keyspace_count - 1):
        if bg.call("EXISTS", keyspace_key(i)) != 1:
            raise BenchError(f"{keyspace_key(i)} is missing")


def check_auto(bg):
    info = bg.call("BF.INFO", "auto")
    fields = {info[i].lower() if isinstance(info[i], str) else info[i].decode().lower(): info[i + 1]
              for i in range(0, len(info) - 1, 2)}
    layers = fields.get("number of filters")
    if not isinstance(layers, int) or layers < 2:
        raise BenchError(f"the auto-created filter did not grow (BF.INFO auto: {info!r})")


# ---------------------------------------------------------------------------
# Report.

def build_report(args, facts, scenarios, results, keyspace_results, commands, argvs):
    lines = []
    w = lines.append
    w("# Server benchmark: Bloomgate vs redis-server\n")
    w(f"- date: {facts['date']}")
    w(f"- machine: nproc {facts['nproc']}, {facts['cpu']}, {facts['mem']} RAM, kernel {facts['kernel']}")
    w(f"- load average: start {', '.join(f'{x:.2f}' for x in facts['load_start'])}; end "
      f"{', '.join(f'{x:.2f}' for x in facts.get('load_end', (0, 0, 0)))} "
      "(this machine is shared: other jobs were running)")
    w(f"- bloomgate: {facts['bloomgate']} — `{shlex.join(argvs[0])}`")
    w(f"- redis-server: {facts['redis']} — `{shlex.join(argvs[1])}`")
    w(f"- load generator: {facts['redis_benchmark']}, one process, on the same machine as the servers")
    w(f"- this run: `{shlex.join([sys.argv[0]] + sys.argv[1:])}` — {args.rounds} round(s), "
      f"about {args.seconds} s per row; rows alternate between the two servers")
    w(f"- server RSS at the end: bloomgate {facts.get('bloomgate_rss_mib', 0):.0f} MiB, "
      f"redis-server {facts.get('redis_rss_mib', 0):.0f} MiB")
    w("")
    w("Each round starts with FLUSHALL on both servers and `BF.RESERVE bf 0.01 10000000`; "
      "`auto` is created by the first BF.ADD (capacity 100, expansion 2, so it grows a layer "
      "each time it doubles). `r` is `__rand_int__` over `-r` values (1,000,000 unless noted). "
      "CPU is the server process's utime+stime per million requests (Linux ticks of "
      f"{1000 // CLK_TCK} ms; each row runs for seconds). Values are medians over rounds; "
      "ratios show median (min–max over rounds), each round's ratio taken within that round.\n")

    def per_round(key, pipeline, field):
        return [r[field] for r in results.get((key, pipeline), [])]

    def ratios(num, den, pipeline, field, invert=False):
        a, b = per_round(num, pipeline, field), per_round(den, pipeline, field)
        out = []
        for x, y in zip(a, b):
            if invert:
                x, y = y, x
            if y:
                out.append(x / y)
        return out

    # Targets.
    w("## Issue-5 targets\n")
    rows = []

    def add_row(target, bound, values, ok):
        rows.append([target, bound, ratio_text(values), verdict(ok(values)) if values else "not measured"])

    for bf, redis in (("bf.exists", "get"), ("bf.add", "set")):
        v = ratios("bloomgate:" + bf, "redis:" + redis, 16, "cpu_per_m")
        add_row(f"1. CPU per 1M {bf.upper()} / per 1M {redis.upper()}, -P 16", "≤ 0.6x", v,
                lambda v: med(v) <= 0.6)
    for bf, redis in (("bf.exists", "get"), ("bf.add", "set")):
        for p in args.pipelines:
            v = ratios("bloomgate:" + bf, "redis:" + redis, p, "rps")
            add_row(f"1. req/s {bf.upper()} / {redis.upper()}, -P {p}", "≥ 1x", v, lambda v: med(v) >= 1)
    for bf, redis in (("bf.exists", "get"), ("bf.add", "set")):
        for p in args.pipelines:
            v = ratios("bloomgate:" + bf, "redis:" + redis, p, "p99")
            add_row(f"1. p99 {bf.upper()} / {redis.upper()}, -P {p}", "≤ 1x", v, lambda v: med(v) <= 1)
    for fam, redis in (("cbf.add", "set"), ("cbf.exists", "get"), ("cf.add", "set"), ("cf.exists", "get")):
        v = ratios("bloomgate:" + fam, "redis:" + redis, 16, "cpu_per_m")
        if v:
            rows.append([f"(reference) CPU per 1M {fam.upper()} / per 1M {redis.upper()}, -P 16", "",
                         ratio_text(v), ""])
    w(table(["target", "bound", "measured", "verdict"], rows))
    w("")
    rows = []
    for key in ("bf.mexists100", "bf.madd100"):
        for p in args.pipelines:
            v = per_round("bloomgate:" + key, p, "items_per_cpu_s")
            wall = per_round("bloomgate:" + key, p, "items_per_s")
            if v:
                rows.append([f"2. {key.upper().replace('100', '')} 100 items, -P {p}", "≥ 10M items/s per core",
                             f"{med(v) / 1e6:.2f}M items per server CPU-second "
                             f"({min(v) / 1e6:.2f}–{max(v) / 1e6:.2f}); wall clock {med(wall) / 1e6:.2f}M items/s",
                             verdict(med(v) >= 10e6)])
    for key, ref in (("bf.mexists100", "mget100"), ("bf.madd100", "mset100")):
        for p in args.pipelines:
            v = ratios("bloomgate:" + key, "redis:" + ref, p, "items_per_cpu_s")
            if v:
                rows.append([f"2. (reference) {key.upper()} / redis {ref.upper()} items per CPU-s, -P {p}",
                             "", ratio_text(v), ""])
    # Issue 12: CMS and top-k per-item cost beside BF.ADD's, same run.
    for key, ref in (("cms.incrby", "bf.add"), ("topk.add", "bf.add"),
                     ("cms.incrby100", "bf.madd100"), ("topk.add100", "bf.madd100")):
        for p in args.pipelines:
            v = per_round("bloomgate:" + key, p, "cpu_per_m")
            if not v:
                continue
            per_item = [x / (100 if key.endswith("100") else 1) for x in v]
            ratio = ratios("bloomgate:" + key, "bloomgate:" + ref, p, "cpu_per_m")
            rows.append([f"12. server CPU per item, {key.upper()} / {ref.upper()}, -P {p}", "",
                         f"{med(per_item):.3f} s per 1M items; {ratio_text(ratio)} of {ref.upper()}'s",
                         ""])
    counts = args.keyspace_counts
    for p in args.pipelines:
        base = [r["rps"] for r in keyspace_results.get((counts[0], p, "bloomgate"), [])]
        base_cpu = [r["cpu_per_m"] for r in keyspace_results.get((counts[0], p, "bloomgate"), [])]
        for count in counts[1:]:
            cur = [r["rps"] for r in keyspace_results.get((count, p, "bloomgate"), [])]
            v = [x / y for x, y in zip(cur, base) if y]
            cur_cpu = [r["cpu_per_m"] for r in keyspace_results.get((count, p, "bloomgate"), [])]
            vc = [x / y for x, y in zip(cur_cpu, base_cpu) if y]
            if v:
                rows.append([f"5. req/s with {count:,} filters / with {counts[0]:,}, -P {p}",
                             "≥ 0.9x", ratio_text(v) + f"; CPU per request {ratio_text(vc)}",
                             verdict(med(v) >= 0.9)])
    w(table(["target", "bound", "measured", "verdict"], rows))
    w("")

    # Issue 14, target 2: RedisBloom is not installed here, so its items per
    # CPU-second come from redis GET / SET measured in the same round
    # (REDISBLOOM_PER_ITEM, below).
    w("## Issue-14 target 2: 100-item commands against RedisBloom (estimated)\n")
    w("RedisBloom's CPU per item = factor x redis's CPU per GET (reads) or SET (writes) in the "
      "same round; the factors and how they were derived are in bench/server_bench.py "
      "(REDISBLOOM_PER_ITEM). CF.MEXISTS is held to RedisBloom's BF.MEXISTS and CBF.MADD to "
      "its BF.MADD (RedisBloom has no counting Bloom filter; the issue measured neither).\n")
    rows = []
    for key, (ref, factor, rb_label) in REDISBLOOM_PER_ITEM.items():
        for p in args.pipelines:
            ours = per_round("bloomgate:" + key, p, "items_per_cpu_s")
            theirs = per_round("redis:" + ref, p, "cpu_per_m")
            v = [x * (factor * y / 1e6) for x, y in zip(ours, theirs) if y]
            if v:
                rows.append([f"2. {key.upper().replace('100', '')} 100 items / {rb_label}, -P {p}",
                             "≥ 3x", f"{ratio_text(v)} ({med(ours) / 1e6:.2f}M items per CPU-s; "
                             f"RedisBloom est. {1e6 / (factor * med(theirs)) / 1e6:.2f}M)",
                             verdict(med(v) >= 3)])
    w(table(["target", "bound", "measured", "verdict"], rows))
    w("")

    if args.baseline:
        w(before_after_section(args, scenarios, results, keyspace_results, facts))

    # Full table.
    w("## All rows\n")
    rows = []
    for p in args.pipelines:
        for sc in scenarios:
            rs = results.get((sc.key, p), [])
            if not rs:
                continue
            rows.append([sc.label, sc.server, str(p), fmt(med([r["n"] for r in rs])),
                         fmt(med([r["rps"] for r in rs])),
                         fmt(med([r["p50"] for r in rs]), 3), fmt(med([r["p99"] for r in rs]), 3),
                         fmt(med([r["cpu_per_m"] for r in rs]), 2),
                         fmt(med([r["items_per_cpu_s"] for r in rs]) / 1e6, 2) if sc.items > 1 else ""])
        for count, name in ((c, n) for c in counts for n in ("bloomgate", "before")):
            rs = keyspace_results.get((count, p, name), [])
            if rs:
                sc = keyspace_scenario(count)
                rows.append([sc.label + f" (-r {count:,})", name, str(p), fmt(med([r["n"] for r in rs])),
                             fmt(med([r["rps"] for r in rs])),
                             fmt(med([r["p50"] for r in rs]), 3), fmt(med([r["p99"] for r in rs]), 3),
                             fmt(med([r["cpu_per_m"] for r in rs]), 2), ""])
    w(table(["scenario", "server", "-P", "requests", "req/s", "p50 ms", "p99 ms",
             "server CPU s / 1M req", "M items / CPU-s"], rows))
    w("")
    if facts.get("failures"):
        w("Rows that failed (families still in progress; the run went on):\n")
        for (key, p), why in sorted(facts["failures"].items()):
            w(f"- `{key}` -P {p}: {why}")
        w("")
    w("## Commands\n")
    w("Every row is one redis-benchmark invocation (the `-n` of the last round; `-n` is sized "
      f"by a short calibration run so a row takes about {args.seconds} s):\n")
    w("```sh")
    order = {sc.key: i for i, sc in enumerate(scenarios)}
    for (key, p), argv in sorted(commands.items(),
                                 key=lambda kv: (kv[0][1], order.get(kv[0][0], len(order)), kv[0][0])):
        w(shell_text(["redis-benchmark"] + argv[1:]))
    w("```")
    w("Ports are picked free at start-up and differ between runs.")
    return "\n".join(lines)


def before_after_section(args, scenarios, results, keyspace_results, facts):
    """Every Bloomgate row against the same row on the "before" build: after /
    before per round (server CPU per request, req/s, p99), median (min-max)."""
    def per_round_ratio(after, before, field):
        return [a[field] / b[field] for a, b in zip(after, before) if b[field]]

    lines = ["## Before and after (`--baseline`)\n",
             f"after: `{facts['bloomgate']}` ({args.bin}); before: `{facts.get('before', '?')}` "
             f"({args.baseline}). Ratios are after / before within each round, median "
             "(min–max); CPU below 1x and req/s above 1x are faster.\n"]
    rows = []
    for p in args.pipelines:
        for sc in scenarios:
            if sc.server != "bloomgate":
                continue
            after = results.get((sc.key, p), [])
            before = results.get(("before:" + sc.key.split(":", 1)[1], p), [])
            if after and before:
                rows.append([sc.label, str(p), ratio_text(per_round_ratio(after, before, "cpu_per_m")),
                             ratio_text(per_round_ratio(after, before, "rps")),
                             ratio_text(per_round_ratio(after, before, "p99"))])
        for count in args.keyspace_counts:
            after = keyspace_results.get((count, p, "bloomgate"), [])
            before = keyspace_results.get((count, p, "before"), [])
            if after and before:
                rows.append([keyspace_scenario(count).label, str(p),
                             ratio_text(per_round_ratio(after, before, "cpu_per_m")),
                             ratio_text(per_round_ratio(after, before, "rps")),
                             ratio_text(per_round_ratio(after, before, "p99"))])
    lines.append(table(["row", "-P", "CPU per request, after / before", "req/s, after / before",
                        "p99, after / before"], rows))
    lines.append("")
    return "\n".join(lines)


def shell_text(argv):
    """argv as a bash command line, a run of 4+ repeated arguments (or
    argument pairs) written as a loop so that 100-item commands stay readable
    and still paste into a shell exactly."""
    out, i = [], 0
    while i < len(argv):
        for unit in (1, 2):
            chunk = argv[i:i + unit]
            reps = 1
            while argv[i + reps * unit:i + (reps + 1) * unit] == chunk:
                reps += 1
            if len(chunk) == unit and reps >= 4:
                body = shlex.quote(" ".join(chunk) + " ")
                out.append(f"$(for i in $(seq {reps}); do printf %s {body}; done)")
                i += reps * unit
                break
        else:
            out.append(shlex.quote(argv[i]))
            i += 1
    return " ".join(out)


def verdict(ok):
    return "**met**" if ok else "**missed**"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=os.environ.get("BLOOMGATE_BIN", "build/server/bloomgate"),
                        help="bloomgate binary (default: $BLOOMGATE_BIN or build/server/bloomgate)")
    parser.add_argument("--redis-server", default="/usr/bin/redis-server")
    parser.add_argument("--redis-benchmark", default="redis-benchmark")
    parser.add_argument("--threads", type=int, default=0, help="bloomgate --threads (0 = one per core)")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=3.0, help="target length of one row")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-requests", type=int, default=20_000_000, help="cap on -n")
    parser.add_argument("--run-timeout", type=float, default=120.0, help="seconds before a row is a failure")
    parser.add_argument("--keyspace", default="1,100,10000,100000",
                        help="numbers of filters for the keyspace rows (ascending)")
    parser.add_argument("--only", help="run only the rows whose label matches this regex "
                        "(e.g. 'PING|SET|GET|bf r'); the keyspace rows follow --keyspace")
    parser.add_argument("--out", help="results file (default bench/results/server-<date>.md; "
                        "with --smoke, none unless given)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--baseline", help="a second Bloomgate binary (the 'before' build): every "
                        "Bloomgate row runs on it too, in turn, and the report adds a before/after "
                        "table")
    parser.add_argument("--smoke", action="store_true",
                        help="every scenario once with tiny -n; exits non-zero on any failure")
    parser.add_argument("--smoke-requests", type=int, default=2000, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.pipelines = (1, 16)
    args.keyspace_counts = [int(x) for x in args.keyspace.split(",")]
    if args.smoke:
        args.rounds = 1
        args.run_timeout = min(args.run_timeout, 30.0)
        if args.keyspace == parser.get_default("keyspace"):
            args.keyspace_counts = [1, 100]
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    started = time.monotonic()
    try:
        facts, scenarios, results, keyspace_results, commands, argvs = run_all(args)
        if args.smoke:
            check_complete(args, scenarios, results, keyspace_results)
    except BenchError as e:
        print(f"server_bench: FAILED: {e}", file=sys.stderr)
        return 1
    report = build_report(args, facts, scenarios, results, keyspace_results, commands, argvs)
    print()
    print(report)
    if args.smoke:
        if args.out:
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            with open(args.out, "w") as f:
                f.write(report + "\n")
        print(f"\nserver_bench --smoke: OK, every scenario ran ({time.monotonic() - started:.1f} s)")
        return 0
    if not args.no_write:
        out = args.out or os.path.join(REPO, "bench", "results", f"server-{time.strftime('%Y-%m-%d')}.md")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            f.write(report + "\n")
        print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
