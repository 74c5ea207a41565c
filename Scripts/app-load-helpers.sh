# Sourced by the app API benchmarks (bench-app-api.sh, bench-postgres-serve.sh): what a device's load
# on `caregate serve` is made of.

# up_to_date_vector BASE TOKEN: the knowledge vector of an up-to-date device, URL-encoded, as
# OCKStore.synchronize leaves it: its own process (clock 1) pulls every page and merges each record's
# vector, then moves its own clock on. (A vector without the device's own process would equal the last
# revision's and be sent that revision again, by CareKit's rule.)
up_to_date_vector() {
    python3 - "$1" "$2" <<'PY'
import json, re, sys, urllib.parse, urllib.request, uuid
base, token = sys.argv[1], sys.argv[2]
device = str(uuid.uuid4()).upper()
known = {device: 1}
url = base + "/carekit/v1/revisions?knowledgeVector=" + urllib.parse.quote(json.dumps({"processes": [{"id": device, "clock": 1}]}))
while url:
    answer = urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": "Bearer " + token}))
    for record in json.load(answer):
        for process in record["knowledgeVector"]["processes"]:
            known[process["id"]] = max(known.get(process["id"], 0), process["clock"])
    link = re.search(r'<([^>]+)>;\s*rel="next"', answer.headers.get("Link") or "")
    url = urllib.parse.urljoin(base, link.group(1)) if link else None
known[device] += 1
vector = {"processes": [{"id": id, "clock": clock} for id, clock in sorted(known.items())]}
print(urllib.parse.quote(json.dumps(vector, separators=(",", ":"))))
PY
}

# write_load_lua FILE: wrk's script. Each connection sends GET $LOAD_PATH with the tokens of file
# $TOKENS in turn, waiting $PAUSE_MS between an answer and its next request when set (a paced run);
# done() writes one tab-separated line to $RESULT: requests/s, p50 ms, p99 ms, failed, socket errors,
# non-2xx, requests.
write_load_lua() {
    cat > "$1" <<'LUA'
local tokens = {}
local path = os.getenv("LOAD_PATH")
local counter = 0
-- A paced run: each connection waits PAUSE_MS between an answer and its next request.
local pause = tonumber(os.getenv("PAUSE_MS") or "0")
if pause > 0 then function delay() return pause end end
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
  local socket = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  local out = io.open(os.getenv("RESULT"), "w")
  out:write(string.format("%.0f\t%.2f\t%.2f\t%d\t%d\t%d\t%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    socket + summary.errors.status, socket, summary.errors.status, summary.requests))
  out:close()
end
LUA
}
