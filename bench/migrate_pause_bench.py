#!/usr/bin/env python3
"""MIGRATE's per-key hand-over pause under a writer, for a 1 MiB and a 64 MiB filter.

  /usr/bin/python3 bench/migrate_pause_bench.py [--runs 5] [--bin build/server/bloomgate]
                                                [--smoke]

Starts a source and a target (no persistence, 2 threads each) on free
loopback ports. Each run creates a NONSCALING Bloom filter of the size on the
source (BF.RESERVE, its bits reported by BF.INFO Size), starts a writer that
sends BF.ADD to it back to back, runs MIGRATE of the key, and stops the
writer once it has seen the key re-created on the source. The pause of a run
is the longest latency of one acknowledged BF.ADD that overlapped the
MIGRATE: the writer is held off the key from the payload's encoding to the
source's deletion (encode + transfer + the target's decode + delete). Prints
p50 and max of the runs' pauses and of MIGRATE's own time, per size.
Timings on a shared machine are noisy: compare the two sizes side by side.
"""

import argparse
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import BloomgateServer  # noqa: E402

SERVER_ARGS = ["--threads", "2", "--appendonly", "no", "--save", "",
               "--maxmemory", "0", "--max-filter-memory", "4gb"]
# Capacities at error 0.01 (9.59 bits an item) for ~1 MiB and ~64 MiB of bits.
SIZES = [("1 MiB", 875_000), ("64 MiB", 56_000_000)]


def one_run(source, target, capacity):
    src = source.client()
    dst = target.client()
    src.flushall()
    dst.flushall()
    src.execute_command("BF.RESERVE", "k", "0.01", capacity, "NONSCALING")
    info = dict(zip(*[iter(src.execute_command("BF.INFO", "k"))] * 2))
    latencies = []  # (sent, replied) of each acknowledged add
    stop = threading.Event()
    started = threading.Event()

    def writer():
        w = source.client()
        i = 0
        while not stop.is_set():
            sent = time.monotonic()
            w.execute_command("BF.ADD", "k", f"w{i}")
            latencies.append((sent, time.monotonic()))
            i += 1
            if i == 100:
                started.set()
        w.close()

    thread = threading.Thread(target=writer)
    thread.start()
    started.wait(30)
    began = time.monotonic()
    reply = src.execute_command("MIGRATE", "127.0.0.1", target.port, "k", 0, 60000)
    ended = time.monotonic()
    deadline = time.monotonic() + 30
    while not src.exists("k") and time.monotonic() < deadline:
        time.sleep(0.001)
    stop.set()
    thread.join()
    if reply != b"OK":
        raise SystemExit(f"MIGRATE replied {reply!r}")
    overlapping = [done - sent for sent, done in latencies if done >= began and sent <= ended]
    src.close()
    dst.close()
    return int(info[b"Size"]), max(overlapping) if overlapping else 0.0, ended - began


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=os.environ.get("BLOOMGATE_BIN", "build/server/bloomgate"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="one run of the 1 MiB size")
    args = parser.parse_args()
    os.environ["BLOOMGATE_BIN"] = os.path.abspath(args.bin)
    sizes = SIZES[:1] if args.smoke else SIZES
    runs = 1 if args.smoke else args.runs
    with BloomgateServer(SERVER_ARGS) as source, BloomgateServer(SERVER_ARGS) as target:
        for label, capacity in sizes:
            results = [one_run(source, target, capacity) for _ in range(runs)]
            size = results[0][0]
            pauses = [pause * 1000 for _, pause, _ in results]
            walls = [wall * 1000 for _, _, wall in results]
            print(f"{label} filter (BF.RESERVE k 0.01 {capacity} NONSCALING, Size {size} bytes), "
                  f"{runs} runs: writer pause p50 {statistics.median(pauses):.1f} ms, "
                  f"max {max(pauses):.1f} ms; MIGRATE p50 {statistics.median(walls):.1f} ms, "
                  f"max {max(walls):.1f} ms")


if __name__ == "__main__":
    main()
