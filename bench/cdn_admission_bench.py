#!/usr/bin/python3
"""CDN admission: a synthetic edge trace through an LRU disk cache (issue 13).

A seeded synthetic trace is replayed through an LRU disk cache under seven
admission policies; every filter decision is a real command to a real
Bloomgate (one server per filter policy, started here on a free port with
--threads 1 --save "" --appendonly no), so commands, round trips, server CPU
(/proc/PID/stat) and MEMORY USAGE are the server's own.

Trace (seed --seed): D distinct objects, 3/4 of them one-hit wonders (one
request at a uniform time); the other 1/4 are ranked r = 1.. and get 2 +
floor(C * r^-alpha) requests (Zipf popularity, alpha 0.9, C 4000 at the
default sizes; one-hit wonders are then ~29% of the requests), spread
uniformly over an active life that starts at a uniform time and lasts Exp(mean
4 h), so popularity has the temporal locality a window is meant for. The trace
is one period of a stationary process: a life that runs past the trace's end
wraps around to its start (an object whose life began before the trace), so
every hour of the trace, the first and the last included, has the same mix of
young and old lives. Sizes are lognormal, median 32 KiB, sigma 1.5, clipped to
[512 B, 64 MiB]. The cache holds --cache-pct (3%) of the distinct bytes of the
whole trace; an admitted miss is one disk write.

Policies (W = --window, one simulated hour by default; errors 1%; capacity:
the most distinct objects in one W for the never-reset filter and the
rotation, n times the most in one generation period for a windowed filter, so
that on a steady trace no filter grows; see run_trace):
  none       admit every miss (no filter)
  forever    one never-reset scalable BF: BF.ADD per miss, admit on 0 (2nd hit)
  rotation   the two-filter recipe: BF.EXISTS prev + BF.ADD cur per miss (2
             round trips), a client timer DEL prev / RENAME cur prev /
             BF.RESERVE cur every W; each filter at error/2
  windowed   BF.RESERVE ... WINDOW W GENERATIONS 4: BF.ADD per miss, admit on 0
  windowed_mid, windowed_long
             the same at WINDOW --mid-window x W (4/3 W) and --long-window x W
             (1.6 W). The rotation keeps a first request for W to 2 W (mean
             1.5 W), a windowed filter of window w and n generations for w to
             w (1 + 1/n) (mean w (1 + 1/(2n)), 1.125 w at n = 4), so at W the
             windowed filter forgets sooner and the rows are not like for
             like. At 4/3 W its mean memory is the rotation's 1.5 W (it keeps
             a first request for 1.33 W to 1.67 W); 1.6 W forgets by 2 W like
             the rotation and never before 1.6 W. The report interpolates the
             windowed filter's hit rate at the rotation's writes saved along
             the three rows, and says whether one of them beats the rotation
             on writes saved, both hit rates and memory at once.
  count3     third hit: CBF.RESERVE ... WINDOW W GENERATIONS 4 and one CBF.INCR
             per miss, admit when its reply (the requests within the window,
             this one included) is >= 3

Time: the server ages windowed filters on its real clock, so simulated time is
compressed by a stated factor and the replay is paced to it (each request is
sent no earlier than its scaled time). A filter only sees the order of the
adds and where the window boundaries fall between them; both are kept (the
report gives the replay's worst lag behind the schedule next to the length of
one generation), so the decisions are those of the uncompressed trace.

Usage (from the repository root):
  bench/cdn_admission_bench.py --bin build/server/bloomgate            # ~9 min, writes
                                         # bench/results/cdn-admission-<date>.md
  bench/cdn_admission_bench.py --smoke --bin build/server/bloomgate --out /tmp/x.md
Python standard library only.
"""

import argparse
import bisect
import collections
import datetime
import math
import os
import random
import socket
import subprocess
import sys
import tempfile
import time

HOUR = 3600.0
POLICIES = ["none", "forever", "rotation", "windowed", "windowed_mid", "windowed_long", "count3"]
FILTER_POLICIES = POLICIES[1:]
LABELS = {
    "none": "no admission (admit every miss)",
    "forever": "never-reset Bloom filter (2nd hit)",
    "rotation": "two-filter rotation recipe (2nd hit)",
    "windowed": "windowed Bloom filter, W (2nd hit)",
    "windowed_mid": "windowed Bloom filter, {mid} W (2nd hit)",
    "windowed_long": "windowed Bloom filter, {long} W (2nd hit)",
    "count3": "windowed counting filter, W (3rd hit)",
}
# The keys whose MEMORY USAGE is the policy's filter memory.
KEYS = {"forever": ["seen"], "rotation": ["cur", "prev"], "windowed": ["seen"],
        "windowed_mid": ["seen"], "windowed_long": ["seen"], "count3": ["hits"]}
# The windowed policies and the INFO command that gives their layers.
WINDOWED = {"windowed": "BF.INFO", "windowed_mid": "BF.INFO", "windowed_long": "BF.INFO",
            "count3": "CBF.INFO"}
# The windowed Bloom rows, shortest window first (the report interpolates
# along them).
BLOOM_ROWS = ["windowed", "windowed_mid", "windowed_long"]


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    """A blocking RESP2 connection that counts its commands and round trips."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.commands = 0
        self.round_trips = 0

    def _line(self):
        while b"\r\n" not in self.buf:
            data = self.s.recv(1 << 16)
            if not data:
                raise ConnectionError("server closed the connection")
            self.buf += data
        head, self.buf = self.buf.split(b"\r\n", 1)
        return head

    def _reply(self):
        head = self._line()
        kind = head[:1]
        if kind == b"-":
            raise RuntimeError(head.decode())
        if kind == b":":
            return int(head[1:])
        if kind == b"$":
            n = int(head[1:])
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.s.recv(1 << 16)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b"*":
            return [self._reply() for _ in range(int(head[1:]))]
        return head[1:]

    def send(self, *args):
        """Sends one command; its reply is read by recv(). The replay sends a
        request's commands to all policies' servers before reading any reply,
        so the servers work at once (each policy still waits for its reply
        before its next command: one round trip per command)."""
        self.s.sendall(encode(*args))
        self.commands += 1
        self.round_trips += 1

    def recv(self):
        return self._reply()

    def call(self, *args):
        self.send(*args)
        return self._reply()


class Server:
    def __init__(self, binary):
        self.tmp = tempfile.TemporaryDirectory(prefix="bloomgate-cdn-bench-")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            [os.path.abspath(binary), "--port", str(self.port), "--bind", "127.0.0.1",
             "--threads", "1", "--save", "", "--appendonly", "no"],
            cwd=self.tmp.name, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.conn = Conn(self.port)
                self.conn.call("PING")
                break
            except (OSError, RuntimeError):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"bloomgate did not start (exit {self.proc.poll()})")
                time.sleep(0.02)
        self.conn.commands = self.conn.round_trips = 0

    def cpu_seconds(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        # utime and stime are fields 14 and 15 of stat(5); fields[0] is field 3.
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.returncode not in (0, -15):
            raise SystemExit(f"bloomgate exited with {self.proc.returncode}")
        self.tmp.cleanup()


def make_trace(rng, hours, distinct, alpha, top, life_mean_h):
    """Returns (requests sorted by time as (t, object), sizes, one-hit share)."""
    span = hours * HOUR
    popular = distinct // 4
    sizes = []
    events = []
    for obj in range(distinct):
        sizes.append(int(min(64 << 20, max(512, rng.lognormvariate(math.log(32 << 10), 1.5)))))
    for r in range(popular):
        count = 2 + int(top * (r + 1) ** -alpha)
        start = rng.uniform(0, span)
        end = start + rng.expovariate(1 / (life_mean_h * HOUR))
        # The trace is one period of a stationary process: a life that runs
        # past the end continues at the start (as an object whose life began
        # before the trace). Clipping it at the end instead crowded all its
        # requests into [start, span): on the 7-day trace the last 6 hours
        # then averaged 314 distinct objects per 15 minutes against 272-287
        # elsewhere (the busiest 441), and the first hours, with no life
        # begun before 0, were sparser (234 against 275-284 on day 1).
        for _ in range(count):
            events.append((rng.uniform(start, end) % span, r))
    for obj in range(popular, distinct):
        events.append((rng.uniform(0, span), obj))
    events.sort()
    counts = collections.Counter(o for _, o in events)
    one_hit = sum(1 for c in counts.values() if c == 1) / len(counts)
    return events, sizes, one_hit


def distinct_per_window(events, window):
    per = collections.defaultdict(set)
    for t, o in events:
        per[int(t // window)].add(o)
    return max(len(s) for s in per.values())


def trace_days(events, window, period, hours):
    """Per simulated day, to show whether the trace is steady from day to day:
    requests; distinct objects per window W (mean, max); distinct objects per
    generation period W/n (mean, max, mean over the day's last 6 hours) and
    the list of them, for counting those over a generation's capacity."""
    days = []
    for d in range(max(1, int(math.ceil(hours / 24)))):
        lo, hi = d * 24 * HOUR, min(hours, (d + 1) * 24) * HOUR
        day = [(t, o) for t, o in events if lo <= t < hi]
        per_w = collections.defaultdict(set)
        per_gen = collections.defaultdict(set)
        for t, o in day:
            per_w[int(t // window)].add(o)
            per_gen[int(t // period)].add(o)
        w = [len(s) for s in per_w.values()]
        gens = [len(per_gen[k]) for k in sorted(per_gen)]
        last = [len(per_gen[k]) for k in per_gen if k * period >= hi - 6 * HOUR]
        days.append(dict(requests=len(day), w_mean=sum(w) / len(w), w_max=max(w),
                         gen_mean=sum(gens) / len(gens), gen_max=max(gens),
                         gen_last6=sum(last) / len(last), gens=gens))
    return days


class Lru:
    def __init__(self, capacity):
        self.capacity = capacity
        self.used = 0
        self.items = collections.OrderedDict()

    def hit(self, obj):
        if obj in self.items:
            self.items.move_to_end(obj)
            return True
        return False

    def insert(self, obj, size):
        if size > self.capacity:
            return
        self.items[obj] = size
        self.used += size
        while self.used > self.capacity:
            _, s = self.items.popitem(last=False)
            self.used -= s


def info_dict(reply):
    return {k.decode(): v for k, v in zip(reply[0::2], reply[1::2])}


def day_samples(series, day, from_hour=None):
    """The samples (hour, bytes, ...) of simulated day `day` (hours (24d, 24d + 24]),
    those before `from_hour` left out."""
    lo = day * 24 if from_hour is None else max(day * 24, from_hour)
    return [s for s in series if lo < s[0] <= (day + 1) * 24]


def mean_peak(samples):
    vals = [s[1] for s in samples]
    return (sum(vals) / len(vals), max(vals)) if vals else (0.0, 0)


def interpolate(x, x0, y0, x1, y1):
    """y at x on the line through (x0, y0) and (x1, y1); None outside [x0, x1]."""
    if x0 == x1 or not min(x0, x1) <= x <= max(x0, x1):
        return None
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def interpolate_rows(rows, saved):
    """Object and byte hit rate at `saved` writes saved, on the broken line
    through the rows (in window order): between the first two adjacent rows
    whose writes saved bracket it; None where none do."""
    for a, b in zip(rows, rows[1:]):
        got = {k: interpolate(saved, a["saved"], a[k], b["saved"], b[k]) for k in ("ohr", "bhr")}
        if got["ohr"] is not None:
            return got
    return {"ohr": None, "bhr": None}


def beats_rotation(x, rot):
    """The issue's comparison on every count at once: writes saved, object and
    byte hit rate at least the rotation's, mean and peak memory at most."""
    return (x["saved"] >= rot["saved"] and x["ohr"] >= rot["ohr"] and x["bhr"] >= rot["bhr"]
            and x["mem"][0] <= rot["mem"][0] and x["mem"][1] <= rot["mem"][1])


def git_head():
    """The commit the bench ran from (its server code is this tree's), or '?'."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def labels(args):
    return {p: LABELS[p].format(mid=f"{args.mid_window:.3g}", long=f"{args.long_window:g}")
            for p in POLICIES}


def run_trace(args, name, hours, distinct, factor, servers, out):
    rng = random.Random(args.seed + hours)
    t0 = time.monotonic()
    events, sizes, one_hit = make_trace(rng, hours, distinct, args.alpha, args.top, args.life)
    gen_s = time.monotonic() - t0
    window = args.window * HOUR
    n = args.generations
    scale = {"windowed": 1.0, "windowed_mid": args.mid_window,
             "windowed_long": args.long_window, "count3": 1.0}
    # The rotation's filter holds one window's distinct objects: capacity is
    # the trace's most in one window W. A windowed filter's generation holds
    # one period's (W/n): an object requested in several periods is recorded
    # in each, so the periods of a window hold more than the window (on the
    # default traces 4 x 765 = 3,060 against 2,536 per W over 24 h, 4 x 279 =
    # 1,116 against 1,010 over 7 days). Sized from the busiest window, a
    # generation overflows capacity/n and grows a layer in most periods of a
    # steady trace; so each windowed filter's capacity is n times the most
    # distinct objects in one of its periods, and neither recipe grows.
    cap = distinct_per_window(events, window)
    wcap = {p: n * distinct_per_window(events, window * k / n) for p, k in scale.items()}
    days = trace_days(events, window, window / n, hours)
    distinct_bytes = sum(sizes)
    cache_bytes = int(distinct_bytes * args.cache_pct / 100)
    print(f"[{name}] {len(events)} requests, {distinct} objects ({one_hit:.1%} one-hit), "
          f"cache {cache_bytes / 1e6:.1f} MB, filter capacity {cap} (rotation), "
          f"{', '.join(f'{p} {c}' for p, c in wcap.items())}, "
          f"W = {window / factor:.3f} s real (trace built in {gen_s:.1f} s)", flush=True)

    conns = {p: Conn(servers[p].port) for p in servers}
    for c in servers.values():
        c.conn.call("FLUSHALL")
    err = args.error
    conns["forever"].call("BF.RESERVE", "seen", err, cap)
    conns["rotation"].call("BF.RESERVE", "cur", err / 2, cap)
    for p, k in scale.items():
        reserve = "CBF.RESERVE" if p == "count3" else "BF.RESERVE"
        conns[p].call(reserve, KEYS[p][0], err, wcap[p], "WINDOW",
                      f"{window * k / factor:.3f}", "GENERATIONS", n)
    # The server's window in ms (WINDOW takes ms resolution) and its period.
    window_ms = {p: conns[p].call(cmd, KEYS[p][0], "WINDOW")[0] for p, cmd in WINDOWED.items()}
    period_ms = {p: -(-w // n) for p, w in window_ms.items()}
    # A windowed filter's generation 0 starts on a whole period of the server's
    # window clock, so it is shorter than a period. Start the replay on the
    # W filter's next boundary: its generations then turn over together with
    # the rotation's client timer (every 4th boundary), like for like.
    age = conns["windowed"].call("BF.INFO", "seen", "AGE")[0]
    time.sleep(max(0, period_ms["windowed"] - age) / 1000 + 0.001)
    for c in conns.values():
        c.commands = c.round_trips = 0
    timer_cmds = collections.Counter()
    caches = {p: Lru(cache_bytes) for p in POLICIES}
    st = {p: collections.Counter() for p in POLICIES}
    cpu0 = {p: servers[p].cpu_seconds() for p in servers}
    # Per policy: (simulated hour, bytes); windowed policies add (layers, live
    # generations): more layers than generations means one of them grew.
    memory = {p: [] for p in servers}

    def sample(hour):
        # Memory probes are not counted as per-miss commands.
        saved = {p: (c.commands, c.round_trips) for p, c in conns.items()}
        for p in servers:
            total = sum(conns[p].call("MEMORY", "USAGE", k) or 0 for k in KEYS[p])
            if p in WINDOWED:
                info = info_dict(conns[p].call(WINDOWED[p], KEYS[p][0]))
                memory[p].append((hour, total, info["Number of filters"],
                                  len(info["Generation items"])))
            else:
                memory[p].append((hour, total))
        for p, (c, r) in saved.items():
            conns[p].commands, conns[p].round_trips = c, r

    def rotate():
        c = conns["rotation"]
        saved = (c.commands, c.round_trips)
        c.call("DEL", "prev")
        c.call("RENAME", "cur", "prev")
        c.call("BF.RESERVE", "cur", err / 2, cap)
        timer_cmds["rotation"] += 3
        c.commands, c.round_trips = saved

    step = args.sample_min * 60
    next_rotate = window
    next_sample = step
    has_prev = False
    lags = []
    start = time.monotonic()
    sample(0.0)
    for t, obj in events:
        while t >= next_rotate:
            rotate()
            has_prev = True
            next_rotate += window
        while t >= next_sample:
            sample(next_sample / HOUR)
            next_sample += step
        due = start + t / factor
        now = time.monotonic()
        if now < due:
            time.sleep(due - now)
            lags.append(0.0)
        else:
            lags.append(now - due)
        size = sizes[obj]
        key = str(obj)
        missed = []
        for p in POLICIES:
            s = st[p]
            s["requests"] += 1
            s["bytes"] += size
            if caches[p].hit(obj):
                s["hits"] += 1
                s["hit_bytes"] += size
                continue
            s["misses"] += 1
            missed.append(p)
            # Each policy's first command goes out before any reply is read.
            if p == "rotation":
                if has_prev:
                    conns[p].send("BF.EXISTS", "prev", key)
                else:
                    conns[p].send("BF.ADD", "cur", key)
            elif p == "count3":
                conns[p].send("CBF.INCR", "hits", key)
            elif p != "none":
                conns[p].send("BF.ADD", "seen", key)
        for p in missed:
            s = st[p]
            if p == "none":
                admit = True
            elif p == "rotation":
                c = conns[p]
                if has_prev:
                    in_prev = c.recv() == 1
                    admit = (c.call("BF.ADD", "cur", key) == 0) or in_prev
                else:
                    admit = c.recv() == 0
            elif p == "count3":
                admit = conns[p].recv()[0] >= 3
            else:
                admit = conns[p].recv() == 0
            if admit:
                s["writes"] += 1
                s["write_bytes"] += size
                caches[p].insert(obj, size)
    replay_s = time.monotonic() - start
    while next_sample <= hours * HOUR:
        sample(next_sample / HOUR)
        next_sample += step
    cpu = {p: servers[p].cpu_seconds() - cpu0[p] for p in servers}
    for p, c in conns.items():
        st[p]["commands"] = c.commands
        st[p]["round_trips"] = c.round_trips
        c.s.close()
    lags.sort()
    p50_lag = lags[len(lags) // 2] if lags else 0.0
    p99_lag = lags[int(len(lags) * 0.99)] if lags else 0.0
    max_lag = lags[-1] if lags else 0.0
    gen_real = period_ms["windowed"] / 1e3
    print(f"[{name}] replay {replay_s:.1f} s, lag p50 {p50_lag * 1e3:.2f} ms, p99 {p99_lag * 1e3:.2f} ms, "
          f"max {max_lag * 1e3:.2f} ms (one generation = {gen_real * 1e3:.0f} ms)", flush=True)

    label = labels(args)
    mid, lng = f"{args.mid_window:.3g}", f"{args.long_window:g}"
    base = st["none"]
    whole = {p: mean_peak([s for s in memory[p] if s[0] > 0]) for p in servers}
    out.append(f"## {name}: {hours:g} h of arrivals\n")
    out.append(f"- {len(events):,} requests to {distinct:,} distinct objects, "
               f"{one_hit:.1%} of them one-hit wonders; {distinct_bytes / 1e9:.2f} GB distinct; "
               f"cache {args.cache_pct:g}% of that ({cache_bytes / 1e6:.1f} MB, LRU by bytes)")
    out.append(f"- filter capacity: never-reset and rotation {cap:,} (the most distinct objects "
               f"in one window W = {args.window:g} h); windowed {n} x the most distinct objects in "
               f"one of their periods (window/{n}): W {wcap['windowed']:,}, {mid} W "
               f"{wcap['windowed_mid']:,}, {lng} W {wcap['windowed_long']:,}, counting W "
               f"{wcap['count3']:,}; error {err:g}, {n} generations")
    out.append(f"- time compressed {factor:g}x: W = {window_ms['windowed'] / 1e3:.3f} s real, one "
               f"generation = {gen_real * 1e3:.0f} ms ({mid} W: {period_ms['windowed_mid']} ms, "
               f"{lng} W: {period_ms['windowed_long']} ms); replay {replay_s:.0f} s; lag behind "
               f"schedule p50 {p50_lag * 1e3:.2f} ms, p99 {p99_lag * 1e3:.2f} ms, worst {max_lag * 1e3:.2f} ms")
    out.append(f"- filter memory: MEMORY USAGE every {args.sample_min:g} simulated minutes "
               f"(rotation: both filters), mean and peak over the samples after hour 0\n")
    out.append("| policy | disk writes | writes saved | bytes written saved | object hit rate "
               "| Δ vs none | byte hit rate | Δ vs none | commands / miss | round trips / miss "
               "| server CPU µs / miss | filter memory mean / peak, B |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    results = {}
    for p in POLICIES:
        s = st[p]
        ohr = s["hits"] / s["requests"]
        bhr = s["hit_bytes"] / s["bytes"]
        saved = 1 - s["writes"] / base["writes"]
        bsaved = 1 - s["write_bytes"] / base["write_bytes"]
        misses = max(1, s["misses"])
        cmds = s["commands"] / misses if p != "none" else 0
        rts = s["round_trips"] / misses if p != "none" else 0
        cpu_us = cpu[p] / misses * 1e6 if p in cpu else 0
        results[p] = dict(saved=saved, ohr=ohr, bhr=bhr, cmds=cmds, rts=rts, cpu=cpu_us)
        timer = (f" (+{timer_cmds[p]} timer commands)" if timer_cmds[p] else "")
        mem = (f"{whole[p][0]:,.0f} / {whole[p][1]:,}" if p in whole else "—")
        out.append(f"| {label[p]} | {s['writes']:,} | {saved:.1%} | {bsaved:.1%} | {ohr:.2%} "
                   f"| {100 * (ohr - base['hits'] / base['requests']):+.2f} pp | {bhr:.2%} "
                   f"| {100 * (bhr - base['hit_bytes'] / base['bytes']):+.2f} pp "
                   f"| {cmds:.2f}{timer} | {rts:.2f} | "
                   + (f"{cpu_us:.1f}" if p in cpu else "—") + f" | {mem} |")
    out.append("")
    rot = results["rotation"]
    for p in BLOOM_ROWS:
        results[p]["mem"] = whole[p]
    rot["mem"] = whole["rotation"]
    interp = interpolate_rows([results[p] for p in BLOOM_ROWS], rot["saved"])
    if interp["ohr"] is not None:
        out.append(f"Windowed filter between W, {mid} W and {lng} W, interpolated linearly "
                   f"(between the two rows on either side) to the rotation's {rot['saved']:.1%} "
                   f"writes saved: object hit rate {interp['ohr']:.2%} (rotation "
                   f"{rot['ohr']:.2%}), byte hit rate {interp['bhr']:.2%} (rotation "
                   f"{rot['bhr']:.2%}).\n")
    if hours <= 48:
        out.append("Filter memory at each simulated hour (MEMORY USAGE, bytes):\n")
        out.append("| simulated hour | " + " | ".join(label[p] for p in servers) + " |")
        out.append("|---|" + "---|" * len(servers))
        per_hour = int(round(60 / args.sample_min))
        for i in range(0, len(memory["windowed"]), per_hour):
            h = memory["windowed"][i][0]
            out.append(f"| {h:g} | " + " | ".join(f"{memory[p][i][1]:,}" for p in servers) + " |")
        out.append("")
    gen_cap = cap / n
    out.append(f"Per simulated day, the trace: requests; distinct objects per window W; distinct "
               f"objects per generation period W/{n} (aligned with the W filter's generations), "
               f"mean, most and the mean over the day's last 6 hours; and the periods with more "
               f"than the busiest window's distinct objects / {n} ({cap:,}/{n} = {gen_cap:,.0f}: a "
               f"generation's share, were the W filter's capacity that of the rotation; its "
               f"capacity is {wcap['windowed']:,}, {wcap['windowed'] // n:,} per generation):\n")
    out.append("| day | requests | distinct per W, mean / most | distinct per W/n, mean / most "
               "| last 6 h, mean per W/n | periods over (most per W)/n |")
    out.append("|---|---|---|---|---|---|")
    for d, x in enumerate(days):
        over = sum(1 for g in x["gens"] if g > gen_cap)
        out.append(f"| {d + 1} | {x['requests']:,} | {x['w_mean']:,.0f} / {x['w_max']:,} "
                   f"| {x['gen_mean']:,.0f} / {x['gen_max']:,} | {x['gen_last6']:,.0f} "
                   f"| {over} of {len(x['gens'])} |")
    out.append("")
    out.append("Per simulated day, each filter's MEMORY USAGE (mean / peak, bytes):\n")
    out.append("| day | " + " | ".join(label[p] for p in servers) + " |")
    out.append("|---|" + "---|" * len(servers))
    for d in range(len(days)):
        cells = []
        for p in servers:
            m, pk = mean_peak(day_samples(memory[p], d))
            cells.append(f"{m:,.0f} / {pk:,}")
        out.append(f"| {d + 1} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("Windowed filters' growth per simulated day: the share of samples in which a live "
               "generation had grown a second layer (more layers than live generations, from "
               "BF.INFO / CBF.INFO), the day's mean over the other samples, and the peak with its "
               "layers in live generations:\n")
    out.append("| day | " + " | ".join(label[p] for p in WINDOWED) + " |")
    out.append("|---|" + "---|" * len(WINDOWED))
    for d in range(len(days)):
        cells = []
        for p in WINDOWED:
            ss = day_samples(memory[p], d)
            grown = [s for s in ss if s[2] > s[3]]
            flat = [s for s in ss if s[2] <= s[3]]
            top = max(ss, key=lambda s: s[1])
            cells.append(f"{len(grown) / len(ss):.0%} grown; others {mean_peak(flat)[0]:,.0f}; "
                         f"peak {top[1]:,} ({top[2]} in {top[3]}, hour {top[0]:g})")
        out.append(f"| {d + 1} | " + " | ".join(cells) + " |")
    out.append("")
    # Sanity (the smoke run's check): every filter decision was a real
    # command, one per miss for the one-command policies, two for the
    # rotation once a previous filter exists; a filter never adds writes.
    for p in FILTER_POLICIES:
        s = st[p]
        if s["misses"] == 0 or s["writes"] > base["writes"]:
            raise SystemExit(f"[{name}] {p}: {s['misses']} misses, {s['writes']} writes")
        want = (1, 2) if p == "rotation" else (1, 1)
        if not want[0] <= results[p]["cmds"] <= want[1]:
            raise SystemExit(f"[{name}] {p}: {results[p]['cmds']:.2f} commands per miss")
    results["memory"] = memory
    results["whole"] = whole
    results["interp"] = interp
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.environ.get("BLOOMGATE_BIN", "build/server/bloomgate"))
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--objects-per-day", type=int, default=45_000,
                    help="distinct objects per simulated day, 24 h trace")
    ap.add_argument("--week-objects-per-day", type=int, default=20_000,
                    help="distinct objects per simulated day, 7-day trace")
    ap.add_argument("--alpha", type=float, default=0.9, help="Zipf exponent")
    ap.add_argument("--top", type=float, default=4000, help="Zipf scale C")
    ap.add_argument("--life", type=float, default=4.0, help="mean active life, hours")
    ap.add_argument("--cache-pct", type=float, default=3.0)
    ap.add_argument("--window", type=float, default=1.0, help="W, hours")
    ap.add_argument("--long-window", type=float, default=1.6,
                    help="the second windowed Bloom filter's window, in W")
    ap.add_argument("--mid-window", type=float,
                    help="the middle windowed Bloom filter's window, in W (default: the window "
                         "whose mean memory of a first request, w (1 + 1/(2n)), is the "
                         "rotation's 1.5 W: 4/3 at n = 4)")
    ap.add_argument("--generations", type=int, default=4)
    ap.add_argument("--error", type=float, default=0.01)
    ap.add_argument("--sample-min", type=float, default=5,
                    help="simulated minutes between MEMORY USAGE samples (divides 60)")
    ap.add_argument("--day-factor", type=float, default=600,
                    help="time compression, 24 h trace (600: one hour = 6 s)")
    ap.add_argument("--week-factor", type=float, default=1800,
                    help="time compression, 7-day trace (1800: one hour = 2 s)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, a few seconds")
    ap.add_argument("--out", help="report file (default bench/results/cdn-admission-<date>.md)")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    if args.mid_window is None:
        args.mid_window = 1.5 / (1 + 0.5 / args.generations)
    traces = [("24 h", 24, args.objects_per_day, args.day_factor),
              ("7 days", 168, args.week_objects_per_day * 7, args.week_factor)]
    if args.smoke:
        args.top = 100
        args.sample_min = 60
        traces = [("smoke 24 h", 24, 1500, 24 * HOUR / 1.5),
                  ("smoke 7 days", 168, 7 * 300, 168 * HOUR / 2.0)]
    servers = {}
    lines = []
    started = datetime.datetime.now(datetime.timezone.utc)
    t_start = time.monotonic()
    load_start = os.getloadavg()
    try:
        for p in FILTER_POLICIES:
            servers[p] = Server(args.bin)
        results = {}
        for name, hours, distinct, factor in traces:
            results[name] = run_trace(args, name, hours, distinct, factor, servers, lines)
    finally:
        for s in servers.values():
            s.stop()

    n = args.generations
    mid, lng = f"{args.mid_window:.3g}", f"{args.long_window:g}"
    tags = {"windowed": "windowed W", "windowed_mid": f"windowed {mid} W",
            "windowed_long": f"windowed {lng} W"}
    load_end = os.getloadavg()
    head = [f"# CDN admission benchmark ({datetime.date.today()})\n",
            f"Command: `{' '.join(sys.argv)}`; seed {args.seed}; started {started:%Y-%m-%d %H:%M} "
            f"UTC, {time.monotonic() - t_start:.0f} s; tree {git_head()}; {os.cpu_count()} cores "
            f"shared with other jobs, load average (1 min) {load_start[0]:.1f} at the start, "
            f"{load_end[0]:.1f} at the end.\n",
            "Trace: Zipf popularity (alpha %g, scale C %g) over the 1/4 of objects that repeat, "
            "3/4 one-hit wonders, each popular object active for Exp(mean %g h), lives wrapped "
            "around the trace (stationary); sizes lognormal (median 32 KiB, sigma 1.5, clipped "
            "to [512 B, 64 MiB]). See the script's docstring."
            % (args.alpha, args.top, args.life) + "\n",
            f"Windowed rows: W = {args.window:g} h, {n} generations. The rotation keeps a first "
            f"request for W to 2 W (mean 1.5 W); a windowed filter of window w for w to "
            f"{1 + 1 / n:g} w (mean {1 + 0.5 / n:g} w): at W for W to {1 + 1 / n:g} W, at {mid} W "
            f"(the window whose mean memory is the rotation's 1.5 W) for {args.mid_window:.3g} W "
            f"to {args.mid_window * (1 + 1 / n):.3g} W, at {lng} W for {lng} W to "
            f"{args.long_window * (1 + 1 / n):g} W (forgotten by the time the rotation forgets "
            f"at the latest).\n",
            "## Targets\n",
            "| target | measured | met |", "|---|---|---|"]

    def row(text, measured, ok):
        head.append(f"| {text} | {measured} | {'yes' if ok else 'no'} |")

    for name, _, _, _ in traces:
        r = results[name]
        rot = r["rotation"]
        rm, rp = rot["mem"]
        for p in BLOOM_ROWS:
            x, tag = r[p], tags[p]
            row(f"{name}: {tag} saves >= the rotation's disk writes",
                f"{x['saved']:.1%} vs {rot['saved']:.1%}", x["saved"] >= rot["saved"])
            row(f"{name}: {tag} object / byte hit rate >= rotation's",
                f"{x['ohr']:.2%} / {x['bhr']:.2%} vs {rot['ohr']:.2%} / {rot['bhr']:.2%}",
                x["ohr"] >= rot["ohr"] and x["bhr"] >= rot["bhr"])
            m, pk = x["mem"]
            row(f"{name}: {tag} filter memory <= rotation's (mean, peak)",
                f"{m:,.0f}, {pk:,} vs {rm:,.0f}, {rp:,} B", m <= rm and pk <= rp)
        winners = [tags[p] for p in BLOOM_ROWS if beats_rotation(r[p], rot)]
        row(f"{name}: one window beats the rotation on all four (writes saved, object and byte "
            f"hit rate, memory)", ", ".join(winners) if winners else "none of W, "
            f"{mid} W, {lng} W", bool(winners))
        ip = r["interp"]
        if ip["ohr"] is not None:
            row(f"{name}: windowed (W..{lng} W interpolated) at the rotation's writes saved: "
                f"object / byte hit rate >= rotation's",
                f"{ip['ohr']:.2%} / {ip['bhr']:.2%} vs {rot['ohr']:.2%} / {rot['bhr']:.2%}",
                ip["ohr"] >= rot["ohr"] and ip["bhr"] >= rot["bhr"])
        row(f"{name}: commands per miss 1 (rotation 2): windowed W, {mid} W, {lng} W, counting",
            ", ".join(f"{r[p]['cmds']:.2f}" for p in WINDOWED) + f" vs {rot['cmds']:.2f}",
            max(r[p]["cmds"] for p in WINDOWED) <= 1.0)
    week = results[traces[1][0]]
    mem = week["memory"]
    for p, tag in list(tags.items()) + [("count3", "windowed counting W")]:
        m1, p1 = mean_peak(day_samples(mem[p], 0))
        m7, p7 = mean_peak(day_samples(mem[p], 6))
        m1s, _ = mean_peak(day_samples(mem[p], 0, from_hour=2))
        daily = [mean_peak(day_samples(mem[p], d))[0] for d in range(7)]
        flat = abs(m7 - m1) / m1 if m1 else float("inf")
        row(f"7 days: {tag} memory day 1 vs day 7 within 5% (daily mean)",
            f"{m1:,.0f} vs {m7:,.0f} B ({(m7 - m1) / m1:+.1%}); day 1 from hour 2 {m1s:,.0f} B "
            f"({(m7 - m1s) / m1s:+.1%}); days 1-7 {min(daily):,.0f}-{max(daily):,.0f} B; peaks "
            f"{p1:,} vs {p7:,} B", flat <= 0.05)
    f1 = mean_peak(day_samples(mem["forever"], 0))[0]
    f7 = mean_peak(day_samples(mem["forever"], 6))[0]
    head.append(f"| 7 days: (for scale) never-reset filter memory day 1 vs day 7 (daily mean) | "
                f"{f1:,.0f} vs {f7:,.0f} B ({f7 / f1:.1f}x) | — |")
    head.append("")
    report = "\n".join(head + lines)
    print(report)
    if args.no_write:
        return
    path = args.out or f"bench/results/cdn-admission-{datetime.date.today()}.md"
    with open(path, "w") as f:
        f.write(report + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
