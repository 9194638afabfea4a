#!/usr/bin/env bash
# The long fuzz run, on a machine with many cores (the GPU machine's 16): every harness of
# .device/bin/*_fuzzer (the sanitizer build's, ASan + UBSan, bundled by
# scripts/device_bundle.sh), or those named, from its seed corpus: WORKERS processes each
# (NAME:WORKERS for one harness), each with its own seed, until RUNS inputs in all or
# SECONDS. Prints, per harness, the inputs run and what failed; logs and any failing input
# go to $OUT/fuzz/. Exit status 1 if any harness failed.
#   OUT=/tmp/out scripts/device_fuzz.sh 10000000 540 1 openai_request:4 jinja:2
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10000000}
seconds=${2:-540}
workers=${3:-1}
shift 3 || shift $#
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
[ -f .device/tokenizer/tokenizer.json ] && export TROUPE_FUZZ_TOKENIZER=$PWD/.device/tokenizer/tokenizer.json
out=${OUT:-/tmp}/fuzz
mkdir -p "$out"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in .device/bin/*_fuzzer; do names+=("$(basename "$f" _fuzzer)"); done
fi
declare -A workers_of
for i in "${!names[@]}"; do
  spec=${names[$i]}
  names[$i]=${spec%%:*}
  workers_of[${spec%%:*}]=$([[ $spec == *:* ]] && echo "${spec##*:}" || echo "$workers")
done
for name in "${names[@]}"; do
  workers=${workers_of[$name]}
  dict=()
  [ -f "tests/fuzz/$name.dict" ] && dict=(-dict="tests/fuzz/$name.dict")
  for w in $(seq 1 "$workers"); do
    mkdir -p "$out/corpus/$name.$w"
    ".device/bin/${name}_fuzzer" -runs=$((runs / workers)) -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=65536 -seed="$w" -print_final_stats=1 -artifact_prefix="$out/${name}.$w-" "${dict[@]}" \
      "$out/corpus/$name.$w" "tests/fuzz/corpus/$name" > "$out/$name.$w.log" 2>&1 &
  done
done
wait
failed=0
for name in "${names[@]}"; do
  workers=${workers_of[$name]}
  total=0 status=ok
  for w in $(seq 1 "$workers"); do
    log="$out/$name.$w.log"
    n=$(grep -oP '^stat::number_of_executed_units: \K[0-9]+' "$log" || echo 0)
    total=$((total + n))
    grep -q '^stat::number_of_executed_units' "$log" || status="failed ($log)"
    grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|SUMMARY: ' "$log" && status="failed ($log)"
  done
  [ "$status" = ok ] || failed=1
  echo "fuzz: $name: $total inputs in $workers worker(s): $status"
done
exit $failed
