#!/usr/bin/env bash
# Load benchmark of the app API: wrk (Debian's) on loopback, CONNECTIONS connections, against PATIENTS
# patients' data (`caregate store generate`), with patient tokens spread over the connections. Runs of
# SECONDS_EACH seconds in one sitting, printed as one table (requests/s, p50, p99, failed requests:
# socket errors + non-2xx answers):
#   1. pulls of a device that is up to date (the steady state of OCKStore.synchronize), no writer,
#   2. day views (GET /carekit/v1/events?date=...), no writer,
#   H. the same server's GET /health, no writer: the server's own limit, the baseline of 1 (between 1
#      and 2, so that the three share the sitting),
#   3. while `caregate sync` imports PROVIDER_COPIES (20) copies of the Synthea corpus under fresh ids (a
#      folder as the provider, `caregate-bench provider`) into the same store,
#      the pulls of 1 offered at up to PACED_RATE a second (2,800: each connection pauses
#      CONNECTIONS/PACED_RATE s, in whole ms, between an answer and its next request, so the rate is
#      CONNECTIONS / (pause + latency)), so that the latency is that of a server carrying that load,
#      not of a queue 64 connections deep,
#   4. the pulls of 1 as fast as they are answered, while that import goes on,
#   5. the day views of 2 while it goes on;
#   and all through 3-5 an app's push every 0.5 s (the first patient's up-to-date device): how long each
#   waited for the store, which the sync's import holds (it lets pushes in at its safe points).
# Runs 1 and 2 are the baselines of 4 and 5. At the end it prints the ratios issue 49 asks for, beside
# their baselines and goals: pulls / health (run 1 / run H) and day views / pulls (run 2 / run 1). Runs 1, 2, 4 and 5 keep every connection busy: their
# latency is mostly the wait behind the other 63 requests (Little's law: 64 / rate), their rate the
# most the server answers. The table says how long the sync wrote during each run (a run it did not
# overlap whole measured less than what it says). It is a benchmark, run on demand, never a test.
#
#   bash Scripts/bench-app-api.sh                      # PATIENTS=1000 SECONDS_EACH=20 CONNECTIONS=64
#   BIN=/tmp/old/caregate bash Scripts/bench-app-api.sh   # another build (e.g. before a change), unbuilt
#   WITH_SYNC=0 bash Scripts/bench-app-api.sh          # runs 1 and 2 only
#   SYNC_NICE=10 bash Scripts/bench-app-api.sh         # the sync as a batch job: `nice -n 10 caregate sync`
#   SYNC_PRIORITY=normal bash Scripts/bench-app-api.sh # `caregate sync --priority normal` (the default, auto,
#                                                      # runs it as a background job beside the server)
#   PACED_RATE=3000 bash Scripts/bench-app-api.sh      # run 3 offered at 3,000 pulls/s
#   PROVIDER_COPIES=40 bash Scripts/bench-app-api.sh   # a longer import (the sync should outlast runs 3-5)
# The generated outcomes sit in the outbox as an app's would; a first export makes them dead letters
# before the runs (they have no FHIR origin), as a first sync would, so the measured sync is an import.
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/app-load-helpers.sh
patients=${PATIENTS:-1000}
seconds=${SECONDS_EACH:-20}
connections=${CONNECTIONS:-64}
with_sync=${WITH_SYNC:-1}
sync_nice=${SYNC_NICE:-0}
sync_priority=${SYNC_PRIORITY:-auto}
case "$sync_priority" in auto|normal|background) ;; *) echo "SYNC_PRIORITY must be auto, normal or background" >&2; exit 2 ;; esac
paced_rate=${PACED_RATE:-2800}
copies=${PROVIDER_COPIES:-20}
[ "$copies" -ge 1 ] 2>/dev/null || { echo "PROVIDER_COPIES must be a positive number" >&2; exit 2; }
pause_ms=$(( paced_rate > 0 ? connections * 1000 / paced_rate : 0 ))
[ "$pause_ms" -ge 1 ] || { echo "PACED_RATE must be between 1 and $(( connections * 1000 )) a second" >&2; exit 2; }
corpus=${CAREGATE_CORPUS:-../shared/corpus}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 2; }

if [ -n "${BIN:-}" ]; then
    bin=$BIN
else
    swift build -c release --product caregate 2>&1 | grep -E "error|Compiling caregate|Build" || true
    bin="$(swift build -c release --show-bin-path)/caregate"
fi
if [ -n "${BENCH_BIN:-}" ]; then
    bench_bin=$BENCH_BIN
else
    swift build -c release --product caregate-bench 2>&1 | grep -E "error|Build" || true
    bench_bin="$(swift build -c release --show-bin-path)/caregate-bench"
fi
work=$(mktemp -d)
chmod 700 "$work"
server=""
writer=""
pusher=""
cleanup() {
    [ -n "$writer" ] && [ -s "$work/sync.pid" ] && kill "$(cat "$work/sync.pid")" 2>/dev/null || true
    [ -n "$pusher" ] && kill "$pusher" 2>/dev/null || true
    [ -n "$server" ] && kill "$server" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

store="$work/care.sqlite"
echo "== $bin: making $patients patients' data"
"$bin" store generate --patients "$patients" --days 30 --store "$store" >"$work/generate.log" 2>&1 \
    || { cat "$work/generate.log" >&2; exit 1; }
# Exit 1: the generated outcomes become dead letters, which is the point.
"$bin" export --store "$store" --to "$work/first-export" >"$work/first-export.log" 2>&1 || true
if [ "$with_sync" = 1 ]; then
    "$bench_bin" provider --folder "$corpus/synthea-r4" --copies "$copies" --out "$work/provider" >/dev/null
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" serve --store "$store" --key "$work/key.pem" --port "$port" --log-level warning &
server=$!
for _ in $(seq 1 100); do
    python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=1)" 2>/dev/null && break
    sleep 0.1
done

# One token per patient (up to 256 patients: the connections cycle through them).
tokens="$work/tokens"
for i in $(seq 1 $(( patients < 256 ? patients : 256 ))); do
    "$bin" patients token --store "$store" --key "$work/key.pem" --patient "patient-$i" --expires-in 1h
done > "$tokens"

first=$(head -n 1 "$tokens")
vector=$(up_to_date_vector "http://127.0.0.1:$port" "$first")
write_load_lua "$work/load.lua"

table="$work/table"
printf '%-52s %9s %9s %9s %8s %13s %9s %12s\n' "run" "req/s" "p50 ms" "p99 ms" "failed" "(sock/non2xx)" "sync" "server CPU" > "$table"
run() {  # run LABEL PATH [PAUSE_MS]
    echo "== $1 ($connections connections, ${seconds}s)"
    local started ended writing="-"
    started=$(date +%s)
    local cpu_before cpu_after
    cpu_before=$(cpu_ticks "$server")
    TOKENS="$tokens" LOAD_PATH="$2" PAUSE_MS="${3:-0}" RESULT="$work/result" wrk -t2 -c"$connections" -d"${seconds}s" --timeout 10s \
        -s "$work/load.lua" "http://127.0.0.1:$port" >/dev/null
    ended=$(date +%s)
    cpu_after=$(cpu_ticks "$server")
    if [ -n "$writer" ]; then  # the seconds of this run the sync was writing
        local from=$(( started > sync_from ? started : sync_from )) to=$ended
        [ -s "$work/sync.end" ] && to=$(( $(cat "$work/sync.end") < ended ? $(cat "$work/sync.end") : ended ))
        writing="$(( to > from ? to - from : 0 ))/$(( ended - started ))s"
    fi
    IFS=$'\t' read -r rps p50 p99 failed socket status requests < "$work/result"
    last_rps=$rps
    # The server's CPU time (user + system) per request: what bounds it once the cores are its own.
    local cpu_per_request
    cpu_per_request=$(awk -v t=$(( cpu_after - cpu_before )) -v hz="$(getconf CLK_TCK)" -v n="$requests" \
        'BEGIN { printf "%.3f", (n > 0 ? t / hz * 1000 / n : 0) }')
    printf '%-52s %9s %9s %9s %8s %13s %9s %12s\n' "$1" "$rps" "$p50" "$p99" "$failed" "$socket/$status" "$writing" \
        "$cpu_per_request" | tee -a "$table"
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

pull="/carekit/v1/revisions?knowledgeVector=$vector"
day="/carekit/v1/events?date=2025-01-15"
run "pulls, up to date, no writer" "$pull"
pull_rps=$last_rps
# Open to all (the tokens are sent and ignored): what the server answers with no token check, audit or store work.
run "health (GET /health), no writer" "/health"
health_rps=$last_rps
run "day views, no writer" "$day"
day_rps=$last_rps
if [ "$with_sync" = 1 ]; then
    printf 'server: %s\npush-to: %s\ntime-zone: UTC\n' "$work/provider" "$work/exports" > "$work/sync.yaml"
    # An app's pushes while the sync runs (an empty push of the first patient's up-to-date device every
    # 0.5 s, pulling again on 409): how long each waited for the store, which the sync's import holds.
    python3 - "http://127.0.0.1:$port" "$first" "$work/sync.end" "$work/pushes" <<'PY' &
import json, os, re, sys, time, urllib.error, urllib.parse, urllib.request, uuid
base, token, ended, out = sys.argv[1:5]
device = str(uuid.uuid4()).upper()
known = {device: 1}
def pull():
    url = base + "/carekit/v1/revisions?knowledgeVector=" + urllib.parse.quote(json.dumps({"processes": [{"id": i, "clock": c} for i, c in known.items()]}))
    while url:
        answer = urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": "Bearer " + token}), timeout=120)
        for record in json.load(answer):
            for process in record["knowledgeVector"]["processes"]:
                known[process["id"]] = max(known.get(process["id"], 0), process["clock"])
        link = re.search(r'<([^>]+)>;\s*rel="next"', answer.headers.get("Link") or "")
        url = urllib.parse.urljoin(base, link.group(1)) if link else None
waits, failed, busy, answers = [], 0, 0, []
pull()
while not os.path.exists(ended) or os.path.getsize(ended) == 0:
    known[device] += 1
    body = json.dumps({"deviceRevisions": [], "deviceKnowledge": {"processes": [{"id": i, "clock": c} for i, c in known.items()]}}).encode()
    start = time.time()
    try:
        urllib.request.urlopen(urllib.request.Request(base + "/carekit/v1/revisions", data=body, method="POST",
            headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"}), timeout=120).read()
        waits.append(time.time() - start)
    except urllib.error.HTTPError as error:
        if error.code == 409:
            pull()
        elif error.code == 503:
            # The store stayed busy past the server's busy timeout: the app waits Retry-After, then pushes again.
            busy += 1
            time.sleep(min(float(error.headers.get("Retry-After") or 1), 30))
        else:
            failed += 1
            answers.append("%d %s" % (error.code, error.read()[:100].decode(errors="replace")))
    except Exception as error:
        failed += 1
        answers.append(type(error).__name__)
    time.sleep(0.5)
waits.sort()
with open(out, "w") as f:
    f.write("%d pushes, median %.0f ms, max %.0f ms, %d answered 503 busy (retried after Retry-After), %d failed%s" % (
        len(waits), 1000 * waits[len(waits) // 2] if waits else 0, 1000 * waits[-1] if waits else 0, busy, failed,
        "".join("\n   failed: " + answer for answer in answers)))
PY
    pusher=$!
    sync_from=$(date +%s)
    ( nice -n "$sync_nice" "$bin" sync --once --priority "$sync_priority" --config "$work/sync.yaml" --store "$store" --report "$work/sync-report.json" >"$work/sync.out" 2>"$work/sync.err" &
      echo $! > "$work/sync.pid"; status=0; wait $! || status=$?
      echo $status > "$work/sync.status"; date +%s > "$work/sync.end" ) &
    writer=$!
    label="caregate sync"
    [ "$sync_nice" = 0 ] || label="nice -n $sync_nice caregate sync"
    label="$label --priority $sync_priority"
    run "pulls at most $(( connections * 1000 / pause_ms ))/s offered, during $label" "$pull" "$pause_ms"
    run "pulls, up to date, during $label" "$pull"
    run "day views, during $label" "$day"
    wait "$writer" || true
    writer=""
    wait "$pusher" || true  # it ends with the sync
    echo "== an app's pushes during the sync: $(cat "$work/pushes" 2>/dev/null || echo none measured)"
    echo "== the sync beside the load: exit $(cat "$work/sync.status"), $(( $(cat "$work/sync.end") - sync_from ))s" \
        "$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print("(import %.1fs, push %.1fs)" % (r["importSeconds"], r["pushSeconds"]))' "$work/sync-report.json" 2>/dev/null)"
    # Exit 1 is also what a sync says when some resources wait for a later run or went to dead letters.
    [ "$(cat "$work/sync.status")" = 0 ] || { tail -n 3 "$work/sync.err"; grep -iE "dead|fail|error|busy|wait" "$work/sync.out" | head -n 8; }
fi
echo
echo "== $bin, $patients patients, $connections connections, ${seconds}s a run; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   (sync: seconds it wrote during the run; server CPU: ms of the server's CPU time per request)"
cat "$table"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
echo
echo "   ratios of this sitting (issue 49, item 4):"
echo "   pulls / health:    $(ratio "$pull_rps" "$health_rps")x  (issue 49 found 0.38x; goal 0.50x or more)"
echo "   day views / pulls: $(ratio "$day_rps" "$pull_rps")x  (issue 49 found 0.29x; goal 0.50x or more)"
