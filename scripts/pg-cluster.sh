#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on loopback, for the ledger's tests and benchmarks.
#   scripts/pg-cluster.sh start DIR   initdb + pg_ctl start under DIR; prints the ledger URL
#   scripts/pg-cluster.sh stop DIR    stops it and removes DIR
#   scripts/pg-cluster.sh restart DIR [fast|immediate]   restarts it (immediate: as a crash)
# The server runs as a non-root user (`postgres`, Debian's package makes it) when started by
# root, since PostgreSQL refuses to run as root. Trust authentication, loopback only.
set -euo pipefail
cmd="${1:?start|stop}"
dir="${2:?directory}"
bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)"
[ -x "$bin/initdb" ] || { echo "no PostgreSQL server binaries under /usr/lib/postgresql" >&2; exit 1; }
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case "$cmd" in
  start)
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    as_owner "$bin/initdb" -D "$dir/data" -U comal --auth=trust -E UTF8 --locale=C >"$dir/initdb.log"
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200" start >/dev/null
    echo "$port" >"$dir/port"
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U comal comal
    echo "postgresql://comal@127.0.0.1:$port/comal"
    ;;
  stop)
    if [ -d "$dir/data" ]; then
      as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
  restart)
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m "${3:-fast}" -w restart >/dev/null
    ;;
  *) echo "unknown command $cmd" >&2; exit 2 ;;
esac
