#!/usr/bin/python3
"""Import rate of `bloomgate import-rdb` (MB of RDB file read per second).

Builds an RDB file of N copies of each of RedisBloom's five values (the
DUMP payloads RedisBloom 2.4.23 made, tests/data/redisbloom-sketches/
dump-payloads.json: an RDB record of a module value is the payload's type
byte, the key, then the payload's value bytes), then times
`bloomgate import-rdb FILE --output SNAPSHOT` (decode + snapshot write) and,
with --to, `import-rdb FILE --to HOST:PORT` against a running server.

    bench/import_rdb_bench.py BLOOMGATE_BIN [--copies 20000] [--to 127.0.0.1:6379]

Prints the file size, wall and CPU seconds, and MB/s of both.
"""

import argparse
import base64
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
from redis_dump_support import FIXTURES, crc64  # noqa: E402


def rdb_string(data):
    n = len(data)
    if n < 64:
        return bytes([n]) + data
    if n < 16384:
        return bytes([0x40 | (n >> 8), n & 0xFF]) + data
    return b"\x80" + n.to_bytes(4, "big") + data


def build(copies):
    with open(os.path.join(FIXTURES, "dump-payloads.json")) as f:
        payloads = json.load(f)["payloads"]
    values = [(name, base64.b64decode(p["dump_base64"])) for name, p in payloads.items()]
    out = bytearray(b"REDIS0010")
    out += b"\xfe\x00"  # SELECTDB 0
    for i in range(copies):
        for name, payload in values:
            out += payload[:1] + rdb_string(f"{name}:{i}".encode()) + payload[1:-10]
    out += b"\xff"
    out += crc64(bytes(out)).to_bytes(8, "little")
    return bytes(out), copies * len(values)


def timed(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd[:3])} failed: {done.stderr[-2000:]}")
    return wall, cpu


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--copies", type=int, default=20000)
    parser.add_argument("--to")
    args = parser.parse_args()
    data, keys = build(args.copies)
    mb = len(data) / 1e6
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.rdb")
        with open(path, "wb") as f:
            f.write(data)
        print(f"file: {mb:.1f} MB, {keys} RedisBloom keys")
        wall, cpu = timed([args.binary, "import-rdb", path, "--output",
                           os.path.join(tmp, "out.bgs")])
        print(f"--output: {wall:.2f} s wall, {cpu:.2f} s CPU: {mb / wall:.1f} MB/s wall, "
              f"{mb / cpu:.1f} MB/s per CPU second")
        if args.to:
            wall, cpu = timed([args.binary, "import-rdb", path, "--to", args.to, "--replace"])
            print(f"--to {args.to}: {wall:.2f} s wall, {cpu:.2f} s CPU of the importer: "
                  f"{mb / wall:.1f} MB/s wall")


if __name__ == "__main__":
    main()
