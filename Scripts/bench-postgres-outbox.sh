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
. Scripts/private-postgres.sh
start_private_postgres bench-postgres
create_database caregate_bench

echo "PostgreSQL $("$pgbin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port$([ -z "$durability" ] && echo ', durable' || echo ', fsync off'); $(nproc) cores; $(date -u '+%Y-%m-%d %H:%M UTC')"
"$bin" postgres-outbox --postgres "postgres://caregate:$password@127.0.0.1:$port/caregate_bench?sslmode=disable" "$@"
