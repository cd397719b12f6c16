#!/usr/bin/env python3
"""TLS throughput as a ratio to plain TCP, both measured in one run against one
server (its `port` and its `tls-port` at once), with redis-benchmark and
redis-benchmark --tls taking turns round by round so that the shared machine's
noise hits both sides alike.

For each command (BF.ADD, BF.EXISTS) and pipeline depth (-P 1, -P 16) the
script runs `rounds` alternating pairs and reports the median req/s of each
side and their ratio. The certificates are made with the openssl CLI into a
temporary directory (tests/e2e/tls_support.py); the server verifies the
client certificate (tls-auth-clients yes, Redis's default), so the handshake
is the real one, though it is paid once per connection, before timing.

  bench/tls_bench.py --bin build/server/bloomgate            # ~2 min, writes results/
  bench/tls_bench.py --bin build/server/bloomgate --smoke --no-write
  bench/tls_bench.py --bin build/server/bloomgate --memory 1000   # RSS per idle connection
"""

import argparse
import datetime
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from tls_support import make_certs  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port, deadline_s=10.0):
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"bloomgate did not answer on port {port}")


def benchmark(port, certs, tls, command, pipeline, requests, clients):
    cmd = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", str(clients),
           "-n", str(requests), "-P", str(pipeline), "-r", "1000000", "--csv"]
    if tls:
        cmd += ["--tls", "--cacert", certs["ca.crt"], "--cert", certs["client.crt"],
                "--key", certs["client.key"]]
    cmd += command
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         timeout=600).stdout.decode()
    for line in out.splitlines():
        fields = [f.strip('"') for f in line.split('","')]
        if len(fields) > 1 and fields[0] != "test":
            return float(fields[1])
    raise RuntimeError(f"no result in redis-benchmark output: {out!r}")


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise KeyError("VmRSS")


def memory_per_connection(pid, port, tls_port, certs, count):
    """Server RSS growth per idle client that has sent one PING, plain TCP
    first, then TLS (tls-auth-clients yes: the client presents its cert)."""
    import ssl
    results = {}
    context = ssl.create_default_context(cafile=certs["ca.crt"])
    context.check_hostname = False
    context.load_cert_chain(certs["client.crt"], certs["client.key"])
    for name, target in (("tcp", port), ("tls", tls_port)):
        time.sleep(0.5)
        before = rss_kb(pid)
        clients = []
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", target))
            if name == "tls":
                sock = context.wrap_socket(sock, server_hostname="localhost")
            sock.sendall(b"PING\r\n")
            if sock.recv(16) != b"+PONG\r\n":
                raise RuntimeError("no PONG")
            clients.append(sock)
        results[name] = (rss_kb(pid) - before) / count
        for sock in clients:
            sock.close()
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default=os.environ.get("BLOOMGATE_BIN",
                                                        "build/server/bloomgate"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one round")
    parser.add_argument("--memory", type=int, metavar="N",
                        help="only measure server RSS per idle connection over N clients")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--out", help="result file (default results/tls-<date>.md)")
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.requests, args.clients = 1, 2_000, 4

    cases = [(["BF.ADD", "bf", "__rand_int__"], 1), (["BF.ADD", "bf", "__rand_int__"], 16),
             (["BF.EXISTS", "bf", "__rand_int__"], 1), (["BF.EXISTS", "bf", "__rand_int__"], 16)]
    with tempfile.TemporaryDirectory(prefix="bloomgate-tls-bench-") as work:
        certs = make_certs(work)
        port, tls_port = free_port(), free_port()
        server = subprocess.Popen(
            [args.bin, "--port", str(port), "--tls-port", str(tls_port), "--bind", "127.0.0.1",
             "--threads", str(args.threads), "--save", "", "--appendonly", "no",
             "--tls-cert-file", certs["server.crt"], "--tls-key-file", certs["server.key"],
             "--tls-ca-cert-file", certs["ca.crt"], "--dir", work, "--loglevel", "warn"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_ready(port)
            if args.memory:
                kb = memory_per_connection(server.pid, port, tls_port, certs, args.memory)
                print(f"RSS per idle connection ({args.memory} clients): "
                      f"tcp {kb['tcp']:.1f} KB, tls {kb['tls']:.1f} KB")
                return
            # One big filter first, so BF.ADD measures adds, not layer growth.
            subprocess.run(["redis-cli", "-p", str(port), "BF.RESERVE", "bf", "0.01", "10000000"],
                           check=True, stdout=subprocess.DEVNULL)
            rows = []
            for command, pipeline in cases:
                tcp_rates, tls_rates = [], []
                for _ in range(args.rounds):
                    tcp_rates.append(benchmark(port, certs, False, command, pipeline,
                                               args.requests, args.clients))
                    tls_rates.append(benchmark(tls_port, certs, True, command, pipeline,
                                               args.requests, args.clients))
                tcp, tls = statistics.median(tcp_rates), statistics.median(tls_rates)
                rows.append((command[0], pipeline, tcp, tls, tls / tcp))
                print(f"{command[0]:9} -P {pipeline:2}: tcp {tcp:10.0f} req/s  "
                      f"tls {tls:10.0f} req/s  ratio {tls / tcp:.2f}", flush=True)
        finally:
            server.terminate()
            server.wait(timeout=30)

    if args.no_write:
        return
    today = datetime.date.today().isoformat()
    out = pathlib.Path(args.out) if args.out else ROOT / "bench" / "results" / f"tls-{today}.md"
    lines = [f"# TLS against plain TCP, {today}", "",
             "One bloomgate (`--threads {}`, no persistence) serving its plain port and its "
             "TLS port at once; redis-benchmark and redis-benchmark --tls (client certificate "
             "checked, TLS 1.3, OpenSSL's default suite) take turns, {} rounds, median req/s; "
             "-c {} -n {} -r 1000000.".format(args.threads, args.rounds, args.clients,
                                                 args.requests),
             "", "Command: `bench/tls_bench.py " + " ".join(sys.argv[1:]) + "`", "",
             "| command | pipeline | TCP req/s | TLS req/s | TLS / TCP |",
             "|---|---|---|---|---|"]
    for name, pipeline, tcp, tls, ratio in rows:
        lines.append(f"| {name} | -P {pipeline} | {tcp:.0f} | {tls:.0f} | {ratio:.2f} |")
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
