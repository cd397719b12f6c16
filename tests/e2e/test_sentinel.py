"""Three Debian redis-sentinel processes monitoring one Bloomgate find each
other: Sentinels learn of each other only from the hellos they PUBLISH on
__sentinel__:hello every 2 s through the monitored server, so each one
listing the other two in SENTINEL SENTINELS proves that Bloomgate's pub/sub
delivered those hellos to subscribers on other connections (and threads)."""

import os
import shutil
import subprocess
import tempfile
import time
import unittest

import redis

from harness import BloomgateServer, free_port, stop_process, wait_until

MASTER_NAME = "bloomgate"
# Sentinel's hello period is 2 s; each of the three must hear from the two
# others after connecting and reading INFO: a few periods, ten for slack.
DISCOVERY_DEADLINE_S = 20.0
SENTINEL_START_DEADLINE_S = 10.0


class Sentinel:
    def __init__(self, directory, master_port):
        self.dir = directory
        self.port = free_port()
        self.config = os.path.join(directory, "sentinel.conf")
        self.log_path = os.path.join(directory, "sentinel.log")
        with open(self.config, "w") as f:
            f.write(f"port {self.port}\n"
                    "bind 127.0.0.1\n"
                    "daemonize no\n"
                    f"dir {directory}\n"
                    f"logfile {self.log_path}\n"
                    f"sentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} 2\n"
                    f"sentinel down-after-milliseconds {MASTER_NAME} 1000\n"
                    f"sentinel failover-timeout {MASTER_NAME} 60000\n")
        self.proc = subprocess.Popen(["redis-sentinel", self.config], cwd=directory,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.STDOUT)
        self.client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5,
                                  socket_connect_timeout=5, decode_responses=True)

    def answers(self):
        try:
            return self.client.ping()
        except redis.exceptions.ConnectionError:
            return False

    def my_id(self):
        return self.client.execute_command("SENTINEL", "MYID")

    def other_ids(self):
        entries = self.client.execute_command("SENTINEL", "SENTINELS", MASTER_NAME)
        ids = set()
        for entry in entries:
            fields = entry if isinstance(entry, dict) else dict(zip(entry[::2], entry[1::2]))
            ids.add(fields["runid"])
        return ids

    def log(self):
        try:
            with open(self.log_path) as f:
                return f.read()[-4000:]
        except OSError:
            return "<no log>"

    def stop(self):
        self.client.close()
        stop_process(self.proc, grace_s=5.0)


@unittest.skipUnless(shutil.which("redis-sentinel"), "redis-sentinel is not installed")
class SentinelDiscoveryTest(unittest.TestCase):

    def test_three_sentinels_find_each_other_through_bloomgate(self):
        server = BloomgateServer(["--threads", "2"]).start()
        self.addCleanup(server.stop)
        tmp = tempfile.TemporaryDirectory(prefix="bloomgate-sentinel-")
        self.addCleanup(tmp.cleanup)
        sentinels = []
        for i in range(3):
            directory = os.path.join(tmp.name, f"s{i}")
            os.mkdir(directory)
            sentinel = Sentinel(directory, server.port)
            # Registered at once: stopped whatever happens after.
            self.addCleanup(sentinel.stop)
            sentinels.append(sentinel)
        for sentinel in sentinels:
            wait_until(sentinel.answers, SENTINEL_START_DEADLINE_S, interval_s=0.05,
                       what=f"sentinel on port {sentinel.port} to answer")
        ids = [s.my_id() for s in sentinels]
        self.assertEqual(len(set(ids)), 3)

        def all_discovered():
            return all(s.other_ids() == set(ids) - {ids[i]} for i, s in enumerate(sentinels))

        try:
            wait_until(all_discovered, DISCOVERY_DEADLINE_S, interval_s=0.2,
                       what="every sentinel to list the two others")
        except AssertionError:
            for i, s in enumerate(sentinels):
                print(f"--- sentinel {i} knows {s.other_ids()} ---\n{s.log()}")
            print(f"--- bloomgate ---\n{server.log()}")
            raise
        # Each Sentinel's hello link is a pub/sub client of Bloomgate.
        subscribers = [c for c in server.client().client_list(_type="pubsub")]
        self.assertGreaterEqual(len(subscribers), 3)
        self.assertTrue(all("P" in c["flags"] and c["sub"] == "1" for c in subscribers))
        # The master is still seen as up: nothing timed out meanwhile.
        master = sentinels[0].client.execute_command("SENTINEL", "MASTER", MASTER_NAME)
        fields = master if isinstance(master, dict) else dict(zip(master[::2], master[1::2]))
        self.assertEqual(fields["flags"], "master")


if __name__ == "__main__":
    unittest.main()
