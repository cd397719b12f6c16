"""redis-cli 7 in a pseudo-terminal shows every documented command's syntax:
its argument hint while the command is typed, and `help COMMAND`. Both come
from COMMAND DOCS's `arguments`; the expected text is rendered from them as
redis-cli renders it (oneof "a|b", "x [x ...]"), and BF.RESERVE's is checked
word for word. One server and one redis-cli session for every command.
"""

import fcntl
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import termios
import time
import unittest

from harness import ServerTestCase

ANSI = re.compile(rb"\x1b\[[0-9;]*[A-Za-z]")
DEADLINE_S = 5.0


def text(value):
    """A raw reply with every bulk string decoded."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list):
        return [text(v) for v in value]
    return value


def as_dict(pairs):
    return {pairs[i]: pairs[i + 1] for i in range(0, len(pairs), 2)}


def render(arguments):
    """redis-cli 7's rendering of COMMAND DOCS arguments (cliAddArgument)."""
    parts = []
    for raw in arguments:
        arg = as_dict(raw)
        flags = set(arg.get("flags", []))
        kind = arg["type"]
        if kind == "oneof":
            repeat = "|".join(render([a]) for a in arg["arguments"])
        elif kind == "block":
            repeat = render(arg["arguments"])
        elif kind == "pure-token":
            repeat = ""
        else:
            repeat = arg["name"]
        token = arg.get("token", "")
        if token and repeat:
            token += " "
        text = token + repeat
        if "multiple" in flags:
            text += " [" + (token if "multiple_token" in flags else "") + repeat + " ...]"
        parts.append(f"[{text}]" if "optional" in flags else text)
    return " ".join(parts)


def documented(docs):
    """(NAME as redis-cli shows it, expected params) for every command and
    subcommand in a COMMAND DOCS reply."""
    out = []
    for name, raw in as_dict(docs).items():
        entry = as_dict(raw)
        out.append((name.replace("|", " ").upper(), render(entry.get("arguments", []))))
        out.extend(documented(sum(([k, v] for k, v in as_dict(entry.get("subcommands", []))
                                   .items()), [])))
    return out


@unittest.skipIf(shutil.which("redis-cli") is None, "redis-cli is not installed")
class RedisCliHints(ServerTestCase):

    def start_cli(self):
        pid, fd = pty.fork()
        if pid == 0:
            os.environ["TERM"] = "xterm"
            os.environ.pop("REDISCLI_HISTFILE", None)
            os.execvp("redis-cli", ["redis-cli", "-p", str(self.port), "--no-raw"])
        # Wide enough that no hint is cut at the right margin.
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 1000, 0, 0))
        os.kill(pid, signal.SIGWINCH)
        self.addCleanup(self.stop_cli, pid, fd)
        self.fd = fd
        self.buffer = b""
        self.read_until(b"> ")
        return pid

    def stop_cli(self, pid, fd):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        os.close(fd)

    def read_until(self, wanted):
        """Reads the terminal until `wanted` (bytes, ANSI stripped) is in what
        was read after the last match; returns the stripped text up to it."""
        deadline = time.monotonic() + DEADLINE_S
        while True:
            plain = ANSI.sub(b"", self.buffer)
            at = plain.find(wanted)
            if at >= 0:
                # What came after the match is kept for the next call.
                self.buffer = plain[at + len(wanted):]
                return plain[:at + len(wanted)]
            left = deadline - time.monotonic()
            if left <= 0:
                self.fail(f"redis-cli never showed {wanted!r}; it showed {plain[-400:]!r}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    self.buffer += os.read(self.fd, 65536)
                except OSError:
                    self.fail(f"redis-cli exited; it showed {plain[-400:]!r}")

    def test_every_documented_command_shows_its_hint_and_help(self):
        docs = text(self.raw().call("COMMAND", "DOCS"))
        commands = documented(docs)
        names = {name for name, _ in commands}
        self.assertIn("BF.RESERVE", names)
        self.assertIn("CLIENT SETNAME", names)
        self.assertEqual(dict(commands)["BF.RESERVE"],
                         "key error_rate capacity [EXPANSION expansion] [NONSCALING] "
                         "[WINDOW seconds [GENERATIONS generations]] [SEED seed]")
        self.assertEqual(dict(commands)["CMS.MERGE"],
                         "destination numKeys source [source ...] [WEIGHTS weight [weight ...]]")
        containers = {name for name, _ in commands if any(other.startswith(name + " ")
                                                          for other, _ in commands)}
        subcommand_of = {name: min(other for other, _ in commands
                                   if other.startswith(name + " "))[len(name) + 1:]
                         for name in containers}
        self.start_cli()
        missing_args = [name for name, params in commands
                        if not params and " " not in name and name not in NO_ARGUMENTS]
        self.assertEqual(missing_args, [], "commands documented without arguments")
        for name, params in commands:
            with self.subTest(command=name):
                os.write(self.fd, f"help {name}\r".encode())
                # "  NAME params" on a line of its own (redis-cli ends it "\r\r\n").
                if name in containers:  # `help CLIENT` lists its subcommands instead
                    self.read_until(f"\n  {name} {subcommand_of[name]} ".encode())
                else:
                    self.read_until(f"\n  {name} {params}\r".encode())
                self.read_until(b"> ")
                if params:
                    # Typing the name and a space shows the whole syntax as a hint.
                    os.write(self.fd, f"{name} ".encode())
                    self.read_until(f"{name} {params}".encode())
                    os.write(self.fd, b"\x15")  # Ctrl-U: clear the line
                    self.read_until(b"> ")


# Commands that take no arguments at all (containers are listed by their
# subcommands): any other command documented without arguments is a gap.
NO_ARGUMENTS = {"ACL", "BGREWRITEAOF", "CLIENT", "COMMAND", "CONFIG", "DBSIZE", "DEBUG", "DISCARD",
                "EXEC", "LASTSAVE", "LATENCY", "MEMORY", "MODULE", "MONITOR", "MULTI", "OBJECT", "QUIT",
                "PUBSUB", "RANDOMKEY", "RESET", "ROLE", "SAVE", "SLOWLOG", "TIME", "UNWATCH",
                # Replication's internal command: Redis's COMMAND DOCS lists no
                # arguments for it either (replicas send it, people do not).
                "REPLCONF",
                # Redis Cluster's container and its argument-less connection flags.
                "CLUSTER", "ASKING", "READONLY", "READWRITE"}


if __name__ == "__main__":
    unittest.main()
