#!/usr/bin/env bash
# The whole benchmark suite in one command (see bench/README.md).
#
#   bash bench/run.sh           build (Release), run the filter microbenchmarks and the
#                               server benchmark, write bench/results/filters-<date>.md and
#                               bench/results/server-<date>.md, then the CDN admission
#                               replay (bench/results/cdn-admission-<date>.md, ~9 min)
#                               (~30 min on 2 cores)
#   bash bench/run.sh --smoke   the CI version (scripts/test.sh runs it): every benchmark
#                               at tiny sizes, exits non-zero if one cannot start, crashes
#                               or leaves a row without a result; timings are not judged.
#                               Output goes to $BUILD_DIR/bench-smoke/, never to
#                               bench/results/ (< 60 s after the build)
#
# Environment:
#   BUILD_DIR          build directory (default: build-bench; CI can reuse its `build`)
#   BLOOMGATE_BIN      server binary (default: $BUILD_DIR/server/bloomgate)
#   FILTER_BENCH_ARGS  extra flags for filter_bench (e.g. --footprints=256k,1g)
#   SERVER_BENCH_ARGS  extra flags for server_bench.py (e.g. --rounds 1)
#
# Needs, besides scripts/install-deps.sh --test: Debian packages libbenchmark-dev and
# redis-server (redis-benchmark comes with redis-tools, already a dependency).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=full
case "${1:-}" in
  --smoke) mode=smoke ;;
  "") ;;
  *) echo "usage: bash bench/run.sh [--smoke]" >&2; exit 2 ;;
esac

missing=()
[[ -f /usr/include/benchmark/benchmark.h ]] || missing+=(libbenchmark-dev)
[[ -x /usr/bin/redis-server ]] || missing+=(redis-server)
command -v redis-benchmark >/dev/null || missing+=(redis-tools)
[[ -x /usr/bin/python3 ]] || missing+=(python3)
command -v node >/dev/null || missing+=(nodejs)
if (( ${#missing[@]} > 0 )); then
  echo "bench/run.sh: missing Debian packages: ${missing[*]}" >&2
  echo "  install them with: apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

build_dir="${BUILD_DIR:-build-bench}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBLOOMGATE_BUILD_BENCH=ON >/dev/null
cmake --build "$build_dir" --parallel "$(nproc)" --target filter_bench bloomgate
bin="${BLOOMGATE_BIN:-$build_dir/server/bloomgate}"
filter_bench="$build_dir/bench/filter_bench"
# shellcheck disable=SC2206  # word splitting of the extra-flag variables is intended
filter_extra=(${FILTER_BENCH_ARGS:-})
# shellcheck disable=SC2206
server_extra=(${SERVER_BENCH_ARGS:-})

if [[ $mode == smoke ]]; then
  started=$SECONDS
  out="$build_dir/bench-smoke"
  rm -rf "$out"
  mkdir -p "$out"
  # run_logged LOG CMD...: output to LOG; on failure, show its end and stop.
  run_logged() {
    local log=$1 status=0
    shift
    "$@" >"$log" 2>&1 || status=$?
    if (( status != 0 )); then
      echo "bench smoke: FAILED (exit status $status): $*" >&2
      tail -n 40 "$log" >&2
      exit 1
    fi
  }
  echo "== filter_bench --smoke (output in $out)"
  filter_cmd=("$filter_bench" --smoke --benchmark_min_time=0.01 "${filter_extra[@]}")
  # The benchmarks these flags select; each must come back with a result.
  "${filter_cmd[@]}" --benchmark_list_tests >"$out/filters.list"
  run_logged "$out/filters.txt" "${filter_cmd[@]}" \
    --benchmark_out="$out/filters.json" --benchmark_out_format=json
  # Fails on a row that reported an error and on a listed benchmark without a
  # result; the whole report is kept, the target table is shown.
  run_logged "$out/filters.report.txt" /usr/bin/python3 bench/filter_report.py \
    "$out/filters.json" --expect "$out/filters.list" --out "$out/filters.md" \
    --command "${filter_cmd[*]}"
  sed -n '/^## Issue-5/,/^## Memory/p' "$out/filters.md"
  echo "filter_bench --smoke: $(wc -l <"$out/filters.list") benchmarks, each with a result"
  echo "== server_bench.py --smoke (output in $out)"
  # Fails if a server does not start, dies, or does not stop cleanly, and on
  # any row without a result.
  run_logged "$out/server.txt" /usr/bin/python3 bench/server_bench.py --smoke --bin "$bin" \
    --out "$out/server.md" "${server_extra[@]}"
  tail -n 1 "$out/server.txt"
  echo "== per_core_bench.py --smoke (output in $out)"
  # One-core CPU per request against redis GET/SET; fails if a row has no result.
  run_logged "$out/per-core.txt" /usr/bin/python3 bench/per_core_bench.py --smoke --bin "$bin" \
    --out "$out/per-core.md"
  tail -n 1 "$out/per-core.txt"
  echo "== migrate_bench.py --smoke (output in $out)"
  # Fails if migrate cannot copy a 100,000-item filter between two servers.
  run_logged "$out/migrate.txt" /usr/bin/python3 bench/migrate_bench.py --smoke --bin "$bin"
  tail -n 1 "$out/migrate.txt"
  echo "== sketch_cost_bench.py --smoke (output in $out)"
  # TDIGEST.ADD beside CMS.INCRBY; fails if a row errs or leaves no observations.
  run_logged "$out/sketch-cost.txt" /usr/bin/python3 bench/sketch_cost_bench.py --smoke \
    --bin "$bin"
  tail -n 1 "$out/sketch-cost.txt"
  echo "== cdn_admission_bench.py --smoke (output in $out)"
  # Four servers, two tiny traces (~5 s); fails if a server dies or a reply is wrong.
  run_logged "$out/cdn.txt" /usr/bin/python3 bench/cdn_admission_bench.py --smoke --bin "$bin" \
    --out "$out/cdn-admission.md"
  tail -n 1 "$out/cdn.txt"
  echo "== replication_bench.py --smoke (output in $out)"
  # Six servers (primaries with 0, 1, 2 replicas), then an 8 MiB full sync (~8 s);
  # fails if a replica does not catch up, a sync fails or a figure is missing.
  run_logged "$out/replication.txt" /usr/bin/python3 bench/replication_bench.py --smoke \
    --bin "$bin" --out "$out/replication.md"
  tail -n 1 "$out/replication.txt"
  echo "== net_floor_bench.py --smoke (output in $out)"
  # PING on each io-backend beside redis-server; `auto` where a kernel refuses
  # io_uring. Fails if a server does not start, dies or does not stop cleanly.
  run_logged "$out/net-floor.txt" /usr/bin/python3 bench/net_floor_bench.py --smoke --bin "$bin" \
    --backends epoll,auto --out "$out/net-floor.md"
  tail -n 1 "$out/net-floor.txt"
  echo "== small_filters_bench.py --smoke (output in $out)"
  # 2,000 small filters: MEMORY USAGE, RSS per key, spread lookups against one big filter.
  run_logged "$out/small-filters.txt" /usr/bin/python3 bench/small_filters_bench.py --smoke \
    --bin "$bin"
  tail -n 1 "$out/small-filters.txt"
  echo "== cluster_clients_bench.py --smoke (output in $out)"
  # One routed BF.EXISTS per cluster client library on 3 masters, 100 requests
  # each (~1.3 s of CPU); needs the npm packages scripts/install-deps.sh --test installs.
  run_logged "$out/cluster-clients.txt" /usr/bin/python3 bench/cluster_clients_bench.py --smoke \
    --bin "$bin" --out "$out/cluster-clients.md"
  tail -n 1 "$out/cluster-clients.txt"
  echo "== cluster_bench.py --smoke (output in $out)"
  # Three masters and a one-node cluster: an 8-slot reshard both ways, redirects,
  # redis-benchmark --cluster; fails if a key is missing after a move or a node dies.
  run_logged "$out/cluster.txt" /usr/bin/python3 bench/cluster_bench.py --smoke --bin "$bin"
  tail -n 1 "$out/cluster.txt"
  echo "== cluster_failover_bench.py --smoke (output in $out)"
  # Six nodes: one kill -9, one SIGSTOP and one CLUSTER FAILOVER under two
  # writers, 2 s bus windows (~30 s); fails if a manual failover loses a write.
  run_logged "$out/cluster-failover.txt" /usr/bin/python3 bench/cluster_failover_bench.py \
    --smoke --bin "$bin"
  tail -n 6 "$out/cluster-failover.txt"
  echo "bench smoke: OK ($((SECONDS - started)) s)"
  exit 0
fi

date=$(date +%F)
mkdir -p bench/results
json="$build_dir/bench/filters-$date.json"
filter_cmd=("$filter_bench" --benchmark_min_time=0.1 --benchmark_repetitions=3
            --benchmark_out="$json" --benchmark_out_format=json "${filter_extra[@]}")
echo "== ${filter_cmd[*]}"
"${filter_cmd[@]}"
/usr/bin/python3 bench/filter_report.py "$json" --out "bench/results/filters-$date.md" \
  --command "${filter_cmd[*]}"
echo "== bench/server_bench.py"
/usr/bin/python3 bench/server_bench.py --bin "$bin" --out "bench/results/server-$date.md" \
  "${server_extra[@]}"
echo "== bench/per_core_bench.py"
/usr/bin/python3 bench/per_core_bench.py --bin "$bin" --out "bench/results/per-core-$date.md"
echo "== bench/cdn_admission_bench.py"
/usr/bin/python3 bench/cdn_admission_bench.py --bin "$bin" --out "bench/results/cdn-admission-$date.md"
