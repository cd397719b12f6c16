"""Writers, a ledger of what they were told, and the checks a cluster
failover test (and its benchmark) makes against a LocalCluster.

Every write is BF.ADD of its own key ("{tag}:client:n"), so whether it
survived is EXISTS of that key: exact, no false positive to discount.
Each write is followed by `WAIT 1 WAIT_MS` on the connection that ran it;
the ledger keeps, per write, whether it was acknowledged and whether WAIT
counted a replica (True / False / None: not known, see
node/ioredis_cluster.js's write_wait).

    ledger = Ledger()
    writers = start_writers([n.address for n in cluster.nodes], tags, ledger)
    ... fault ...
    report = check_writes(cluster, ledger)   # report.missing_waited must be []

Nothing here sleeps to wait for a state: waits poll what the nodes say,
with a deadline.
"""
import collections
import logging
import os
import signal
import threading
import time

import redis
from redis.cluster import RedisCluster

from harness import wait_until
from cluster_support import SLOTS, key_in_slot, key_slot, line_slots, node_lines
import node_clients
from node_clients import NodeClusterClient

# redis-py 4.3 logs every redirect and reconnect it follows at ERROR.
logging.getLogger("redis.cluster").setLevel(logging.CRITICAL)

WAIT_MS = 500
# A writer's pause after a refused write, so a dead master is not hammered.
RETRY_PAUSE_S = 0.02
CHECK_BATCH = 1000
# An ioredis write blocks while its node is SIGSTOPped (no command timeout),
# past the node timeout; a longer silence ends its process (see write()).
ANSWER_DEADLINE_S = 6.0

Write = collections.namedtuple("Write", "key client node acked_at waited")


class Ledger:
    """Every acknowledged write, in order, from any number of writers."""

    def __init__(self):
        self.lock = threading.Lock()
        self.writes = []

    def add(self, write):
        with self.lock:
            self.writes.append(write)

    def snapshot(self):
        with self.lock:
            return list(self.writes)

    def count(self, client=None, since=0.0):
        with self.lock:
            return sum(1 for w in self.writes
                       if (client is None or w.client == client) and w.acked_at >= since)

    def first_after(self, client, t):
        """When `client`'s first write acknowledged after `t` was, or None."""
        with self.lock:
            return next((w.acked_at for w in self.writes
                         if w.client == client and w.acked_at > t), None)


def spread_tags(nodes_client, per_master=2):
    """Hash tags whose slots lie on every master, `per_master` each (from
    CLUSTER SLOTS as `nodes_client`'s node sees it)."""
    tags = []
    for start, end, *_ in nodes_client.execute_command("CLUSTER", "SLOTS"):
        for i in range(per_master):
            slot = start + (end - start) * (i + 1) // (per_master + 1)
            tags.append(key_in_slot(slot))
    return tags


class Writer(threading.Thread):
    """Writes "{tag}:<name>:<n>" round-robin over `tags` until stop()."""

    def __init__(self, name, tags, ledger):
        super().__init__(daemon=True, name=f"writer-{name}")
        self.client_name = name
        self.tags = tags
        self.ledger = ledger
        self.stopping = threading.Event()
        self.sent = 0
        self.errors = 0
        self.last_error = None
        self.restarts = 0

    def run(self):
        while not self.stopping.is_set():
            key = "{%s}:%s:%d" % (self.tags[self.sent % len(self.tags)], self.client_name,
                                  self.sent)
            self.sent += 1
            try:
                node, waited = self.write(key)
            except Exception as e:  # the library's error, whichever it is
                self.errors += 1
                self.last_error = e
                self.stopping.wait(RETRY_PAUSE_S)
                continue
            self.ledger.add(Write(key, self.client_name, node, time.monotonic(), waited))

    def stop(self):
        self.stopping.set()
        self.join(timeout=60)
        if self.is_alive():
            raise AssertionError(f"{self.name} did not stop")
        self.close()

    def summary(self):
        return (f"{self.client_name}: {self.sent} sent, {self.errors} errors "
                f"(last {self.last_error!r}), {self.restarts} clients made anew")


class RedisPyWriter(Writer):
    """redis-py's RedisCluster: BF.ADD routed by the key (COMMAND's key
    positions), -MOVED followed, the slot map re-read after a connection
    error. WAIT goes to the node the map names after the write: one thread
    takes one connection of that node's pool, the one the write used (the
    pool hands back its most recently released connection). wait=False:
    no WAIT (waited False). redis-py 4.3's slot map reload can fail for good
    once a node it knew is gone (RedisClusterException "cannot pickle
    '_thread.lock' object"): the client is then made anew from the next of
    `seeds`, as an application would."""

    def __init__(self, seeds, tags, ledger, name="redis-py", wait=True):
        super().__init__(name, tags, ledger)
        self.wait = wait
        self.seeds = seeds
        self.rc = self.connect(seeds[0])

    @staticmethod
    def connect(seed):
        host, port = seed.split(":")
        return RedisCluster(host=host, port=int(port), decode_responses=True,
                            socket_timeout=2, socket_connect_timeout=1)

    def write(self, key):
        if self.rc is None:
            self.restarts += 1
            self.rc = self.connect(self.seeds[self.restarts % len(self.seeds)])
        try:
            self.rc.execute_command("BF.ADD", key, "x")
        except redis.exceptions.RedisClusterException:
            self.rc.close()
            self.rc = None
            raise
        node = self.rc.get_node_from_key(key)
        if not self.wait:
            return f"{node.host}:{node.port}", False
        try:
            waited = int(self.rc.get_redis_connection(node).execute_command(
                "WAIT", 1, WAIT_MS)) >= 1
        except redis.exceptions.RedisError:
            waited = False
        return f"{node.host}:{node.port}", waited

    def close(self):
        if self.rc is not None:
            self.rc.close()


class IoredisWriter(Writer):
    """ioredis's Cluster in its own process (node/ioredis_cluster.js's
    write_wait), started from the first of `seeds`; a process that has to
    be replaced starts from the next (the first may be down by then).
    wait=False: no WAIT (waited False)."""

    def __init__(self, seeds, tags, ledger, name="ioredis", wait=True):
        super().__init__(name, tags, ledger)
        self.wait = wait
        self.seeds = seeds
        self.proc = NodeClusterClient("ioredis", seeds[0])

    def write(self, key):
        try:
            answer = self.proc.request(op="write_wait", key=key, args=["BF.ADD", key, "x"],
                                       replicas=1 if self.wait else None, timeout=WAIT_MS,
                                       deadline_s=ANSWER_DEADLINE_S)
        except AssertionError:
            # No answer in time: a late one would be read as the next
            # request's, so this process is done; the write stays unknown
            # (not in the ledger).
            self.proc.close()
            self.restarts += 1
            self.proc = NodeClusterClient("ioredis", self.seeds[self.restarts % len(self.seeds)])
            raise
        if not self.wait:
            return answer["node"], False
        waited = None if answer["waited"] is None else int(answer["waited"]) >= 1
        return answer["node"], waited

    def close(self):
        self.proc.close()


def start_writers(seeds, tags, ledger, wait=True):
    """A redis-py writer and, when the Node clients are installed, an
    ioredis one, both started from the first of `seeds` (addresses)."""
    writers = [RedisPyWriter(seeds, tags, ledger, wait=wait)]
    if node_clients.installed_reason() is None:
        writers.append(IoredisWriter(seeds, tags, ledger, wait=wait))
    for writer in writers:
        writer.start()
    return writers


def stop_writers(writers):
    for writer in writers:
        if writer.is_alive() or not writer.stopping.is_set():
            writer.stop()


# -- what the nodes say -----------------------------------------------------

def port_of(fields):
    return int(fields[1].split("@")[0].rsplit(":", 1)[1])


def master_ports(client):
    """{slot range start: owner port}, and the set of master ports holding
    slots, from `client`'s CLUSTER NODES."""
    owners = [None] * SLOTS
    for fields in node_lines(client):
        for slot in line_slots(fields):
            owners[slot] = port_of(fields)
    return owners


def roles(client):
    """{id: (port, flags, master id or '-', link, has slots)} from CLUSTER NODES."""
    return {f[0]: (port_of(f), set(f[2].split(",")), f[3], f[7], len(f) > 8)
            for f in node_lines(client)}


def claims_master(client):
    """The slots `client`'s node serves as master in its own view (empty if
    it is a replica)."""
    for fields in node_lines(client):
        if "myself" in fields[2].split(","):
            return set(line_slots(fields)) if "master" in fields[2] else set()
    return set()


def node_client(node, timeout_s=5.0):
    return node.client(decode_responses=True, socket_timeout=timeout_s,
                       socket_connect_timeout=timeout_s)


def node_alive(node):
    return node.proc is not None and node.alive()


def unhealthy(cluster, masters=3, stopped=()):
    """Why the cluster is not healthy yet, or None when it is: every node
    runs and sees every other connected, none flagged fail or fail?; all
    agree on the slot owners; `masters` masters hold all 16384 slots, each
    followed by a replica whose link is up; cluster_state ok everywhere."""
    nodes = cluster.nodes
    down = [n.port for n in nodes if not node_alive(n) or n in stopped]
    if down:
        return f"nodes {down} not running"
    try:
        clients = [node_client(n) for n in nodes]
        for node, client in zip(nodes, clients):
            lines = node_lines(client)
            if len(lines) != len(nodes):
                return f"{node.port} knows {len(lines)} nodes"
            for f in lines:
                bad = {"fail", "fail?", "handshake", "noaddr"} & set(f[2].split(","))
                if f[7] != "connected" or bad:
                    return f"{node.port} sees {port_of(f)} {f[7]} {f[2]}"
        owners = [master_ports(c) for c in clients]
        for node, o in zip(nodes, owners):
            if o != owners[0]:
                return f"{node.port} and {nodes[0].port} disagree on the slots' owners"
        if None in owners[0] or len(set(owners[0])) != masters:
            return f"slot owners {sorted(set(owners[0]), key=str)}"
        master_set = set(owners[0])
        followed = set()
        for node, c in zip(nodes, clients):
            info = c.info("replication")
            if node.port in master_set:
                if info["role"] != "master":
                    return f"{node.port} holds slots but is {info['role']}"
            elif info["role"] != "slave" or info.get("master_link_status") != "up":
                return f"{node.port} is {info['role']}, link {info.get('master_link_status')}"
            else:
                followed.add(int(info["master_port"]))
        if followed != master_set:
            return f"masters {sorted(master_set)}, followed {sorted(followed)}"
        for node, c in zip(nodes, clients):
            if "cluster_state:ok" not in c.execute_command("CLUSTER", "INFO"):
                return f"{node.port}: cluster_state not ok"
        return None
    except (redis.exceptions.RedisError, OSError) as e:
        return repr(e)


def healthy(cluster, masters=3, stopped=()):
    return unhealthy(cluster, masters, stopped) is None


def wait_healthy(cluster, deadline_s, masters=3, what="the cluster healthy"):
    last = []

    def ok():
        last[:] = [unhealthy(cluster, masters)]
        return last[0] is None
    try:
        wait_until(ok, deadline_s, interval_s=0.05, what=what)
    except AssertionError as e:
        raise AssertionError(f"{e}: {last[0]}") from None


def shard_of(cluster, master):
    """(master id, its replica nodes) as `master` sees it."""
    client = node_client(master)
    view = roles(client)
    my_id = client.execute_command("CLUSTER", "MYID")
    replicas = [p for i, (p, flags, of, _, _) in view.items() if of == my_id]
    return my_id, [node_on(cluster, p) for p in replicas]


def node_on(cluster, port):
    return next(n for n in cluster.nodes if n.port == port)


def current_masters(cluster):
    """The nodes that hold slots, as the first live node sees it."""
    observer = next(n for n in cluster.nodes if node_alive(n))
    return [node_on(cluster, p) for p in sorted(set(master_ports(node_client(observer))))]


def wait_promoted(cluster, slots, candidates, deadline_s, what):
    """Polls until one of `candidates` says, in its own CLUSTER NODES, that
    it is master of all of `slots`; returns (that node, monotonic time)."""
    found = []

    def promoted():
        for node in candidates:
            if not node_alive(node):
                continue
            try:
                if slots <= claims_master(node_client(node)):
                    found.append((node, time.monotonic()))
                    return True
            except (redis.exceptions.RedisError, OSError):
                pass
        return False
    wait_until(promoted, deadline_s, interval_s=0.02, what=what)
    return found[0]


# -- faults -------------------------------------------------------------------

def kill9(node):
    """kill -9 of `node`, reaped; asserts it is gone. Returns the time."""
    pid = node.proc.pid
    node.kill9()
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return time.monotonic()
    raise AssertionError(f"node on port {node.port} still runs after kill -9")


def process_state(node):
    """The state letter of /proc/<pid>/stat (T: stopped)."""
    with open(f"/proc/{node.proc.pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def sigstop(node):
    os.kill(node.proc.pid, signal.SIGSTOP)
    wait_until(lambda: process_state(node) == "T", 5.0, interval_s=0.01,
               what=f"node on port {node.port} stopped")
    return time.monotonic()


def sigcont(node):
    os.kill(node.proc.pid, signal.SIGCONT)
    return time.monotonic()


def continue_all(cluster):
    """SIGCONT to every running node: a stopped process cannot be stopped."""
    for node in cluster.nodes + cluster.detached:
        if node_alive(node):
            os.kill(node.proc.pid, signal.SIGCONT)


# -- the check ------------------------------------------------------------------

CheckReport = collections.namedtuple("CheckReport", "acked waited lost missing_waited")


def check_writes(cluster, ledger):
    """EXISTS of every acknowledged write's key on its slot's master (the
    cluster must be agreed): lost are the acknowledged writes whose key is
    gone, missing_waited those of them WAIT had counted a replica for.
    Keys of one tag share a slot: one EXISTS counts CHECK_BATCH of them, and
    only a batch that comes short is asked key by key."""
    writes = ledger.snapshot()
    observer = node_client(next(n for n in cluster.nodes if node_alive(n)), timeout_s=10)
    owners = master_ports(observer)
    by_slot = collections.defaultdict(list)
    for write in writes:
        by_slot[key_slot(write.key)].append(write)
    lost = []
    clients = {}
    try:
        for slot, group in by_slot.items():
            port = owners[slot]
            if port not in clients:
                clients[port] = node_on(cluster, port).client(decode_responses=True,
                                                              socket_timeout=30)
            client = clients[port]
            for i in range(0, len(group), CHECK_BATCH):
                chunk = group[i:i + CHECK_BATCH]
                if client.execute_command("EXISTS", *[w.key for w in chunk]) == len(chunk):
                    continue
                pipe = client.pipeline(transaction=False)
                for write in chunk:
                    pipe.execute_command("EXISTS", write.key)
                lost += [w for w, there in zip(chunk, pipe.execute()) if not there]
    finally:
        for client in clients.values():
            client.close()
    return CheckReport(len(writes), sum(1 for w in writes if w.waited), lost,
                       [w for w in lost if w.waited])


def line_ranges(fields):
    """The (first, last) slot ranges a CLUSTER NODES line assigns."""
    for part in fields[8:]:
        if not part.startswith("["):
            first, _, last = part.partition("-")
            yield int(first), int(last or first)


def overlaps(ranges):
    """The first two of (first, last, owner) ranges that share a slot, or None."""
    ranges = sorted(ranges)
    for a, b in zip(ranges, ranges[1:]):
        if b[0] <= a[1]:
            return a, b
    return None


def merged(ranges):
    """(first, last, owner) ranges sorted, adjacent ones of one owner joined."""
    out = []
    for first, last, owner in sorted(ranges):
        if out and out[-1][2] == owner and out[-1][1] + 1 == first:
            out[-1] = (out[-1][0], last, owner)
        else:
            out.append((first, last, owner))
    return out


class SlotSampler(threading.Thread):
    """Samples CLUSTER NODES and CLUSTER SLOTS of every reachable node
    (running, not SIGSTOPped) round after round until stop(). Per view: a
    slot on two lines of CLUSTER NODES, or on two ranges of CLUSTER SLOTS,
    or CLUSTER SLOTS and CLUSTER NODES naming different owners, is recorded
    in `view_errors`. Across the views of one round, two nodes that each say
    (myself,master) they serve one slot: a node just SIGCONTed, restarted
    or replaced by CLUSTER FAILOVER (in `resumed`, {port: monotonic time})
    may still say so under its old config epoch until the first ping it
    reads tells it otherwise, as a Redis node does; that is recorded in
    `stale_claims` as (seconds after that time, slot, its port, its epoch,
    the other's port and epoch).
    Any other double claim, or one under equal epochs, is recorded in
    `dual_masters` as (time, slot, ports, epochs)."""

    def __init__(self, cluster, stopped):
        super().__init__(daemon=True, name="slot-sampler")
        self.cluster = cluster
        self.stopped = stopped  # a set the test keeps: nodes not to ask now
        self.resumed = {}
        self.stopping = threading.Event()
        self.clients = {}
        self.stale_claims = []
        self.rounds = 0
        self.views = 0
        self.view_errors = []
        self.dual_masters = []

    def client(self, node):
        if node.port not in self.clients:
            self.clients[node.port] = node_client(node, timeout_s=0.3)
        return self.clients[node.port]

    def run(self):
        while not self.stopping.is_set():
            claims = []
            for node in list(self.cluster.nodes):
                if node in self.stopped or not node_alive(node):
                    continue
                try:
                    client = self.client(node)
                    lines = node_lines(client)
                    slots_reply = client.execute_command("CLUSTER", "SLOTS")
                    after = node_lines(client)
                except (redis.exceptions.RedisError, OSError):
                    self.clients.pop(node.port).close()
                    continue
                self.views += 1
                self.check_view(node, lines, slots_reply, after)
                for fields in lines:
                    if "myself" in fields[2].split(",") and "master" in fields[2]:
                        claims += [(a, b, node.port, int(fields[6]))
                                   for a, b in line_ranges(fields)]
            self.rounds += 1
            self.check_claims(claims)

    def check_claims(self, claims):
        both = overlaps(claims)
        if not both:
            return
        now = time.monotonic()
        (_, _, port_a, epoch_a), (slot, _, port_b, epoch_b) = both
        for stale, epoch, other, other_epoch in ((port_a, epoch_a, port_b, epoch_b),
                                                 (port_b, epoch_b, port_a, epoch_a)):
            if stale in self.resumed and epoch < other_epoch:
                self.stale_claims.append((now - self.resumed[stale], slot, stale, epoch, other,
                                          other_epoch))
                return
        self.dual_masters.append((now, slot, (port_a, port_b), (epoch_a, epoch_b)))

    def check_view(self, node, lines, slots_reply, after):
        """CLUSTER NODES read before and after CLUSTER SLOTS: the two replies
        are compared only when the owners did not change in between."""
        nodes_ranges = [(a, b, port_of(f)) for f in lines for a, b in line_ranges(f)]
        after_ranges = [(a, b, port_of(f)) for f in after for a, b in line_ranges(f)]
        slots_ranges = [(int(r[0]), int(r[1]), int(r[2][1])) for r in slots_reply]
        for what, ranges in (("CLUSTER NODES", nodes_ranges), ("CLUSTER SLOTS", slots_ranges)):
            both = overlaps(ranges)
            if both:
                self.view_errors.append((node.port, f"{what} gives a slot twice: {both}"))
        steady = merged(nodes_ranges)
        if steady == merged(after_ranges) and steady != merged(slots_ranges):
            self.view_errors.append((node.port, f"CLUSTER SLOTS {merged(slots_ranges)} against "
                                                f"CLUSTER NODES {steady}"))

    def stop(self):
        self.stopping.set()
        self.join(timeout=30)
        for client in self.clients.values():
            client.close()
