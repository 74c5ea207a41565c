#!/usr/bin/env bash
# Creates .venv with the pinned PyPI test tools the test suite runs (carebundle generates US Core
# bundles and NDJSON for the import tests). Re-running it is cheap when they are already installed.
set -euo pipefail
cd "$(dirname "$0")/.."
carebundle_version="0.5.0"
if [ -x .venv/bin/carebundle ] && .venv/bin/pip show carebundle 2>/dev/null | grep -q "^Version: ${carebundle_version}$"; then
    exit 0
fi
echo "setting up test tools in .venv (carebundle ${carebundle_version})" >&2
if ! python3 -m venv .venv 2>/dev/null; then
    # Debian's system Python ships venv separately.
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-venv
    python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check "carebundle==${carebundle_version}"
