#!/usr/bin/env python3
"""How long one long CF.INSERT holds its I/O thread, seen by another client.

  /usr/bin/python3 bench/long_command_bench.py [--items 20000] BIN [BIN ...]

For each binary: starts it with one I/O thread (so both clients share the
loop), fills a non-scaling cuckoo filter of 1024 one-slot buckets at
MAXITERATIONS 65535 until it is full, then sends CF.INSERT with --items new
items from one client while another sends PING after PING; prints the long
command's own time and the worst PING round trip seen while it ran. Without a
bound on the kicks a command may make (filters/limits.h, kCommandKickBudget),
every item that finds no room walks and undoes 65,535 kicks.
"""

import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import BloomgateServer  # noqa: E402


def run(binary, items):
    os.environ["BLOOMGATE_BIN"] = os.path.abspath(binary)
    with BloomgateServer(["--threads", "1", "--appendonly", "no", "--save", ""]) as server:
        # No socket timeout: the point is to wait out however long it takes.
        r = server.client(socket_timeout=600)
        r.execute_command("CF.RESERVE", "k", "2048", "BUCKETSIZE", "1", "MAXITERATIONS", "65535",
                          "EXPANSION", "0")
        # Fill until the first refusal, a few thousand items at a time: each
        # refused item here also costs the full walk, so stop at the first.
        n = 0
        while True:
            reply = r.execute_command("CF.INSERT", "k", "NOCREATE", "ITEMS",
                                      *[f"fill:{n + i}" for i in range(64)])
            n += 64
            if any(int(x) == -1 for x in reply):
                break
        probe = server.client(socket_timeout=600)
        stop = threading.Event()
        worst = [0.0]
        pings = [0]

        def ping_loop():
            while not stop.is_set():
                t = time.monotonic()
                probe.ping()
                worst[0] = max(worst[0], time.monotonic() - t)
                pings[0] += 1

        thread = threading.Thread(target=ping_loop)
        thread.start()
        time.sleep(0.2)
        worst[0] = 0.0
        started = time.monotonic()
        reply = r.execute_command("CF.INSERT", "k", "NOCREATE", "ITEMS",
                                  *[f"long:{i}" for i in range(items)])
        took = time.monotonic() - started
        time.sleep(0.2)
        stop.set()
        thread.join()
        refused = sum(1 for x in reply if int(x) == -1)
        print(f"{binary}: CF.INSERT of {items} items into a full filter (MAXITERATIONS 65535): "
              f"{took:.3f} s, {refused} refused; worst PING of another client on the same "
              f"thread {worst[0] * 1000:.1f} ms over {pings[0]} pings")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20000)
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    for binary in args.binaries:
        run(binary, args.items)


if __name__ == "__main__":
    main()
