#!/usr/bin/python3
"""Small filters: bytes per key and lookups spread over many of them.

Three figures for a `BF.RESERVE k 0.01 100` filter, per binary (`--bin`, and
`--baseline` for a "before" build measured in the same run):

1. `MEMORY USAGE k` (and `BF.INFO k SIZE`) of one such filter.
2. RSS per key: VmRSS of the server (/proc/PID/status) before and after
   creating `--keys` such filters (`f:0` ... `f:<keys-1>`), pipelined, the
   difference over the number of keys.
3. The spread lookup: `redis-benchmark -r <keys> BF.EXISTS f:__rand_int__ x`
   (every request a different small filter) against `BF.EXISTS big
   k:__rand_int__` (one 10M-item filter), taking turns within each round.
   The figure is the server's CPU per request (utime + stime of the process,
   /proc/PID/stat) of the big-filter row over the spread row's: the rate a
   core would reach spread over the keys relative to one filter. Wall-clock
   req/s ratios are printed beside it, but on a shared machine only CPU per
   request means much.

Every server runs with `--threads 1 --save "" --appendonly no`.

Usage (from the repository root):
  bench/small_filters_bench.py --bin build/server/bloomgate
  bench/small_filters_bench.py --bin build/server/bloomgate --baseline /tmp/old/bloomgate
  bench/small_filters_bench.py --smoke --bin build/server/bloomgate   # ~5 s
"""

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_bench as sb  # noqa: E402  (the servers, the RESP client)

BIG_CAPACITY = "10000000"


def rss_kib(server):
    with open(f"/proc/{server.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise sb.BenchError("no VmRSS")


def settle(conn):
    """A round trip, so every earlier reply (and its allocations) is done."""
    if conn.call("PING") != "PONG":
        raise sb.BenchError("PING")


def memory_figures(server, keys):
    conn = sb.Conn(server.port)
    try:
        conn.call("FLUSHALL")
        conn.call("BF.RESERVE", "k", "0.01", "100")
        usage = conn.call("MEMORY", "USAGE", "k")
        size = conn.call("BF.INFO", "k", "SIZE")
        size = size[0] if isinstance(size, list) else size
        conn.call("DEL", "k")
        settle(conn)
        before = rss_kib(server)
        replies = conn.pipeline([("BF.RESERVE", f"f:{i}", "0.01", "100") for i in range(keys)])
        bad = [r for r in replies if r != "OK"]
        if bad:
            raise sb.BenchError(f"BF.RESERVE f:N: {bad[0]!r}")
        settle(conn)
        after = rss_kib(server)
        if conn.call("DBSIZE") != keys:
            raise sb.BenchError("DBSIZE after creating the small filters")
        conn.call("BF.RESERVE", "big", "0.01", BIG_CAPACITY)
        return {"usage": usage, "size": size, "rss_before_kib": before, "rss_after_kib": after,
                "rss_per_key": (after - before) * 1024 / keys}
    finally:
        conn.close()


def run_benchmark(args, server, key_args, keyspace, n):
    argv = [shutil.which("redis-benchmark"), "-h", "127.0.0.1", "-p", str(server.port),
            "-c", str(args.clients), "-n", str(n), "-P", str(args.pipeline),
            "-r", str(keyspace), "--csv", "-q"] + key_args
    cpu0, t0 = server.cpu_seconds(), time.monotonic()
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, timeout=args.run_timeout)
    wall, cpu = time.monotonic() - t0, server.cpu_seconds() - cpu0
    if done.returncode != 0 or not server.alive():
        raise sb.BenchError(f"{shlex.join(argv)} failed: {done.stderr.decode()[:400]}")
    return {"cpu_per_req_us": cpu / n * 1e6, "rps": n / wall, "argv": argv}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True)
    p.add_argument("--baseline", help="a 'before' bloomgate binary, measured in the same rounds")
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--requests", type=int, default=1_000_000, help="-n of each redis-benchmark run")
    p.add_argument("--pipeline", type=int, default=16)
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--run-timeout", type=float, default=300)
    p.add_argument("--smoke", action="store_true", help="tiny sizes, one round")
    args = p.parse_args()
    if args.smoke:
        args.keys, args.rounds, args.requests = 2000, 1, 20_000
    if shutil.which("redis-benchmark") is None:
        raise sb.BenchError("redis-benchmark not found (Debian package redis-tools)")

    binaries = [("after", args.bin)] + ([("before", args.baseline)] if args.baseline else [])
    tmp = tempfile.mkdtemp(prefix="bloomgate-small-")
    servers = {}
    try:
        for name, path in binaries:
            port = sb.free_port()
            d = os.path.join(tmp, name)
            os.mkdir(d)
            argv = [os.path.abspath(path), "--bind", "127.0.0.1", "--port", str(port),
                    "--loglevel", "warn", "--threads", "1", "--save", "", "--appendonly", "no",
                    "--dir", d]
            servers[name] = sb.Server(name, argv, port, os.path.join(d, "log"))
            servers[name].start(d)
        memory = {name: memory_figures(s, args.keys) for name, s in servers.items()}
        for name, m in memory.items():
            print(f"{name}: MEMORY USAGE {m['usage']}, BF.INFO Size {m['size']}, RSS "
                  f"{m['rss_before_kib']} -> {m['rss_after_kib']} KiB = {m['rss_per_key']:.0f} "
                  f"bytes per key ({args.keys:,} keys)")
        spread = ["BF.EXISTS", "f:__rand_int__", "x"]
        big = ["BF.EXISTS", "big", "k:__rand_int__"]
        ratios = {name: [] for name in servers}
        for r in range(args.rounds):
            order = list(servers.items())
            if r % 2:
                order.reverse()
            for name, s in order:
                rows = [("big", big), ("spread", spread)]
                if r % 2:
                    rows.reverse()
                res = {label: run_benchmark(args, s, a, args.keys, args.requests)
                       for label, a in rows}
                # CPU comes in 10 ms ticks: a --smoke row of a few thousand
                # requests may see none, and then has no ratio (nan).
                spread_cpu = res["spread"]["cpu_per_req_us"]
                ratio = res["big"]["cpu_per_req_us"] / spread_cpu if spread_cpu > 0 else float("nan")
                ratios[name].append(ratio)
                print(f"round {r + 1} {name}: CPU us/request big {res['big']['cpu_per_req_us']:.3f}, "
                      f"spread {res['spread']['cpu_per_req_us']:.3f}; spread rate / big = "
                      f"{ratio:.2f}x by CPU, {res['spread']['rps'] / res['big']['rps']:.2f}x by "
                      f"req/s (load {os.getloadavg()[0]:.1f})")
        for name, values in ratios.items():
            print(f"{name}: spread / big by CPU per request, median {statistics.median(values):.2f}x "
                  f"({min(values):.2f}-{max(values):.2f}x) over {len(values)} rounds; "
                  f"-P {args.pipeline} -c {args.clients} -n {args.requests} -r {args.keys}")
    finally:
        for s in servers.values():
            s.stop()
        errors = [f"{s.name}: {s.shutdown_error}" for s in servers.values() if s.shutdown_error]
        if errors:
            raise sb.BenchError("; ".join(errors))
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except sb.BenchError as e:
        print(f"small_filters_bench: {e}", file=sys.stderr)
        sys.exit(1)
