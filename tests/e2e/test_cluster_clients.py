"""Cluster-aware client libraries against a 3-master Bloomgate cluster:
redis-py's RedisCluster, node-redis's createCluster, ioredis's Cluster
(tests/e2e/node/, through node_clients.py) and `redis-cli -c`.

Each client creates a filter of every family on keys spread over all three
masters (COUNTKEYSINSLOT on each owner proves where they landed) and reads
them back through its own routing; runs hash-tagged multi-key commands, a
batch spanning slots and MULTI/EXEC on one slot; gets CROSSSLOT for
`DEL a b`; and, already connected, follows -ASK while a slot migrates and
-MOVED once it has moved, as `redis-cli --cluster reshard` moves slots.

How each library routes our commands (what these tests pin down):
- redis-py reads key positions from COMMAND (COMMAND GETKEYS for movable
  keys): every family's command goes straight to its key's node. It refuses
  a cross-slot DEL itself; sent to one node, the server's CROSSSLOT comes
  back as ClusterCrossSlotError.
- node-redis compiles key positions into its own methods (bf.add, ...); for
  what it has no method for (CBF.*, WINDOW, ...) sendCommand takes the key.
- ioredis knows only Redis's own commands: BF.* and the others go to any
  node and follow -MOVED (with a CLUSTER SLOTS refresh each time), so two
  commands on one key sent without awaiting the first may run out of order.
- redis-cli -c starts on the node named and follows each redirect.
"""
import logging
import shutil
import subprocess
import sys
import tempfile
import unittest

import redis
from redis.cluster import RedisCluster

from cluster_support import LocalCluster, key_in_slot, moved_replies
import node_clients
from node_clients import ClientError, NodeClusterClient

CROSSSLOT = "CROSSSLOT Keys in request don't hash to the same slot"
# redis-py 4.3 logs every redirect it follows at ERROR, with a traceback.
logging.getLogger("redis.cluster").setLevel(logging.CRITICAL)
# Whether a client sends a family's commands straight to the key's owner.
ROUTES_BY_KEY = {"redis-py": True, "node-redis": True, "ioredis": False, "redis-cli": False}

# Every family: how a filter is made, an item added, and what reading the
# item back answers (as text, flattened).
FAMILIES = {
    "bf": (["BF.RESERVE", "{key}", "0.01", "1000"], ["BF.ADD", "{key}", "x"],
           ["BF.EXISTS", "{key}", "x"], ["1"]),
    "wbf": (["BF.RESERVE", "{key}", "0.01", "1000", "WINDOW", "600"], ["BF.ADD", "{key}", "x"],
            ["BF.EXISTS", "{key}", "x"], ["1"]),
    "cbf": (["CBF.RESERVE", "{key}", "0.01", "1000"], ["CBF.ADD", "{key}", "x"],
            ["CBF.COUNT", "{key}", "x"], ["1"]),
    "wcbf": (["CBF.RESERVE", "{key}", "0.01", "1000", "WINDOW", "600"],
             ["CBF.ADD", "{key}", "x"], ["CBF.EXISTS", "{key}", "x"], ["1"]),
    "cf": (["CF.RESERVE", "{key}", "1000"], ["CF.ADD", "{key}", "x"],
           ["CF.EXISTS", "{key}", "x"], ["1"]),
    "cms": (["CMS.INITBYDIM", "{key}", "100", "5"], ["CMS.INCRBY", "{key}", "x", "3"],
            ["CMS.QUERY", "{key}", "x"], ["3"]),
    "topk": (["TOPK.RESERVE", "{key}", "3"], ["TOPK.ADD", "{key}", "x"],
             ["TOPK.QUERY", "{key}", "x"], ["1"]),
    "tdigest": (["TDIGEST.CREATE", "{key}"], ["TDIGEST.ADD", "{key}", "1", "2", "3"],
                ["TDIGEST.MAX", "{key}"], ["3"]),
}


def with_key(args, key):
    return [key if a == "{key}" else a for a in args]


def flat(reply):
    """A reply as the list of texts redis-cli would print, one a line."""
    if isinstance(reply, (list, tuple)):
        return [text for item in reply for text in flat(item)]
    if isinstance(reply, bool):
        return ["1" if reply else "0"]
    if isinstance(reply, bytes):
        reply = reply.decode()
    if isinstance(reply, float) and reply.is_integer():
        reply = int(reply)
    return [str(reply)]


class RedisPyClient:
    """redis-py's RedisCluster: execute_command routes by COMMAND's key
    positions."""
    name = "redis-py"

    def __init__(self, seed):
        self.rc = RedisCluster(host=seed.split(":")[0], port=int(seed.split(":")[1]),
                               decode_responses=True, socket_timeout=10)

    def call(self, args):
        try:
            return self.rc.execute_command(*args)
        except redis.exceptions.ResponseError as e:
            raise ClientError(str(e)) from e

    def batch(self, commands):
        """A cluster pipeline: redis-py splits it per node."""
        pipe = self.rc.pipeline()
        for args in commands:
            pipe.execute_command(*args)
        return pipe.execute(raise_on_error=False)

    def multi(self, commands):
        """RedisCluster has no MULTI: a transaction goes through the plain
        connection of the node its slot map names."""
        node = self.rc.get_node_from_key(commands[0][1])
        pipe = self.rc.get_redis_connection(node).pipeline(transaction=True)
        for args in commands:
            pipe.execute_command(*args)
        return pipe.execute()

    def close(self):
        self.rc.close()


class NodeClient:
    """node-redis or ioredis, in its own process (node_clients.py)."""

    def __init__(self, library, seed):
        self.name = library
        self.proc = NodeClusterClient(library, seed)

    def call(self, args):
        return self.proc.call(args)

    def batch(self, commands):
        return self.proc.request(op="batch", commands=[
            {"key": args[1], "args": args} for args in commands])

    def multi(self, commands):
        return self.proc.request(op="multi", commands=[
            {"key": args[1], "args": args} for args in commands])

    def close(self):
        self.proc.close()


class RedisCliClient:
    """`redis-cli -c`: one process a command, following -MOVED/-ASK itself."""
    name = "redis-cli"

    def __init__(self, seed):
        self.host, self.port = seed.split(":")

    def run(self, host, port, args, stdin=None):
        out = subprocess.run(["redis-cli", "-c", "-h", host, "-p", port, *map(str, args)],
                             input=stdin, capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            raise AssertionError(f"redis-cli {args} failed: {out.stdout}{out.stderr}")
        # Its notes on stdout ("-> Redirected to slot [5552] located at ...") aside.
        return [line for line in out.stdout.splitlines()
                if line and not line.startswith("-> Redirected to slot")]

    def call(self, args):
        lines = self.run(self.host, self.port, args)
        if len(lines) == 1 and lines[0].split(" ")[0] in ("ERR", "CROSSSLOT", "MOVED", "ASK"):
            raise ClientError(lines[0])
        return lines

    def batch(self, commands):
        """Commands on stdin, one a line: redis-cli follows each -MOVED."""
        text = "".join(" ".join(args) + "\n" for args in commands)
        return self.run(self.host, self.port, [], stdin=text)

    def close(self):
        pass


def library_versions():
    versions = {"redis-py": redis.__version__}
    if node_clients.installed_reason() is None:
        for library in ("node-redis", "ioredis"):
            versions[library] = node_clients.package_version(library)
    return versions


class ClusterClientsTest(unittest.TestCase):
    """One 3-master cluster for the class; each client its own keys and
    slots (a slot a client and family-set), so the tests do not meet."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="bloomgate-cluster-clients-")
        cls.addClassCleanup(cls.tmp.cleanup)
        cls.cluster = LocalCluster(cls.tmp.name, nodes=3)
        cls.addClassCleanup(cls.cluster.stop)
        cls.cluster.create()
        cls.cluster.wait_agreement()
        cls.seed = cls.cluster.nodes[0].address
        sys.stderr.write(f"client versions: {library_versions()}\n")
        cls.direct = [n.client(decode_responses=True) for n in cls.cluster.nodes]
        for c in cls.direct:
            cls.addClassCleanup(c.close)
        # Each master's first slot, from its own CLUSTER SLOTS line.
        cls.first_slots = []
        for node, client in zip(cls.cluster.nodes, cls.direct):
            ranges = [r for r in client.execute_command("CLUSTER", "SLOTS")
                      if int(r[2][1]) == node.port]
            cls.first_slots.append(int(ranges[0][0]))

    def tearDown(self):
        dead = [n.address for n in self.cluster.nodes if not n.alive()]
        if dead:
            self.fail(f"nodes died: {dead}\n{self.cluster.logs()}")

    def open(self, name):
        if name == "redis-py":
            client = RedisPyClient(self.seed)
        elif name == "redis-cli":
            if shutil.which("redis-cli") is None:
                self.skipTest("redis-cli is not installed")
            client = RedisCliClient(self.seed)
        else:
            reason = node_clients.installed_reason()
            if reason:
                self.skipTest(reason)
            client = NodeClient(name, self.seed)
        self.addCleanup(client.close)
        return client

    def slots_for(self, offset):
        """A slot on each master, `offset` past its first."""
        return [slot + offset for slot in self.first_slots]

    def owner(self, slot):
        for node, client in zip(self.cluster.nodes, self.direct):
            for start, end, *_ in client.execute_command("CLUSTER", "SLOTS"):
                if start <= slot <= end and int(_[0][1]) == node.port:
                    return node, client
        raise AssertionError(f"no node says it owns slot {slot}")

    # -- every family, on every master ------------------------------------
    def check_every_family(self, name, offset):
        client = self.open(name)
        slots = self.slots_for(offset)
        keys = {(slot, family): key_in_slot(slot, f"{name}:{family}")
                for slot in slots for family in FAMILIES}
        moved_before = moved_replies(self.direct)
        for (slot, family), key in keys.items():
            create, add, _, _ = FAMILIES[family]
            self.assertEqual(flat(client.call(with_key(create, key))), ["OK"], key)
            client.call(with_key(add, key))
        # They landed on the masters their slots name, all three of them.
        owners = set()
        for slot in slots:
            node, direct = self.owner(slot)
            owners.add(node.address)
            self.assertEqual(direct.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot),
                             len(FAMILIES), f"slot {slot} on {node.address}")
            for family in FAMILIES:
                self.assertEqual(direct.execute_command("EXISTS", keys[(slot, family)]), 1)
        self.assertEqual(len(owners), 3)
        for (slot, family), key in keys.items():
            _, _, read, expected = FAMILIES[family]
            self.assertEqual(flat(client.call(with_key(read, key))), expected, key)
        # redis-py (from COMMAND's key positions) and node-redis went
        # straight to each owner; the others were sent on by -MOVED.
        moved = moved_replies(self.direct) - moved_before
        if ROUTES_BY_KEY[name]:
            self.assertEqual(moved, 0)
        else:
            self.assertGreater(moved, 0)
        return client

    def test_redis_py_every_family_on_every_master(self):
        self.check_every_family("redis-py", 10)

    def test_node_redis_every_family_on_every_master(self):
        self.check_every_family("node-redis", 20)

    def test_ioredis_every_family_on_every_master(self):
        self.check_every_family("ioredis", 30)

    def test_redis_cli_every_family_on_every_master(self):
        self.check_every_family("redis-cli", 40)

    def test_node_redis_own_methods_compile_the_key(self):
        client = self.open("node-redis")
        keys = [key_in_slot(slot, "node-redis:typed") for slot in self.slots_for(50)]
        for key in keys:
            self.assertIs(client.proc.request(op="typed", method="bf.add", args=[key, "y"]), True)
            self.assertEqual(client.proc.request(op="typed", method="cms.initByDim",
                                                 args=[key + ":cms", 100, 5]), "OK")
            self.assertEqual(client.proc.request(op="typed", method="topK.reserve",
                                                 args=[key + ":topk", 3]), "OK")
        for key in keys:
            self.assertIs(client.proc.request(op="typed", method="bf.exists", args=[key, "y"]),
                          True)
            self.assertEqual(client.proc.request(op="typed", method="cms.query",
                                                 args=[key + ":cms", "z"]), [0])
            self.assertEqual(self.owner_client(key).execute_command("BF.EXISTS", key, "y"), 1)

    def owner_client(self, key):
        return self.owner(int(self.direct[0].execute_command("CLUSTER", "KEYSLOT", key)))[1]

    # -- multi-key commands, batches, MULTI, CROSSSLOT --------------------
    def check_multi_key(self, name, offset):
        client = self.open(name)
        tag = key_in_slot(self.slots_for(offset)[1], name)  # "{k<n>}<name>": its slot is k<n>'s
        a, b, dst = tag + ":a", tag + ":b", tag + ":dst"
        for key in (a, b, dst):
            self.assertEqual(flat(client.call(["CMS.INITBYDIM", key, "100", "5"])), ["OK"])
        client.call(["CMS.INCRBY", a, "x", "2"])
        client.call(["CMS.INCRBY", b, "x", "5"])
        self.assertEqual(flat(client.call(["CMS.MERGE", dst, "2", a, b])), ["OK"])
        self.assertEqual(flat(client.call(["CMS.QUERY", dst, "x"])), ["7"])
        for key in (a, b):  # BF.MERGE ORs filters of one seed
            self.assertEqual(flat(client.call(["BF.RESERVE", key + ":bf", "0.01", "1000",
                                               "SEED", "8361925"])), ["OK"])
            self.assertEqual(flat(client.call(["BF.ADD", key + ":bf", "x"])), ["1"])
        self.assertEqual(flat(client.call(["BF.MERGE", dst + ":bf", a + ":bf", b + ":bf"])),
                         ["OK"])
        self.assertEqual(flat(client.call(["BF.EXISTS", dst + ":bf", "x"])), ["1"])
        self.assertEqual(flat(client.call(["EXISTS", a, b, dst, tag + ":none"])), ["3"])
        self.assertEqual(flat(client.call(["DEL", a, b])), ["2"])
        self.assertEqual(flat(client.call(["EXISTS", a, b, dst])), ["1"])

        # Batches over all three masters, each reply in its command's place.
        # The reads wait for the adds: ioredis sends each BF.* to any node,
        # so a read sent with its add may reach the owner first.
        keys = [key_in_slot(slot, f"{name}:batch") for slot in self.slots_for(offset + 1)]
        self.assertEqual(flat(client.batch([["BF.ADD", k, "x"] for k in keys] +
                                           [["CF.ADD", k + ":cf", "x"] for k in keys])),
                         ["1"] * 6)
        self.assertEqual(flat(client.batch([["BF.EXISTS", k, "x"] for k in keys] +
                                           [["BF.EXISTS", k, "y"] for k in keys] +
                                           [["CF.COUNT", k + ":cf", "x"] for k in keys])),
                         ["1"] * 3 + ["0"] * 3 + ["1"] * 3)
        for key in keys:
            self.assertEqual(self.owner_client(key).execute_command("BF.EXISTS", key, "x"), 1)
        return client, tag

    def check_multi_exec(self, client, tag):
        one, two = tag + ":m1", tag + ":m2"
        self.assertEqual(flat(client.multi([["BF.ADD", one, "x"], ["BF.ADD", two, "y"],
                                            ["EXISTS", one, two]])), ["1", "1", "2"])
        self.assertEqual(self.owner_client(one).execute_command("EXISTS", one, two), 2)

    def check_crossslot(self, client):
        a, b = key_in_slot(self.first_slots[0]), key_in_slot(self.first_slots[1])
        with self.assertRaises(ClientError) as caught:
            client.call(["DEL", a, b])
        self.assertEqual(str(caught.exception), CROSSSLOT)

    def test_redis_py_multi_key_batches_and_multi(self):
        client, tag = self.check_multi_key("redis-py", 60)
        self.check_multi_exec(client, tag)
        # redis-py refuses a cross-slot DEL before sending it...
        a, b = key_in_slot(self.first_slots[0]), key_in_slot(self.first_slots[1])
        with self.assertRaisesRegex(redis.exceptions.RedisClusterException,
                                    "^DEL - all keys must map to the same key slot$"):
            client.rc.execute_command("DEL", a, b)
        # ...and sent to one node, our CROSSSLOT is its ClusterCrossSlotError.
        node = client.rc.get_node_from_key(a)
        with self.assertRaisesRegex(redis.exceptions.ClusterCrossSlotError,
                                    "^Keys in request don't hash to the same slot$"):
            client.rc.execute_command("DEL", a, b, target_nodes=node)
        # CMS.MERGE's sources are not in COMMAND's first/last/step: routed
        # by the destination, cross-slot sources get the server's refusal.
        with self.assertRaisesRegex(redis.exceptions.ClusterCrossSlotError,
                                    "^Keys in request don't hash to the same slot$"):
            client.rc.execute_command("CMS.MERGE", tag + ":dst", "2", a, b)

    def test_node_redis_multi_key_batches_and_multi(self):
        client, tag = self.check_multi_key("node-redis", 70)
        self.check_multi_exec(client, tag)
        self.check_crossslot(client)

    def test_ioredis_multi_key_batches_and_multi(self):
        client, tag = self.check_multi_key("ioredis", 80)
        self.check_multi_exec(client, tag)
        self.check_crossslot(client)
        # Its explicit pipeline must stay on one node: one slot works (BF.*
        # too, after -MOVED), keys of two masters are refused by ioredis.
        one = [["BF.ADD", tag + f":p{i}", "x"] for i in range(3)]
        self.assertEqual(client.proc.request(op="pipeline", commands=[{"args": c} for c in one]),
                         [1, 1, 1])
        # A transaction of BF.* alone has no slot for ioredis either: sent to
        # any node, it is sent again where -MOVED says, on every master.
        for slot in self.slots_for(82):
            tag = key_in_slot(slot, "ioredis:tx")
            self.assertEqual(client.multi([["BF.ADD", tag + ":1", "x"],
                                           ["CF.ADD", tag + ":2", "x"]]), [1, 1])
            self.assertEqual(self.owner(slot)[1].execute_command("EXISTS", tag + ":1",
                                                                  tag + ":2"), 2)
        keys = [key_in_slot(slot) for slot in self.first_slots]
        with self.assertRaisesRegex(ClientError, "^All keys in the pipeline should belong to "
                                                 "the same slots allocation group$"):
            client.proc.request(op="pipeline",
                                commands=[{"args": ["EXISTS", k]} for k in keys])

    def test_redis_cli_multi_key_batches_and_multi(self):
        client, tag = self.check_multi_key("redis-cli", 90)
        self.check_crossslot(client)
        # MULTI/EXEC on stdin to the slot's node (redis-cli -c would follow
        # a -MOVED out of the transaction's connection).
        node, _ = self.owner(int(self.direct[0].execute_command("CLUSTER", "KEYSLOT", tag)))
        lines = client.run(*node.address.split(":"), [], stdin=(
            f"MULTI\nBF.ADD {tag}:m1 x\nCF.ADD {tag}:m2 y\nEXISTS {tag}:m1 {tag}:m2\nEXEC\n"))
        self.assertEqual(lines, ["OK", "QUEUED", "QUEUED", "QUEUED", "1", "1", "2"])

    # -- a slot moved under a connected client ----------------------------
    def node_id(self, node):
        return node.client(decode_responses=True).execute_command("CLUSTER", "MYID")

    def check_follows_redirects(self, name, offset):
        client = self.open(name)
        slot = self.slots_for(offset)[0]
        source, source_c = self.owner(slot)
        target_i = (self.cluster.nodes.index(source) + 1) % 3
        target, target_c = self.cluster.nodes[target_i], self.direct[target_i]
        key = key_in_slot(slot, f"{name}:moving")
        self.assertEqual(flat(client.call(["BF.ADD", key, "x"])), ["1"])
        self.assertEqual(flat(client.call(["EXISTS", key])), ["1"])  # slot map cached
        source_id, target_id = self.node_id(source), self.node_id(target)

        # Mid-move, as redis-cli --cluster reshard does: the key is on the
        # target, the source answers -ASK for it.
        self.assertEqual(target_c.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING",
                                                  source_id), "OK")
        self.assertEqual(source_c.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING",
                                                  target_id), "OK")
        self.assertEqual(source_c.execute_command(
            "MIGRATE", "127.0.0.1", target.port, "", 0, 10000, "KEYS", key), "OK")
        with self.assertRaisesRegex(redis.exceptions.ResponseError,
                                    f"^ASK {slot} 127.0.0.1:{target.port}$"):
            source_c.execute_command("BF.EXISTS", key, "x")
        asking_before = self.asking_calls_of(target_c)
        self.assertEqual(flat(client.call(["EXISTS", key])), ["1"])
        self.assertEqual(flat(client.call(["BF.EXISTS", key, "x"])), ["1"])
        self.assertGreater(self.asking_calls_of(target_c), asking_before)

        # Moved: every master names the target; the source answers -MOVED.
        for c in (target_c, source_c, *[d for d in self.direct if d not in (target_c, source_c)]):
            self.assertEqual(c.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id),
                             "OK")
        with self.assertRaisesRegex(redis.exceptions.ResponseError,
                                    f"^MOVED {slot} 127.0.0.1:{target.port}$"):
            source_c.execute_command("EXISTS", key)
        self.assertEqual(flat(client.call(["BF.EXISTS", key, "x"])), ["1"])
        self.assertEqual(flat(client.call(["BF.ADD", key, "y"])), ["1"])
        self.assertEqual(target_c.execute_command("BF.EXISTS", key, "y"), 1)
        self.assertEqual(flat(client.call(["EXISTS", key])), ["1"])
        self.cluster.wait_agreement()
        self.cluster.check()

    def asking_calls_of(self, direct):
        stats = direct.info("commandstats").get("cmdstat_asking")
        return stats["calls"] if stats else 0

    def test_redis_py_follows_ask_and_moved(self):
        self.check_follows_redirects("redis-py", 100)

    def test_node_redis_follows_ask_and_moved(self):
        self.check_follows_redirects("node-redis", 110)

    def test_ioredis_follows_ask_and_moved(self):
        self.check_follows_redirects("ioredis", 120)


if __name__ == "__main__":
    unittest.main()
