#!/bin/sh
# The container's start: a server that must listen on 0.0.0.0 to be reachable
# is never left open by accident.
#
#   BLOOMGATE_PASSWORD         the password clients AUTH with, or
#   BLOOMGATE_PASSWORD_FILE    a file holding it (a mounted secret; one line)
#   BLOOMGATE_ALLOW_UNPROTECTED=yes   start without a password anyway (protected
#                              mode is then switched off: inside a container no
#                              client connects from 127.0.0.1)
# Without a password and without that explicit yes, it refuses to start.
# The password goes into a private copy of the config file (mode 600), never on
# the command line, where every process could read it. Extra arguments are
# passed to the server.
set -eu
config=${BLOOMGATE_CONFIG:-/etc/bloomgate/bloomgate.yaml}
password=${BLOOMGATE_PASSWORD:-}
if [ -n "${BLOOMGATE_PASSWORD_FILE:-}" ]; then
  if [ ! -r "$BLOOMGATE_PASSWORD_FILE" ]; then
    echo "bloomgate: BLOOMGATE_PASSWORD_FILE=$BLOOMGATE_PASSWORD_FILE cannot be read" >&2
    exit 1
  fi
  password=$(head -n 1 "$BLOOMGATE_PASSWORD_FILE")
fi
if [ -z "$password" ]; then
  if [ "${BLOOMGATE_ALLOW_UNPROTECTED:-}" != "yes" ]; then
    echo "bloomgate: refusing to start on 0.0.0.0 without a password: set BLOOMGATE_PASSWORD" \
         "or BLOOMGATE_PASSWORD_FILE, or BLOOMGATE_ALLOW_UNPROTECTED=yes to serve anyone" >&2
    exit 1
  fi
  exec bloomgate --config "$config" --bind 0.0.0.0 --protected-mode no "$@"
fi
case "$password" in
  *[\"\\]*) echo "bloomgate: the password may not contain \" or \\" >&2; exit 1 ;;
esac
umask 077
private=$(mktemp "${TMPDIR:-/tmp}/bloomgate-config.XXXXXX")
grep -v '^requirepass:' "$config" > "$private"
printf 'requirepass: "%s"\n' "$password" >> "$private"
exec bloomgate --config "$private" --bind 0.0.0.0 "$@"
