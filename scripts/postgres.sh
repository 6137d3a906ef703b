#!/usr/bin/env bash
# Start or stop a throwaway PostgreSQL server on loopback for the tests and benchmarks.
#   scripts/postgres.sh start DIR   -> installs Debian's postgresql if missing, prints DATABASE_URL=...
#   scripts/postgres.sh stop DIR
#   scripts/postgres.sh restart|stop-fast|start-again DIR   (for the restart tests)
set -euo pipefail
cmd=${1:?start|stop}; D=${2:?DIR}
export DEBIAN_FRONTEND=noninteractive
pgbin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
case "$cmd" in
start)
  if [ -z "$(pgbin)" ]; then
    apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  fi
  PGBIN=$(pgbin)
  rm -rf "$D"; install -d -o postgres -g postgres -m 700 "$D"
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  runuser -u postgres -- "$PGBIN/initdb" -D "$D/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$D/data" -l "$D/server.log" -w -t 30 \
    -o "-c listen_addresses=127.0.0.1 -p $PORT -k $D -c max_connections=200" start >/dev/null
  runuser -u postgres -- "$PGBIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres clawlog
  echo "$PORT" > "$D/port"
  echo "DATABASE_URL=postgresql://postgres@127.0.0.1:$PORT/clawlog"
  ;;
restart)
  runuser -u postgres -- "$(pgbin)/pg_ctl" -D "$D/data" -m fast -w -t 60 restart >/dev/null
  ;;
stop-fast)
  runuser -u postgres -- "$(pgbin)/pg_ctl" -D "$D/data" -m immediate -w stop >/dev/null
  ;;
start-again)
  runuser -u postgres -- "$(pgbin)/pg_ctl" -D "$D/data" -l "$D/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $(cat "$D/port") -k $D -c max_connections=200" start >/dev/null
  ;;
stop)
  PGBIN=$(pgbin)
  [ -n "$PGBIN" ] && [ -d "$D/data" ] && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$D/data" -m fast -w stop >/dev/null 2>&1 || true
  ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
