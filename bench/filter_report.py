#!/usr/bin/python3
"""Turns filter_bench's JSON output into a markdown report of ratios.

Usage:
  bench/filter_report.py RESULT.json [--out REPORT.md] [--command "how it was run"]
                         [--expect LIST]

--expect LIST (the CI smoke run): LIST is filter_bench's --benchmark_list_tests
output for the same flags; every benchmark named there must have a result row
with iterations and a positive time, else the exit status is 1.

Every figure is nanoseconds of CPU time per item (1e9 / items_per_second), the
median over the repetitions in the file; the spread (min..max) is shown where
it matters. Every target is judged on a ratio of two rows of the same run.
Standard library only.
"""

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time

SUFFIX = re.compile(r"/(iterations|repeats|min_time|real_time)(:[^/]*)?")


def load(path):
    with open(path) as f:
        data = json.load(f)
    runs = {}
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration":
            continue
        name = SUFFIX.sub("", b.get("run_name", b["name"]))
        if b.get("error_occurred"):
            runs.setdefault(name, {"error": b.get("error_message", "error"), "ns": [], "counters": {}})
            continue
        entry = runs.setdefault(name, {"ns": [], "counters": {}})
        ips = b.get("items_per_second")
        if ips:
            entry["ns"].append(1e9 / ips)
        for key, value in b.items():
            if isinstance(value, (int, float)) and key not in (
                    "iterations", "real_time", "cpu_time", "items_per_second",
                    "repetitions", "repetition_index", "threads", "family_index",
                    "per_family_instance_index"):
                entry["counters"].setdefault(key, []).append(value)
    return data.get("context", {}), runs


def missing_rows(path, list_path):
    """Benchmarks named in list_path (one per line, as --benchmark_list_tests
    prints them) without a usable result in the JSON at path: absent, errored,
    zero iterations or a non-positive time. Empty list: the list itself is empty."""
    with open(list_path) as f:
        expected = {SUFFIX.sub("", line.strip()) for line in f if line.strip()}
    if not expected:
        return [f"(no benchmark names in {list_path})"]
    with open(path) as f:
        data = json.load(f)
    good = set()
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        if b.get("iterations", 0) > 0 and b.get("real_time", 0) > 0 and b.get("cpu_time", 0) > 0:
            good.add(SUFFIX.sub("", b.get("run_name", b["name"])))
    return sorted(expected - good)


class Figures:
    def __init__(self, runs):
        self.runs = runs

    def ns(self, name):
        """(median, min, max) ns/item, or None."""
        entry = self.runs.get(name)
        if not entry or not entry["ns"]:
            return None
        v = entry["ns"]
        return statistics.median(v), min(v), max(v)

    def counter(self, name, key):
        entry = self.runs.get(name)
        if not entry or key not in entry["counters"]:
            return None
        return statistics.median(entry["counters"][key])

    def counter_spread(self, name, key):
        """(median, min, max) of a counter over the repetitions, or None."""
        entry = self.runs.get(name)
        if not entry or key not in entry["counters"]:
            return None
        v = entry["counters"][key]
        return statistics.median(v), min(v), max(v)

    def ratio(self, num, den):
        """(median ratio, low, high): low/high pair the extremes, so the range
        covers every pairing of repetitions."""
        a, b = self.ns(num), self.ns(den)
        if a is None or b is None:
            return None
        return a[0] / b[0], a[1] / b[2], a[2] / b[1]


def fmt_ns(v):
    if v is None:
        return "—"
    m = v[0]
    return f"{m:.1f}" if m < 100 else f"{m:.0f}"


def fmt_spread(v):
    if v is None:
        return "—"
    m, lo, hi = v
    if m == 0:
        return fmt_ns(v)
    return f"{fmt_ns(v)} ({lo:.0f}–{hi:.0f})" if m >= 100 else f"{m:.1f} ({lo:.1f}–{hi:.1f})"


def fmt_ratio(r, digits=2):
    if r is None:
        return "—"
    m, lo, hi = r
    return f"{m:.{digits}f}x ({lo:.{digits}f}–{hi:.{digits}f})"


def verdict(ok):
    if ok is None:
        return "not measured"
    return "**met**" if ok else "**missed**"


def footprints_of(runs):
    sizes = []
    for name in runs:
        if name.startswith("memory/chase/"):
            sizes.append(name.rsplit("/", 1)[1])

    def key(label):
        m = re.match(r"(\d+)(KiB|MiB|GiB)", label)
        return int(m.group(1)) * {"KiB": 1, "MiB": 1024, "GiB": 1024 * 1024}[m.group(2)]
    return sorted(sizes, key=key)


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)


def build_report(context, runs, command):
    f = Figures(runs)
    sizes = footprints_of(runs)
    lines = []
    w = lines.append
    date = context.get("date", time.strftime("%Y-%m-%d %H:%M:%S"))
    w("# Filter microbenchmarks\n")
    w(f"- date: {date}")
    w(f"- machine: {context.get('num_cpus', os.cpu_count())} CPUs, {cpu_model()}, "
      f"{context.get('mhz_per_cpu', '?')} MHz; caches: " + ", ".join(
          f"L{c['level']} {c['type']} {c['size'] // 1024} KiB (shared by {c.get('num_sharing', 1)})"
          for c in context.get("caches", [])))
    w(f"- kernel: {platform.release()}; transparent huge pages: "
      f"`{context.get('transparent_hugepage', '?')}`")
    w(f"- load average at start: {context.get('load_avg', '?')} (other jobs share this machine)")
    w(f"- library build: {context.get('library_build_type', '?')} "
      "(Debian's libbenchmark; only its timing loop is affected, not the code measured)")
    w(f"- largest footprint: {sizes[-1] if sizes else '?'}; items added to a lookup filter: "
      f"at most {int(context.get('max_fill', 0)):,} (column `fill` in the JSON); layered "
      f"filters hold {int(context.get('layer_items', 0)):,} items in total")
    w(f"- command: `{command}`")
    w("")
    w("All figures: nanoseconds of CPU time per item, median of the repetitions "
      "(min–max in brackets where shown). `single` = one item at a time with LFENCE after "
      "each (latency); `loop` = independent items back to back (the CPU overlaps them); "
      "`batchN` = N items hashed, then N lines prefetched, then probed.\n")

    # ---- Targets first.
    w("## Issue-5 targets measured here\n")
    big = sizes[-1] if sizes else None
    rows = []
    paired = [s for s in sizes if f"paired/{s}" in runs]
    if paired:
        pf = paired[-1]
        for kind in ("neg", "pos"):
            r = f.counter_spread(f"paired/{pf}", f"single_{kind}_vs_chase")
            rows.append([f"3a. lookup / dependent miss at {pf}, paired ({kind})", "≤ 1.2x",
                         fmt_ratio(r), verdict(r and r[0] <= 1.2)])
        for kind in ("neg", "pos"):
            r = f.counter_spread(f"paired/{pf}", f"batch100_{kind}_vs_single")
            rows.append([f"3b. batch100 / single lookup at {pf}, paired ({kind})", "≤ 0.15x",
                         fmt_ratio(r), verdict(r and r[0] <= 0.15)])
    if big:
        for kind in ("neg", "pos"):
            r = f.ratio(f"blocked/lookup_{kind}/single/{big}", f"memory/chase/{big}")
            rows.append([f"3a. lookup at {big} / dependent miss ({kind})",
                         "≤ 1.2x", fmt_ratio(r), verdict(r and r[0] <= 1.2)])
        for kind in ("neg", "pos"):
            best = None
            for mode in ("batch16", "batch100"):
                r = f.ratio(f"blocked/lookup_{kind}/{mode}/{big}", f"blocked/lookup_{kind}/single/{big}")
                if r and (best is None or r[0] < best[1][0]):
                    best = (mode, r)
            if best:
                rows.append([f"3b. batched ({best[0]}) / single lookup at {big} ({kind})", "≤ 0.15x",
                             fmt_ratio(best[1]), verdict(best[1][0] <= 0.15)])
        for kind in ("neg", "pos"):
            r = f.ratio(f"blocked_2m_pages/lookup_{kind}/single/{big}", f"memory/chase_2m_pages/{big}")
            if r:
                rows.append([f"3a. with 2 MiB pages: lookup at {big} / dependent miss ({kind})", "≤ 1.2x",
                             fmt_ratio(r), verdict(r[0] <= 1.2)])
            r = f.ratio(f"blocked_2m_pages/lookup_{kind}/batch100/{big}",
                        f"blocked_2m_pages/lookup_{kind}/single/{big}")
            if r:
                rows.append([f"3b. with 2 MiB pages: batch100 / single at {big} ({kind})", "≤ 0.15x",
                             fmt_ratio(r), verdict(r[0] <= 0.15)])
    small = sizes[0] if sizes else None
    if small:
        for kind in ("neg", "pos"):
            for mode in ("loop", "single"):
                v = f.ns(f"blocked/lookup_{kind}/{mode}/{small}")
                rows.append([f"3c. lookup in {small} (fits L2), {mode} ({kind})", "≤ 10 ns",
                             fmt_spread(v) + " ns", verdict(v and v[0] <= 10)])
    for exp in ("exp2", "exp1"):
        for mode in ("single", "loop"):
            r = f.counter_spread(f"paired/layers/{exp}", f"L16_vs_L1_{mode}")
            rows.append([f"4. negative lookup, 16 layers / 1 layer, {exp}, {mode}, paired", "≤ 2x",
                         fmt_ratio(r), verdict(r and r[0] <= 2)])
        r = f.counter_spread(f"paired/layers/{exp}", "textbook_L16_vs_L1_single")
        rows.append([f"4. (reference) textbook scalable, 16 / 1 layer, {exp}, single, paired", "≈ 16x",
                     fmt_ratio(r), ""])
    for exp in ("exp2", "exp1"):
        for mode in ("single", "loop"):
            r = f.ratio(f"layers/lookup_neg/{mode}/{exp}/L16", f"layers/lookup_neg/{mode}/{exp}/L1")
            rows.append([f"4. negative lookup, 16 layers / 1 layer, {exp}, {mode}", "≤ 2x",
                         fmt_ratio(r), verdict(r and r[0] <= 2)])
        r = f.ratio(f"textbook_layers/lookup_neg/single/{exp}/L16",
                    f"textbook_layers/lookup_neg/single/{exp}/L1")
        rows.append([f"4. (reference) textbook scalable, 16 / 1 layer, {exp}, single", "≈ 16x",
                     fmt_ratio(r), ""])
    for mode in ("single", "loop"):
        r = f.ratio(f"keyspace/scalable/lookup_neg/{mode}/100000", f"keyspace/scalable/lookup_neg/{mode}/1")
        if r:
            rows.append([f"5. (cause, library level) lookup in 1 of 100,000 filters / in 1 of 1, {mode}",
                         "", fmt_ratio(r), "see the server results"])
    for p in ("0.01", "0.001", "0.0001"):
        name = f"accuracy/scalable_nonscaling/p={p}"
        ratio = f.counter(name, "ratio_to_optimum")
        fp = f.counter(name, "fp_measured")
        bpi = f.counter(name, "bits_per_item")
        if ratio is not None:
            rows.append([f"6. bits/item vs optimum at measured FP, p={float(p):.2%}", "≤ 1.15x",
                         f"{ratio:.3f}x ({bpi:.2f} bits, FP {fp:.4%})", verdict(ratio <= 1.15)])
    w(table(["target", "bound", "measured", "verdict"], rows))
    w("")

    w("`paired` rows alternate blocks of 2048 operations of each kind inside one benchmark "
      "(timed on the thread's CPU clock), so numerator and denominator are measured within "
      "milliseconds of each other; the other rows compare benchmarks run minutes apart, which "
      "on a shared machine adds the load drift between them.\n")
    if paired:
        w("### Paired rows (ns per operation)\n")
        keys = ["chase_ns", "single_neg_ns", "single_pos_ns", "loop_neg_ns", "batch100_neg_ns",
                "batch100_pos_ns"]
        prow = []
        for s in paired:
            prow.append([s] + [fmt_ns(f.counter_spread(f"paired/{s}", k)) for k in keys])
        w(table(["footprint", "dependent miss", "single neg", "single pos", "loop neg",
                 "batch100 neg", "batch100 pos"], prow))
        w("")

    # ---- References.
    w("## Memory references (same footprints, same allocator)\n")
    rows = []
    for s in sizes:
        rows.append([s, fmt_spread(f.ns(f"memory/chase/{s}")), fmt_ns(f.ns(f"memory/chase_x16/{s}")),
                     fmt_ns(f.ns(f"memory/chase_2m_pages/{s}"))])
    w(table(["footprint", "dependent miss (4 KiB pages)", "16 independent chases, per miss",
             "dependent miss (2 MiB pages)"], rows))
    w("")
    w(f"HashKey of a 16-byte item: {fmt_ns(f.ns('hash/HashKey_16B'))} ns in a loop, "
      f"{fmt_ns(f.ns('hash/HashKey_16B_single'))} ns with LFENCE after each (the fence's own cost "
      "is in every `single` row).\n")

    for kind, title in (("neg", "Negative lookups"), ("pos", "Positive lookups")):
        w(f"## {title} (ns per item)\n")
        cols = [("blocked", "single"), ("blocked", "loop"), ("blocked", "batch16"),
                ("blocked", "batch16_interleaved"), ("blocked", "batch100"),
                ("blocked_2m_pages", "single"), ("blocked_2m_pages", "batch100"),
                ("whatif_branchfree", "single"), ("whatif_branchfree", "loop"),
                ("textbook", "single"), ("textbook", "loop"), ("textbook", "batch16"),
                ("scalable", "single"), ("scalable", "loop")]
        rows = []
        for s in sizes:
            rows.append([s] + [fmt_ns(f.ns(f"{st}/lookup_{kind}/{mode}/{s}")) for st, mode in cols])
        w(table(["footprint"] + [f"{st} {mode}" for st, mode in cols], rows))
        w("")
        rows = []
        for s in sizes:
            rows.append([
                s,
                fmt_ratio(f.ratio(f"blocked/lookup_{kind}/single/{s}", f"memory/chase/{s}")),
                fmt_ratio(f.ratio(f"blocked/lookup_{kind}/batch16/{s}", f"blocked/lookup_{kind}/single/{s}")),
                fmt_ratio(f.ratio(f"blocked/lookup_{kind}/batch100/{s}", f"blocked/lookup_{kind}/single/{s}")),
                fmt_ratio(f.ratio(f"textbook/lookup_{kind}/single/{s}", f"blocked/lookup_{kind}/single/{s}")),
                fmt_ratio(f.ratio(f"textbook/lookup_{kind}/loop/{s}", f"blocked/lookup_{kind}/loop/{s}")),
                fmt_ratio(f.ratio(f"scalable/lookup_{kind}/single/{s}", f"blocked/lookup_{kind}/single/{s}")),
            ])
        w(table(["footprint", "blocked single / dependent miss", "batch16 / single",
                 "batch100 / single", "textbook / blocked (single)", "textbook / blocked (loop)",
                 "ScalableBloomFilter / BlockedBloom (single)"], rows))
        w("")

    w("## Adds (ns per item; each on a filter that starts empty and is replaced when full)\n")
    cols = [("blocked", "single"), ("blocked", "loop"), ("blocked", "batch100"),
            ("textbook", "single"), ("textbook", "loop"), ("scalable", "single"), ("scalable", "loop")]
    rows = []
    for s in sizes:
        rows.append([s] + [fmt_ns(f.ns(f"{st}/add/{mode}/{s}")) for st, mode in cols])
    w(table(["footprint"] + [f"{st} {mode}" for st, mode in cols], rows))
    w("")

    w("## Lookup cost against layers (same total items, every layer full)\n")
    rows = []
    for exp in ("exp2", "exp1"):
        for layers in (1, 4, 8, 16):
            label = f"{exp}/L{layers}"
            mib = f.counter(f"layers/lookup_neg/single/{label}", "MiB")
            tmib = f.counter(f"textbook_layers/lookup_neg/single/{label}", "MiB")
            rows.append([
                label, f"{mib:.0f}" if mib is not None else "—",
                fmt_ns(f.ns(f"layers/lookup_neg/single/{label}")),
                fmt_ratio(f.ratio(f"layers/lookup_neg/single/{label}", f"layers/lookup_neg/single/{exp}/L1")),
                fmt_ns(f.ns(f"layers/lookup_neg/loop/{label}")),
                fmt_ratio(f.ratio(f"layers/lookup_neg/loop/{label}", f"layers/lookup_neg/loop/{exp}/L1")),
                fmt_ns(f.ns(f"layers/lookup_pos/single/{label}")),
                f"{tmib:.0f}" if tmib is not None else "—",
                fmt_ns(f.ns(f"textbook_layers/lookup_neg/single/{label}")),
                fmt_ratio(f.ratio(f"textbook_layers/lookup_neg/single/{label}",
                                  f"textbook_layers/lookup_neg/single/{exp}/L1")),
            ])
    w(table(["filter", "MiB", "neg single", "vs 1 layer", "neg loop", "vs 1 layer", "pos single",
             "textbook MiB", "textbook neg single", "vs 1 layer"], rows))
    w("")
    w("`exp2`: expansion 2 (RedisBloom's default), first capacity total/(2^L-1). `exp1`: L "
      "equal layers. Errors halve per layer from 0.5% (a 1% filter). Textbook layers use "
      "RedisBloom's sizing (bits/item -ln p / ln²2, k = ceil(ln 2 · bits/item)).\n")

    w("## Lookup cost against the number of filters (negative lookups, ns)\n")
    rows = []
    counts = ("1", "100", "10000", "100000")
    ways = ("scalable", "scalable_by_name", "whatif_flat")
    for mode in ("single", "loop"):
        for way in ways:
            cells = [f"{way} {mode}"]
            for n in counts:
                cells.append(fmt_ns(f.ns(f"keyspace/{way}/lookup_neg/{mode}/{n}")))
            cells.append(fmt_ratio(f.ratio(f"keyspace/{way}/lookup_neg/{mode}/100000",
                                           f"keyspace/{way}/lookup_neg/{mode}/1")))
            rows.append(cells)
    w(table(["path to the bits"] + [f"{int(n):,} filters" for n in counts] + ["100,000 / 1"], rows))
    w("")
    w("N empty filters of capacity 1000 at 1% (~1.5 KB of bits each); a random filter, a "
      "negative item. `scalable`: a vector of ScalableBloomFilter (slot, filter, layer list, "
      "layer array, layer, BlockedBloom, bits: a chain of dependent loads). `scalable_by_name`: "
      "the same found through std::unordered_map<std::string, ...> by a 15-byte name. "
      "`whatif_flat`: a vector of BlockedBloom (slot, filter, bits).\n")

    w("## Bits per item against the measured false-positive rate\n")
    rows = []
    for p in ("0.01", "0.001", "0.0001"):
        for st in ("scalable_nonscaling", "textbook_same_bits"):
            name = f"accuracy/{st}/p={p}"
            c = lambda key: f.counter(name, key)  # noqa: E731
            if c("bits_per_item") is None:
                continue
            rows.append([f"{float(p):.2%}", st, f"{c('bits_per_item'):.2f}", f"{int(c('probes'))}",
                         f"{c('fp_measured'):.4%}", f"{int(c('false_positives'))}",
                         f"{c('optimum_bits_at_measured_fp'):.2f}", f"{c('ratio_to_optimum'):.3f}x"])
    w(table(["requested", "filter", "bits/item", "k", "measured FP", "FPs counted",
             "optimum bits at that FP", "ratio"], rows))
    w("")
    w(f"Items per filter: {int(context.get('accuracy_items', 0)):,}; negative queries: "
      f"{int(context.get('accuracy_queries', 0)):,}. The optimum is -log2(FP)/ln 2 bits per "
      "item (a textbook Bloom filter with the best k). `textbook_same_bits` checks the method: "
      "a standard filter with the blocked filter's bits lands near 1.0x.\n")

    errors = [n for n, e in runs.items() if "error" in e]
    if errors:
        w("## Rows that failed\n")
        for n in errors:
            w(f"- `{n}`: {runs[n]['error']}")
        w("")
    return "\n".join(lines)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json")
    parser.add_argument("--out", help="write the markdown report here")
    parser.add_argument("--command", default="(not given)", help="the command line that produced the JSON")
    parser.add_argument("--expect", metavar="LIST",
                        help="file of benchmark names (--benchmark_list_tests) that must all have results")
    args = parser.parse_args()
    context, runs = load(args.json)
    if not runs:
        print(f"filter_report: no benchmark results in {args.json}", file=sys.stderr)
        return 1
    report = build_report(context, runs, args.command)
    print(report)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(report + "\n")
        print(f"\nwritten to {args.out}", file=sys.stderr)
    failed = [n for n, e in runs.items() if "error" in e]
    for n in failed:
        print(f"filter_report: {n}: {runs[n]['error']}", file=sys.stderr)
    if args.expect:
        missing = missing_rows(args.json, args.expect)
        if missing:
            print(f"filter_report: {len(missing)} benchmark(s) without a result: "
                  f"{', '.join(missing[:20])}", file=sys.stderr)
            return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
