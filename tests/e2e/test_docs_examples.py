"""Every example in README.md and docs/**/*.md runs against the real binary,
so the documentation and the server cannot drift apart.

Two kinds of fenced block are executed; every other block is illustration.

```redis-cli  -- a redis-cli session. Each `> COMMAND` line is sent, and the
lines after it, up to the next `> ` line or the block's end, are the reply
exactly as interactive redis-cli prints it. A block is one redis-cli process
(`redis-cli --no-raw`, commands on its stdin), so it is one connection:
AUTH, HELLO 3 and MULTI carry over from line to line. Each file gets a fresh
server with the default configuration in an empty directory; the blocks of a
file run in order against it, so a later block may use keys an earlier one
made.

```sh-session  -- shell commands. Each `$ COMMAND` line runs in bash, in one
fresh directory per block, with the server's binary first on PATH as
`bloomgate`; the lines after it are its stdout and stderr, interleaved as a
terminal shows them. Lines ending in a backslash continue the command.

```python blocks that begin with `import redis` are recipes: each runs twice,
in two fresh interpreters, against the page's server (redis.Redis() finds it;
`url`, `body` and a `cache` with `store()` are given), and both runs must
exit 0 -- a recipe must survive its own second run, as an application does
at its next start.

Placeholders, for what is inherently variable and nothing else: `<int>` is
any integer, `<any>` any text up to the end of the line (a timestamp, bytes
that depend on the allocator). A reply that depends on a random hash seed
(a false positive) must never be an example: absent items are asked of empty
filters or of filters made with SEED, or of filters whose chance of a false
positive on that one lookup is below 1e-12.

A page with no runnable example fails unless it is listed in NO_EXAMPLES
with the reason. What `bloomgate --help` lists must be documented: each
sub-command has a section in docs/operating/offline-tools.md, each setting a
row in docs/operating/configuration.md's table.
"""

import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import harness

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# Pages that are maps or prose with nothing to run, and why.
NO_EXAMPLES = {
    "docs/README.md": "the index of the pages",
    "docs/design.md": "internals: data structures, tests, layout",
    "docs/operating/configuration.md": "the settings table; CONFIG GET/SET run in server.md",
    "docs/operating/production.md": "systemd and compose files, not commands",
    "docs/operating/tls.md": "needs certificates; test_tls.py runs the same commands",
    "docs/operating/cluster.md": "needs cluster-enabled nodes; test_cluster.py runs the same commands",
}

COMMAND_DEADLINE_S = 60
# Debian's interpreter, which has python3-redis (as the other e2e tests use).
PYTHON = "/usr/bin/python3"


def doc_files():
    files = [os.path.join(REPO, "README.md")]
    files += sorted(glob.glob(os.path.join(REPO, "docs", "**", "*.md"), recursive=True))
    return files


def relative(path):
    return os.path.relpath(path, REPO)


def fenced_blocks(text):
    """(info string, first line number, lines) of every fenced block."""
    blocks = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(.*)$", lines[i])
        if not m:
            i += 1
            continue
        indent, info = m.group(1), m.group(2).strip()
        start = i + 1
        body = []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        blocks.append((info, start + 1, body))
        i += 1
    return blocks


def steps(body, prompt):
    """[(command, [expected lines])] of a session block whose commands start
    with `prompt` ("> " or "$ ")."""
    out = []
    pending = None
    for line in body:
        if pending is not None and pending[0].endswith("\\"):
            pending[0] = pending[0][:-1] + " " + line.strip()
            continue
        if line.startswith(prompt):
            pending = [line[len(prompt):], []]
            out.append(pending)
        elif pending is None:
            if line.strip():
                raise AssertionError(f"text before the first {prompt!r} line: {line!r}")
        else:
            pending[1].append(line)
    for step in out:
        while step[1] and not step[1][-1].strip():
            step[1].pop()
    return [(command, expected) for command, expected in out]


def line_pattern(expected):
    parts = re.split(r"(<int>|<any>)", expected)
    regex = ""
    for part in parts:
        if part == "<int>":
            regex += r"-?\d+"
        elif part == "<any>":
            regex += r".*"
        else:
            regex += re.escape(part)
    return re.compile(regex + r"\Z")


def matches(expected_lines, actual_lines):
    if len(expected_lines) != len(actual_lines):
        return False
    return all(line_pattern(e.rstrip()).match(a.rstrip())
               for e, a in zip(expected_lines, actual_lines))


def describe(where, commands, expected, actual):
    return (f"{where}: the example's replies differ from the server's\n"
            f"commands:\n  " + "\n  ".join(commands) +
            "\n--- expected (the docs)\n" + "\n".join(expected) +
            "\n--- actual (the server)\n" + "\n".join(actual))


class DocsExamplesTest(unittest.TestCase):
    def run_redis_cli_block(self, server, where, body):
        session = steps(body, "> ")
        self.assertTrue(session, f"{where}: a redis-cli block with no `> ` command")
        commands = [command for command, _ in session]
        expected = [line for _, lines in session for line in lines]
        proc = subprocess.run(["redis-cli", "--no-raw", "-p", str(server.port)],
                              input="\n".join(commands) + "\n", capture_output=True,
                              text=True, timeout=COMMAND_DEADLINE_S)
        actual = (proc.stdout + proc.stderr).rstrip("\n").split("\n")
        if not matches(expected, actual):
            self.fail(describe(where, commands, expected, actual) + "\n--- server log\n" +
                      server.log()[-3000:])

    def run_shell_block(self, where, body):
        session = steps(body, "$ ")
        self.assertTrue(session, f"{where}: a sh-session block with no `$ ` command")
        bin_dir = tempfile.mkdtemp(prefix="bloomgate-docs-bin-")
        work = tempfile.mkdtemp(prefix="bloomgate-docs-")
        try:
            os.symlink(os.path.abspath(harness.server_binary()), os.path.join(bin_dir, "bloomgate"))
            env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
            for command, expected in session:
                proc = subprocess.run(["bash", "-c", command], cwd=work, env=env,
                                      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True,
                                      timeout=COMMAND_DEADLINE_S)
                actual = proc.stdout.rstrip("\n").split("\n") if proc.stdout else []
                if not matches(expected, actual):
                    self.fail(describe(where, [command], expected, actual))
        finally:
            shutil.rmtree(bin_dir, ignore_errors=True)
            shutil.rmtree(work, ignore_errors=True)

    def run_python_recipe(self, server, where, body):
        prelude = (
            "import redis\n"
            "_Redis = redis.Redis\n"
            "class _Here(_Redis):\n"
            "    def __init__(self, *args, **kwargs):\n"
            f"        kwargs.setdefault('port', {server.port})\n"
            "        super().__init__(*args, **kwargs)\n"
            "redis.Redis = _Here\n"
            "class _Cache:\n"
            "    def store(self, url, body):\n"
            "        pass\n"
            "cache = _Cache()\n"
            "url, body = '/docs/recipe.jpg', b'body'\n")
        for run in (1, 2):
            proc = subprocess.run([PYTHON, "-c", prelude + "\n".join(body)],
                                  capture_output=True, text=True, timeout=COMMAND_DEADLINE_S)
            self.assertEqual(proc.returncode, 0,
                             f"{where}: the recipe fails on run {run}:\n{proc.stderr[-3000:]}")

    def test_every_example_in_every_page_runs_as_written(self):
        for path in doc_files():
            name = relative(path)
            with open(path, encoding="utf-8") as f:
                blocks = fenced_blocks(f.read())
            cli = [(line, body) for info, line, body in blocks if info == "redis-cli"]
            shell = [(line, body) for info, line, body in blocks if info == "sh-session"]
            recipes = [(line, body) for info, line, body in blocks
                       if info == "python" and body and body[0] == "import redis"]
            with self.subTest(page=name):
                if name in NO_EXAMPLES:
                    self.assertFalse(cli or shell, f"{name} has examples now: take it out of "
                                     "NO_EXAMPLES so a page that loses them fails")
                    continue
                self.assertTrue(cli or shell, f"{name} has no runnable example (```redis-cli "
                                "or ```sh-session); add one or list it in NO_EXAMPLES")
                if cli or recipes:
                    with harness.BloomgateServer() as server:
                        for line, body in cli:
                            self.run_redis_cli_block(server, f"{name}:{line}", body)
                        for line, body in recipes:
                            self.run_python_recipe(server, f"{name}:{line}", body)
                for line, body in shell:
                    self.run_shell_block(f"{name}:{line}", body)

    def test_no_page_is_left_out_of_the_index(self):
        with open(os.path.join(REPO, "docs", "README.md"), encoding="utf-8") as f:
            index = f.read()
        for path in doc_files()[1:]:
            name = os.path.relpath(path, os.path.join(REPO, "docs"))
            if name != "README.md":
                self.assertIn(f"({name})", index, f"docs/README.md does not link {name}")

    def test_the_offline_tools_page_names_every_sub_command_of_the_binary(self):
        proc = harness.run_bloomgate(["--help"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        listed = re.findall(r"^\s+bloomgate ([a-z][a-z-]*) ", proc.stdout, re.M)
        self.assertGreaterEqual(len(listed), 3, proc.stdout[:2000])
        with open(os.path.join(REPO, "docs", "operating", "offline-tools.md"), encoding="utf-8") as f:
            page = f.read()
        headings = re.findall(r"^## `bloomgate ([a-z][a-z-]*)", page, re.M)
        self.assertEqual(sorted(headings), sorted(listed),
                         "each sub-command `bloomgate --help` lists needs its own "
                         "`## \\`bloomgate NAME ...\\`` section in offline-tools.md")

    def test_the_configuration_table_has_a_row_for_every_setting_of_the_binary(self):
        proc = harness.run_bloomgate(["--help"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        settings = proc.stdout.split("Settings:", 1)[1]
        names = re.findall(r"^  --([a-z][a-z0-9-]*) ", settings, re.M)
        self.assertGreaterEqual(len(names), 40, settings[:2000])
        with open(os.path.join(REPO, "docs", "operating", "configuration.md"), encoding="utf-8") as f:
            rows = [line for line in f if line.startswith("| `")]
        table = "\n".join(row.split(" | ")[0] for row in rows)
        missing = [name for name in names if f"`{name}`" not in table]
        self.assertEqual(missing, [], "settings bloomgate --help lists without a row in the "
                         "first column of docs/operating/configuration.md's table")


if __name__ == "__main__":
    unittest.main()
