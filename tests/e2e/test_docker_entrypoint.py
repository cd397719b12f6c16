"""docker/entrypoint.sh, the container's start, run here as a plain script
against the built binary: it takes the password from BLOOMGATE_PASSWORD or
BLOOMGATE_PASSWORD_FILE, never puts it on the command line, and refuses to
start without one unless BLOOMGATE_ALLOW_UNPROTECTED=yes. The tests pass
--bind 127.0.0.1 after the script's own --bind 0.0.0.0 (the later flag wins),
so nothing listens beyond loopback here.
"""

import os
import subprocess
import tempfile
import unittest

import redis

from harness import RawConnection, RespError, free_port, server_binary, wait_until

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ENTRYPOINT = os.path.join(ROOT, "docker", "entrypoint.sh")
CONFIG = os.path.join(ROOT, "config", "bloomgate.example.yaml")


class EntrypointTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="bloomgate-entrypoint-")
        self.addCleanup(self.tmp.cleanup)
        # The script runs `bloomgate` from PATH, as in the image.
        bin_dir = os.path.join(self.tmp.name, "bin")
        os.mkdir(bin_dir)
        os.symlink(os.path.abspath(server_binary()), os.path.join(bin_dir, "bloomgate"))
        self.env = {"PATH": bin_dir + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
                    "BLOOMGATE_CONFIG": CONFIG, "TMPDIR": self.tmp.name}
        self.port = free_port()

    def start(self, **env):
        log = open(os.path.join(self.tmp.name, "server.log"), "wb")
        self.addCleanup(log.close)
        proc = subprocess.Popen(
            ["sh", ENTRYPOINT, "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", self.tmp.name, "--save", ""],
            env={**self.env, **env}, cwd=self.tmp.name, stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(self.stop, proc)
        return proc

    def stop(self, proc):
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=10)

    def log(self):
        with open(os.path.join(self.tmp.name, "server.log"), "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_serving(self, proc, password=None):
        def answers():
            if proc.poll() is not None:
                self.fail(f"the server exited with {proc.returncode}\n{self.log()}")
            try:
                with RawConnection(self.port, timeout=1.0) as c:
                    reply = c.call("PING")
                    if password is not None and isinstance(reply, RespError):
                        c.call("AUTH", password)
                        reply = c.call("PING")
            except OSError:
                return None
            # The port opens before the data is loaded: not serving yet.
            return None if isinstance(reply, RespError) and reply.code == "LOADING" else reply
        return wait_until(answers, 10.0, what="the server to answer")

    def test_without_a_password_it_refuses_to_start(self):
        proc = self.start()
        self.assertEqual(proc.wait(timeout=10), 1)
        self.assertIn("refusing to start on 0.0.0.0 without a password", self.log())

    def test_the_password_from_the_environment_is_required_and_not_on_the_command_line(self):
        proc = self.start(BLOOMGATE_PASSWORD="s3cret-env")
        reply = self.wait_serving(proc)
        self.assertIsInstance(reply, RespError)
        self.assertEqual(reply.code, "NOAUTH")
        self.assertEqual(self.wait_serving(proc, password="s3cret-env"), "PONG")
        self.assertTrue(redis.Redis(port=self.port, password="s3cret-env").ping())
        with open(f"/proc/{proc.pid}/cmdline", "rb") as f:
            self.assertNotIn(b"s3cret-env", f.read())
        self.assertIn("listening on 127.0.0.1:", self.log())

    def test_the_password_can_come_from_a_mounted_file(self):
        secret = os.path.join(self.tmp.name, "secret")
        with open(secret, "w") as f:
            f.write("s3cret-file\n")
        proc = self.start(BLOOMGATE_PASSWORD_FILE=secret)
        self.assertEqual(self.wait_serving(proc, password="s3cret-file"), "PONG")
        self.assertTrue(redis.Redis(port=self.port, password="s3cret-file").ping())
        with self.assertRaisesRegex(redis.ResponseError, "WRONGPASS"):
            redis.Redis(port=self.port, password="wrong").ping()

    def test_an_unreadable_password_file_stops_it(self):
        proc = self.start(BLOOMGATE_PASSWORD_FILE=os.path.join(self.tmp.name, "missing"))
        self.assertEqual(proc.wait(timeout=10), 1)
        self.assertIn("cannot be read", self.log())

    def test_an_explicit_yes_starts_it_unprotected(self):
        proc = self.start(BLOOMGATE_ALLOW_UNPROTECTED="yes")
        self.assertEqual(self.wait_serving(proc), "PONG")
        r = redis.Redis(port=self.port, decode_responses=True)
        self.assertEqual(r.config_get("protected-mode"), {"protected-mode": "no"})


if __name__ == "__main__":
    unittest.main()
