#!/usr/bin/env python3
"""Fails when an #include runs back up the layers.

The libraries, bottom-up: filters/ (pure data structures), persistence/
(formats over the filters), config/ (settings), then server/'s rooms in the
order below, then server/'s top level (main.cc, the offline tools). A file
may include its own room and any room below it, never one above: an edge up
the layers is how a flat folder grew nine include levels and three cycles.
filters/ and persistence/ also stay free of Asio, spdlog and yaml-cpp.
Run from anywhere: python3 tests/layering/check_layering.py
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Bottom-up. Each entry is a path prefix (relative to the repository root).
LAYERS = [
    "filters",
    "persistence",
    "config",
    "server/base",  # clock, glob, log limiter, default maxmemory
    "server/resp",
    "server/stats",
    "server/keyspace",
    "server/durability",
    "server/catalogue",  # command table, syntax, ACL categories, family registry
    "server/access",  # ACL users, AUTH throttle
    "server/pubsub",  # subscriptions, PUBLISH's delivery, keyspace notifications
    "server/clients",  # per-client state, CLIENT PAUSE, MONITOR
    "server/replication",  # feeds, backlog, the replica's link, full syncs
    "server/cluster",  # the cluster's view: nodes, slot owners, epochs, nodes.conf
    "server/cluster_bus",  # the cluster bus: codec, epoch rules, links, cron
    "server/context",  # ServerContext
    "server/commands",
    "server/net",
    "server/metrics",  # the Prometheus endpoint: an HTTP listener on the net loops
    "server/tools",  # blocking clients of running servers (bloomgate migrate)
    "server",  # the top level: main.cc and the offline tools
]
# server/CMakeLists.txt names the top level's library "top".
ROOM_OF_LAYER = {"server": "top"}
PURE = {"filters", "persistence"}
FORBIDDEN_IN_PURE = re.compile(r"^(boost/asio|spdlog|yaml-cpp)")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)


def layer_of(path):
    """Index of the deepest LAYERS prefix that `path` lives under."""
    best = None
    for index, prefix in enumerate(LAYERS):
        if path == prefix or path.startswith(prefix + "/"):
            if best is None or len(prefix) > len(LAYERS[best]):
                best = index
    return best


def main():
    problems = []
    files = 0
    for source in sorted(ROOT.glob("**/*")):
        if source.suffix not in (".h", ".cc"):
            continue
        relative = source.relative_to(ROOT).as_posix()
        if relative.startswith(("build", "tests/", "bench/")) or "/build" in relative:
            continue
        own = layer_of(relative)
        if own is None:
            continue
        files += 1
        for target in INCLUDE.findall(source.read_text(encoding="utf-8")):
            if LAYERS[own] in PURE and FORBIDDEN_IN_PURE.match(target):
                problems.append(f"{relative}: includes <{target}> (a pure library)")
            included = layer_of(target)
            if included is not None and included > own:
                problems.append(
                    f"{relative} ({LAYERS[own]}) includes {target} ({LAYERS[included]}): "
                    "an edge up the layers")
    for problem in problems:
        print(problem)
    print(f"{files} files checked, {len(problems)} include(s) up the layers")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
