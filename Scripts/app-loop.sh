#!/usr/bin/env bash
# The whole loop on the embedded default, as the README's first command runs it:
#   EHR -> store: the sync job pulls Fixtures/provider (the provider's FHIR system, a folder here);
#   store -> app: `caregate serve` starts, a token is issued for Jane Doe (Patient/pat-1), and her app
#                 (caregate-example-app, built on AppClient) pulls her plan as a new CareKit device;
#   app -> store: the app records that she took her 07:30 lisinopril and pushes it;
#   store -> EHR: the server stops, and the next sync writes the outcome back as an Observation with its
#                 Provenance (exports/), then her day is shown.
# Run it again: nothing changes and nothing is sent twice. The store is caregate.sqlite, or $CAREGATE_STORE
# (a postgres:// URL: Scripts/try-postgres.sh runs this loop on a private PostgreSQL server).
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/serve-helpers.sh
bash Scripts/install-system-packages.sh
swift build 2>&1 | grep -E "error:|Build complete" || true
bin="$(swift build --show-bin-path)"
store=${CAREGATE_STORE:-caregate.sqlite}
key=caregate-server-key.pem

"$bin/caregate" sync --config Fixtures/sync.yaml --once --store "$store"

start_serve "$bin" "$store" "$key"
echo "caregate serve: http://127.0.0.1:$port (OpenAPI: /openapi.json)"

token=$("$bin/caregate" patients token --store "$store" --key "$key" --patient Patient/pat-1 --expires-in 10m)
"$bin/caregate-example-app" --server "http://127.0.0.1:$port" --token "$token" \
    --task MedicationRequest/medreq-1 --occurrence 1 --value true --time 2026-11-02T07:40:00-06:00

stop_serve
echo "caregate serve stopped"

"$bin/caregate" sync --config Fixtures/sync.yaml --once --store "$store"
"$bin/caregate" patients events --store "$store" --patient Patient/pat-1 --from 2026-11-02 --time-zone America/Chicago
