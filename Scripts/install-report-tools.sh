#!/usr/bin/env bash
# Installs the Debian packages the care-team report's PDF and its tests use, when they are missing:
# chromium (headless print-to-PDF of the report's HTML), poppler-utils (pdftotext, pdfinfo, pdfimages,
# pdftoppm: the tests read the PDF back) and fonts-dejavu-core (the report's font). Only the PDF needs
# them: building CareGate and `caregate patients report --format html` do not, so the README's first command
# stays fast. CI runs this before the tests (under CI=true the report tests fail rather than skip
# without them).
set -euo pipefail
bash "$(dirname "$0")/install-system-packages.sh" chromium poppler-utils fonts-dejavu-core
