#!/usr/bin/python3
"""Server CPU per item for the sketches: TDIGEST.ADD beside CMS.INCRBY.

Starts one Bloomgate (`--threads 1 --save "" --appendonly no`), creates a
count-min sketch (`CMS.INITBYDIM cms 2000 5`, RedisBloom's usual shape), a
t-digest (`TDIGEST.CREATE td COMPRESSION 100`, RedisBloom's default) and a
top-k (`TOPK.RESERVE topk 50`), and drives each row with
`redis-benchmark -c 50 -P 16 -r 1000000 -n N`. The figure is the server's
CPU (utime + stime from /proc/PID/stat) per item; one item per request,
except the TDIGEST.ADD row of 10 values, whose CPU is divided by 10. Rows
alternate inside every round and each ratio to CMS.INCRBY is taken within
its round, so drift on a shared machine hits both sides; the report gives
the median over rounds with min-max.

Usage (from the repository root):
  bench/sketch_cost_bench.py --bin build/server/bloomgate
  bench/sketch_cost_bench.py --smoke --bin build/server/bloomgate   # CI, ~2 s
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_bench as sb  # noqa: E402  (the server, the RESP client)

SETUP = [("CMS.INITBYDIM", "cms", "2000", "5"),
         ("TDIGEST.CREATE", "td", "COMPRESSION", "100"),
         ("TOPK.RESERVE", "topk", "50")]
# (label, items per request, arguments)
ROWS = [
    ("CMS.INCRBY cms r 1", 1, ["CMS.INCRBY", "cms", "__rand_int__", "1"]),
    ("TDIGEST.ADD td r", 1, ["TDIGEST.ADD", "td", "__rand_int__"]),
    ("TDIGEST.ADD td r x10", 10, ["TDIGEST.ADD", "td"] + ["__rand_int__"] * 10),
    ("TOPK.ADD topk r", 1, ["TOPK.ADD", "topk", "__rand_int__"]),
]


def run_row(server, port, args, n):
    before = server.cpu_seconds()
    subprocess.run(["redis-benchmark", "-p", str(port), "-c", "50", "-P", "16", "-r", "1000000",
                    "-n", str(n), "-q", *args], check=True, stdout=subprocess.DEVNULL)
    return server.cpu_seconds() - before


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=400_000)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    rounds, n = (1, 2_000) if args.smoke else (args.rounds, args.requests)
    port = sb.free_port()
    with tempfile.TemporaryDirectory() as tmp:
        server = sb.Server("bloomgate", [os.path.abspath(args.bin), "--port", str(port),
                                         "--threads", "1", "--save", "", "--appendonly", "no",
                                         "--dir", tmp], port, os.path.join(tmp, "log"))
        server.start(tmp)
        try:
            conn = sb.Conn(port)
            for command in SETUP:
                conn.call(*command)
            per_item = {label: [] for label, _, _ in ROWS}
            for rnd in range(rounds):
                order = ROWS[rnd % len(ROWS):] + ROWS[:rnd % len(ROWS)]
                for label, items, row_args in order:
                    per_item[label].append(run_row(server, port, row_args, n) / (n * items))
            # Every row must have changed its sketch: a server answering
            # errors would be measured as fast.
            info = dict(zip(*[iter(conn.call("TDIGEST.INFO", "td"))] * 2))
            observations = info.get("Observations")
            if not observations or int(observations) < n:
                raise sb.BenchError(f"TDIGEST.INFO after the adds: {info!r}")
            if int(conn.call("CMS.QUERY", "cms", "000000000001")[0]) < 0:
                raise sb.BenchError("CMS.QUERY answered a negative count")
        finally:
            server.stop()
    base = per_item["CMS.INCRBY cms r 1"]
    print(f"| row (-P 16, {n:,} requests, {rounds} rounds) | CPU per item (us) | / CMS.INCRBY |")
    print("|---|---|---|")
    for label, _, _ in ROWS:
        # A smoke run's CPU can round to 0 at the clock's 10 ms tick.
        ratios = [v / b for v, b in zip(per_item[label], base) if b > 0]
        ratio = (f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
                 if ratios else "-")
        print(f"| {label} | {statistics.median(per_item[label]) * 1e6:.2f} | {ratio} |")


if __name__ == "__main__":
    main()
