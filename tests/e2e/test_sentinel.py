"""Three Debian redis-sentinel processes monitoring one Bloomgate find each
other: Sentinels learn of each other only from the hellos they PUBLISH on
__sentinel__:hello every 2 s through the monitored server, so each one
listing the other two in SENTINEL SENTINELS proves that Bloomgate's pub/sub
delivered those hellos to subscribers on other connections (and threads)."""

import os
import shutil
import tempfile
import unittest

from harness import BloomgateServer, wait_until
from sentinel_cluster import MASTER_NAME, SentinelProcess as Sentinel

# Sentinel's hello period is 2 s; each of the three must hear from the two
# others after connecting and reading INFO: a few periods, ten for slack.
DISCOVERY_DEADLINE_S = 20.0
SENTINEL_START_DEADLINE_S = 10.0


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
