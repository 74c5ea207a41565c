# Sourced by the PostgreSQL benchmarks (bench-postgres-outbox.sh, bench-postgres-import.sh): a private
# PostgreSQL server, as Tests/TestSupport/PostgresServerProcess.swift makes one. Debian's initdb and pg_ctl
# (/usr/lib/postgresql/<newest>/bin) make a cluster in a mktemp folder, started on a free port of
# 127.0.0.1 (as `nobody` through setpriv when run as root: PostgreSQL refuses root), its superuser
# `caregate` with a random password (SCRAM over TCP). Durability is off (fsync, synchronous_commit,
# full_page_writes) unless DURABLE=1. On exit the server is stopped and its folder removed, whatever happens.
#
# start_private_postgres LABEL sets `pgbin`, `folder`, `port`, `password`, `durability` and `as_server`
# (the command prefix that runs a tool as the server's user); create_database NAME makes a database.
start_private_postgres() {
    local label=$1
    pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n | tail -1)
    [ -n "$pgbin" ] && [ -x "$pgbin/initdb" ] || { echo "PostgreSQL is not installed: bash Scripts/setup-test-tools.sh" >&2; exit 1; }
    folder=$(mktemp -d "/tmp/caregate-$label.XXXXXX")
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
    trap stop_private_postgres EXIT
    durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    [ "${DURABLE:-0}" = 1 ] && durability=""
    "${as_server[@]}" env -C "$folder" "$pgbin/initdb" -D "$folder/data" -U caregate --pwfile "$folder/pwfile" \
        --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C --no-sync > "$folder/initdb.log"
    "${as_server[@]}" env -C "$folder" "$pgbin/pg_ctl" -D "$folder/data" -l "$folder/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $folder/socket $durability -c max_connections=100" start > /dev/null
}

create_database() {
    "${as_server[@]}" env -C "$folder" "$pgbin/createdb" -h "$folder/socket" -p "$port" -U caregate "$1"
}

stop_private_postgres() {
    if [ -f "$folder/data/postmaster.pid" ]; then
        "${as_server[@]}" env -C "$folder" "$pgbin/pg_ctl" -D "$folder/data" -m immediate -w -t 60 stop > /dev/null || true
    fi
    rm -rf "$folder"
}
