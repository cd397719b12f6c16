#!/usr/bin/env python3
"""Simulates the cluster bus's gossip at N nodes: how many cron ticks
(100 ms each, like Redis's clusterCron) and how many message bytes until
every node agrees, in two cases:

  create  N empty masters, each holding 16384/N slots at its own config
          epoch, each told `CLUSTER MEET` toward node 0 (what
          `redis-cli --cluster create` does): until every node knows every
          node and every node's slots (the signatures redis-cli compares).
  move    a settled cluster; node 0 takes one slot of node 1 at a higher
          config epoch (SETSLOT NODE): until every node sees node 0 own it.
  steady  a settled cluster's background traffic over 60 s, per node.

The rules are the bus's (server/cluster_bus/): every tick a node pings any
peer it has not heard a PONG from for half the node timeout, and every tenth
tick the peer with the oldest PONG among 5 picked at random; a PING is
answered by a PONG; each PING/PONG/MEET gossips about max(3, known/10)
other nodes; a node in a gossip section from a known sender is met (MEET)
on the next tick; a slot goes to the claim with the higher config epoch, and
is learnt only from its owner's own header. With --broadcast (the bus's
default) a node whose own claim changed PONGs every peer on its next tick.

Message sizes are the codec's (bus_codec.h): 20-byte header, sender field,
slot ranges, 64-byte gossip entries for a 9-character IPv4 address.

  /usr/bin/python3 bench/cluster_bus_sim.py --nodes 10 50 100 200 --seed 1
"""
import argparse
import random
import statistics

SLOTS = 16384
TICK_MS = 100
IP_LEN = len("127.0.0.1")
HEADER = 20
FIELD = 6  # tag u16 + length u32
SENDER = 40 + 1 + IP_LEN + 2 + 2 + 2 + 1 + 0 + 8 + 8
GOSSIP_ENTRY = 40 + 1 + IP_LEN + 2 + 2 + 2 + 4 + 4


def message_bytes(ranges, gossip_entries):
    return (HEADER + FIELD + SENDER + FIELD + 2 + 4 * ranges + FIELD + 2 +
            GOSSIP_ENTRY * gossip_entries)


class Node:
    def __init__(self, index, epoch):
        self.index = index
        self.epoch = epoch            # config epoch of its own claim
        self.known = {}               # peer -> last pong tick
        self.ping_sent = {}           # peer -> tick of the unanswered ping
        self.to_meet = set()          # learnt through gossip, MEET next tick
        self.epoch_seen = {index: epoch}  # peer -> config epoch heard from it
        self.moved_slot_owner = None  # (owner, epoch) of the moved slot
        self.broadcast_due = False


class Sim:
    def __init__(self, n, node_timeout_ms, broadcast, rng):
        self.n = n
        self.rng = rng
        self.half_timeout_ticks = node_timeout_ms // 2 // TICK_MS
        self.broadcast = broadcast
        self.nodes = [Node(i, i + 1) for i in range(n)]
        self.messages = 0
        self.bytes = 0
        self.max_message = 0
        self.tick = 0

    def ranges_of(self, node):
        return 1

    def gossip_count(self, node):
        fresh = len(node.known) - 1  # not the receiver
        return max(0, min(max(3, (len(node.known) + 1) // 10), fresh))

    def send(self, src, dst, kind):
        """src's PING/PONG/MEET reaches dst; a PING/MEET gets dst's PONG back."""
        entries = self.gossip_count(src)
        size = message_bytes(self.ranges_of(src), entries)
        self.messages += 1
        self.bytes += size
        self.max_message = max(self.max_message, size)
        if kind == "ping" or kind == "meet":
            src.ping_sent[dst.index] = self.tick
        if src.index not in dst.known:
            if kind != "meet":
                return  # a PING from a node that was not met is dropped
            dst.known[src.index] = self.tick
        self.hear(dst, src, entries)
        if kind in ("ping", "meet"):
            self.send(dst, src, "pong")
        else:
            dst.known[src.index] = self.tick  # dst got src's PONG
            dst.ping_sent.pop(src.index, None)

    def hear(self, receiver, sender, entries):
        receiver.epoch_seen[sender.index] = sender.epoch
        owner = sender.moved_slot_owner
        if owner is not None and owner[0] == sender.index:
            mine = receiver.moved_slot_owner
            if mine is None or owner[1] > mine[1]:
                receiver.moved_slot_owner = owner
        candidates = [p for p in sender.known if p != receiver.index]
        for peer in self.rng.sample(candidates, min(entries, len(candidates))):
            if peer != receiver.index and peer not in receiver.known:
                receiver.to_meet.add(peer)

    def step(self):
        self.tick += 1
        for node in self.nodes:
            for peer in list(node.to_meet):
                node.to_meet.discard(peer)
                if peer not in node.known:
                    node.known[peer] = self.tick
                    self.send(node, self.nodes[peer], "meet")
            if node.broadcast_due:
                node.broadcast_due = False
                for peer in list(node.known):
                    self.send(node, self.nodes[peer], "pong")
            if self.tick % 10 == 0 and node.known:
                sample = self.rng.sample(list(node.known), min(5, len(node.known)))
                oldest = min(sample, key=lambda p: node.known[p])
                if oldest not in node.ping_sent:
                    self.send(node, self.nodes[oldest], "ping")
            for peer, pong in list(node.known.items()):
                if peer not in node.ping_sent and self.tick - pong > self.half_timeout_ticks:
                    self.send(node, self.nodes[peer], "ping")

    def all_know_all(self):
        for node in self.nodes:
            if len(node.known) != self.n - 1:
                return False
            for peer in node.known:
                if node.epoch_seen.get(peer) != self.nodes[peer].epoch:
                    return False
        return True

    def all_see_move(self, owner):
        return all(node.moved_slot_owner == owner for node in self.nodes)


def run_create(n, args, rng):
    sim = Sim(n, args.node_timeout, args.broadcast, rng)
    for node in sim.nodes[1:]:
        node.known[0] = 0
        sim.send(node, sim.nodes[0], "meet")
    while not sim.all_know_all() and sim.tick < args.max_ticks:
        sim.step()
    return sim


def run_move(n, args, rng):
    sim = run_create(n, args, rng)
    sim.messages = sim.bytes = 0
    start = sim.tick
    for node in sim.nodes:
        node.moved_slot_owner = (1, sim.nodes[1].epoch)
    mover = sim.nodes[0]
    mover.epoch = max(node.epoch for node in sim.nodes) + 1
    mover.moved_slot_owner = (0, mover.epoch)
    mover.broadcast_due = args.broadcast
    owner = mover.moved_slot_owner
    while not sim.all_see_move(owner) and sim.tick - start < args.max_ticks:
        sim.step()
    sim.tick -= start
    return sim


def run_steady(n, args, rng):
    """A settled cluster for 60 s: its background traffic (sim.tick = 600)."""
    sim = run_create(n, args, rng)
    sim.messages = sim.bytes = 0
    for _ in range(600):
        sim.step()
    sim.tick = 600
    return sim


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[10, 50, 100, 200])
    parser.add_argument("--node-timeout", type=int, default=15000, help="ms (Redis's default)")
    parser.add_argument("--no-broadcast", dest="broadcast", action="store_false")
    parser.add_argument("--max-ticks", type=int, default=6000)
    parser.add_argument("--runs", type=int, default=5, help="seeds per row; median and max")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"node timeout {args.node_timeout} ms, broadcast on own change: {args.broadcast}, "
          f"{args.runs} runs per row (median, max)")
    print("| nodes | case | time to agree, s | messages | bytes per node | largest message |")
    print("|---|---|---|---|---|---|")
    for n in args.nodes:
        for case, run in (("create", run_create), ("move", run_move)):
            sims = [run(n, args, random.Random(args.seed + r)) for r in range(args.runs)]
            ticks = sorted(sim.tick for sim in sims)
            messages = statistics.median(sim.messages for sim in sims)
            per_node = statistics.median(sim.bytes / n for sim in sims)
            print(f"| {n} | {case} | {statistics.median(ticks) * TICK_MS / 1000:.1f}, "
                  f"{ticks[-1] * TICK_MS / 1000:.1f} | {messages:.0f} | {per_node:.0f} | "
                  f"{max(sim.max_message for sim in sims)} |")
        steady = run_steady(n, args, random.Random(args.seed))
        print(f"| {n} | steady, per node per s | - | {steady.messages / n / 60:.1f} | "
              f"{steady.bytes / n / 60:.0f} | {steady.max_message} |")


if __name__ == "__main__":
    main()
