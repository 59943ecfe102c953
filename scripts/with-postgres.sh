#!/usr/bin/env bash
# Run a command with a throwaway PostgreSQL server on 127.0.0.1, its URL in ZTC_TEST_DB.
#   scripts/with-postgres.sh npx vitest run
# Installs Debian's postgresql when no server binaries are found (needs root), starts a cluster in a
# temp dir as the postgres user, and removes it afterwards whatever the command's outcome.
# With ZTC_PG_OPTIONAL=1 and no way to get a server, the command runs without one.
set -euo pipefail

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  if [ "$(id -u)" != 0 ]; then
    if [ -n "${ZTC_PG_OPTIONAL:-}" ]; then exec "$@"; fi
    echo "PostgreSQL server binaries not found: install them (apt-get install -y postgresql) or run as root" >&2
    exit 1
  fi
  echo "installing PostgreSQL from Debian's packages..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq postgresql >/dev/null
  bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
fi

dir=$(mktemp -d /tmp/ztc-pg-XXXXXX)
port=$(( 20000 + RANDOM % 20000 ))
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
[ "$(id -u)" = 0 ] && chown postgres "$dir"
cleanup() {
  as_pg "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

# C collation: text sorts and compares byte-wise, as on SQLite.
as_pg "$bindir/initdb" -D "$dir/data" -A trust -U postgres --locale=C -E UTF8 >/dev/null
as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off" -w start >/dev/null
export ZTC_TEST_DB="postgres://postgres@127.0.0.1:$port/postgres"
echo "PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port" >&2
"$@"
