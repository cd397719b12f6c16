#!/usr/bin/env bash
# The README's quick start, as a user runs it: scripts/run.sh builds and starts
# the server on its default configuration; this waits until it answers PING,
# stops it with SIGTERM and expects a clean exit. Run by scripts/test.sh, so a
# quick start that no longer works fails CI. It uses a free port and a
# temporary data directory, so nothing lands in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
data=$(mktemp -d)
log="$data/server.log"
bash scripts/run.sh --port "$port" --dir "$data" >"$log" 2>&1 &
pid=$!
cleanup() { kill -9 "$pid" 2>/dev/null || true; rm -rf "$data"; }
trap cleanup EXIT
# run.sh builds first: allow a cold build on a slow machine.
deadline=$((SECONDS + 900))
until [[ "$(redis-cli -p "$port" ping 2>/dev/null)" == "PONG" ]]; do
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "quick start: scripts/run.sh exited before the server answered" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
  if (( SECONDS > deadline )); then
    echo "quick start: no PONG on port $port within 900 s" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
  sleep 0.2
done
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
if (( status != 0 )); then
  echo "quick start: the server exited with $status on SIGTERM" >&2
  tail -n 30 "$log" >&2
  exit 1
fi
echo "quick start: scripts/run.sh served PONG on port $port and stopped cleanly"
