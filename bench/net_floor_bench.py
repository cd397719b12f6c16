#!/usr/bin/python3
"""The network floor: server CPU per PING, Bloomgate against redis-server.

Issue 25, target 1 (PING <= 0.7x redis-server's CPU per request at -P 1 and
-P 16). Starts redis-server and Bloomgate (`--threads 1`) once per
`--backends` entry (default: `io-backend epoll` and `io-backend io_uring`),
all with `--save "" --appendonly no`, and drives each with `redis-benchmark
-c 50 -n N -P p PING`. CPU per request is utime + stime from /proc/PID/stat
around the run (user and kernel apart too); the servers take turns inside
each round, the order rotating from round to round, and every ratio is
taken within its round, so the machine's drift hits all sides. The report is
the median ratio over rounds with min-max.

`--syscalls` also counts each server's system calls per request in one extra
run per row (`perf stat -e raw_syscalls:sys_enter -p PID`), which says where
a gap is: today's epoll path makes recvfrom (data), recvfrom (EAGAIN, Asio's
speculative read) and sendmsg per request plus a share of epoll_wait.

Usage (from the repository root):
  bench/net_floor_bench.py --bin build/server/bloomgate --rounds 3
  bench/net_floor_bench.py --bin build/server/bloomgate --rounds 1 --syscalls
  bench/net_floor_bench.py --smoke --bin build/server/bloomgate     # ~5 s
Prints its table; --out FILE writes it too.
"""

import argparse
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_bench as sb  # noqa: E402  (servers, /proc CPU, BenchError)

TARGET = 0.7


def cpu_split(server):
    with open(f"/proc/{server.proc.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / sb.CLK_TCK, int(fields[12]) / sb.CLK_TCK


def bench_argv(args, port, pipeline, n):
    rb = shutil.which(args.redis_benchmark) or args.redis_benchmark
    return [rb, "-h", "127.0.0.1", "-p", str(port), "-c", str(args.clients), "-n", str(n),
            "-P", str(pipeline), "-q", "PING"]


def run_row(args, server, pipeline, n, count_syscalls=False):
    argv = bench_argv(args, server.port, pipeline, n)
    perf = None
    if count_syscalls:
        perf = subprocess.Popen(["perf", "stat", "-x", ",", "-e", "raw_syscalls:sys_enter",
                                 "-p", str(server.proc.pid)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.3)  # perf attaches
    user0, sys0 = cpu_split(server)
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, timeout=args.run_timeout)
    user1, sys1 = cpu_split(server)
    syscalls = None
    if perf is not None:
        perf.send_signal(signal.SIGINT)
        _, err = perf.communicate(timeout=10)
        for line in err.decode(errors="replace").splitlines():
            if "raw_syscalls:sys_enter" in line and line.split(",")[0].strip().isdigit():
                syscalls = int(line.split(",")[0]) / n
    if done.returncode != 0:
        raise sb.BenchError(f"redis-benchmark exited {done.returncode}: {shlex.join(argv)}\n"
                            f"{done.stderr.decode(errors='replace')[:500]}")
    if not server.alive():
        raise sb.BenchError(f"{server.name} died; log:\n{server.log_text()}")
    return {"user": (user1 - user0) / n * 1e6, "sys": (sys1 - sys0) / n * 1e6,
            "cpu": (user1 - user0 + sys1 - sys0) / n * 1e6, "syscalls": syscalls,
            "argv": argv}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default=os.environ.get("BLOOMGATE_BIN", "build/server/bloomgate"))
    parser.add_argument("--redis-server", default="/usr/bin/redis-server")
    parser.add_argument("--redis-benchmark", default="redis-benchmark")
    parser.add_argument("--backends", default="epoll,io_uring")
    parser.add_argument("--baseline", help="another Bloomgate binary, on io_uring, in the same rounds")
    parser.add_argument("--baseline-backend", default="io_uring",
                        help="the baseline's io-backend; 'none' for a build without the option")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", default="1:300000,16:2000000",
                        help="pipeline:requests per row")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--run-timeout", type=float, default=300.0)
    parser.add_argument("--syscalls", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    rows = [tuple(int(x) for x in item.split(":")) for item in args.requests.split(",")]
    if args.smoke:
        rows = [(p, 2000) for p, _ in rows]
        args.rounds = 1
    backends = args.backends.split(",")
    servers = {}
    with tempfile.TemporaryDirectory(prefix="net-floor-") as tmp:
        try:
            port = sb.free_port()
            servers["redis"] = sb.Server(
                "redis", [args.redis_server, "--port", str(port), "--bind", "127.0.0.1",
                          "--save", "", "--appendonly", "no"], port, os.path.join(tmp, "redis.log"))
            for backend in backends:
                port = sb.free_port()
                d = os.path.join(tmp, backend)
                os.mkdir(d)
                servers[backend] = sb.Server(
                    "bloomgate " + backend,
                    [os.path.abspath(args.bin), "--port", str(port), "--bind", "127.0.0.1", "--threads", "1",
                     "--io-backend", backend, "--save", "", "--appendonly", "no", "--dir", d],
                    port, os.path.join(tmp, backend + ".log"))
            if args.baseline:
                port = sb.free_port()
                d = os.path.join(tmp, "baseline")
                os.mkdir(d)
                # A build older than io-backend takes none (its sockets are on epoll).
                backend_flag = ([] if args.baseline_backend == "none"
                                else ["--io-backend", args.baseline_backend])
                servers["baseline"] = sb.Server(
                    "baseline " + (args.baseline_backend if backend_flag else "(epoll)"),
                    [args.baseline, "--port", str(port), "--bind", "127.0.0.1", "--threads", "1"]
                    + backend_flag + ["--save", "", "--appendonly", "no", "--dir", d],
                    port, os.path.join(tmp, "baseline.log"))
            for name, server in servers.items():
                server.start(tmp if name == "redis" else os.path.join(tmp, name))
            order = list(servers)
            results = {}  # (name, pipeline) -> [per-round dict]
            for r in range(args.rounds):
                for pipeline, n in rows:
                    for name in order[r % len(order):] + order[:r % len(order)]:
                        res = run_row(args, servers[name], pipeline, n)
                        results.setdefault((name, pipeline), []).append(res)
                        print(f"round {r + 1} -P {pipeline:2d} {name:9s} "
                              f"CPU {res['cpu']:.3f} us/req (user {res['user']:.3f}, "
                              f"sys {res['sys']:.3f})", flush=True)
            syscalls = {}
            if args.syscalls:
                for pipeline, n in rows:
                    for name in order:
                        syscalls[(name, pipeline)] = run_row(args, servers[name], pipeline, n,
                                                             True)["syscalls"]
            lines = ["| -P | server | CPU us/req (median) | user | sys | vs redis: median (min-max) |"
                     + (" syscalls/req |" if syscalls else ""),
                     "|---|---|---|---|---|---|" + ("---|" if syscalls else "")]
            for pipeline, _ in rows:
                for name in order:
                    rs = results[(name, pipeline)]
                    ratio = ""
                    if name != "redis":
                        ratios = [a["cpu"] / b["cpu"] if b["cpu"] > 0 else float("nan")
                                  for a, b in zip(rs, results[("redis", pipeline)])]
                        ratio = (f"{statistics.median(ratios):.2f}x "
                                 f"({min(ratios):.2f}-{max(ratios):.2f})")
                    line = (f"| {pipeline} | {servers[name].name} | "
                            f"{statistics.median(x['cpu'] for x in rs):.3f} | "
                            f"{statistics.median(x['user'] for x in rs):.3f} | "
                            f"{statistics.median(x['sys'] for x in rs):.3f} | {ratio} |")
                    if syscalls:
                        s = syscalls[(name, pipeline)]
                        line += f" {s:.2f} |" if s is not None else " ? |"
                    lines.append(line)
            lines.append("")
            lines.append(f"target: Bloomgate <= {TARGET}x redis-server at every -P; "
                         f"{args.rounds} rounds, -c {args.clients}; per row: "
                         + shlex.join(bench_argv(args, 0, rows[0][0], rows[0][1])))
            text = "\n".join(lines)
            print(text)
            if args.out:
                with open(args.out, "w") as f:
                    f.write(text + "\n")
        finally:
            errors = []
            for server in servers.values():
                server.stop()
                if server.shutdown_error:
                    errors.append(f"{server.name}: {server.shutdown_error}")
            if errors:
                print("\n".join(errors), file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
