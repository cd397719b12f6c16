#!/usr/bin/python3
"""CPU per request on one core: Bloomgate (--threads 1) against redis-server.

Issue 14, target 1. Starts redis-server and one Bloomgate per binary given
(`--bin`, and `--baseline` for a "before" build), every one with
`--save "" --appendonly no` and Bloomgate with `--threads 1`, so each serves
its requests on one core. Pre-reserves 10M-item filters (`BF.RESERVE bf 0.01
10000000`, `CBF.RESERVE cbf 0.01 10000000`, `CF.RESERVE cf 10000000`) and
drives every server with `redis-benchmark -c 50 -r 10000000 -n N` at -P 16
and -P 1. For each row it records requests/s, p99 and the server's CPU per
request from /proc/PID/stat (utime and stime separately, so kernel time is
visible on its own).

RedisBloom is not installed here, so the targets are stated against redis
GET / SET measured in the same run, with the issue's calibration (RedisBloom
BF.EXISTS costs ~0.8x a GET, BF.ADD ~0.58x a SET): 0.6x RedisBloom is
0.48x GET's CPU for *.EXISTS and 0.348x SET's for *.ADD. CF.* and CBF.* use
the same factors (the issue sets them against BF.*'s references).

Two multi-item rows, `BF.MADD bf` and `CBF.MADD cbf` with 100 random items,
report items per CPU-second against RedisBloom's BF.MADD (estimated from SET
with server_bench.py's REDISBLOOM_PER_ITEM factor) and, for CBF.MADD, against
the same binary's BF.MADD (`--only MADD` runs just these, with SET and GET).

Rows alternate between the servers inside every round (the order rotates
from round to round), and every ratio is taken within a round, so drift on a
shared machine hits both sides; the report gives the median over rounds
with min–max.

Usage (from the repository root):
  bench/per_core_bench.py --bin build/server/bloomgate
  bench/per_core_bench.py --bin build/server/bloomgate --baseline /tmp/old/bloomgate
  bench/per_core_bench.py --smoke --bin build/server/bloomgate     # CI, ~5 s

Writes bench/results/per-core-<date>.md (--out, --no-write). --smoke runs
every row once with a tiny -n and exits non-zero on any failure.
"""

import argparse
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_bench as sb  # noqa: E402  (the servers, the RESP client, redis-benchmark)

KEYSPACE = 10_000_000
# The calibration: RedisBloom's CPU per request over redis's, and
# the target of 0.6x RedisBloom.
RB_FACTOR = {"get": 0.8, "set": 0.58}
TARGET_OF_RB = 0.6

# (row key, redis reference, label, arguments)
BLOOMGATE_ROWS = [
    ("bf.add", "set", "BF.ADD bf r", ["BF.ADD", "bf", "__rand_int__"]),
    ("bf.exists", "get", "BF.EXISTS bf r", ["BF.EXISTS", "bf", "__rand_int__"]),
    ("cf.add", "set", "CF.ADD cf r", ["CF.ADD", "cf", "__rand_int__"]),
    ("cf.exists", "get", "CF.EXISTS cf r", ["CF.EXISTS", "cf", "__rand_int__"]),
    ("cbf.add", "set", "CBF.ADD cbf r", ["CBF.ADD", "cbf", "__rand_int__"]),
    ("cbf.exists", "get", "CBF.EXISTS cbf r", ["CBF.EXISTS", "cbf", "__rand_int__"]),
]
# Multi-item rows (key, redis reference, label, arguments, items per
# request): items per CPU-second against RedisBloom's BF.MADD, estimated from
# SET in the same round with server_bench.REDISBLOOM_PER_ITEM's factor, and
# CBF.MADD against Bloomgate's own BF.MADD.
MULTI_ROWS = [
    ("bf.madd100", "set", "BF.MADD bf 100", ["BF.MADD", "bf"] + ["__rand_int__"] * 100, 100),
    ("cbf.madd100", "set", "CBF.MADD cbf 100", ["CBF.MADD", "cbf"] + ["__rand_int__"] * 100, 100),
]
REDIS_ROWS = [
    ("get", None, "GET key:r", ["GET", "key:__rand_int__"]),
    ("set", None, "SET key:r r", ["SET", "key:__rand_int__", "__rand_int__"]),
]
SETUP = [("BF.RESERVE", "bf", "0.01", str(KEYSPACE)),
         ("CBF.RESERVE", "cbf", "0.01", str(KEYSPACE)),
         ("CF.RESERVE", "cf", str(KEYSPACE))]


class CpuServer(sb.Server):
    def cpu_split(self):
        """(utime, stime) of the whole process, in seconds."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) / sb.CLK_TCK, int(fields[12]) / sb.CLK_TCK


class SplitBench(sb.Bench):
    """redis-benchmark runs that also record user and kernel CPU apart."""

    def run(self, sc, pipeline, n):
        server = self.servers[sc.server]
        u0, s0 = server.cpu_split()
        result = super().run(sc, pipeline, n)
        u1, s1 = server.cpu_split()
        result["user_us"] = (u1 - u0) / n * 1e6
        result["sys_us"] = (s1 - s0) / n * 1e6
        result["cpu_us"] = result["user_us"] + result["sys_us"]
        return result


def make_scenarios(server_names):
    rows = []
    for name in server_names:
        table = REDIS_ROWS if name == "redis" else BLOOMGATE_ROWS
        for key, ref, label, args in table:
            sc = sb.Scenario(key, name, label, args, keyspace=KEYSPACE)
            sc.row, sc.ref = key, ref
            rows.append(sc)
        if name != "redis":
            for key, ref, label, args, items in MULTI_ROWS:
                sc = sb.Scenario(key, name, label, args, items=items, keyspace=KEYSPACE,
                                 n_floor=4_000)
                sc.row, sc.ref = key, ref
                rows.append(sc)
    return rows


def setup(conns):
    for name, c in conns.items():
        c.call("FLUSHALL")
        if name != "redis":
            for command in SETUP:
                c.call(*command)


def check_state(conns, ran_adds):
    """The adds must have left items behind (a server that answered every
    request with an error would fail here, redis-benchmark does not see it)."""
    for name, c in conns.items():
        if name == "redis":
            continue
        checks = (("bf", ("BF.CARD", "bf")), ("cf", ("CF.INFO", "cf")),
                  ("cbf", ("CBF.CARD", "cbf")))
        for key, command in checks:
            if f"{key}.add" not in ran_adds and f"{key}.madd100" not in ran_adds:
                continue
            reply = c.call(*command)
            if isinstance(reply, list):  # CF.INFO: "Number of items inserted"
                fields = {(k.decode() if isinstance(k, bytes) else str(k)).lower(): v
                          for k, v in zip(reply[::2], reply[1::2])}
                reply = fields.get("number of items inserted")
            if not isinstance(reply, int) or reply <= 0:
                raise sb.BenchError(f"{name}: {' '.join(command)} = {reply!r} after the adds")


def run_all(args):
    bins = {"bloomgate": args.bin}
    if args.baseline:
        bins["before"] = args.baseline
    for name, path in list(bins.items()):
        path = os.path.abspath(path)
        if not os.access(path, os.X_OK):
            raise sb.BenchError(f"{name} binary not found or not executable: {path}")
        bins[name] = path
    if not os.access(args.redis_server, os.X_OK):
        raise sb.BenchError(f"{args.redis_server} not found (Debian package redis-server)")
    if shutil.which(args.redis_benchmark) is None:
        raise sb.BenchError(f"{args.redis_benchmark} not found (Debian package redis-tools)")
    tmp = tempfile.mkdtemp(prefix="bloomgate-per-core-")
    servers, argvs = {}, {}
    for name, path in bins.items():
        port = sb.free_port()
        argvs[name] = [path, "--bind", "127.0.0.1", "--port", str(port), "--loglevel", "warn",
                       "--threads", "1", "--save", "", "--appendonly", "no",
                       "--dir", os.path.join(tmp, name)]
        os.makedirs(os.path.join(tmp, name))
        servers[name] = CpuServer(name, argvs[name], port, os.path.join(tmp, f"{name}.log"))
    port = sb.free_port()
    argvs["redis"] = [args.redis_server, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                      "--appendonly", "no", "--dir", tmp]
    servers["redis"] = CpuServer("redis-server", argvs["redis"], port, os.path.join(tmp, "redis.log"))
    facts = sb.machine_facts()
    facts["date"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    facts["load_start"] = os.getloadavg()
    facts["versions"] = {name: sb.version_of([path, "--version"]) for name, path in bins.items()}
    facts["versions"]["redis"] = sb.version_of([args.redis_server, "--version"])
    results = {}  # (server, row, pipeline) -> [result per round]
    conns = {}
    bench = None
    try:
        for s in servers.values():
            s.start(tmp)
        conns = {name: sb.Conn(s.port) for name, s in servers.items()}
        names = list(servers)
        scenarios = make_scenarios(names)
        if args.only:
            import re
            pattern = re.compile(args.only)
            scenarios = [sc for sc in scenarios if sc.ref is None or pattern.search(sc.label)]
        bench = SplitBench(args, servers)
        sizes = {}
        # Each Bloomgate row next to the same row of the other binary and to
        # its redis reference, the order rotating every round.
        groups = [[sc for sc in scenarios if sc.server == "redis"]]
        for key, *_ in BLOOMGATE_ROWS + MULTI_ROWS:
            group = [sc for sc in scenarios if sc.server != "redis" and sc.row == key]
            if group:
                groups.append(group)
        for rnd in range(args.rounds):
            setup(conns)
            for pipeline in args.pipelines:
                for group in groups:
                    shift = rnd % len(group)
                    for sc in group[shift:] + group[:shift]:
                        size_key = (sc.row, pipeline)
                        if size_key not in sizes:
                            sizes[size_key] = (args.smoke_requests if args.smoke
                                               else bench.calibrate(sc, pipeline))
                        r = bench.run(sc, pipeline, max(50, int(sizes[size_key])))
                        results.setdefault((sc.server, sc.row, pipeline), []).append(r)
                        print(f"round {rnd + 1}/{args.rounds} -P {pipeline:<2} {sc.server:9} "
                              f"{sc.label:18} {r['rps']:>10,.0f} req/s  p99 {r['p99']:.3f} ms  "
                              f"user {r['user_us']:.2f} sys {r['sys_us']:.2f} us/req", flush=True)
            check_state(conns, {sc.row for sc in scenarios})
        facts["load_end"] = os.getloadavg()
    finally:
        for c in conns.values():
            try:
                c.close()
            except OSError:
                pass
        for s in servers.values():
            s.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    for s in servers.values():
        if s.shutdown_error:
            raise sb.BenchError(f"{s.name} {s.shutdown_error}")
    return facts, scenarios, results, bench.commands, argvs


def per_round_ratios(results, num, den, field):
    a, b = results.get(num, []), results.get(den, [])
    return [x[field] / y[field] for x, y in zip(a, b) if y[field] > 0]


def med(values):
    return statistics.median(values) if values else float("nan")


def build_report(args, facts, scenarios, results, commands, argvs):
    lines = []
    w = lines.append
    w("# CPU per request on one core: Bloomgate vs redis-server\n")
    w(f"- date: {facts['date']}")
    w(f"- machine: nproc {facts['nproc']}, {facts['cpu']}, {facts['mem']} RAM, kernel {facts['kernel']}")
    w(f"- load average: start {', '.join(f'{x:.2f}' for x in facts['load_start'])}; end "
      f"{', '.join(f'{x:.2f}' for x in facts.get('load_end', (0, 0, 0)))} "
      "(a shared machine: other jobs were running)")
    for name, argv in argvs.items():
        w(f"- {name}: {facts['versions'][name]} — `{shlex.join(argv)}`")
    w(f"- this run: `{shlex.join(['bench/per_core_bench.py'] + sys.argv[1:])}` — {args.rounds} "
      f"round(s), about {args.seconds} s per row, rows of one command alternating between servers")
    w("")
    w("CPU is the server's utime and stime per request (/proc/PID/stat, 10 ms ticks, rows of "
      "seconds). Targets (issue 14, 1): 0.6x RedisBloom's CPU, RedisBloom taken as 0.8x GET "
      "(*.EXISTS) and 0.58x SET (*.ADD): at most 0.48x GET's / 0.348x SET's. p99 is compared "
      "with GET's / SET's (RedisBloom's own is not measurable here). Ratios: median over rounds "
      "(min–max), each taken within its round.\n")
    bg_names = [n for n in argvs if n != "redis"]
    header = ["row", "-P", "server", "CPU / ref", "target", "verdict", "user / ref", "sys / ref",
              "p99 / ref", "req/s / ref"]
    rows = []
    for key, ref, label, _ in BLOOMGATE_ROWS:
        bound = TARGET_OF_RB * RB_FACTOR[ref]
        for p in args.pipelines:
            for name in bg_names:
                num, den = (name, key, p), ("redis", ref, p)
                cpu = per_round_ratios(results, num, den, "cpu_us")
                if not cpu:
                    continue
                rows.append([f"{label} / {ref.upper()}", str(p), name, sb.ratio_text(cpu),
                             f"≤ {bound:.3f}x", sb.verdict(med(cpu) <= bound),
                             sb.ratio_text(per_round_ratios(results, num, den, "user_us")),
                             sb.ratio_text(per_round_ratios(results, num, den, "sys_us")),
                             sb.ratio_text(per_round_ratios(results, num, den, "p99")),
                             sb.ratio_text(per_round_ratios(results, num, den, "rps"))])
    if rows:
        w("## Target 1: CPU per request against the redis references\n")
        w(sb.table(header, rows))
        w("")
    multi = [row for row in MULTI_ROWS if any(results.get((n, row[0], p))
                                              for n in bg_names for p in args.pipelines)]
    if multi:
        w("## Multi-item rows: items per CPU-second\n")
        w("RedisBloom's BF.MADD item is estimated as server_bench.py's REDISBLOOM_PER_ITEM "
          "factor × SET's CPU per request in the same round (the issue's calibration, "
          f"{sb.REDISBLOOM_PER_ITEM['bf.madd100'][1]:.3f} SETs per item); CBF.MADD is also "
          "given against Bloomgate's own BF.MADD of the same binary and round.\n")
        rows = []
        for key, ref, label, _, items in multi:
            factor = sb.REDISBLOOM_PER_ITEM[key][1]
            for p in args.pipelines:
                theirs = results.get(("redis", ref, p), [])
                for name in bg_names:
                    ours = results.get((name, key, p), [])
                    if not ours:
                        continue
                    per_s = [items / r["cpu_us"] * 1e6 for r in ours if r["cpu_us"] > 0]
                    vs_rb = [factor * t["cpu_us"] / (o["cpu_us"] / items)
                             for o, t in zip(ours, theirs) if o["cpu_us"] > 0]
                    vs_bf = per_round_ratios(results, (name, "bf.madd100", p), (name, key, p),
                                             "cpu_us") if key != "bf.madd100" else []
                    rows.append([label, str(p), name,
                                 f"{med(per_s) / 1e6:.2f}M ({min(per_s) / 1e6:.2f}–"
                                 f"{max(per_s) / 1e6:.2f}M)" if per_s else "",
                                 f"{med([o['cpu_us'] / items * 1e3 for o in ours]):.0f}",
                                 sb.ratio_text(vs_rb), sb.ratio_text(vs_bf) if vs_bf else ""])
        w(sb.table(["row", "-P", "server", "items / CPU-s", "CPU ns / item",
                    "× RedisBloom BF.MADD (est.)", "× own BF.MADD"], rows))
        w("")
    if "before" in bg_names:
        w("## After / before (the two Bloomgate binaries, same round)\n")
        rows = []
        for key, _, label, *_ in BLOOMGATE_ROWS + MULTI_ROWS:
            for p in args.pipelines:
                num, den = ("bloomgate", key, p), ("before", key, p)
                cpu = per_round_ratios(results, num, den, "cpu_us")
                if cpu:
                    rows.append([label, str(p), sb.ratio_text(cpu),
                                 sb.ratio_text(per_round_ratios(results, num, den, "user_us")),
                                 sb.ratio_text(per_round_ratios(results, num, den, "sys_us")),
                                 sb.ratio_text(per_round_ratios(results, num, den, "p99")),
                                 sb.ratio_text(per_round_ratios(results, num, den, "rps"))])
        w(sb.table(["row", "-P", "CPU after / before", "user", "sys", "p99", "req/s"], rows))
        w("")
    w("## All rows (medians over rounds)\n")
    rows = []
    for p in args.pipelines:
        for sc in scenarios:
            rs = results.get((sc.server, sc.row, p), [])
            if not rs:
                continue
            rows.append([sc.label, sc.server, str(p), sb.fmt(med([r["n"] for r in rs])),
                         sb.fmt(med([r["rps"] for r in rs])), sb.fmt(med([r["p99"] for r in rs]), 3),
                         sb.fmt(med([r["user_us"] for r in rs]), 3),
                         sb.fmt(med([r["sys_us"] for r in rs]), 3),
                         sb.fmt(med([r["cpu_us"] for r in rs]), 3)])
    w(sb.table(["row", "server", "-P", "requests", "req/s", "p99 ms", "user µs/req",
                "sys µs/req", "CPU µs/req"], rows))
    w("")
    w("## Commands\n")
    w("```sh")
    for (key, p), argv in sorted(commands.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        w(shlex.join(["redis-benchmark"] + argv[1:]))
    w("```")
    w("Ports are picked free at start-up and differ between runs.")
    return "\n".join(lines)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=os.environ.get("BLOOMGATE_BIN", "build/server/bloomgate"))
    parser.add_argument("--baseline", help="a second Bloomgate binary (the 'before' build), "
                        "run beside --bin in every round")
    parser.add_argument("--redis-server", default="/usr/bin/redis-server")
    parser.add_argument("--redis-benchmark", default="redis-benchmark")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=3.0, help="target length of one row")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pipelines", default="16,1")
    parser.add_argument("--only", help="regex over the Bloomgate rows' labels (GET/SET always run)")
    parser.add_argument("--max-requests", type=int, default=20_000_000)
    parser.add_argument("--run-timeout", type=float, default=120.0)
    parser.add_argument("--out")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--smoke-requests", type=int, default=2000, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.pipelines = [int(x) for x in args.pipelines.split(",")]
    if args.smoke:
        args.rounds = 1
        args.run_timeout = min(args.run_timeout, 30.0)
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    started = time.monotonic()
    try:
        facts, scenarios, results, commands, argvs = run_all(args)
        missing = [f"{sc.server} {sc.label} -P {p}" for sc in scenarios for p in args.pipelines
                   if not results.get((sc.server, sc.row, p))]
        if missing:
            raise sb.BenchError(f"rows without a result: {', '.join(missing)}")
    except sb.BenchError as e:
        print(f"per_core_bench: FAILED: {e}", file=sys.stderr)
        return 1
    report = build_report(args, facts, scenarios, results, commands, argvs)
    print()
    print(report)
    out = args.out
    if not args.smoke and not args.no_write and not out:
        out = os.path.join(sb.REPO, "bench", "results", f"per-core-{time.strftime('%Y-%m-%d')}.md")
    if out and not args.no_write:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as f:
            f.write(report + "\n")
        print(f"\nwritten to {out}")
    if args.smoke:
        print(f"\nper_core_bench --smoke: OK, every row ran ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
