#!/usr/bin/env bash
# Installs the Debian packages the care-team report's PDF and its tests use, when they are missing:
# chromium (headless print-to-PDF of the report's HTML), poppler-utils (pdftotext, pdfinfo, pdfimages,
# pdftoppm: the tests read the PDF back) and fonts-dejavu-core (the report's font). Only the PDF needs
# them: building CareGate and `caregate report --format html` do not, so the README's first command
# stays fast. CI runs this before the tests (under CI=true the report tests fail rather than skip
# without them).
set -euo pipefail
needed=(chromium poppler-utils fonts-dejavu-core)
missing=()
for package in "${needed[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
echo "installing missing report packages: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
