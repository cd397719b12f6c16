#!/usr/bin/python3
"""Snapshot-cut pause under a read flood on one key (issue 15 bug 4).

Readers flood BF.EXISTS on one key (pipelined, --readers connections);
meanwhile a probe client runs BF.EXISTS on another key in a loop and a
control client issues --cuts BGSAVEs one after another. Reported: the cut's
wait for the global lock and its pause (INFO persistence last_cut_wait_us /
last_cut_pause_us, median and max over the cuts), and the probe's worst and
99th-percentile latency during the cuts against the same probe with no cuts.

Usage (from the repository root):
  bench/cut_bench.py --bin build/server/bloomgate [--keys 50000,1000000] [--cuts 30]
One row per key count, each on a fresh server; rows of 500k keys or more
take --big-cuts cuts (each writes the whole keyspace to disk).
Python standard library only.
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            self.buf += self.s.recv(1 << 16)
        head, self.buf = self.buf.split(b"\r\n", 1)
        return head

    def reply(self):
        head = self.line()
        if head[:1] == b"$":
            n = int(head[1:])
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.s.recv(1 << 16)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if head[:1] == b"*":
            return [self.reply() for _ in range(int(head[1:]))]
        return head

    def call(self, *args):
        self.s.sendall(encode(*args))
        return self.reply()


def info(conn):
    text = conn.call("INFO", "persistence").decode()
    return dict(l.split(":", 1) for l in text.splitlines() if ":" in l)


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/server/bloomgate")
    ap.add_argument("--readers", type=int, default=4)
    ap.add_argument("--pipeline", type=int, default=64)
    ap.add_argument("--keys", default="50000,1000000",
                    help="keys the cut walks, one row per comma-separated count")
    ap.add_argument("--cuts", type=int, default=30)
    ap.add_argument("--big-cuts", type=int, default=3)
    ap.add_argument("--key-capacity", type=int, default=0,
                    help="make the keys with CBF.RESERVE of this capacity (smaller snapshots "
                         "for big rows); 0: CBF.ADD with the default capacity")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    for keys in [int(k) for k in args.keys.split(",")]:
        row = argparse.Namespace(**vars(args))
        row.keys = keys
        row.cuts = args.cuts if keys < 500000 else args.big_cuts
        run(row)


def run(args):
    tmp = tempfile.TemporaryDirectory(prefix="bloomgate-cut-bench-")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([os.path.abspath(args.bin), "--port", str(port), "--bind", "127.0.0.1",
                             "--threads", str(args.threads), "--save", "", "--appendonly", "yes"],
                            cwd=tmp.name, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        for _ in range(500):
            try:
                c = Conn(port)
                c.call("PING")
                break
            except OSError:
                time.sleep(0.02)
        c.call("BF.ADD", "hot", "x")
        c.call("BF.ADD", "probe", "x")
        for start in range(0, args.keys, 1000):
            make = ((lambda i: encode("CBF.RESERVE", f"k{i}", "0.01", args.key_capacity))
                    if args.key_capacity else (lambda i: encode("CBF.ADD", f"k{i}", "x")))
            batch = b"".join(make(i) for i in range(start, min(args.keys, start + 1000)))
            c.s.sendall(batch)
            for _ in range(min(1000, args.keys - start)):
                c.reply()
        stop = threading.Event()

        def reader():
            r = Conn(port)
            batch = encode("BF.EXISTS", "hot", "x") * args.pipeline
            while not stop.is_set():
                r.s.sendall(batch)
                for _ in range(args.pipeline):
                    r.reply()

        readers = [threading.Thread(target=reader, daemon=True) for _ in range(args.readers)]
        for t in readers:
            t.start()
        probe = Conn(port)

        def probe_for(seconds, during):
            lat = []
            end = time.monotonic() + seconds
            while time.monotonic() < end and (during is None or not during.is_set()):
                t = time.monotonic()
                probe.call("BF.EXISTS", "probe", "x")
                lat.append(time.monotonic() - t)
            return lat

        baseline = probe_for(3.0, None)
        waits, pauses, during_lat = [], [], []
        for _ in range(args.cuts):
            done = threading.Event()

            def cut():
                ctl = Conn(port)
                ctl.call("BGSAVE")
                while info(ctl)["rdb_bgsave_in_progress"] != "0":
                    time.sleep(0.005)
                done.set()

            t = threading.Thread(target=cut)
            t.start()
            during_lat += probe_for(10.0, done)
            t.join()
            fields = info(probe)
            waits.append(int(fields["last_cut_wait_us"]))
            pauses.append(int(fields["last_cut_pause_us"]))
        stop.set()
        ms = lambda v: f"{v * 1000:.2f} ms"
        print(f"cut over {args.keys + 2} keys (counting, capacity "
              f"{args.key_capacity or 100}), {args.readers} readers x pipeline "
              f"{args.pipeline} on one key, {args.threads} event loops, {args.cuts} cuts")
        print(f"  cut wait for the global lock: median {statistics.median(waits)} us, "
              f"max {max(waits)} us")
        print(f"  cut pause (all commands held): median {statistics.median(pauses)} us, "
              f"max {max(pauses)} us")
        print(f"  probe BF.EXISTS other key, no cut:  p99 {ms(pct(baseline, 0.99))}, "
              f"max {ms(max(baseline))} ({len(baseline)} calls)")
        print(f"  probe BF.EXISTS other key, in cuts: p99 {ms(pct(during_lat, 0.99))}, "
              f"max {ms(max(during_lat))} ({len(during_lat)} calls)")
    finally:
        proc.terminate()
        proc.wait(20)


if __name__ == "__main__":
    sys.exit(main())
