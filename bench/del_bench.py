#!/usr/bin/python3
"""DEL of a big filter: how long another client waits meanwhile (issue 15).

Builds a Bloom filter of --mb MB whose pages are all written (BF.LOADCHUNK of
a SCANDUMP: a freshly reserved filter is untouched zero pages, which cost
nothing to free), then a probe connection PINGs in a loop on the same event
loop (--threads 1) while a control connection runs DEL on the filter.
Reported: the DEL's own latency, the longest PING during it, and INFO
memory's used_memory and lazyfree_pending_objects right after the DEL and
once they settle.

Usage (from the repository root):
  bench/del_bench.py --bin build/server/bloomgate [--mb 800]
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
from cut_bench import Conn, encode  # noqa: E402


def memory(conn):
    text = conn.call("INFO", "memory").decode()
    return dict(l.split(":", 1) for l in text.splitlines() if ":" in l)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/server/bloomgate")
    ap.add_argument("--mb", type=int, default=800)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory(prefix="bloomgate-del-bench-")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([os.path.abspath(args.bin), "--port", str(port), "--bind", "127.0.0.1",
                             "--threads", str(args.threads), "--save", "", "--appendonly", "no"],
                            cwd=tmp.name, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        for _ in range(500):
            try:
                c = Conn(port)
                c.call("PING")
                break
            except OSError:
                time.sleep(0.02)
        # ~9.59 bits per item at 1% error: capacity for --mb MB of bits.
        capacity = int(args.mb * 8e6 / 9.59)
        assert c.call("BF.RESERVE", "src", "0.01", capacity, "NONSCALING") == b"+OK"
        chunks, it = [], 0
        while True:
            it, data = c.call("BF.SCANDUMP", "src", it)
            it = int(it[1:]) if isinstance(it, bytes) and it[:1] == b":" else int(it)
            if it == 0:
                break
            chunks.append((it, data))
        c.call("DEL", "src")
        for it, data in chunks:
            reply = c.call("BF.LOADCHUNK", "big", it, data)
            assert reply == b"+OK", reply
        chunks = None
        before = memory(c)
        probe = Conn(port)
        done = threading.Event()
        worst = [0.0]

        def ping():
            while not done.is_set():
                t = time.monotonic()
                probe.call("PING")
                worst[0] = max(worst[0], time.monotonic() - t)

        t = threading.Thread(target=ping)
        t.start()
        time.sleep(0.2)
        worst[0] = 0.0
        start = time.monotonic()
        assert c.call("DEL", "big") == b":1"
        del_s = time.monotonic() - start
        after = memory(c)
        time.sleep(0.3)
        done.set()
        t.join()
        settle_deadline = time.monotonic() + 10
        settled = memory(c)
        while settled.get("lazyfree_pending_objects", "0") != "0" and time.monotonic() < settle_deadline:
            time.sleep(0.01)
            settled = memory(c)
        print(f"DEL of a {int(before['used_memory']) / 1e6:.0f} MB Bloom filter "
              f"(all pages written), {args.threads} event loop(s)")
        print(f"  DEL latency: {del_s * 1000:.2f} ms")
        print(f"  longest PING on another connection during it: {worst[0] * 1000:.2f} ms")
        print(f"  right after DEL: used_memory {after['used_memory']}, "
              f"lazyfree_pending_objects {after.get('lazyfree_pending_objects', 'n/a')}")
        print(f"  settled: used_memory {settled['used_memory']}, "
              f"lazyfree_pending_objects {settled.get('lazyfree_pending_objects', 'n/a')}")
    finally:
        proc.terminate()
        proc.wait(20)


if __name__ == "__main__":
    sys.exit(main())
