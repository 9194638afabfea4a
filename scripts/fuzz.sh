#!/usr/bin/env bash
# Runs each libFuzzer harness of tests/fuzz/ (or those named) for SECONDS (default 600)
# from its seed corpus, in the sanitizer build (built first, as scripts/sanitize.sh does).
# New inputs gather in build-sanitize/tests/fuzz_corpus/NAME; a failing input is saved in
# build-sanitize/fuzz-artifacts/ and stops the script with status 1.
#   scripts/fuzz.sh 3600 openai_request json_schema
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
scripts/sanitize.sh --build-only
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in tests/fuzz/*_fuzzer.cpp; do names+=("$(basename "$f" _fuzzer.cpp)"); done
fi
mkdir -p build-sanitize/fuzz-artifacts
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for name in "${names[@]}"; do
  dict=()
  [ -f "tests/fuzz/$name.dict" ] && dict=(-dict="tests/fuzz/$name.dict")
  mkdir -p "build-sanitize/tests/fuzz_corpus/$name"
  echo "fuzz: $name for $seconds s"
  log="build-sanitize/fuzz-artifacts/$name.log"
  status=0
  "build-sanitize/tests/${name}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="build-sanitize/fuzz-artifacts/${name}-" "${dict[@]}" \
    "build-sanitize/tests/fuzz_corpus/$name" "tests/fuzz/corpus/$name" > "$log" 2>&1 || status=$?
  grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY)" "$log" || true
  [ "$status" -eq 0 ] || { echo "fuzz: $name failed (status $status): see $log"; exit 1; }
done
