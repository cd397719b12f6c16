#!/usr/bin/python3
"""Generation turnover on a ~100 MB windowed Bloom filter and a ~100 MB
windowed counting Bloom filter (issue 13).

For each family (--family bf, cbf or both): one windowed filter
(BF.RESERVE / CBF.RESERVE ... WINDOW --window GENERATIONS --generations)
sized so that its n + 1 generations take about --mb MB; an adder client adds
fresh items in pipelined batches (each period's first add turns a generation
over) while a probe client, on its own connection, runs BF.EXISTS (CBF.EXISTS)
on the same key in a loop. Reported: the probe with no adds (the baseline,
same run), the probe's worst and 99th-percentile latency over the run and in
the 50 ms around each turnover, the adder's worst batch (the one that turned
a generation over), and MEMORY USAGE per window.

Usage (from the repository root):
  bench/window_turnover_bench.py --bin build/server/bloomgate [--mb 100] [--seconds 12]
Python standard library only.
"""

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cut_bench import Conn, encode, pct  # noqa: E402  (one RESP client for the bench scripts)


def run(fam, args, c, port):
    key = f"w-{fam.lower()}"
    # One generation at 1% / (n+1), first layer half that (scaling), is
    # about 15.8 bits (1.98 bytes) per item at n = 4: find the capacity
    # whose one generation is mb / (n+1) by reserving and measuring.
    n = args.generations
    probe_cap = 1_000_000
    c.call(f"{fam}.RESERVE", "size", "0.01", probe_cap, "WINDOW", args.window, "GENERATIONS", n)
    one = int(c.call("MEMORY", "USAGE", "size")[1:])
    c.call("DEL", "size")
    capacity = int(probe_cap * (args.mb * 1e6 / (n + 1)) / one)
    reply = c.call(f"{fam}.RESERVE", key, "0.01", capacity, "WINDOW", args.window,
                   "GENERATIONS", n)
    assert reply == b"+OK", reply
    # Generation 0 starts at the reserve (on the server's clock, within a
    # round trip of this one): boundary k is about t0 + k * period.
    t0 = time.monotonic()
    gen_mb = int(c.call("MEMORY", "USAGE", key)[1:]) / 1e6
    stop = threading.Event()
    turnovers = []   # monotonic time of the adder batches that were slow
    add_batches = []  # (start, seconds)

    def adder():
        a = Conn(port)
        i = 0
        while not stop.is_set():
            batch = b"".join(encode(f"{fam}.ADD", key, f"i{i + j}") for j in range(32))
            i += 32
            t = time.monotonic()
            a.s.sendall(batch)
            for _ in range(32):
                a.reply()
            add_batches.append((t, time.monotonic() - t))
            time.sleep(0.002)

    probe = Conn(port)
    samples = []  # (start, seconds)
    memory = []
    # Baseline: the same probe with no adds (so no turnover), for the
    # machine's own noise.
    baseline = []
    base_end = time.monotonic() + 2.0
    while time.monotonic() < base_end:
        t = time.monotonic()
        probe.call(f"{fam}.EXISTS", key, "i1")
        baseline.append(time.monotonic() - t)
    # The server's own view: every command slower than 200 us lands in the
    # slowlog with its duration inside the server (no client scheduling),
    # which for an add that turned a generation over is the stall itself.
    c.call("CONFIG", "SET", "slowlog-log-slower-than", "200")
    c.call("CONFIG", "SET", "slowlog-max-len", "10000")
    c.call("SLOWLOG", "RESET")
    th = threading.Thread(target=adder, daemon=True)
    th.start()
    end = time.monotonic() + args.seconds
    next_mem = time.monotonic()
    while time.monotonic() < end:
        t = time.monotonic()
        probe.call(f"{fam}.EXISTS", key, "i1")
        samples.append((t, time.monotonic() - t))
        if t >= next_mem:
            memory.append(int(probe.call("MEMORY", "USAGE", key)[1:]))
            next_mem = t + args.window
    stop.set()
    th.join()
    final = int(probe.call("MEMORY", "USAGE", key)[1:])
    slow_log = c.call("SLOWLOG", "GET", "10000")
    c.call("CONFIG", "SET", "slowlog-log-slower-than", "10000")

    def slowest(name):
        # Entries: id, unix time, duration in us, args, ...
        found = [int(e[2][1:]) for e in slow_log
                 if e[3] and e[3][0].decode().upper() == name]
        return (max(found) if found else 0), len(found)
    period = args.window / n
    # A turnover happens at the first add of each period; the batches far
    # slower than the median are those.
    durations = sorted(d for _, d in add_batches)
    median = durations[len(durations) // 2]
    slow = [(t, d) for t, d in add_batches if d > 10 * median and d > 0.0005]
    near = [d for t, d in samples if any(abs(t - s) < 0.05 for s, _ in slow)]
    # Probes that started within 50 ms after a period boundary, when the
    # first add of the period turned a generation over (fast or not).
    after = [d for t, d in samples if 0 <= (t - t0) % period < 0.05 and t - t0 >= period]
    ms = lambda v: f"{v * 1000:.3f} ms"
    print(f"{fam} windowed filter: capacity {capacity} per {args.window:g} s window, "
          f"{n} generations ({period:g} s each), one generation {gen_mb:.1f} MB, "
          f"all {n + 1} ~{final / 1e6:.1f} MB at the end; {args.threads} event loops")
    print(f"  run: {args.seconds:g} s, ~{int(args.seconds / period)} turnovers, "
          f"{len(add_batches) * 32} adds, {len(samples)} probes")
    print(f"  probe {fam}.EXISTS, no adds (baseline): p99 {ms(pct(baseline, 0.99))}, "
          f"max {ms(max(baseline))} ({len(baseline)} probes)")
    print(f"  probe {fam}.EXISTS over the run: p99 {ms(pct([d for _, d in samples], 0.99))}, "
          f"max {ms(max(d for _, d in samples))}")
    print(f"  probe {fam}.EXISTS within 50 ms of a slow add batch: "
          f"max {ms(max(near) if near else 0)} ({len(near)} probes)")
    print(f"  probe {fam}.EXISTS within 50 ms after a period boundary: "
          f"p99 {ms(pct(after, 0.99) if after else 0)}, max {ms(max(after) if after else 0)} "
          f"({len(after)} probes)")
    print(f"  adder batch of 32 {fam}.ADD: median {ms(median)}, max {ms(durations[-1])}, "
          f"{len(slow)} batches > 10x median")
    worst_add, n_add = slowest(f"{fam}.ADD")
    worst_exists, n_exists = slowest(f"{fam}.EXISTS")
    print(f"  inside the server (SLOWLOG, > 0.2 ms): worst {fam}.ADD {worst_add / 1000:.3f} ms "
          f"({n_add} over), worst {fam}.EXISTS {worst_exists / 1000:.3f} ms ({n_exists} over)")
    print(f"  MEMORY USAGE once per window: {[round(m / 1e6, 1) for m in memory]} MB")
    c.call("DEL", key)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/server/bloomgate")
    ap.add_argument("--mb", type=float, default=100.0, help="the filter's size once every slot is used")
    ap.add_argument("--window", type=float, default=4.0, help="seconds")
    ap.add_argument("--generations", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=12.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--family", choices=["bf", "cbf", "both"], default="both")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory(prefix="bloomgate-window-bench-")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([os.path.abspath(args.bin), "--port", str(port), "--bind", "127.0.0.1",
                             "--threads", str(args.threads), "--save", "", "--appendonly", "no",
                             "--maxmemory", "0"],
                            cwd=tmp.name, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        for _ in range(500):
            try:
                c = Conn(port)
                c.call("PING")
                break
            except OSError:
                time.sleep(0.02)
        for fam in (["BF", "CBF"] if args.family == "both" else [args.family.upper()]):
            run(fam, args, c, port)
    finally:
        proc.terminate()
        proc.wait(20)


if __name__ == "__main__":
    sys.exit(main())
