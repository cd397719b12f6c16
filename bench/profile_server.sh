#!/usr/bin/env bash
# Instructions per request, Bloomgate against redis-server, under callgrind
# (valgrind counts instructions exactly, so the figures repeat on a noisy
# machine where perf is unavailable). For each scenario it starts the server
# under `valgrind --tool=callgrind` on a free loopback port, sends a fixed
# number of requests with redis-benchmark, stops the server and prints the
# instructions per request and the top functions.
#
#   bash bench/profile_server.sh [BLOOMGATE_BIN]      (default build-bench/server/bloomgate)
#   ONLY='CF|GET' REQUESTS=20000 bash bench/profile_server.sh BIN   (a subset)
#
# Output files stay in a temporary directory named at the end (open them with
# callgrind_annotate or kcachegrind). Needs valgrind, redis-server, redis-tools.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-${BLOOMGATE_BIN:-build-bench/server/bloomgate}}"
out=$(mktemp -d /tmp/bloomgate-profile.XXXXXX)
requests=${REQUESTS:-20000}

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_ready() {  # port: poll PING for up to 60 s (valgrind starts slowly)
  for _ in $(seq 600); do
    if [[ "$(redis-cli -p "$1" PING 2>/dev/null)" == PONG ]]; then return 0; fi
    sleep 0.1
  done
  echo "server on port $1 not ready" >&2
  return 1
}

# profile NAME SERVER(bloomgate|redis) SETUP-COMMAND... -- BENCH-ARGS...
# ONLY=REGEX runs only the scenarios whose NAME matches (e.g. ONLY='EXISTS$').
profile() {
  local name=$1 server=$2
  shift 2
  if [[ -n ${ONLY:-} && ! $name =~ $ONLY ]]; then return 0; fi
  local setup=()
  while [[ $1 != -- ]]; do setup+=("$1"); shift; done
  shift
  local port
  port=$(free_port)
  local argv
  if [[ $server == bloomgate ]]; then
    argv=("$bin" --bind 127.0.0.1 --port "$port" --threads 1 --loglevel warn
          --save '' --appendonly no --dir "$out")
  else
    argv=(/usr/bin/redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$out")
  fi
  valgrind --tool=callgrind --callgrind-out-file="$out/$name.%p.out" "${argv[@]}" \
    >"$out/$name.log" 2>&1 &
  local pid=$!
  wait_ready "$port"
  if (( ${#setup[@]} > 0 )); then redis-cli -p "$port" "${setup[@]}" >/dev/null; fi
  # Zero the counters after start-up and setup, then measure only the load.
  callgrind_control --zero "$pid" >/dev/null 2>&1
  redis-benchmark -p "$port" -c 10 -n "$requests" -r 1000000 -q --csv "$@" >"$out/$name.csv" 2>&1
  # The first dump (file suffix .1) holds exactly the load; the one written
  # at exit holds only the shutdown.
  callgrind_control --dump "$pid" >/dev/null 2>&1
  kill -TERM "$pid"
  wait "$pid" || true
  local file="$out/$name.$pid.out.1"
  local total
  total=$(callgrind_annotate "$file" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
  awk -v n="$name" -v t="$total" -v r="$requests" \
    'BEGIN { printf "%-28s %14d instructions  %8.0f per request\n", n, t, t / r }' 
  # Self cost per function; the lines at ~100% are the thread's wrappers.
  callgrind_annotate --threshold=100 "$file" 2>/dev/null | sed -n '/file:function/,$p' |
    grep -v -e '(100.0%)' -e '(99.9.%)' | sed -n '3,16p' |
    sed -e 's/std::basic_string_view<char, std::char_traits<char> >/string_view/g' -e 's/^/    /' |
    cut -c1-160 >"$out/$name.top"
}

rand100=$(printf '__rand_int__ %.0s' $(seq 100))
keys100=$(printf 'key:__rand_int__ %.0s' $(seq 100))
echo "callgrind, $requests requests each, -c 10 -P 16, server on 1 thread; files in $out"
profile redis-GET redis -- -P 16 GET key:__rand_int__
profile bloomgate-BF.EXISTS bloomgate BF.RESERVE bf 0.01 10000000 -- -P 16 BF.EXISTS bf __rand_int__
profile redis-SET redis -- -P 16 SET key:__rand_int__ __rand_int__
profile bloomgate-BF.ADD bloomgate BF.RESERVE bf 0.01 10000000 -- -P 16 BF.ADD bf __rand_int__
profile bloomgate-CF.EXISTS bloomgate CF.RESERVE cf 10000000 -- -P 16 CF.EXISTS cf __rand_int__
profile bloomgate-CF.ADD bloomgate CF.RESERVE cf 10000000 -- -P 16 CF.ADD cf __rand_int__
profile bloomgate-CBF.EXISTS bloomgate CBF.RESERVE cbf 0.01 10000000 -- -P 16 CBF.EXISTS cbf __rand_int__
profile bloomgate-CBF.ADD bloomgate CBF.RESERVE cbf 0.01 10000000 -- -P 16 CBF.ADD cbf __rand_int__
# shellcheck disable=SC2086  # the 100 items are meant to split
profile redis-MGET100 redis -- -P 16 MGET $keys100
# shellcheck disable=SC2086
profile bloomgate-BF.MEXISTS100 bloomgate BF.RESERVE bf 0.01 10000000 -- -P 16 BF.MEXISTS bf $rand100
# shellcheck disable=SC2086
profile bloomgate-BF.MADD100 bloomgate BF.RESERVE bf 0.01 10000000 -- -P 16 BF.MADD bf $rand100
# shellcheck disable=SC2086
profile bloomgate-CBF.MADD100 bloomgate CBF.RESERVE cbf 0.01 10000000 -- -P 16 CBF.MADD cbf $rand100
for f in "$out"/*.top; do
  [[ -e $f ]] || continue
  echo "== $(basename "$f" .top): top functions (self instructions)"
  cat "$f"
done
echo "files: $out"
