"""Bloomgate nodes made one Redis Cluster on loopback by the tool Redis
operators use, `redis-cli --cluster create`: for the cluster e2e tests and
the cluster benchmarks.

    with LocalCluster(tmp_dir, nodes=3) as cluster:
        cluster.create()
        cluster.wait_agreement()
        cluster.nodes[0].client().execute_command("CLUSTER", "INFO")

Every node keeps its client and bus ports across restarts (its peers know
it by them). redis-cli runs as a subprocess with a deadline: its create
waits for agreement with no timeout of its own. stop() ends every node,
whatever state the test left it in. RedirectingClient routes commands as
Redis Cluster clients do (-MOVED, -ASK) and counts every redirect.
"""
import os
import signal
import shutil
import subprocess
import tempfile
import time

from harness import (PersistentServer, RawConnection, RespError, encode_command, free_port,
                     server_binary, wait_until)

REDIS_CLI = shutil.which("redis-cli")
CLI_DEADLINE_S = 60.0
AGREE_DEADLINE_S = 30.0
# Short enough that the node-timeout/2 ping rule runs within a test.
NODE_TIMEOUT_MS = 2000
SLOTS = 16384
# A master keeps cluster_state:fail for 2 s after its start (Redis's
# writable delay), and for the node timeout clamped to [0.5 s, 5 s] after
# it leaves a minority: a test waits for cluster_state:ok this much longer
# than for agreement before it sends a restarted node keys.
WRITABLE_DELAY_S = 2.0
MAX_REJOIN_DELAY_S = 5.0
STATE_OK_DEADLINE_S = AGREE_DEADLINE_S + WRITABLE_DELAY_S + MAX_REJOIN_DELAY_S


def free_port_pair():
    """A client port and a bus port, both free a moment ago."""
    while True:
        port, cport = free_port(), free_port()
        if port != cport:
            return port, cport


def crc16_xmodem(data):
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def key_slot(key):
    """Redis Cluster's slot of a key: CRC16 of its {hash tag} if it has a
    non-empty one, else of the whole key."""
    data = key.encode() if isinstance(key, str) else key
    start = data.find(b"{")
    if start >= 0:
        end = data.find(b"}", start + 1)
        if end > start + 1:
            data = data[start + 1:end]
    return crc16_xmodem(data) % SLOTS


def key_in_slot(slot, tag=""):
    """The first "k<n>" in `slot` (hash tags aside: these keys have none),
    optionally as the hash tag of a longer key."""
    for n in range(1000000):
        key = f"k{n}"
        if crc16_xmodem(key.encode()) % SLOTS == slot:
            return "{" + key + "}" + tag if tag else key
    raise AssertionError(f"no key found for slot {slot}")


def cli(*args, deadline_s=CLI_DEADLINE_S, answers=None):
    """redis-cli with `args`; `answers` is what it reads on stdin (the
    prompts --cluster-yes does not answer), none by default."""
    stdin = {"input": answers} if answers is not None else {"stdin": subprocess.DEVNULL}
    return subprocess.run([REDIS_CLI, *map(str, args)], capture_output=True, text=True,
                          timeout=deadline_s, **stdin)


def node_lines(client):
    """CLUSTER NODES split in lines of fields, through a redis-py client or a
    RawConnection."""
    call = getattr(client, "execute_command", None) or client.call
    text = call("CLUSTER", "NODES")
    if isinstance(text, bytes):
        text = text.decode()
    return [line.split(" ") for line in text.splitlines() if line]


def slot_owners(client):
    """The id of each slot's owner (None: unassigned) as `client`'s node sees it."""
    owners = [None] * SLOTS
    for fields in node_lines(client):
        for slot in line_slots(fields):
            owners[slot] = fields[0]
    return owners


def line_slots(fields):
    """The slots a CLUSTER NODES line assigns (open slots, [s->-id] and
    [s-<-id], are not assigned by it)."""
    for part in fields[8:]:
        if not part.startswith("["):
            first, _, last = part.partition("-")
            yield from range(int(first), int(last or first) + 1)


def wait_state_ok(client, deadline_s=STATE_OK_DEADLINE_S, what="cluster_state:ok"):
    """Until `client`'s node says cluster_state:ok (CLUSTER INFO)."""
    wait_until(lambda: "cluster_state:ok" in client.execute_command("CLUSTER", "INFO"),
               deadline_s, interval_s=0.05, what=what)


def signature(client):
    """redis-cli's: the sorted id:slots of every node holding slots."""
    parts = []
    for fields in node_lines(client):
        slots = [f for f in fields[8:] if not f.startswith("[")]
        if slots:
            parts.append(fields[0] + ":" + ",".join(sorted(slots)))
    return sorted(parts)


def moved_replies(clients):
    """How many -MOVED replies these nodes have given (INFO errorstats):
    how often a client's request went to a node that does not own its slot."""
    total = 0
    for client in clients:
        # redis-py reads "errorstat_MOVED:count=3" as {"count": 3} or "count=3".
        stats = client.info("errorstats").get("errorstat_MOVED")
        if isinstance(stats, dict):
            total += int(stats["count"])
        elif stats:
            total += int(str(stats).split("=", 1)[1])
    return total


class ClusterNode(PersistentServer):
    """A cluster node on fixed ports, so a restart comes back where the
    others know it."""

    def __init__(self, data_dir, port, cport, node_timeout_ms=NODE_TIMEOUT_MS, args=()):
        super().__init__(data_dir, args=[
            "--cluster-enabled", "yes", "--cluster-port", str(cport),
            "--cluster-node-timeout", str(node_timeout_ms), "--threads", "1", *args])
        self.fixed_port = port
        self.cport = cport

    def start(self):
        binary = server_binary()
        self.port = self.fixed_port
        self.log_path = self.fixed_log_path
        self._log_file = open(self.log_path, "ab")
        cmd = [binary, "--port", str(self.port), "--bind", "127.0.0.1", *self.args]
        self.proc = subprocess.Popen(cmd, cwd=self.data_dir, stdin=subprocess.DEVNULL,
                                     stdout=self._log_file, stderr=subprocess.STDOUT)
        self._wait_until_ready()
        return self

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def my_id(self):
        return self.client(decode_responses=True).execute_command("CLUSTER", "MYID")


class LocalCluster:
    """`nodes` started nodes (more may be added with add_node()), each in
    its own directory under `directory`, made one cluster by create()."""

    def __init__(self, directory, nodes=3, node_timeout_ms=NODE_TIMEOUT_MS, args=()):
        self.directory = directory
        self.node_timeout_ms = node_timeout_ms
        self.args = list(args)
        self.nodes = []
        self.detached = []  # taken out of the cluster (del-node), still stopped by stop()
        self.create_seconds = None
        try:
            for _ in range(nodes):
                self.add_node()
        except BaseException:
            self.stop()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def add_node(self):
        """Starts one more node (not yet met by the others)."""
        data_dir = os.path.join(self.directory,
                                f"node{len(self.nodes) + len(self.detached)}")
        os.makedirs(data_dir)
        port, cport = free_port_pair()
        node = ClusterNode(data_dir, port, cport, self.node_timeout_ms, self.args)
        self.nodes.append(node)
        return node.start()

    def detach(self, node):
        """`node` is no member any more (redis-cli --cluster del-node left it
        alone): agreement and clients() leave it out, stop() still ends it."""
        self.nodes.remove(node)
        self.detached.append(node)

    def create(self, *extra):
        """redis-cli --cluster create of every node; asserts that it agreed."""
        started = time.monotonic()
        out = cli("--cluster", "create", *[n.address for n in self.nodes], *extra,
                  "--cluster-yes")
        self.create_seconds = time.monotonic() - started
        text = out.stdout + out.stderr
        if out.returncode != 0 or "[OK] All nodes agree about slots configuration." not in text:
            raise AssertionError(f"redis-cli --cluster create failed:\n{text}")
        self.wait_state_ok()
        return out

    def wait_state_ok(self, deadline_s=STATE_OK_DEADLINE_S):
        """Every live node says cluster_state:ok: none still waits out a
        delay after its start or a minority."""
        for client in self.clients():
            wait_state_ok(client, deadline_s)

    def clients(self):
        return [n.client(decode_responses=True) for n in self.nodes if n.alive()]

    def wait_agreement(self, holders=None, deadline_s=AGREE_DEADLINE_S):
        """Every live node lists every node connected, and all agree on who
        holds which slots (and that `holders` nodes hold some, if given)."""
        count = len(self.nodes)

        def agreed():
            clients = self.clients()
            signatures = [signature(c) for c in clients]
            lines = [node_lines(c) for c in clients]
            wanted = holders if holders is not None else len(signatures[0])
            return (all(s == signatures[0] and len(s) == wanted and s for s in signatures) and
                    all(len(ls) == count and all(f[7] == "connected" for f in ls)
                        for ls in lines))
        wait_until(agreed, deadline_s, interval_s=0.05, what="all nodes agreeing")

    def check(self, node=None):
        """redis-cli --cluster check through `node` (default: the first);
        asserts that it passed and returns its output."""
        node = node or self.nodes[0]
        out = cli("--cluster", "check", node.address)
        text = out.stdout + out.stderr
        if (out.returncode != 0 or "[ERR]" in text or
                "[OK] All nodes agree about slots configuration." not in text or
                "[OK] All 16384 slots covered." not in text):
            raise AssertionError(f"redis-cli --cluster check via {node.address} failed:\n{text}")
        return text

    def logs(self):
        return "\n".join(f"--- node {i} (port {n.port}) ---\n{n.log()}"
                         for i, n in enumerate(self.nodes))

    def stop(self):
        for node in self.nodes + self.detached:
            if node.alive():
                node.stop(check=False)


class RedirectingClient:
    """A Redis Cluster client as Redis's own behave: each command goes to the
    node its key's slot maps to; -MOVED remaps the slot and retries there,
    -ASK retries once on the named node after ASKING, the map unchanged.
    Counts every redirect; any other error is the command's reply (a
    RespError), for the caller to count. Not thread-safe: one per thread."""

    MAX_REDIRECTS = 16

    def __init__(self, seed_port):
        self.moved = 0
        self.asked = 0
        self.connections = {}
        self.slot_ports = [seed_port] * SLOTS
        for fields in node_lines(self._connection(seed_port)):
            port = int(fields[1].split("@")[0].rsplit(":", 1)[1])
            for slot in line_slots(fields):
                self.slot_ports[slot] = port

    def _connection(self, port):
        if port not in self.connections:
            self.connections[port] = RawConnection(port)
        return self.connections[port]

    def call(self, key, *args):
        """Runs `args` (whose key is `key`) where the cluster serves it."""
        port = self.slot_ports[key_slot(key)]
        asking = False
        for _ in range(self.MAX_REDIRECTS):
            connection = self._connection(port)
            try:
                if asking:
                    connection.send(encode_command("ASKING") + encode_command(*args))
                    asked = connection.read_reply()
                    if asked != "OK":
                        return asked
                    reply = connection.read_reply()
                else:
                    reply = connection.call(*args)
            except OSError:
                self.connections.pop(port).close()
                raise
            if not (isinstance(reply, RespError) and reply.code in ("MOVED", "ASK")):
                return reply
            _, slot, address = reply.split(" ")
            port = int(address.rsplit(":", 1)[1])
            asking = reply.code == "ASK"
            if asking:
                self.asked += 1
            else:
                self.moved += 1
                self.slot_ports[int(slot)] = port
        raise AssertionError(f"more than {self.MAX_REDIRECTS} redirects for {args!r}")

    def close(self):
        for connection in self.connections.values():
            connection.close()
        self.connections.clear()


def create_for_class(test_class, prefix, nodes, *create_args, node_timeout_ms=NODE_TIMEOUT_MS):
    """For a test class's setUpClass: `nodes` nodes in a fresh temporary
    directory (test_class.tmp) made one cluster by `redis-cli --cluster
    create ... *create_args` (test_class.cluster, .nodes, .create,
    .create_seconds). Whatever fails on the way, what started is stopped and
    the directory removed; tearDownClass calls stop_for_class."""
    test_class.tmp = tempfile.TemporaryDirectory(prefix=prefix)
    try:
        test_class.cluster = LocalCluster(test_class.tmp.name, nodes=nodes,
                                          node_timeout_ms=node_timeout_ms)
        test_class.nodes = test_class.cluster.nodes
        test_class.create = test_class.cluster.create(*create_args)
        test_class.create_seconds = test_class.cluster.create_seconds
    except BaseException:
        if hasattr(test_class, "cluster"):
            test_class.cluster.stop()
        test_class.tmp.cleanup()
        raise


def stop_for_class(test_class):
    # A node a test stopped (SIGSTOP) and failed to continue cannot stop.
    for node in test_class.cluster.nodes:
        if node.alive():
            os.kill(node.proc.pid, signal.SIGCONT)
    test_class.cluster.stop()
    test_class.tmp.cleanup()


def info_fields(client, section):
    """INFO's section as redis-py parses it, every value as text."""
    return {k: str(v) for k, v in client.info(section).items()}
