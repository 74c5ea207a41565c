#!/usr/bin/env bash
# A survey, end to end (Docs/surveys.md), on the embedded default, in a folder of its own:
#   EHR -> store: the sync job pulls Fixtures/surveys/try (Sam Rivera, a care plan asking SDC's PHQ-9 every
#                 two weeks) into a fresh store; the Questionnaire comes from the configuration's
#                 `questionnaires:` folder (SDC's PHQ-9, marked for observation extraction), and the
#                 activity becomes a survey task pinned to its version;
#   app -> store: `caregate serve` starts and Sam's app answers the nine questions of the first
#                 occurrence (one outcome value per answer, kind = the item's linkId), checked at push;
#   store -> EHR: the next sync writes a QuestionnaireResponse, scored (total 44261-6), with the
#                 Observation its extraction gives and a Provenance; its items and score are listed.
# Usage: bash Scripts/try-survey.sh [FOLDER]   (default: a new temporary folder, kept and named at the end)
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/serve-helpers.sh
root=$PWD
work=${1:-$(mktemp -d -t caregate-survey.XXXXXX)}
mkdir -p "$work/questionnaires"
swift build --product caregate 2>&1 | grep -E "error:|Build of product" || true
swift build --product caregate-example-app 2>&1 | grep -E "error:|Build of product" || true
bin="$(swift build --show-bin-path)"
store="$work/caregate.sqlite"
key="$work/server-key.pem"
# The provider's PHQ-9 asks that its coded items (the total score) be extracted as Observations too.
python3 - "$root/Fixtures/surveys/questionnaire-sdc-profile-example-PHQ9.json" "$work/questionnaires/phq9.json" <<'PY'
import json, sys
questionnaire = json.load(open(sys.argv[1]))
questionnaire.setdefault("extension", []).append(
    {"url": "http://hl7.org/fhir/uv/sdc/StructureDefinition/sdc-questionnaire-observationExtract", "valueBoolean": True})
json.dump(questionnaire, open(sys.argv[2], "w"), indent=1)
PY
cat > "$work/sync.yaml" <<YAML
server: $root/Fixtures/surveys/try
push-to: $work/exports
questionnaires: $work/questionnaires
time-zone: America/Chicago
YAML

"$bin/caregate" sync --config "$work/sync.yaml" --once --store "$store"

start_serve "$bin" "$store" "$key"

token=$("$bin/caregate" patients token --store "$store" --key "$key" --patient Patient/pat-phq --expires-in 10m)
# The answers: each item's linkId and the code of the option chosen (its display text would do too).
"$bin/caregate-example-app" --server "http://127.0.0.1:$port" --token "$token" \
    --task "CarePlan/cp-phq#activity-1" --occurrence 0 --time 2026-11-02T09:30:00-06:00 \
    --answer H1/T1/Q1=Several-days --answer H1/T1/Q2=Several-days --answer "H1/T1/Q3=More than half the days" \
    --answer H1/T1/Q4=Nearly\ every\ day --answer H1/T1/Q5=Not-at-all --answer H1/T1/Q6=Several-days \
    --answer H1/T1/Q7=Not-at-all --answer H1/T1/Q8=Not-at-all --answer H1/T1/Q9=Not-at-all

stop_serve

"$bin/caregate" sync --config "$work/sync.yaml" --once --store "$store"
python3 - "$work/exports" <<'PY'
import json, pathlib, sys
def answers(items, depth=0):
    for item in items:
        values = []
        for answer in item.get("answer", []):
            coding = answer.get("valueCoding")
            if coding:
                values.append(coding.get("display") or coding.get("code"))
            elif "valueQuantity" in answer:
                values.append(str(answer["valueQuantity"]["value"]))
            else:
                values.extend(str(v) for k, v in answer.items() if k.startswith("value"))
        print(f'{"  " * depth}{item["linkId"]:12} {", ".join(values)}')
        answers(item.get("item", []), depth + 1)
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.json")):
    for entry in json.loads(path.read_text()).get("entry", []):
        resource = entry.get("resource", {})
        if resource.get("resourceType") == "QuestionnaireResponse":
            print(f'QuestionnaireResponse {resource["status"]} {resource["questionnaire"]} authored {resource["authored"]}')
            answers(resource.get("item", []))
        elif resource.get("resourceType") == "Observation":
            code = resource["code"]["coding"][0]
            print(f'Observation {code["code"]} ({code.get("display", "")}): {resource["valueQuantity"]["value"]}, '
                  f'derivedFrom {resource["derivedFrom"][0]["reference"]}')
PY
echo "store, configuration and exports: $work"
