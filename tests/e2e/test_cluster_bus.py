"""The cluster bus between Bloomgate nodes, driven by the tools Redis
operators use: three nodes made a cluster by `redis-cli --cluster create`,
checked by `redis-cli --cluster check` on every node; CLUSTER NODES agrees
everywhere; a node killed with -9 comes back with its id, epochs and slots and is
seen connected again; a peer that was not met is refused; CLUSTER MEET,
FORGET and LINKS answer as Redis 7.0.

Every wait has a deadline; redis-cli runs as a subprocess with one (its
create waits for agreement with no timeout of its own).
"""
import socket
import struct
import time
import unittest

from cluster_support import (AGREE_DEADLINE_S, REDIS_CLI, cli, create_for_class, node_lines,
                             signature, stop_for_class, wait_state_ok)
from harness import wait_until


def bus_ping_from_stranger(port, cport):
    """A well-formed bus PING (the codec's format) from a node nobody met."""
    def field(tag, value):
        return struct.pack("<HI", tag, len(value)) + value
    ip = b"127.0.0.1"
    sender = (b"e" * 40 + bytes([len(ip)]) + ip + struct.pack("<HHH", port, cport, 1) +
              bytes([0]) + struct.pack("<QQ", 99, 99))
    body = (field(1, sender) + field(2, struct.pack("<H", 1) + struct.pack("<HH", 0, 16383)) +
            field(3, struct.pack("<H", 0)))
    head = b"BGCB" + struct.pack("<HHI", 1, 0, len(body))
    return head + struct.pack("<Q", crc64_jones(head + body)) + body


def crc64_jones(data):
    """Redis's CRC-64 (Jones polynomial, reflected), as the codec's checksum."""
    crc = 0
    poly = 0x95AC9329AC4BC9B5  # 0xad93d23594c935a9 reflected
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
    return crc


@unittest.skipIf(REDIS_CLI is None, "redis-cli is not installed")
class ClusterBusTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        create_for_class(cls, "bloomgate-cluster-bus-", 3)

    @classmethod
    def tearDownClass(cls):
        stop_for_class(cls)

    def clients(self):
        return self.cluster.clients()

    def wait_agreement(self):
        self.cluster.wait_agreement(holders=3)

    def test_01_create_agrees_and_check_passes_everywhere(self):
        out = self.create.stdout + self.create.stderr
        self.assertEqual(self.create.returncode, 0, out)
        self.assertIn("[OK] All nodes agree about slots configuration.", out)
        self.assertIn("[OK] All 16384 slots covered.", out)
        print(f"\ncreate to agreement: {self.create_seconds:.2f} s", flush=True)
        self.wait_agreement()
        for node in self.nodes:
            self.cluster.check(node)
        for client in self.clients():
            info = client.execute_command("CLUSTER", "INFO")
            self.assertIn("cluster_known_nodes:3", info)
            self.assertIn("cluster_size:3", info)
            fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
            # As Redis, a type is listed once a message of it was counted.
            self.assertGreater(int(fields["cluster_stats_messages_ping_sent"]), 0)
            self.assertGreater(int(fields["cluster_stats_messages_pong_received"]), 0)
            self.assertGreater(int(fields.get("cluster_stats_messages_meet_sent", 0)) +
                               int(fields.get("cluster_stats_messages_meet_received", 0)), 0)
            epochs = [int(f[6]) for f in node_lines(client)]
            self.assertEqual(len(set(epochs)), 3, epochs)  # distinct config epochs

    def test_02_links_in_redis_70s_format(self):
        self.wait_agreement()
        client = self.nodes[0].client(decode_responses=True)
        others = {f[0] for f in node_lines(client) if "myself" not in f[2]}
        def both_ways():
            links = client.execute_command("CLUSTER", "LINKS")
            rows = [dict(zip(link[::2], link[1::2])) for link in links]
            return ({(r["direction"], r["node"]) for r in rows} ==
                    {(d, n) for d in ("to", "from") for n in others}, rows)
        wait_until(lambda: both_ways()[0], AGREE_DEADLINE_S, what="links both ways")
        for row in both_ways()[1]:
            self.assertEqual(list(row), ["direction", "node", "create-time", "events",
                                         "send-buffer-allocated", "send-buffer-used"])
            self.assertIn(row["events"], ("r", "rw"))

    def test_03_meet_and_forget_errors_are_redis_texts(self):
        client = self.nodes[0].client(decode_responses=True)
        cases = [
            (("MEET", "127.0.0.1", "notaport"), "Invalid TCP base port specified: notaport"),
            (("MEET", "127.0.0.1", "7000", "x"), "Invalid TCP bus port specified: x"),
            (("MEET", "nosuchhost", "7000"), "Invalid node address specified: nosuchhost:7000"),
            (("MEET", "127.0.0.1", "70000"), "Invalid node address specified: 127.0.0.1:70000"),
            (("FORGET", "f" * 40), "Unknown node " + "f" * 40),
            (("FORGET", client.execute_command("CLUSTER", "MYID")),
             "I tried hard but I can't forget myself..."),
        ]
        for args, text in cases:
            with self.assertRaises(Exception) as caught:
                client.execute_command("CLUSTER", *args)
            self.assertEqual(str(caught.exception), text, args)
        self.assertEqual(len(node_lines(client)), 3)

    def test_04_a_peer_that_was_not_met_is_refused(self):
        self.wait_agreement()
        target = self.nodes[0]
        for payload in (bus_ping_from_stranger(1, 2), b"*1\r\n$4\r\nPING\r\n"):
            with socket.create_connection(("127.0.0.1", target.cport), timeout=10) as s:
                s.sendall(payload)
                try:
                    answer = s.recv(100)
                except ConnectionResetError:
                    answer = b""
                self.assertEqual(answer, b"")  # closed, nothing answered
        client = target.client(decode_responses=True)
        self.assertEqual(len(node_lines(client)), 3)
        self.assertNotIn("e" * 40, client.execute_command("CLUSTER", "NODES"))
        self.assertEqual(signature(client), signature(self.nodes[1].client(decode_responses=True)))

    def test_05_a_node_killed_with_9_rejoins_with_its_id_epochs_and_slots(self):
        self.wait_agreement()
        victim = self.nodes[2]
        client = victim.client(decode_responses=True)
        my_id = client.execute_command("CLUSTER", "MYID")
        before = signature(self.nodes[0].client(decode_responses=True))
        epochs_before = self.epochs(victim, my_id)
        victim.kill9()
        observer = self.nodes[0].client(decode_responses=True)
        wait_until(lambda: any(f[0] == my_id and f[7] == "disconnected"
                               for f in node_lines(observer)),
                   AGREE_DEADLINE_S, interval_s=0.05, what="the link marked disconnected")
        victim.start()
        restarted = time.monotonic()
        self.assertEqual(victim.client(decode_responses=True).execute_command("CLUSTER", "MYID"),
                         my_id)
        self.wait_agreement()
        # It keeps cluster_state:fail for the writable delay after its start:
        # the next test sends it keys.
        wait_state_ok(victim.client(decode_responses=True))
        print(f"\nrestarted node agreed again after {time.monotonic() - restarted:.2f} s",
              flush=True)
        for c in self.clients():
            self.assertEqual(signature(c), before)
        # Nothing bumped an epoch meanwhile: the restarted node reads its own
        # back from nodes.conf, and every peer still sees its config epoch.
        self.assertEqual(self.epochs(victim, my_id), epochs_before)

    def epochs(self, node, node_id):
        """`node`'s current and config epochs (CLUSTER INFO), then the config
        epoch every member's CLUSTER NODES gives `node_id`."""
        info = node.client(decode_responses=True).execute_command("CLUSTER", "INFO")
        fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
        seen = [next(f[6] for f in node_lines(c) if f[0] == node_id) for c in self.clients()]
        return fields["cluster_current_epoch"], fields["cluster_my_epoch"], seen

    def test_06_redis_cli_c_follows_moved_across_slots(self):
        self.wait_agreement()
        keys = [f"bus-key-{i}" for i in range(12)]
        slots = {self.nodes[0].client().execute_command("CLUSTER", "KEYSLOT", k) for k in keys}
        self.assertGreater(len(slots), 3)
        for key in keys:
            out = cli("-c", "-p", self.nodes[0].port, "BF.ADD", key, "item")
            self.assertEqual(out.stdout.strip(), "1", out.stdout + out.stderr)
        for key in keys:
            out = cli("-c", "-p", self.nodes[1].port, "BF.EXISTS", key, "item")
            self.assertEqual(out.stdout.strip(), "1", out.stdout + out.stderr)
        owners = set()
        for node in self.nodes:
            owners.add(node.client().dbsize() > 0)
        self.assertEqual(owners, {True})  # the keys spread over all three masters

    def test_07_forget_drops_a_node_and_gossip_does_not_bring_it_back(self):
        self.wait_agreement()
        client = self.nodes[0].client(decode_responses=True)
        forgotten = self.nodes[2].client(decode_responses=True).execute_command("CLUSTER", "MYID")
        self.assertEqual(client.execute_command("CLUSTER", "FORGET", forgotten), "OK")
        self.assertNotIn(forgotten, client.execute_command("CLUSTER", "NODES"))
        # Node 1 still gossips about the forgotten node: 8 more PONGs
        # received (each with gossip) must not bring it back while banned.
        def pongs():
            info = client.execute_command("CLUSTER", "INFO")
            fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
            return int(fields["cluster_stats_messages_pong_received"])
        start = pongs()
        wait_until(lambda: pongs() >= start + 8, AGREE_DEADLINE_S, interval_s=0.05,
                   what="8 more PONGs")
        self.assertNotIn(forgotten, client.execute_command("CLUSTER", "NODES"))
        # MEET brings it back at once, ban or not (as Redis).
        self.assertEqual(client.execute_command(
            "CLUSTER", "MEET", "127.0.0.1", self.nodes[2].port, self.nodes[2].cport), "OK")
        self.wait_agreement()


if __name__ == "__main__":
    unittest.main()
