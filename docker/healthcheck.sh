#!/bin/sh
# The image's HEALTHCHECK: exit 0 (healthy) when the server answers PING with
#   PONG      serving
#   NOAUTH    serving, behind a password the check does not need to know
#   LOADING   starting: it listens before its data is loaded, and a load of a
#             big data set can outlast any start period; restarting it then
#             would only begin the load again
# and exit 1 (unhealthy) for anything else: no answer, a refused connection,
# another error. BLOOMGATE_PORT names the port (default 6379).
port=${BLOOMGATE_PORT:-6379}
# redis-cli exits non-zero on an error reply too: judge its text alone.
reply=$(redis-cli -p "$port" ping 2>&1) || true
case "$reply" in
  PONG*|NOAUTH*) exit 0 ;;
  LOADING*) echo "bloomgate: starting (loading its data)"; exit 0 ;;
esac
echo "bloomgate: unhealthy: ${reply:-no reply}" >&2
exit 1
