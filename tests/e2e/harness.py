"""Shared machinery for the end-to-end tests: start the real bloomgate binary
on a free loopback port, talk to it through redis-py or a raw socket, and
stop it cleanly.

Every server runs in a fresh temporary directory (its cwd), writes its log to
a file there, and is judged ready only once it answers PING (or -NOAUTH) on
its port, polled against a deadline. Stopping sends SIGTERM and expects exit
code 0 within a deadline; the server's log is attached to every failure.
"""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import redis

READY_DEADLINE_S = 10.0
STOP_DEADLINE_S = 10.0
IO_TIMEOUT_S = 10.0


def server_binary():
    path = os.environ.get("BLOOMGATE_BIN")
    if not path:
        raise RuntimeError(
            "BLOOMGATE_BIN is not set: point it at the bloomgate binary, e.g. "
            "BLOOMGATE_BIN=build/server/bloomgate")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"BLOOMGATE_BIN={path} is not an executable file")
    return path


def extra_server_args():
    """Flags every server of a run gets: BLOOMGATE_EXTRA_ARGS, split on spaces
    (run_backend.py runs modules with "--io-backend <backend>")."""
    return os.environ.get("BLOOMGATE_EXTRA_ARGS", "").split()


def free_port():
    """A loopback port that was free a moment ago (bind to 0, then release)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate, deadline_s, interval_s=0.01, what="condition"):
    """Polls predicate() until it returns a truthy value or the deadline passes.
    Returns the truthy value; raises AssertionError naming `what` on timeout."""
    deadline = time.monotonic() + deadline_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {deadline_s}s waiting for {what}")
        time.sleep(interval_s)


def write_until(stop, client, key, command, acked, errors, *extra):
    """A writer thread's body: `command key <key>-<i> *extra` for i = 0, 1,
    ... until `stop` (a threading.Event) is set. The items acknowledged go
    to `acked`, the error replies' texts to `errors`; closes `client`."""
    i = 0
    try:
        while not stop.is_set():
            item = f"{key}-{i}"
            try:
                client.execute_command(command, key, item, *extra)
                acked.append(item)
            except redis.ResponseError as e:
                errors.append(str(e))
            i += 1
    finally:
        client.close()


def stop_process(proc, grace_s):
    """SIGTERM, then SIGKILL if `proc` has not exited within grace_s: how a
    test stops a helper process (an exporter, a prometheus) whatever happened."""
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def raise_fd_limit(wanted):
    """Raises this process's soft RLIMIT_NOFILE to `wanted` (capped by the hard
    limit); servers started afterwards inherit it. Returns the new soft limit."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def proc_status_kb(pid, field):
    """A `kB` field (VmRSS, VmSize, ...) of /proc/<pid>/status."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def non_reading_subscriber(port, name, channel, redis_client):
    """A raw socket subscribed to `channel` as client `name` that never reads:
    its receive buffer is pinned small before connecting, so the kernel
    absorbs little and the server's writes to it back up. Returns the socket
    (the caller closes it) once the subscription is counted."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(b"CLIENT SETNAME %s\r\nSUBSCRIBE %s\r\n" % (name.encode(), channel.encode()))
    wait_until(lambda: redis_client.pubsub_numsub(channel) == [(channel.encode(), 1)], 10.0,
               what=f"subscriber {name} to subscribe")
    return sock


def parse_info(text):
    """INFO text -> {field: value-string}."""
    if isinstance(text, bytes):
        text = text.decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#") and ":" in line:
            k, v = line.split(":", 1)
            out[k] = v
    return out


def encode_command(*args):
    """Encodes one command as a RESP multibulk request."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, (int, float)):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


# --------------------------------------------------------------------------
# A small RESP2/RESP3 reader.
#
# Values come back typed so that tests can tell the wire types apart:
#   +simple          -> Simple (a str)
#   -error           -> RespError (a str; returned, never raised)
#   :int             -> int
#   $bulk / =verbatim -> bytes ($-1 -> None)
#   *array / >push / ~set -> list / Push / RespSet ( *-1 -> None )
#   %map             -> Map (a dict that keeps wire order)
#   _ null           -> None,  #t/#f -> bool,  ,double -> float,  (big -> int
# --------------------------------------------------------------------------


class Simple(str):
    """A RESP simple string (+...)."""


class RespError(str):
    """A RESP error (-...). `code` is its first word."""

    @property
    def code(self):
        return self.split(" ", 1)[0]


class Map(dict):
    """A RESP3 map (%...), in wire order."""


class Push(list):
    """A RESP3 push (>...)."""


class RespSet(list):
    """A RESP3 set (~...)."""


class NeedMore(Exception):
    """The buffer does not hold a complete reply yet."""


def parse_resp(buf, pos):
    """Parses one reply from buf[pos:]; returns (value, new_pos) or raises
    NeedMore if the reply is not complete yet."""
    end = buf.find(b"\r\n", pos)
    if end < 0:
        raise NeedMore()
    kind = bytes(buf[pos:pos + 1])
    line = buf[pos + 1:end]
    nxt = end + 2
    if kind == b"+":
        return Simple(line.decode("utf-8", "replace")), nxt
    if kind == b"-":
        return RespError(line.decode("utf-8", "replace")), nxt
    if kind == b":":
        return int(line), nxt
    if kind == b"(":
        return int(line), nxt
    if kind == b",":
        text = line.decode().lower()
        return float({"inf": "inf", "-inf": "-inf", "nan": "nan"}.get(text, text)), nxt
    if kind == b"#":
        if line not in (b"t", b"f"):
            raise ValueError(f"bad RESP3 boolean {line!r}")
        return line == b"t", nxt
    if kind == b"_":
        return None, nxt
    if kind in (b"$", b"=", b"!"):
        n = int(line)
        if n < 0:
            return None, nxt
        if len(buf) < nxt + n + 2:
            raise NeedMore()
        data = bytes(buf[nxt:nxt + n])
        if buf[nxt + n:nxt + n + 2] != b"\r\n":
            raise ValueError("bulk string not terminated by CRLF")
        if kind == b"!":
            return RespError(data.decode("utf-8", "replace")), nxt + n + 2
        if kind == b"=":
            data = data[4:]  # drop the "txt:" format prefix of a verbatim string
        return data, nxt + n + 2
    if kind in (b"*", b">", b"~"):
        n = int(line)
        if n < 0:
            return None, nxt
        items = []
        p = nxt
        for _ in range(n):
            v, p = parse_resp(buf, p)
            items.append(v)
        cls = {b"*": list, b">": Push, b"~": RespSet}[kind]
        return cls(items), p
    if kind in (b"%", b"|"):
        n = int(line)
        m = Map()
        p = nxt
        for _ in range(n):
            k, p = parse_resp(buf, p)
            v, p = parse_resp(buf, p)
            if isinstance(k, list):
                k = tuple(k)
            m[k] = v
        if kind == b"|":  # an attribute precedes the real reply
            return parse_resp(buf, p)
        return m, p
    raise ValueError(f"unexpected RESP type byte {kind!r} in {bytes(buf[pos:pos + 40])!r}")


class RawConnection:
    """One TCP connection that sends exact bytes and reads exact replies."""

    def __init__(self, port, timeout=IO_TIMEOUT_S, host="127.0.0.1"):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError(
                f"server closed the connection; unread bytes: {bytes(self.buf[:200])!r}")
        self.buf += chunk

    def read_reply(self, raw=False):
        """Reads one complete reply. With raw=True returns (value, exact_bytes)."""
        while True:
            try:
                value, end = parse_resp(self.buf, 0)
            except NeedMore:
                self._fill()
                continue
            data = bytes(self.buf[:end])
            del self.buf[:end]
            return (value, data) if raw else value

    def read_raw(self):
        """The exact bytes of the next reply."""
        return self.read_reply(raw=True)[1]

    def call(self, *args):
        """Sends one multibulk command and returns its (typed) reply."""
        self.send(encode_command(*args))
        return self.read_reply()

    def call_raw(self, *args):
        self.send(encode_command(*args))
        return self.read_raw()

    def wait_closed(self, deadline_s=5.0):
        """True once the server has closed this connection (EOF or reset)
        within the deadline; any bytes arriving before that are kept in
        self.buf. False if the connection is still open at the deadline."""
        deadline = time.monotonic() + deadline_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.sock.settimeout(min(remaining, 0.5))
            try:
                chunk = self.sock.recv(1 << 16)
            except socket.timeout:
                continue
            except (ConnectionResetError, BrokenPipeError):
                return True
            finally:
                try:
                    self.sock.settimeout(IO_TIMEOUT_S)
                except OSError:
                    pass
            if not chunk:
                return True
            self.buf += chunk


# --------------------------------------------------------------------------
# The server process.
# --------------------------------------------------------------------------


class BloomgateServer:
    """Runs one bloomgate process for the length of a `with` block.

        with BloomgateServer(["--threads", "2"]) as server:
            server.client().ping()

    The server gets a free port, a fresh temp dir as its cwd, and its log in
    that dir. `password` is only used for the readiness probe and by
    client(); pass --requirepass yourself in args.
    """

    def __init__(self, args=(), expected_exit_code=0, password=None, ready=True):
        self.args = [str(a) for a in args]
        self.expected_exit_code = expected_exit_code
        self.password = password
        self.wait_ready = ready
        self.port = None
        self.proc = None
        self.tmp = None
        self.log_path = None
        self._log_file = None

    # -- lifecycle ---------------------------------------------------------
    def start(self):
        binary = server_binary()
        last_error = None
        for _attempt in range(3):  # the free port can be taken between probe and bind
            self.tmp = tempfile.TemporaryDirectory(prefix="bloomgate-e2e-")
            self.port = free_port()
            self.log_path = os.path.join(self.tmp.name, "bloomgate.log")
            self._log_file = open(self.log_path, "wb")
            cmd = [binary, "--port", str(self.port), "--bind", "127.0.0.1",
                   *extra_server_args(), *self.args]
            self.proc = subprocess.Popen(cmd, cwd=self.tmp.name, stdin=subprocess.DEVNULL,
                                         stdout=self._log_file, stderr=subprocess.STDOUT)
            if not self.wait_ready:
                return self
            try:
                self._wait_until_ready()
                return self
            except AssertionError as e:
                last_error = e
                log = self.log()
                self._kill()
                self._cleanup()
                if "address already in use" not in log.lower():
                    raise
        raise last_error

    def _wait_until_ready(self):
        deadline = time.monotonic() + READY_DEADLINE_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"bloomgate exited with code {self.proc.returncode} during start-up "
                    f"(args {self.args})\n--- server log ---\n{self.log()}")
            try:
                with RawConnection(self.port, timeout=1.0) as c:
                    reply = c.call("PING")
                    if (isinstance(reply, RespError) and reply.code == "NOAUTH"
                            and self.password is not None):
                        # The port opens before the data is loaded (-LOADING
                        # until then): ready means PING answers PONG.
                        c.call("AUTH", self.password)
                        reply = c.call("PING")
                if reply == "PONG" or (isinstance(reply, RespError) and reply.code == "NOAUTH"):
                    return
            except OSError:
                pass
            time.sleep(0.02)
        raise AssertionError(
            f"bloomgate did not answer PING on port {self.port} within "
            f"{READY_DEADLINE_S}s\n--- server log ---\n{self.log()}")

    def stop(self, sig=signal.SIGTERM, check=True):
        """Signals the server and waits for it to exit; returns the exit code.
        With check=True asserts the expected exit code (log attached)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            log = self.log()
            self._kill()
            self._cleanup()
            raise AssertionError(
                f"bloomgate did not exit within {STOP_DEADLINE_S}s of signal {sig!r}"
                f"\n--- server log ---\n{log}")
        log = self.log()
        self.final_log = log
        self._cleanup()
        if check and code != self.expected_exit_code:
            raise AssertionError(
                f"bloomgate exited with code {code}, expected {self.expected_exit_code}"
                f"\n--- server log ---\n{log}")
        return code

    def wait_exit(self, deadline_s=STOP_DEADLINE_S):
        """Waits for the process to exit on its own; returns the exit code."""
        try:
            return self.proc.wait(timeout=deadline_s)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"bloomgate still running after {deadline_s}s\n--- server log ---\n{self.log()}")

    def _kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=STOP_DEADLINE_S)

    def _cleanup(self):
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self.tmp is not None:
            self.tmp.cleanup()
            self.tmp = None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log(self):
        if self.tmp is None and getattr(self, "final_log", None) is not None:
            return self.final_log
        if self.log_path is None or not os.path.exists(self.log_path):
            return "<no log>"
        with open(self.log_path, "rb") as f:
            return f.read()[-20000:].decode("utf-8", "replace")

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            # Show the log with whatever failed; still stop the server.
            sys.stderr.write(f"\n--- bloomgate log (port {self.port}) ---\n{self.log()}\n")
            self.stop(check=False)
            return False
        self.stop()
        return False

    # -- clients -----------------------------------------------------------
    def client(self, **kwargs):
        """A redis-py client for this server."""
        kwargs.setdefault("socket_timeout", IO_TIMEOUT_S)
        kwargs.setdefault("socket_connect_timeout", IO_TIMEOUT_S)
        if self.password is not None:
            kwargs.setdefault("password", self.password)
        return redis.Redis(host="127.0.0.1", port=self.port, **kwargs)

    def raw(self, timeout=IO_TIMEOUT_S):
        """A RawConnection to this server (not authenticated)."""
        return RawConnection(self.port, timeout=timeout)

    def assert_serves_new_clients(self, testcase):
        """Asserts that a brand-new client gets PONG: the server is alive and
        still accepting, whatever happened on other connections."""
        testcase.assertTrue(self.alive(), f"server died\n--- server log ---\n{self.log()}")
        with self.raw() as c:
            if self.password is not None:
                testcase.assertEqual(c.call("AUTH", self.password), "OK")
            testcase.assertEqual(c.call("PING"), "PONG",
                                 "a new client should still be served")


class ServerTestCase(unittest.TestCase):
    """One server per test class (fast), an empty keyspace per test.

    Subclasses may set `server_args` (extra command-line flags) and
    `server_password` (used by the readiness probe and by self.r).
    """

    server_args = ()
    server_password = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.server = BloomgateServer(cls.server_args, password=cls.server_password).start()
        cls.port = cls.server.port

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        if not self.server.alive():
            self.fail(f"server is not running\n--- server log ---\n{self.server.log()}")
        self.r = self.server.client()
        self.addCleanup(self.r.close)
        self.r.flushall()

    def tearDown(self):
        if not self.server.alive():
            self.fail(f"server died during {self.id()}\n--- server log ---\n{self.server.log()}")
        if self._has_failed():
            tail = "\n".join(self.server.log().splitlines()[-40:])
            sys.stderr.write(f"\n--- bloomgate log tail for {self.id()} ---\n{tail}\n")
        super().tearDown()

    def _has_failed(self):
        """True if this test (or one of its subtests) has failed so far."""
        result = getattr(getattr(self, "_outcome", None), "result", None)
        if result is None:
            return False
        for test, _ in list(result.failures) + list(result.errors):
            if test is self or getattr(test, "test_case", None) is self:
                return True
        return False

    # -- helpers -----------------------------------------------------------
    def raw(self, timeout=IO_TIMEOUT_S):
        conn = self.server.raw(timeout=timeout)
        self.addCleanup(conn.close)
        if self.server_password is not None:
            self.assertEqual(conn.call("AUTH", self.server_password), "OK")
        return conn

    def client(self, **kwargs):
        c = self.server.client(**kwargs)
        self.addCleanup(c.close)
        return c

    def assertServesNewClients(self):
        self.server.assert_serves_new_clients(self)

    def assertErrorText(self, reply, expected):
        self.assertIsInstance(reply, RespError, f"expected error {expected!r}, got {reply!r}")
        self.assertEqual(str(reply), expected)

    def assertMemoryRefusal(self, reply, prefix, ending):
        """A memory refusal: the family's RedisBloom text `prefix`, then ": needs N bytes"
        or ": growing needs ..." and the limit's figures, ending in `ending`."""
        self.assertIsInstance(reply, RespError, f"expected a refusal {prefix!r}, got {reply!r}")
        text = str(reply)
        self.assertTrue(text.startswith((prefix + ": needs ", prefix + ": growing needs ")), text)
        self.assertTrue(text.endswith(ending), text)

    def assertRaisesText(self, expected, fn, *args, **kwargs):
        """fn(*args) raises a redis-py ResponseError whose text is exactly `expected`."""
        with self.assertRaises(redis.ResponseError) as ctx:
            fn(*args, **kwargs)
        self.assertEqual(str(ctx.exception), expected)


class TwoServersTestCase(ServerTestCase):
    """ServerTestCase with a second server, `other` (self.o its client, empty
    per test), for commands that move keys between servers. Subclasses may
    set `other_args`."""

    other_args = ()

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.other = BloomgateServer(cls.other_args).start()

    @classmethod
    def tearDownClass(cls):
        cls.other.stop()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.o = self.other.client()
        self.addCleanup(self.o.close)
        self.o.flushall()


# --------------------------------------------------------------------------
# Servers over a data directory that outlives them (durability tests).
# --------------------------------------------------------------------------

OFFLINE_DEADLINE_S = 30.0


class PersistentServer(BloomgateServer):
    """A bloomgate process whose cwd is `data_dir`, a directory the caller
    owns: it is neither created fresh nor deleted, so a second
    PersistentServer on the same directory sees what the first one left.

    The log goes to `log_path` (default: a numbered file next to data_dir,
    so the data directory holds only what the server writes). kill9() ends
    the process without any chance to flush or save.
    """

    _log_counter = 0

    def __init__(self, data_dir, args=(), log_path=None, expected_exit_code=0, ready=True):
        super().__init__(args, expected_exit_code=expected_exit_code, ready=ready)
        self.data_dir = os.path.abspath(data_dir)
        if log_path is None:
            PersistentServer._log_counter += 1
            log_path = os.path.join(os.path.dirname(self.data_dir),
                                    f"bloomgate-{os.getpid()}-{PersistentServer._log_counter}.log")
        self.fixed_log_path = log_path

    def start(self):
        binary = server_binary()
        last_error = None
        for _attempt in range(3):  # the free port can be taken between probe and bind
            self.port = free_port()
            self.log_path = self.fixed_log_path
            self._log_file = open(self.log_path, "wb")
            cmd = [binary, "--port", str(self.port), "--bind", "127.0.0.1",
                   *extra_server_args(), *self.args]
            self.proc = subprocess.Popen(cmd, cwd=self.data_dir, stdin=subprocess.DEVNULL,
                                         stdout=self._log_file, stderr=subprocess.STDOUT)
            if not self.wait_ready:
                return self
            try:
                self._wait_until_ready()
                return self
            except AssertionError as e:
                last_error = e
                log = self.log()
                self._kill()
                self._cleanup()
                if "address already in use" not in log.lower():
                    raise
        raise last_error

    def kill9(self):
        """SIGKILL, then waits for the process; returns its exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        code = self.proc.wait(timeout=STOP_DEADLINE_S)
        self._cleanup()
        return code

    def log(self):
        # The log file outlives the process here, so always read the file.
        if self._log_file is not None:
            self._log_file.flush()
        if self.log_path is None or not os.path.exists(self.log_path):
            return "<no log>"
        with open(self.log_path, "rb") as f:
            return f.read()[-20000:].decode("utf-8", "replace")


class RestartAgainstTwinCase(unittest.TestCase):
    """For tests that restart a server from its data directory (SAVE, or
    kill -9 and log replay) and compare it with a twin that never restarts.

    twin_and_data(via_snapshot, prefix) starts the twin (no persistence) and
    makes a fresh data directory; it returns (twin client, data, args), args
    being the persistent server's: snapshots only, or the log fsynced on
    every write. start(data, args, n) starts the n-th persistent server on it
    and returns (server, client). Everything is cleaned up with the test."""

    def start(self, data, args, n):
        server = PersistentServer(data, args, log_path=os.path.join(os.path.dirname(data),
                                                                    f"{n}.log")).start()
        self.addCleanup(lambda: server.kill9() if server.alive() else None)
        r = server.client()
        self.addCleanup(r.close)
        return server, r

    def twin_and_data(self, via_snapshot, prefix):
        tmp = tempfile.TemporaryDirectory(prefix=prefix)
        self.addCleanup(tmp.cleanup)
        data = os.path.join(tmp.name, "data")
        os.mkdir(data)
        twin = BloomgateServer(["--save", "", "--appendonly", "no"]).start()
        self.addCleanup(lambda: twin.stop(check=False) if twin.alive() else None)
        tr = twin.client()
        self.addCleanup(tr.close)
        args = ["--save", ""] + (["--appendonly", "no"] if via_snapshot
                                 else ["--appendonly", "yes", "--appendfsync", "always"])
        return tr, data, args


def run_bloomgate(args, input=None, cwd=None, deadline_s=OFFLINE_DEADLINE_S):
    """Runs the binary in one of its offline modes (check-snapshot, build,
    ...) to completion; returns the CompletedProcess with text stdout and
    stderr. `input` (str or bytes) is fed to its stdin."""
    if isinstance(input, str):
        input = input.encode()
    proc = subprocess.run([server_binary(), *[str(a) for a in args]], input=input,
                          stdin=None if input is not None else subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                          timeout=deadline_s)
    proc.stdout = proc.stdout.decode("utf-8", "replace")
    proc.stderr = proc.stderr.decode("utf-8", "replace")
    return proc
