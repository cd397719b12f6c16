"""The Node.js cluster clients (node-redis, ioredis) as processes the tests
and benchmarks drive one request at a time: tests/e2e/node/*.js read one
JSON request a line and answer one JSON line, so a client stays connected
between steps (a slot can move under it). Every answer is awaited with a
deadline; close() ends the process whatever state it is in.

    with NodeClusterClient("ioredis", "127.0.0.1:7000") as client:
        client.call(["BF.ADD", "k", "x"])          # -> 1
        client.call(["DEL", "a", "b"])             # raises ClientError(text)

The npm packages come from tests/e2e/node/package-lock.json
(scripts/install-deps.sh --test runs npm ci).
"""
import json
import os
import selectors
import shutil
import subprocess
import time

NODE = shutil.which("node")
NODE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node")
SCRIPTS = {"node-redis": "node_redis_cluster.js", "ioredis": "ioredis_cluster.js"}
PACKAGES = {"node-redis": "redis", "ioredis": "ioredis"}
ANSWER_DEADLINE_S = 30.0
CLOSE_GRACE_S = 5.0


class ClientError(Exception):
    """An error the library surfaced, with its message."""


def installed_reason():
    """Why the Node clients cannot run here, or None when they can."""
    if NODE is None:
        return "node is not installed (scripts/install-deps.sh --test)"
    for package in PACKAGES.values():
        if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", package)):
            return f"npm package {package} is not installed (scripts/install-deps.sh --test)"
    return None


def package_version(library):
    with open(os.path.join(NODE_DIR, "node_modules", PACKAGES[library], "package.json")) as f:
        return json.load(f)["version"]


class NodeClusterClient:
    def __init__(self, library, seed_address):
        self.library = library
        self.proc = subprocess.Popen(
            [NODE, os.path.join(NODE_DIR, SCRIPTS[library]), seed_address], cwd=NODE_DIR,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.proc.stdout, selectors.EVENT_READ)
        self._pending = b""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def request(self, deadline_s=ANSWER_DEADLINE_S, **request):
        """Sends one request; returns its reply or raises ClientError."""
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        self.proc.stdin.flush()
        answer = json.loads(self._read_line(deadline_s))
        if "error" in answer:
            raise ClientError(answer["error"])
        return answer["ok"]

    def call(self, args, key=None, readonly=False):
        """One command through the library's generic call; `key` is the key
        node-redis routes by (ioredis finds its own)."""
        return self.request(op="call", args=list(args), key=key or _first_key(args),
                            readonly=readonly)

    def _read_line(self, deadline_s):
        deadline = time.monotonic() + deadline_s
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or not self._selector.select(timeout=left):
                raise AssertionError(f"{self.library}: no answer within {deadline_s} s\n"
                                     f"{self.stderr_now()}")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                self.proc.wait(timeout=CLOSE_GRACE_S)
                raise AssertionError(f"{self.library} exited ({self.proc.returncode}):\n"
                                     f"{self.stderr_now()}")
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return line

    def stderr_now(self):
        if self.proc.poll() is None:
            return "(still running)"
        return self.proc.stderr.read().decode(errors="replace")

    def close(self):
        """Closes stdin (the script quits its client and exits), then kills
        it if it has not within the grace period."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=CLOSE_GRACE_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._selector.close()
        self.proc.stdout.close()
        self.proc.stderr.close()


def _first_key(args):
    return str(args[1]) if len(args) > 1 else None
