#!/usr/bin/env bash
# Readings back, end to end (Docs/readings.md), on the embedded default, in a folder of its own:
#   EHR -> store: the sync job pulls Fixtures/provider into a fresh store;
#   app -> store: `caregate serve` starts and Jane Doe's app sends a week of what her scale, cuff, watch,
#                 phone and glucometer recorded (Fixtures/readings/week.json: FHIR Observations as
#                 HealthKitOnFHIR writes HealthKit samples: pounds, a blood-pressure correlation, oxygen
#                 saturation as a fraction and as a percent, step counts over periods, glucose in mmol/L);
#                 sending it again stores nothing;
#   store -> EHR: the next sync writes them back as R4 vital-sign, laboratory and activity Observations
#                 with their Provenance; the codes and values sent are listed.
# Usage: bash Scripts/try-readings.sh [FOLDER]   (default: a new temporary folder, kept and named at the end)
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/serve-helpers.sh
root=$PWD
work=${1:-$(mktemp -d -t caregate-readings.XXXXXX)}
mkdir -p "$work"
swift build --product caregate 2>&1 | grep -E "error:|Build of product" || true
swift build --product caregate-example-app 2>&1 | grep -E "error:|Build of product" || true
bin="$(swift build --show-bin-path)"
store="$work/caregate.sqlite"
key="$work/server-key.pem"
cat > "$work/sync.yaml" <<YAML
server: $root/Fixtures/provider
push-to: $work/exports
time-zone: America/Chicago
YAML

"$bin/caregate" sync --config "$work/sync.yaml" --once --store "$store"

start_serve "$bin" "$store" "$key"

token=$("$bin/caregate" patients token --store "$store" --key "$key" --patient Patient/pat-1 --expires-in 10m)
"$bin/caregate-example-app" --server "http://127.0.0.1:$port" --token "$token" --readings Fixtures/readings/week.json
"$bin/caregate-example-app" --server "http://127.0.0.1:$port" --token "$token" --readings Fixtures/readings/week.json

stop_serve

"$bin/caregate" sync --config "$work/sync.yaml" --once --store "$store"
python3 - "$work/exports" <<'PY'
import json, pathlib, sys, collections
seen = collections.Counter()
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.json")):
    bundle = json.loads(path.read_text())
    for entry in bundle.get("entry", []):
        resource = entry.get("resource", {})
        if resource.get("resourceType") != "Observation":
            continue
        code = resource["code"]["coding"][0]
        category = resource.get("category", [{}])[0].get("coding", [{}])[0].get("code", "")
        if "valueQuantity" in resource:
            value = f'{resource["valueQuantity"]["value"]} {resource["valueQuantity"].get("code", "")}'
        else:
            value = ", ".join(f'{c["code"]["coding"][0]["code"]}={c["valueQuantity"]["value"]} {c["valueQuantity"].get("code", "")}'
                              for c in resource.get("component", []))
        seen[(code["code"], category)] += 1
        print(f'{resource.get("effectiveDateTime") or resource.get("effectivePeriod", {}).get("start")}  {code["code"]:8} {category:12} {value}')
print("Observations by code and category:", dict(seen))
PY
echo "store, configuration and exports: $work"
