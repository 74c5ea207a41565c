#!/usr/bin/env bash
# The import rate into PostgreSQL beside SQLite (issue 47, item 5), in one run on one machine: a private
# PostgreSQL server (Scripts/postgres-helpers.sh: Debian's initdb and pg_ctl, a mktemp folder, a free port
# of 127.0.0.1, `nobody` through setpriv when run as root); then
# `caregate import` of the same folder into a fresh SQLite file and into a fresh PostgreSQL database,
# alternated (SQLite, PostgreSQL, SQLite, ...), RUNS times each. Prints each run, then the median
# resources per second of each store and their ratio. The server is stopped and its folder removed,
# whatever happens. The password reaches caregate through PGPASSWORD, never on its command line.
# Durability is off on both sides unless DURABLE=1 (PostgreSQL: fsync, synchronous_commit,
# full_page_writes; SQLite keeps its own settings), as in the tests: the figures are those of the
# stores' statements, not of this machine's disk.
#
#   bash Scripts/bench-postgres-import.sh                                  # ../shared/corpus/synthea-r4, 3 runs each
#   bash Scripts/bench-postgres-import.sh ../shared/corpus/bulk-ndjson     # another input folder or file
#   RUNS=1 BIN=.build/debug/caregate bash Scripts/bench-postgres-import.sh  # a quick look with a debug build
#   DURABLE=1 bash Scripts/bench-postgres-import.sh                        # fsync and synchronous commits on
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-.build/release/caregate}
[ -x "$bin" ] || { echo "no $bin: build it with swift build -c release --product caregate" >&2; exit 1; }
input=${1:-../shared/corpus/synthea-r4}
[ -e "$input" ] || { echo "no input $input (a folder or file of FHIR resources)" >&2; exit 1; }
runs=${RUNS:-3}
[[ "$runs" =~ ^[1-9][0-9]?$ ]] || { echo "RUNS must be 1 to 99" >&2; exit 1; }
source Scripts/postgres-helpers.sh
trap stop_private_postgres EXIT
start_private_postgres caregate_bench
folder=$PG_FOLDER
mkdir -m 700 "$folder/sqlite"
[ ${#PG_AS_SERVER[@]} -eq 0 ] || chown "$(id -u):$(id -g)" "$folder/sqlite"

echo "caregate import of $input: SQLite beside PostgreSQL $PG_VERSION on 127.0.0.1:$PG_PORT, $PG_DURABILITY; $(nproc) cores; $(date -u '+%Y-%m-%d %H:%M UTC')"

# One import into `store`: prints "resources seconds" (resources from the report's first line, seconds of
# the whole command, wall clock).
import_once() {
    local store=$1 start end report
    start=$(date +%s%N)
    report=$(PGPASSWORD=$PG_PASSWORD "$bin" import "$input" --store "$store" --time-zone UTC 2> "$folder/import.err") \
        || { echo "caregate import into ${store%%\?*} failed:" >&2; cat "$folder/import.err" >&2; exit 1; }
    end=$(date +%s%N)
    echo "$(printf '%s\n' "$report" | awk 'NR == 1 { print $1; exit }') $(( (end - start) / 1000000 ))"
}

sqlite_rates=() postgres_rates=()
for run in $(seq 1 "$runs"); do
    read -r resources ms < <(import_once "$folder/sqlite/run-$run.sqlite")
    rate=$(awk -v r="$resources" -v ms="$ms" 'BEGIN { printf "%.0f", r * 1000 / (ms > 0 ? ms : 1) }')
    sqlite_rates+=("$rate")
    echo "run $run  SQLite      $resources resources in $(awk -v ms="$ms" 'BEGIN { printf "%.2f", ms / 1000 }') s: $rate resources/s"

    create_private_database "caregate_bench_$run"
    read -r resources ms < <(import_once "postgres://caregate@127.0.0.1:$PG_PORT/caregate_bench_$run?sslmode=disable")
    rate=$(awk -v r="$resources" -v ms="$ms" 'BEGIN { printf "%.0f", r * 1000 / (ms > 0 ? ms : 1) }')
    postgres_rates+=("$rate")
    echo "run $run  PostgreSQL  $resources resources in $(awk -v ms="$ms" 'BEGIN { printf "%.2f", ms / 1000 }') s: $rate resources/s"
done

median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
sqlite=$(median "${sqlite_rates[@]}")
postgres=$(median "${postgres_rates[@]}")
echo "median of $runs: SQLite $sqlite resources/s, PostgreSQL $postgres resources/s; PostgreSQL/SQLite $(awk -v p="$postgres" -v s="$sqlite" 'BEGIN { printf "%.2f", p / s }')"
