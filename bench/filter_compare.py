#!/usr/bin/python3
"""filter_bench before and after, row by row: the CPU time per iteration of
every benchmark in one or more "after" JSON files over the same row in the
"before" files, as a ratio per pair of runs (the i-th before with the i-th
after: run them taking turns), median and range. Rows whose median ratio is
above --slower (default 1.10) are listed first as slower.

  build/bench/filter_bench ARGS --benchmark_out=b1.json --benchmark_out_format=json  # before binary
  build/bench/filter_bench ARGS --benchmark_out=a1.json --benchmark_out_format=json  # after binary
  ... (b2, a2, ...)
  bench/filter_compare.py --before b1.json b2.json --after a1.json a2.json [--out report.md]

Only rows present in every file are compared; the others are named. Python
standard library only.
"""

import argparse
import json
import statistics
import sys


def rows_of(path):
    with open(path) as f:
        data = json.load(f)
    # Aggregates (mean/median rows of --benchmark_repetitions) are skipped:
    # each run is one sample here.
    return {b["name"]: b["cpu_time"] for b in data["benchmarks"]
            if b.get("run_type", "iteration") == "iteration" and b.get("cpu_time", 0) > 0}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", nargs="+", required=True)
    parser.add_argument("--after", nargs="+", required=True)
    parser.add_argument("--slower", type=float, default=1.10)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    if len(args.before) != len(args.after):
        parser.error("give as many --after files as --before files (one pair per turn)")
    befores = [rows_of(p) for p in args.before]
    afters = [rows_of(p) for p in args.after]
    names = set.intersection(*(set(r) for r in befores + afters))
    missing = sorted(set.union(*(set(r) for r in befores + afters)) - names)
    ratios = {n: [a[n] / b[n] for a, b in zip(afters, befores)] for n in names}
    order = sorted(names, key=lambda n: -statistics.median(ratios[n]))
    lines = [f"# filter_bench, after / before ({len(afters)} pair(s) of runs)\n",
             "CPU time per iteration, after over before within each pair; median (min-max). "
             "Below 1x is faster.\n"]
    slower = [n for n in order if statistics.median(ratios[n]) > args.slower]
    lines.append(f"- rows compared: {len(names)}; median of all rows' medians "
                 f"{statistics.median(statistics.median(r) for r in ratios.values()):.2f}x")
    lines.append(f"- slower than {args.slower:.2f}x by median: {len(slower)}")
    if missing:
        lines.append(f"- rows not in every file (not compared): {', '.join(missing)}")
    lines.append("")
    lines.append("| row | after / before | pairs |")
    lines.append("|---|---|---|")
    for n in order:
        r = ratios[n]
        lines.append(f"| {n} | {statistics.median(r):.2f}x ({min(r):.2f}-{max(r):.2f}) | "
                     f"{' '.join(f'{x:.2f}' for x in r)} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
