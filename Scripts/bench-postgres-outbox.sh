#!/usr/bin/env bash
# The PostgreSQL outbox benchmark (issue 47, item 5) on a private PostgreSQL server: Debian's initdb and
# pg_ctl (/usr/lib/postgresql/<newest>/bin) make a cluster in a mktemp folder, started on a free port of
# 127.0.0.1 (as `nobody` through setpriv when run as root: PostgreSQL refuses root), the way
# Tests/TestSupport/PostgresServerProcess.swift does; then `caregate-bench postgres-outbox --postgres URL`
# runs against it, and the server is stopped and its folder removed, whatever happens.
# Durability is off (fsync, synchronous_commit, full_page_writes), as in the tests: the figures are
# those of the store's statements and locks, not of this machine's disk.
#
#   bash Scripts/bench-postgres-outbox.sh                          # 20,000 entries, 1/2/4/8 workers, 3 runs
#   bash Scripts/bench-postgres-outbox.sh --entries 5000 --runs 1  # any caregate-bench option
#   BIN=/tmp/caregate-bench bash Scripts/bench-postgres-outbox.sh  # another build
#   DURABLE=1 bash Scripts/bench-postgres-outbox.sh                # fsync and synchronous commits on
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-.build/release/caregate-bench}
[ -x "$bin" ] || { echo "no $bin: build it with swift build -c release --product caregate-bench" >&2; exit 1; }
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n | tail -1)
[ -n "$pgbin" ] && [ -x "$pgbin/initdb" ] || { echo "PostgreSQL is not installed: bash Scripts/setup-test-tools.sh" >&2; exit 1; }

folder=$(mktemp -d /tmp/caregate-bench-postgres.XXXXXX)
chmod 700 "$folder"
mkdir -m 700 "$folder/socket"
password=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$password" > "$folder/pwfile"
as_server=()
if [ "$(id -u)" = 0 ]; then
    chown -R nobody:nogroup "$folder"
    as_server=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
fi
# A free port: the kernel's choice for a socket bound to port 0.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
stop() {
    if [ -f "$folder/data/postmaster.pid" ]; then
        "${as_server[@]}" env -C "$folder" "$pgbin/pg_ctl" -D "$folder/data" -m immediate -w -t 60 stop > /dev/null || true
    fi
    rm -rf "$folder"
}
trap stop EXIT

durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
[ "${DURABLE:-0}" = 1 ] && durability=""
"${as_server[@]}" env -C "$folder" "$pgbin/initdb" -D "$folder/data" -U caregate --pwfile "$folder/pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C --no-sync > "$folder/initdb.log"
"${as_server[@]}" env -C "$folder" "$pgbin/pg_ctl" -D "$folder/data" -l "$folder/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $folder/socket $durability -c max_connections=100" start > /dev/null
"${as_server[@]}" env -C "$folder" "$pgbin/createdb" -h "$folder/socket" -p "$port" -U caregate caregate_bench

echo "PostgreSQL $("$pgbin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port$([ -z "$durability" ] && echo ', durable' || echo ', fsync off'); $(nproc) cores; $(date -u '+%Y-%m-%d %H:%M UTC')"
"$bin" postgres-outbox --postgres "postgres://caregate:$password@127.0.0.1:$port/caregate_bench?sslmode=disable" "$@"
