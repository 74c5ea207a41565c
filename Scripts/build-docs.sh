#!/usr/bin/env bash
# Builds the DocC catalogs of CareGate's libraries with swift-docc-plugin, warnings as errors, so that a
# broken symbol link (``Gateway/importFHIR(_:dryRun:)`` naming nothing) fails the build. CI runs it
# before the tests (.ci/run).
#
#   bash Scripts/build-docs.sh                  # Pipeline, AppClient, CareModel, FHIR and the three FHIR layers
#   bash Scripts/build-docs.sh Pipeline         # the catalogs named
#
# The archives land in .build/plugins/Swift-DocC/outputs/<Target>.doccarchive; to browse one,
# `swift package --disable-sandbox preview-documentation --target Pipeline`.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(Pipeline AppClient CareModel FHIR FHIRCore FHIRPath FHIRValidation)
arguments=()
for target in "${targets[@]}"; do arguments+=(--target "$target"); done
# One invocation builds the targets' symbol graphs together (one build of what they share).
swift package --disable-sandbox generate-documentation "${arguments[@]}" --warnings-as-errors
