"""client-output-buffer-limit: a client that pipelines without reading its
replies is paused at the limit (not read, its commands not run) while its
replies wait; the server's memory stays bounded and other clients are
served. CONFIG SET of the limit applies to the next batch."""

import socket
import threading
import time
import unittest

from harness import BloomgateServer, encode_command, proc_status_kb, wait_until

# Each command is 30 bytes and its reply (":1\r\n") 4: 2M of them are 60 MB
# sent and 8 MB of replies, well past what the kernel buffers on loopback
# (server send buffer up to tcp_wmem's 4 MB, client receive buffer pinned to
# a few KB below), so the server must stop somewhere.
COMMANDS = 2_000_000
COMMAND = encode_command("BF.EXISTS", "k", "x")
REPLY = b":1\r\n"


class GreedyClient:
    """A raw socket that pipelines COMMANDS and reads nothing until drain()."""

    def __init__(self, port, command=COMMAND, count=COMMANDS):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # Pinned small before connecting, so the kernel cannot absorb the replies.
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.connect(("127.0.0.1", port))
        self.addr = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.sent = 0
        self.error = None
        self.payload = memoryview(command * count)
        self.thread = threading.Thread(target=self._send, daemon=True)
        self.thread.start()

    def _send(self):
        try:
            while self.sent < len(self.payload):
                self.sent += self.sock.send(self.payload[self.sent:self.sent + (1 << 20)])
        except OSError as e:
            self.error = e

    def wait_paused(self, deadline_s=30.0, still_s=1.0):
        """Waits until the sender has been blocked for `still_s` short of the end."""
        state = {"sent": -1, "since": time.monotonic()}

        def paused():
            now = time.monotonic()
            if self.sent != state["sent"]:
                state["sent"], state["since"] = self.sent, now
                return False
            return now - state["since"] >= still_s and self.sent < len(self.payload)

        wait_until(paused, deadline_s, interval_s=0.05, what="the greedy client to be paused")

    def drain(self, deadline_s=120.0):
        """Reads every reply; returns how many bytes of replies arrived."""
        self.sock.settimeout(deadline_s)
        expected = len(REPLY) * COMMANDS
        got = 0
        deadline = time.monotonic() + deadline_s
        while got < expected and time.monotonic() < deadline:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                break
            got += len(chunk)
        self.thread.join(timeout=deadline_s)
        return got

    def close(self):
        self.sock.close()


class OutputLimitTest(unittest.TestCase):

    def setUp(self):
        self.server = BloomgateServer(["--threads", "2"]).start()
        self.addCleanup(self.server.stop)
        self.r = self.server.client()
        self.r.execute_command("BF.ADD", "k", "x")

    def omem_of(self, addr):
        for client in self.r.client_list():
            if client["addr"] == addr:
                return int(client["omem"])
        raise AssertionError(f"{addr} is not in CLIENT LIST")

    def test_a_client_that_never_reads_is_paused_with_bounded_memory_while_others_are_served(self):
        pid = self.server.proc.pid
        rss_before_kb = proc_status_kb(pid, "VmRSS")
        greedy = GreedyClient(self.server.port)
        self.addCleanup(greedy.close)
        greedy.wait_paused()
        self.assertIsNone(greedy.error)

        # Others are served while it is paused.
        self.assertTrue(self.r.ping())
        self.assertEqual(self.r.execute_command("BF.ADD", "other", "y"), 1)
        self.assertEqual(self.r.execute_command("BF.EXISTS", "other", "y"), 1)

        # Its memory is one batch (256 KB under the default 64 MB limit), not
        # the 60 MB it sent or the 8 MB of replies it owes.
        # The sender can stall for a second on a slow server (TSan, a loaded
        # machine) before the output limit pauses it: wait for the server's
        # own sign of the pause, a batch of replies it holds for the client.
        samples = []

        def held_batch():
            samples.append(self.omem_of(greedy.addr))
            return samples[-1] > 0
        wait_until(held_batch, 30.0, interval_s=0.05, what="the paused client's batch on the wire")
        # Until the kernel's buffers are full, a batch's write may complete
        # between two samples and the next one start (omem 0 for a moment,
        # seen under TSan): the bound is judged on every sample.
        for _ in range(10):
            samples.append(self.omem_of(greedy.addr))
            time.sleep(0.02)
        self.assertGreater(max(samples), 0, "a paused client has a batch on the wire")
        self.assertLessEqual(max(samples), 256 * 1024 + len(REPLY))
        rss_growth_kb = proc_status_kb(pid, "VmRSS") - rss_before_kb
        self.assertLess(rss_growth_kb, 24 * 1024,
                        f"the server grew by {rss_growth_kb} kB for one greedy client")

        # Paused, not disconnected: once it reads, every reply arrives.
        self.assertEqual(greedy.drain(), len(REPLY) * COMMANDS)
        self.assertEqual(greedy.sent, len(COMMAND) * COMMANDS)

    def test_config_set_of_the_limit_applies_to_a_connected_client(self):
        self.assertTrue(self.r.config_set("client-output-buffer-limit", "16kb"))
        self.assertEqual(self.r.config_get("client-output-buffer-limit"),
                         {"client-output-buffer-limit": str(16 * 1024)})
        # BF.INFO's reply is ~6x its request, so one 16 KB read of commands
        # makes ~100 KB of replies: without the limit the batch would be that.
        info = encode_command("BF.INFO", "k")
        reply_bytes = len(self.server.raw().call_raw("BF.INFO", "k"))
        greedy = GreedyClient(self.server.port, command=info, count=300_000)
        self.addCleanup(greedy.close)
        greedy.wait_paused()
        omem = self.omem_of(greedy.addr)
        self.assertGreater(omem, 0)
        # The batch is cut once 16 KB of replies are pending: at most the
        # limit plus the last reply.
        self.assertLessEqual(omem, 16 * 1024 + reply_bytes,
                             f"{omem} reply bytes pending under a 16 KB limit")
        self.assertTrue(self.r.ping())


if __name__ == "__main__":
    unittest.main()
