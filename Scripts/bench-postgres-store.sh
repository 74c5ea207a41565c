#!/usr/bin/env bash
# A patient's day on PostgreSQL beside SQLite (issue 47, item 5), in one run: a private PostgreSQL server
# (Scripts/postgres-helpers.sh: Debian's initdb and pg_ctl, a mktemp folder, a free port of 127.0.0.1,
# fsync off unless DURABLE=1; stopped and removed whatever happens), then `caregate-bench store
# --postgres URL`: 1,000 patients x 20 tasks x 365 days (7.3 million outcomes) inserted into a SQLite
# file and then into the PostgreSQL database, the same seeded "events of one patient for one day"
# queries on both, and the insert rates and day-query p50/p99 side by side. Extra arguments go to
# caregate-bench (e.g. --patients 250 for a quarter of the size). The password reaches caregate-bench
# through PGPASSWORD, never on its command line. With EXPLAIN=1, the plans of the day query's two
# statements for one patient and day are printed after the run (EXPLAIN ANALYZE, through psql).
#
#   bash Scripts/bench-postgres-store.sh                                  # builds release, 7.3 million outcomes
#   bash Scripts/bench-postgres-store.sh --patients 50 --queries 200     # a quick look
#   BIN=.build/release/caregate-bench bash Scripts/bench-postgres-store.sh  # a build already made (none is built)
#   EXPLAIN=1 DURABLE=1 bash Scripts/bench-postgres-store.sh             # the plans; fsync on
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${BIN:-}" ]; then
    bin=$BIN
else
    swift build -c release --product caregate-bench 2>&1 | tail -3
    bin=.build/release/caregate-bench
fi
[ -x "$bin" ] || { echo "no $bin: build it with swift build -c release --product caregate-bench" >&2; exit 1; }
source Scripts/postgres-helpers.sh
trap stop_private_postgres EXIT
start_private_postgres caregate_bench

echo "caregate-bench store: SQLite beside PostgreSQL $PG_VERSION on 127.0.0.1:$PG_PORT, $PG_DURABILITY; $(nproc) cores; $(date -u '+%Y-%m-%d %H:%M UTC')"
PGPASSWORD=$PG_PASSWORD "$bin" store --postgres "$PG_URL_WITHOUT_PASSWORD" "$@"
echo "PostgreSQL database size: $("${PG_AS_SERVER[@]}" env -C "$PG_FOLDER" "$PG_BIN/psql" -h "$PG_FOLDER/socket" -p "$PG_PORT" -U caregate -d caregate_bench -XAtc "SELECT pg_size_pretty(pg_database_size(current_database()))")"

if [ "${EXPLAIN:-0}" = 1 ]; then
    # The two statements of PostgreSQL's day query (Sources/PostgresStore/Entities/ReadEvents.swift) for
    # patient-1 on day 100 of the generated set (which starts 2025-01-01 UTC, 1735689600).
    psql_bench() { "${PG_AS_SERVER[@]}" env -C "$PG_FOLDER" "$PG_BIN/psql" -h "$PG_FOLDER/socket" -p "$PG_PORT" -U caregate -d caregate_bench -X "$@"; }
    day=$((1735689600 + 100 * 86400))
    echo "plan of the task versions of patient-1:"
    psql_bench -c "EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM task WHERE (care_plan_id = ANY(ARRAY['careplan-1']::text[]) OR (care_plan_id IS NULL AND linked_patient_id = 'patient-1')) AND deleted_date IS NULL AND effective_date < $((day + 86400)) ORDER BY row_id"
    uuids=$(psql_bench -Atc "SELECT array_agg(uuid)::text FROM task WHERE care_plan_id = 'careplan-1'")
    echo "plan of the outcomes of patient-1's day:"
    psql_bench -c "EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM outcome WHERE task_uuid = ANY('$uuids'::uuid[]) AND event_start >= $day AND event_start <= $((day + 86399)) AND next_version_uuid IS NULL AND deleted_date IS NULL ORDER BY task_uuid, event_start, occurrence_index, version_number"
fi
