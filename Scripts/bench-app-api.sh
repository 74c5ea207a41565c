#!/usr/bin/env bash
# Load benchmark of the app API: wrk (Debian's) on loopback, 64 connections, against PATIENTS patients'
# data (`caregate store generate`), with patient tokens spread over the connections. Three runs of
# SECONDS each in one sitting, each printed with requests/s, p50, p99 and failed requests:
#   1. pulls of a device that is up to date (the steady state of OCKStore.synchronize),
#   2. the same pulls while `caregate sync` imports the Synthea corpus (a folder as the provider) into
#      the same store,
#   3. day views (GET /carekit/v1/events?date=...) while the import goes on.
# Run 1 is the baseline of runs 2 and 3. It is a benchmark, run on demand, never a test.
#
#   bash Scripts/bench-app-api.sh            # PATIENTS=1000 SECONDS_EACH=20 CONNECTIONS=64
set -euo pipefail
cd "$(dirname "$0")/.."
patients=${PATIENTS:-1000}
seconds=${SECONDS_EACH:-20}
connections=${CONNECTIONS:-64}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 2; }

swift build -c release --product caregate 2>&1 | grep -E "error|Compiling caregate|Build" || true
bin="$(swift build -c release --show-bin-path)/caregate"
work=$(mktemp -d)
chmod 700 "$work"
server=""
writer=""
cleanup() {
    [ -n "$writer" ] && kill "$writer" 2>/dev/null || true
    [ -n "$server" ] && kill "$server" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

store="$work/care.sqlite"
echo "== making $patients patients' data"
"$bin" store generate --patients "$patients" --days 30 --store "$store" >/dev/null
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

# The server's vector as an up-to-date device knows it: the last record of a first pull, every page.
first=$(head -n 1 "$tokens")
vector=$(python3 - "http://127.0.0.1:$port" "$first" <<'PY'
import json, re, sys, urllib.parse, urllib.request
base, token = sys.argv[1], sys.argv[2]
url = base + "/carekit/v1/revisions?knowledgeVector=" + urllib.parse.quote('{"processes":[]}')
last = None
while url:
    answer = urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": "Bearer " + token}))
    records = json.load(answer)
    last = records[-1]["knowledgeVector"] if records else last
    link = re.search(r'<([^>]+)>;\s*rel="next"', answer.headers.get("Link") or "")
    url = urllib.parse.urljoin(base, link.group(1)) if link else None
print(urllib.parse.quote(json.dumps(last, separators=(",", ":"))))
PY
)

cat > "$work/load.lua" <<'LUA'
local tokens = {}
local path = os.getenv("LOAD_PATH")
local counter = 0
function setup(thread) thread:set("id", math.random(1, 1000)) end
function init(args)
  for line in io.lines(os.getenv("TOKENS")) do tokens[#tokens + 1] = line end
  counter = id or 0
end
function request()
  counter = counter + 1
  return wrk.format("GET", path, { ["Authorization"] = "Bearer " .. tokens[(counter % #tokens) + 1] })
end
function done(summary, latency, requests)
  io.write(string.format("requests/s %.0f  p50 %.2f ms  p99 %.2f ms  failed %d (errors %d, non-2xx %d)\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout + summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, summary.errors.status))
end
LUA

run() {  # run LABEL PATH
    echo "== $1 ($connections connections, ${seconds}s)"
    TOKENS="$tokens" LOAD_PATH="$2" wrk -t2 -c"$connections" -d"${seconds}s" -s "$work/load.lua" "http://127.0.0.1:$port" | tail -n 1
}

pull="/carekit/v1/revisions?knowledgeVector=$vector"
run "pulls, device up to date, no writer (baseline)" "$pull"
printf 'server: %s\npush-to: %s\ntime-zone: UTC\n' "$(cd ../shared/corpus/synthea-r4 && pwd)" "$work/exports" > "$work/sync.yaml"
"$bin" sync --once --config "$work/sync.yaml" --store "$store" >/dev/null 2>&1 &
writer=$!
run "pulls, device up to date, while caregate sync imports into the same store" "$pull"
run "day views, while caregate sync imports into the same store" "/carekit/v1/events?date=2025-01-15"
if wait "$writer"; then echo "== the sync beside the load: exit 0"; else echo "== the sync beside the load: exit $?"; fi
writer=""
