#!/usr/bin/env bash
# The whole loop on the embedded default, as the README's first command runs it:
#   EHR -> store: the sync job pulls Fixtures/provider (the provider's FHIR system, a folder here);
#   store -> app: `caregate serve` starts, a token is issued for Jane Doe (Patient/pat-1), and her app
#                 (caregate-example-app, built on AppClient) pulls her plan as a new CareKit device;
#   app -> store: the app records that she took her 07:30 lisinopril and pushes it;
#   store -> EHR: the server stops, and the next sync writes the outcome back as an Observation with its
#                 Provenance (exports/), then her day is shown.
# Run it again: nothing changes and nothing is sent twice.
set -euo pipefail
cd "$(dirname "$0")/.."
bash Scripts/install-system-packages.sh
swift build 2>&1 | grep -E "error:|Build complete" || true
bin="$(swift build --show-bin-path)"
store=caregate.sqlite
key=caregate-server-key.pem

"$bin/caregate" sync --config Fixtures/sync.yaml --once --store "$store"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin/caregate" serve --store "$store" --key "$key" --host 127.0.0.1 --port "$port" &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
    python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=1)" 2>/dev/null && break
    kill -0 "$server" 2>/dev/null || { echo "caregate serve did not start" >&2; exit 1; }
    sleep 0.1
done
echo "caregate serve: http://127.0.0.1:$port (OpenAPI: /openapi.json)"

token=$("$bin/caregate" patients token --store "$store" --key "$key" --patient Patient/pat-1 --expires-in 10m)
"$bin/caregate-example-app" --server "http://127.0.0.1:$port" --token "$token" \
    --task MedicationRequest/medreq-1 --occurrence 1 --value true --time 2026-11-02T07:40:00-06:00

kill "$server"
wait "$server" 2>/dev/null || true
trap - EXIT
echo "caregate serve stopped"

"$bin/caregate" sync --config Fixtures/sync.yaml --once --store "$store"
"$bin/caregate" patients events --store "$store" --patient Patient/pat-1 --from 2026-11-02 --time-zone America/Chicago
