#!/usr/bin/env bash
# A private PostgreSQL cluster for zblade-server's tests and benchmarks (Debian's packages;
# scripts/setup.sh installs them). Trust authentication on 127.0.0.1 only, fsync off: a
# throwaway test database, not a place for real data.
# Usage: scripts/pg.sh start   start it (creating it the first time); prints its URL
#        scripts/pg.sh stop    stop it
#        scripts/pg.sh url     print the URL
set -euo pipefail
port="${ZBLADE_PG_PORT:-54329}"
data="${ZBLADE_PG_DIR:-/var/tmp/zblade-pg-$(id -u)}"
url="postgres://zblade@127.0.0.1:$port/postgres"
bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
if [ ! -x "$bindir/initdb" ]; then
  echo "pg.sh: PostgreSQL is not installed (scripts/setup.sh installs Debian's postgresql)" >&2
  exit 1
fi
# PostgreSQL refuses to run as root: as root, run it as Debian's postgres user.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case "${1:-start}" in
  start)
    if [ ! -f "$data/PG_VERSION" ]; then
      mkdir -p "$data"
      if [ "$(id -u)" -eq 0 ]; then chown postgres:postgres "$data"; fi
      chmod 700 "$data"
      as_pg "$bindir/initdb" -D "$data" -U zblade --auth=trust -E UTF8 >/dev/null
    fi
    if ! as_pg "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1; then
      as_pg "$bindir/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
        -o "-p $port -k $data -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
    fi
    # Databases the tests made last time.
    psql -q -X "$url" -At -c "SELECT 'DROP DATABASE ' || quote_ident(datname) || ';' FROM pg_database WHERE datname LIKE 'zbt\_%'" \
      | psql -q -X "$url" >/dev/null
    echo "$url"
    ;;
  stop)
    if [ -f "$data/PG_VERSION" ]; then as_pg "$bindir/pg_ctl" -D "$data" -m fast stop >/dev/null || true; fi
    ;;
  url)
    echo "$url"
    ;;
  *)
    echo "pg.sh: unknown command ${1} (expected start, stop or url)" >&2
    exit 2
    ;;
esac
