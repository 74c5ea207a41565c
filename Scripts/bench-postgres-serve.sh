#!/usr/bin/env bash
# The app API on PostgreSQL (issue 47, item 5), in one sitting: the same patients' data
# (`caregate store generate`) in a SQLite store and, moved by `caregate store migrate`, in a PostgreSQL
# store on a private server (Scripts/postgres-helpers.sh), then wrk (Debian's) on loopback,
# CONNECTIONS connections spread evenly over the instances of each setting, SECONDS_EACH seconds a run:
#   1. SQLite, one `caregate serve` (the baseline): up-to-date pulls, then day views;
#   2. PostgreSQL, one instance: the same;
#   3. PostgreSQL, two instances on the one store: the same (requests/s summed over the two, p99 the
#      larger of the two), what a second instance (a second machine, in a deployment) adds.
# Runs alternate setting by setting; the table prints each run and the ratios to the baseline. Every
# process runs on this machine's cores, PostgreSQL included: two instances here share the cores one
# instance had, so the figure of 3 is what PostgreSQL's locking and round trips let through, not what
# two machines would serve. It is a benchmark, run on demand, never a test.
#
#   bash Scripts/bench-postgres-serve.sh                       # PATIENTS=1000 DAYS=30 SECONDS_EACH=15 CONNECTIONS=64
#   PATIENTS=10000 DAYS=365 bash Scripts/bench-postgres-serve.sh   # a larger store (more outcomes)
#   BIN=/tmp/old/caregate bash Scripts/bench-postgres-serve.sh     # another build, unbuilt
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/app-load-helpers.sh
source Scripts/postgres-helpers.sh
patients=${PATIENTS:-1000}
days=${DAYS:-30}
seconds=${SECONDS_EACH:-15}
connections=${CONNECTIONS:-64}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 2; }
if [ -n "${BIN:-}" ]; then
    bin=$BIN
else
    swift build -c release --product caregate 2>&1 | grep -E "error|Build" || true
    bin="$(swift build -c release --show-bin-path)/caregate"
fi

work=$(mktemp -d)
chmod 700 "$work"
servers=()
cleanup() {
    for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    stop_private_postgres
    rm -rf "$work"
}
trap cleanup EXIT
start_private_postgres caregate_bench
export PGPASSWORD=$PG_PASSWORD
sqlite="$work/care.sqlite"
postgres=$PG_URL_WITHOUT_PASSWORD

echo "== making $patients patients' data ($days days) and moving it to PostgreSQL $PG_VERSION ($PG_DURABILITY)"
"$bin" store generate --patients "$patients" --days "$days" --store "$sqlite" >"$work/generate.log" 2>&1 \
    || { cat "$work/generate.log" >&2; exit 1; }
moved_from=$(date +%s)
"$bin" store migrate --from "$sqlite" --to "$postgres" >"$work/migrate.log" 2>&1 || { cat "$work/migrate.log" >&2; exit 1; }
echo "   store migrate: $(( $(date +%s) - moved_from ))s; $(tail -n 1 "$work/migrate.log")"

tokens="$work/tokens"
for i in $(seq 1 $(( patients < 256 ? patients : 256 ))); do
    "$bin" patients token --store "$sqlite" --key "$work/key.pem" --patient "patient-$i" --expires-in 1h
done > "$tokens"
write_load_lua "$work/load.lua"

serve() {  # serve STORE: starts an instance; its port in served_port
    local port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$bin" serve --store "$1" --key "$work/key.pem" --host 127.0.0.1 --port "$port" --log-level warning >"$work/serve-$port.log" 2>&1 &
    servers+=($!)
    for _ in $(seq 1 200); do
        python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=1)" 2>/dev/null && { served_port=$port; return 0; }
        sleep 0.1
    done
    echo "caregate serve on $1 did not answer: $(tail -n 3 "$work/serve-$port.log")" >&2
    exit 1
}
serve "$sqlite"; sqlite_port=$served_port
serve "$postgres"; pg_first=$served_port
serve "$postgres"; pg_second=$served_port
first_token=$(head -n 1 "$tokens")
sqlite_pull="/carekit/v1/revisions?knowledgeVector=$(up_to_date_vector "http://127.0.0.1:$sqlite_port" "$first_token")"
pg_pull="/carekit/v1/revisions?knowledgeVector=$(up_to_date_vector "http://127.0.0.1:$pg_first" "$first_token")"
day="/carekit/v1/events?date=2025-01-15"

table="$work/table"
printf '%-44s %9s %9s %9s %8s\n' "run" "req/s" "p50 ms" "p99 ms" "failed" > "$table"
load() {  # load LABEL PATH PORT...: wrk on each port at once, CONNECTIONS split among them
    local label=$1 path=$2
    shift 2
    local each=$(( connections / $# )) index=0 loads=()
    echo "== $label ($connections connections over $# instance(s), ${seconds}s)"
    for port in "$@"; do
        TOKENS="$tokens" LOAD_PATH="$path" RESULT="$work/result-$index" wrk -t1 -c"$each" -d"${seconds}s" --timeout 10s \
            -s "$work/load.lua" "http://127.0.0.1:$port" >/dev/null &
        loads+=($!)
        index=$(( index + 1 ))
    done
    wait "${loads[@]}"
    # Summed rate, the larger p99 and p50, summed failures.
    read -r rps p50 p99 failed < <(cat "$work"/result-* | awk -F'\t' '{ r += $1; f += $4; if ($2 > m) m = $2; if ($3 > n) n = $3 }
        END { printf "%.0f %.2f %.2f %d\n", r, m, n, f }')
    rm -f "$work"/result-*
    printf '%-44s %9s %9s %9s %8s\n' "$label" "$rps" "$p50" "$p99" "$failed" | tee -a "$table"
    last_rps=$rps
    last_p99=$p99
}

load "pulls, SQLite, one instance" "$sqlite_pull" "$sqlite_port";            sqlite_pulls=$last_rps
load "pulls, PostgreSQL, one instance" "$pg_pull" "$pg_first";               pg_one_pulls=$last_rps
load "pulls, PostgreSQL, two instances" "$pg_pull" "$pg_first" "$pg_second"; pg_two_pulls=$last_rps
load "day views, SQLite, one instance" "$day" "$sqlite_port";                sqlite_days=$last_rps; sqlite_day_p99=$last_p99
load "day views, PostgreSQL, one instance" "$day" "$pg_first";               pg_one_days=$last_rps; pg_one_day_p99=$last_p99
load "day views, PostgreSQL, two instances" "$day" "$pg_first" "$pg_second"; pg_two_days=$last_rps; pg_two_day_p99=$last_p99

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
echo
echo "== $bin, $patients patients, $days days; PostgreSQL $PG_VERSION ($PG_DURABILITY); $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC')"
cat "$table"
echo
echo "   pulls: PostgreSQL one instance $(ratio "$pg_one_pulls" "$sqlite_pulls")x SQLite's, two instances $(ratio "$pg_two_pulls" "$sqlite_pulls")x"
echo "   day views: PostgreSQL one instance $(ratio "$pg_one_days" "$sqlite_days")x SQLite's, two instances $(ratio "$pg_two_days" "$sqlite_days")x"
echo "   day view p99 (ms): SQLite $sqlite_day_p99, PostgreSQL one instance $pg_one_day_p99, two instances $pg_two_day_p99"
