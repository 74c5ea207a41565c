#!/usr/bin/env bash
# Creates .venv with the pinned PyPI test tools the test suite runs (Scripts/test-tools-requirements.txt:
# carebundle generates US Core bundles and NDJSON for the import tests; sekmet-fhir is the FHIR server
# the sync tests run), the Debian packages the report tests need (Scripts/install-report-tools.sh), and
# PostgreSQL for the PostgreSQL store's tests.
# Re-running it is cheap when they are already installed.
set -euo pipefail
cd "$(dirname "$0")/.."
# The Debian packages the report tests read PDFs with (chromium, poppler-utils), when missing.
bash Scripts/install-report-tools.sh
# systemd-analyze verifies the example units in Deploy/systemd (DeployUnitsTests), when missing.
bash Scripts/install-system-packages.sh systemd
# PostgreSQL (initdb, pg_ctl, postgres) for the PostgreSQL store's tests (Tests/TestSupport/PostgresServerProcess.swift),
# when no initdb is on PATH or in /usr/lib/postgresql/*/bin. The tests start their own server, as nobody.
if ! command -v initdb >/dev/null 2>&1 && ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
    bash Scripts/install-system-packages.sh postgresql
fi
requirements=Scripts/test-tools-requirements.txt
# Nothing to do when pip already reports every pinned name==version.
if [ -x .venv/bin/pip ]; then
    installed=$(.venv/bin/pip freeze 2>/dev/null || true)
    missing=0
    for pin in $(grep -E '^[A-Za-z0-9_.-]+==' "$requirements"); do
        echo "$installed" | grep -qix "$pin" || missing=1
    done
    if [ "$missing" -eq 0 ]; then exit 0; fi
fi
echo "setting up test tools in .venv ($(grep -E '==' "$requirements" | tr '\n' ' '))" >&2
if ! python3 -m venv .venv 2>/dev/null; then
    # Debian's system Python ships venv separately.
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-venv
    python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check -r "$requirements"
