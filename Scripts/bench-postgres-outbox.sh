#!/usr/bin/env bash
# The PostgreSQL outbox benchmark (issue 47, item 5) on a private PostgreSQL server
# (Scripts/postgres-helpers.sh: started for the run, stopped and removed after, fsync off unless
# DURABLE=1): `caregate-bench postgres-outbox --postgres URL` runs against it.
#
#   bash Scripts/bench-postgres-outbox.sh                          # 20,000 entries, 1/2/4/8 workers, 3 runs
#   bash Scripts/bench-postgres-outbox.sh --entries 5000 --runs 1  # any caregate-bench option
#   BIN=/tmp/caregate-bench bash Scripts/bench-postgres-outbox.sh  # another build
#   DURABLE=1 bash Scripts/bench-postgres-outbox.sh                # fsync and synchronous commits on
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-.build/release/caregate-bench}
[ -x "$bin" ] || { echo "no $bin: build it with swift build -c release --product caregate-bench" >&2; exit 1; }
source Scripts/postgres-helpers.sh
trap stop_private_postgres EXIT
start_private_postgres caregate_bench

echo "PostgreSQL $PG_VERSION on 127.0.0.1:$PG_PORT, $PG_DURABILITY; $(nproc) cores; $(date -u '+%Y-%m-%d %H:%M UTC')"
"$bin" postgres-outbox --postgres "$PG_URL" "$@"
