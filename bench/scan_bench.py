#!/usr/bin/env python3
"""A full SCAN over N keys, for one or more server binaries side by side.

  /usr/bin/python3 bench/scan_bench.py [--keys 80000] [--count 10] BIN [BIN ...]

For each binary: starts it (no persistence) on a free loopback port, creates
N one-item Bloom filters, then walks SCAN with the given COUNT to the end and
prints the calls, the wall time, and the server's own time in SCAN from
INFO commandstats (usec_per_call of the first and last tenth of the walk
too, so a per-call cost that grows with the cursor shows). Before issue 9's
fix each call re-sorted a shard, so the walk was quadratic.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import BloomgateServer  # noqa: E402


def scan_usec(r):
    stats = r.info("commandstats").get("cmdstat_scan", {})
    return int(stats.get("usec", 0)), int(stats.get("calls", 0))


def run(binary, keys, count):
    os.environ["BLOOMGATE_BIN"] = os.path.abspath(binary)
    with BloomgateServer(["--threads", "2", "--appendonly", "no", "--save", ""]) as server:
        r = server.client()
        pipe = r.pipeline(transaction=False)
        for i in range(keys):
            pipe.execute_command("BF.ADD", f"key:{i}", "x")
            if i % 5000 == 4999:
                pipe.execute()
        pipe.execute()
        started = time.monotonic()
        cursor, seen, calls, marks = 0, 0, 0, []
        expected_calls = max(1, keys // count)
        while True:
            cursor, batch = r.scan(cursor, count=count)
            seen += len(batch)
            calls += 1
            if calls in (expected_calls // 10, expected_calls - expected_calls // 10):
                marks.append(scan_usec(r))
            if cursor == 0:
                break
        wall = time.monotonic() - started
        usec, scans = scan_usec(r)
        line = (f"{binary}: full SCAN COUNT {count} of {seen} keys: {calls} calls, {wall:.2f} s "
                f"wall, {usec / 1e6:.3f} s in SCAN on the server")
        if len(marks) == 2:
            first = marks[0][0] / max(1, marks[0][1])
            last = (usec - marks[1][0]) / max(1, scans - marks[1][1])
            line += f", {first:.1f} us/call over the first tenth, {last:.1f} over the last"
        print(line)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=80000)
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    for binary in args.binaries:
        run(binary, args.keys, args.count)


if __name__ == "__main__":
    main()
