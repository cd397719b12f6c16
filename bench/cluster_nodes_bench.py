#!/usr/bin/env python3
"""Starts N real Bloomgate nodes on loopback (one worker thread, 64 MB each,
cluster-enabled), makes them one cluster with `redis-cli --cluster create`,
and reports the time until redis-cli says every node agrees, the nodes'
resident memory and their CPU seconds. Every process is stopped at the end,
whatever happens; redis-cli runs with a deadline.

  /usr/bin/python3 bench/cluster_nodes_bench.py --bin build/server/bloomgate --nodes 30
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e"))
from harness import free_port  # noqa: E402


def wait_ping(port, deadline_s):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


def proc_stat(pid):
    """(resident MB, CPU seconds) of a running process, from /proc."""
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return rss / 1024, (int(fields[11]) + int(fields[12])) / ticks


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--deadline", type=float, default=60.0)
    args = parser.parse_args()
    args.bin = os.path.abspath(args.bin)
    tmp = tempfile.mkdtemp(prefix="bloomgate-cluster-nodes-")
    procs = []
    try:
        ports = []
        for i in range(args.nodes):
            port, cport = free_port(), free_port()
            data = os.path.join(tmp, f"n{i}")
            os.makedirs(data)
            log = open(os.path.join(data, "log"), "wb")
            procs.append(subprocess.Popen(
                [args.bin, "--port", str(port), "--bind", "127.0.0.1", "--threads", "1",
                 "--maxmemory", "64mb", "--cluster-enabled", "yes", "--cluster-port", str(cport)],
                cwd=data, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT))
            ports.append(port)
        for port in ports:
            if not wait_ping(port, 20):
                sys.exit(f"node on port {port} did not start")
        started = time.monotonic()
        create = subprocess.run(
            ["redis-cli", "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports],
             "--cluster-yes"], capture_output=True, text=True, timeout=args.deadline,
            stdin=subprocess.DEVNULL)
        seconds = time.monotonic() - started
        agreed = "[OK] All nodes agree about slots configuration." in create.stdout
        stats = [proc_stat(p.pid) for p in procs]
        print(f"nodes {args.nodes}: create {'agreed' if agreed else 'FAILED'} in {seconds:.2f} s; "
              f"RSS per node {sum(s[0] for s in stats) / len(stats):.1f} MB; "
              f"CPU s per node {sum(s[1] for s in stats) / len(stats):.2f}")
        if not agreed:
            print(create.stdout[-2000:], create.stderr[-2000:])
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
