#!/usr/bin/env bash
# Builds the libFuzzer targets of Fuzz/ (with AddressSanitizer) and runs each over a seed corpus taken
# from ../shared/corpus, for SECONDS seconds each (default 60). Inputs that crash or run longer than a
# second are failures: libFuzzer saves each in Fuzz/findings/TARGET/, and every one found becomes a
# regression test. Prints executions and findings per target at the end. Leak detection is off
# (LEAKS=1 turns it on): a few bytes that Foundation's Data leaks through the store end a run at once.
#
#   bash Scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"; shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(FuzzJSON FuzzXML FuzzFHIRPath FuzzUCUM FuzzValidation FuzzSchedule FuzzTiming FuzzMappingLoader FuzzImport)
fi
corpus_root=../shared/corpus
work=.build/fuzz-corpus
mkdir -p "$work" Fuzz/findings

seed() {  # seed TARGET: fill the target's corpus folder once
  local target=$1 dir="$work/$1"
  [ -d "$dir" ] && return
  mkdir -p "$dir"
  set +o pipefail  # `head` ends `find` early, on purpose
  case "$target" in
    FuzzJSON|FuzzValidation|FuzzImport)
      find "$corpus_root/fhir-r4-examples" -name '*.json' -size -64k 2>/dev/null | head -400 | xargs -r cp -t "$dir" ;;
    FuzzXML)
      find "$corpus_root/fhir-r4-examples-xml" -name '*.xml' -size -64k 2>/dev/null | head -300 | xargs -r cp -t "$dir" ;;
    FuzzFHIRPath)
      python3 - "$corpus_root/fhirpath/tests-fhir-r4.xml" "$dir" <<'PY'
import sys, xml.etree.ElementTree as ET, os
for i, e in enumerate(ET.parse(sys.argv[1]).getroot().iter('expression')):
    open(os.path.join(sys.argv[2], f"e{i}"), "w").write(e.text or "")
PY
      ;;
    FuzzUCUM)
      for pair in "mg\ng" "kg.m-2\ng" "mm[Hg]\nkPa" "10*3/uL\n/L" "[lb_av]\nkg" "Cel\n[degF]" "{beats}/min\n/s" "%\n1" "mol/L\nmmol/dL" "a\nmo"; do
        printf '%b' "$pair" > "$dir/$(echo "$pair" | tr -c 'a-zA-Z0-9' '_')"
      done ;;
    FuzzSchedule)
      for i in $(seq 1 32); do head -c 24 /dev/urandom > "$dir/r$i"; done ;;
    FuzzTiming)
      for i in $(seq 1 32); do head -c 96 /dev/urandom > "$dir/r$i"; done ;;
    FuzzMappingLoader)
      cp Mappings/*.yaml "$dir/" ;;
  esac
  set -o pipefail
}

# AddressSanitizer's fake stacks (detect_stack_use_after_return) put locals off the thread's stack, which
# fools the FHIRPath engine's stack guards into refusing ordinary expressions (the default mappings'
# among them): keep locals on the real stack.
export ASAN_OPTIONS="detect_stack_use_after_return=0:detect_leaks=${LEAKS:-0}:${ASAN_OPTIONS:-}"

summary=()
for target in "${targets[@]}"; do
  echo "== building $target"
  CAREGATE_FUZZ=1 swift build -c release --product "$target" --scratch-path .build/fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -use-ld=lld 2>&1 | grep -E "error|Build of" || true
  seed "$target"
  mkdir -p "Fuzz/findings/$target"
  log=".build/fuzz-$target.log"
  echo "== running $target for ${seconds}s"
  set +e
  ".build/fuzz/release/$target" "$work/$target" -max_total_time="$seconds" -timeout=1 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="Fuzz/findings/$target/" -print_final_stats=1 -detect_leaks="${LEAKS:-0}" >"$log" 2>&1
  status=$?
  set -e
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
  found=$(ls "Fuzz/findings/$target" | wc -l)
  summary+=("$target: $runs executions, $found findings (exit $status)")
  tail -3 "$log"
done
echo
echo "== fuzzing summary (${seconds}s per target)"
printf '%s\n' "${summary[@]}"
