# Sourced by the PostgreSQL benchmarks: a private PostgreSQL server for one run. Debian's initdb and
# pg_ctl (/usr/lib/postgresql/<newest>/bin) make a cluster in a mktemp folder, started on a free port of
# 127.0.0.1 (as `nobody` through setpriv when run as root: PostgreSQL refuses root), the way
# Tests/TestSupport/PostgresServerProcess.swift does. The caller's EXIT trap must call
# stop_private_postgres, which stops the server and removes its folder, whatever happened.
# Durability is off (fsync, synchronous_commit, full_page_writes) unless DURABLE=1: the figures are those
# of the store's statements and locks, not of this machine's disk.
#
#   source Scripts/postgres-helpers.sh
#   trap stop_private_postgres EXIT
#   start_private_postgres caregate_bench     # sets PG_URL (password inside), PG_URL_WITHOUT_PASSWORD and
#                                             # PG_PASSWORD, PG_PORT, PG_FOLDER, PG_VERSION

start_private_postgres() {
    local database=${1:-caregate_bench}
    PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n | tail -1)
    [ -n "$PG_BIN" ] && [ -x "$PG_BIN/initdb" ] || { echo "PostgreSQL is not installed: bash Scripts/setup-test-tools.sh" >&2; return 1; }
    PG_FOLDER=$(mktemp -d /tmp/caregate-bench-postgres.XXXXXX)
    chmod 700 "$PG_FOLDER"
    mkdir -m 700 "$PG_FOLDER/socket"
    local password
    password=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
    printf '%s\n' "$password" > "$PG_FOLDER/pwfile"
    PG_AS_SERVER=()
    if [ "$(id -u)" = 0 ]; then
        chown -R nobody:nogroup "$PG_FOLDER"
        PG_AS_SERVER=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
    fi
    # A free port: the kernel's choice for a socket bound to port 0.
    PG_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    local durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    [ "${DURABLE:-0}" = 1 ] && durability=""
    PG_DURABILITY=$([ -z "$durability" ] && echo durable || echo "fsync off")
    "${PG_AS_SERVER[@]}" env -C "$PG_FOLDER" "$PG_BIN/initdb" -D "$PG_FOLDER/data" -U caregate --pwfile "$PG_FOLDER/pwfile" \
        --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C --no-sync > "$PG_FOLDER/initdb.log"
    "${PG_AS_SERVER[@]}" env -C "$PG_FOLDER" "$PG_BIN/pg_ctl" -D "$PG_FOLDER/data" -l "$PG_FOLDER/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_FOLDER/socket $durability -c max_connections=200" start > /dev/null
    "${PG_AS_SERVER[@]}" env -C "$PG_FOLDER" "$PG_BIN/createdb" -h "$PG_FOLDER/socket" -p "$PG_PORT" -U caregate "$database"
    PG_VERSION=$("$PG_BIN/postgres" --version | awk '{print $3}')
    PG_PASSWORD=$password
    PG_URL="postgres://caregate:$password@127.0.0.1:$PG_PORT/$database?sslmode=disable"
    PG_URL_WITHOUT_PASSWORD="postgres://caregate@127.0.0.1:$PG_PORT/$database?sslmode=disable"
}

# Another database on the running server (for a second store in one run).
create_private_database() {
    "${PG_AS_SERVER[@]}" env -C "$PG_FOLDER" "$PG_BIN/createdb" -h "$PG_FOLDER/socket" -p "$PG_PORT" -U caregate "$1"
}

stop_private_postgres() {
    [ -n "${PG_FOLDER:-}" ] || return 0
    if [ -f "$PG_FOLDER/data/postmaster.pid" ]; then
        "${PG_AS_SERVER[@]}" env -C "$PG_FOLDER" "$PG_BIN/pg_ctl" -D "$PG_FOLDER/data" -m immediate -w -t 60 stop > /dev/null || true
    fi
    rm -rf "$PG_FOLDER"
}
