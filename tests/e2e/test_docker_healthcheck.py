"""docker/healthcheck.sh, the image's HEALTHCHECK, run as Docker runs it
against real servers: healthy while serving, behind a password and while
still loading its data (-LOADING, slowed by BLOOMGATE_TEST_LOAD_BYTES_PER_SEC
as test_startup.py does); unhealthy with nothing listening."""

import os
import shutil
import subprocess
import unittest

from harness import RawConnection, free_port, wait_until
from test_startup import LOADING, START_DEADLINE_S, StartupTestCase

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEALTHCHECK = os.path.join(ROOT, "docker", "healthcheck.sh")
CHECK_DEADLINE_S = 10.0


@unittest.skipIf(shutil.which("redis-cli") is None, "needs redis-cli (scripts/install-deps.sh)")
class HealthcheckTest(StartupTestCase):
    def check(self, port):
        """(exit code, output) of one healthcheck run, as Docker's CMD."""
        proc = subprocess.run(["sh", HEALTHCHECK], env={**os.environ, "BLOOMGATE_PORT": str(port)},
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=CHECK_DEADLINE_S)
        return proc.returncode, proc.stdout.decode("utf-8", "replace")

    def test_a_serving_server_is_healthy(self):
        server = self.start("--save", "")
        self.assertEqual(self.check(server.port), (0, ""))

    def test_a_server_behind_a_password_is_healthy(self):
        server = self.start("--save", "", "--requirepass", "secret")
        self.assertEqual(self.check(server.port), (0, ""))

    def test_nothing_listening_is_unhealthy(self):
        code, output = self.check(free_port())
        self.assertEqual(code, 1, output)
        self.assertIn("bloomgate: unhealthy: ", output)

    def test_a_server_still_loading_its_data_is_healthy_and_says_it_is_starting(self):
        # ~720 KB of bits read at 150 KB/s: ~5 s of -LOADING.
        server = self.start("--save", "", "--appendonly", "yes")
        with server.raw() as c:
            self.assertEqual(c.call("BF.RESERVE", "big", "0.001", "400000"), "OK")
            self.assertEqual(c.call("SAVE"), "OK")
        server.stop()
        server = self.start("--save", "", "--appendonly", "yes", ready=False,
                            env={"BLOOMGATE_TEST_LOAD_BYTES_PER_SEC": "150000"})

        def ping():
            try:
                with RawConnection(server.port, timeout=1.0) as c:
                    return c.call("PING")
            except OSError:
                return None
        self.assertEqual(wait_until(ping, START_DEADLINE_S, what="the port to answer"), LOADING)
        code, output = self.check(server.port)
        self.assertEqual(ping(), LOADING, "the load ended before the check: it proves nothing")
        self.assertEqual((code, output), (0, "bloomgate: starting (loading its data)\n"))


if __name__ == "__main__":
    unittest.main()
