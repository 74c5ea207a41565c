#!/usr/bin/env bash
# Installs the Debian packages CareGate builds against, when they are missing:
# libsqlite3-dev (the store), libxml2-dev (the XML reader), libcurl4-openssl-dev (HTTP to FHIR servers).
# Given package names, it installs those instead, when missing (Scripts/install-report-tools.sh does).
set -euo pipefail
needed=(libsqlite3-dev libxml2-dev libcurl4-openssl-dev pkg-config)
if [ $# -gt 0 ]; then needed=("$@"); fi
missing=()
for package in "${needed[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
echo "installing missing system packages: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
