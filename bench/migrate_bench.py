#!/usr/bin/env python3
"""bloomgate migrate's rate between two local Bloomgate servers.

  /usr/bin/python3 bench/migrate_bench.py [--capacity 500000000] [--error-rate 0.0001]
                                          [--bin build/server/bloomgate] [--smoke]

Starts a source and a target (no persistence, 2 threads each) on free
loopback ports, creates one Bloom filter on the source with BF.RESERVE
(capacity 500M at 0.0001 is about 1.1 GB of bits), adds 100,000 items, runs
`bloomgate migrate` from one to the other and prints the command line, the
bytes moved, the seconds and MB/s (as migrate's own summary reports them),
then checks that the target answers for the items. --smoke: a 100,000-item
filter, for CI's bench smoke (bench/run.sh --smoke); fails if migrate fails.
"""

import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import BloomgateServer  # noqa: E402

ITEMS = 100_000
SERVER_ARGS = ["--threads", "2", "--appendonly", "no", "--save", "",
               "--maxmemory", "0", "--max-filter-memory", "4gb"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=os.environ.get("BLOOMGATE_BIN", "build/server/bloomgate"))
    parser.add_argument("--capacity", type=int, default=500_000_000)
    parser.add_argument("--error-rate", default="0.0001")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.capacity = ITEMS
    binary = os.path.abspath(args.bin)
    os.environ["BLOOMGATE_BIN"] = binary
    with BloomgateServer(SERVER_ARGS) as source, BloomgateServer(SERVER_ARGS) as target:
        src = source.client()
        started = time.monotonic()
        src.execute_command("BF.RESERVE", "big", args.error_rate, args.capacity, "NONSCALING")
        items = [f"item:{i}" for i in range(ITEMS)]
        for start in range(0, ITEMS, 10_000):
            src.execute_command("BF.MADD", "big", *items[start:start + 10_000])
        info = dict(zip(*[iter(src.execute_command("BF.INFO", "big"))] * 2))
        print(f"source filter: BF.RESERVE big {args.error_rate} {args.capacity} NONSCALING, "
              f"{ITEMS} items, Size {info[b'Size']} bytes ({time.monotonic() - started:.1f} s "
              "to build)")
        cmd = [binary, "migrate", "--from", f"127.0.0.1:{source.port}",
               "--to", f"127.0.0.1:{target.port}"]
        print("command:", " ".join(cmd))
        started = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        wall = time.monotonic() - started
        sys.stdout.write(done.stderr)
        if done.returncode != 0:
            print(f"migrate failed with exit status {done.returncode}", file=sys.stderr)
            return 1
        summary = re.search(r"(\d+) keys copied.*?(\d+) bytes in ([\d.]+) s, ([\d.]+) MB/s",
                            done.stderr)
        if summary is None:
            print("no summary line in migrate's output", file=sys.stderr)
            return 1
        dst = target.client()
        if dst.execute_command("BF.MEXISTS", "big", *items[:1000]) != [1] * 1000:
            print("the target lost items", file=sys.stderr)
            return 1
        print(f"result: {summary.group(2)} bytes in {summary.group(3)} s "
              f"({wall:.2f} s wall incl. process start), {summary.group(4)} MB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
