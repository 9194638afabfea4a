#!/usr/bin/env bash
# On the GPU machine, after `scripts/device_bundle.sh build/tests/test_cuda_* build/bench/gpu_ceilings
# build/bench/bench_cuda_*` here and a run that carries .device: every CUDA op test (one
# process per test case: a CUDA fault in one op aborts only its own case), then the
# ceilings and the op benchmarks that were bundled. Logs go to $OUT (the device tool's)
# or .device/out.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-.device/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
# Every test case's full path (suite/case, case/_0 for a data-driven one's samples), out of
# the indented tree --list_content prints (four spaces a level).
test_cases() {
  "$1" --list_content 2>&1 | sed 's/\*$//' | awk '
    { match($0, /^ */); depth = RLENGTH / 4; name = substr($0, RLENGTH + 1)
      if (NR > 1 && depth <= last) print path
      part[depth] = name; path = part[0]
      for (d = 1; d <= depth; ++d) path = path "/" part[d]
      last = depth }
    END { if (NR > 0) print path }'
}

test_rc=0
for test in .device/bin/test_cuda_* .device/bin/test_gpu_*; do
  [ -x "$test" ] || continue
  name=$(basename "$test")
  for case in $(test_cases "$test"); do
    TROUPE_SOURCE_DIR=$PWD timeout 300 "$test" --run_test="$case" --log_level=test_suite --color_output=no \
      >>"$out/$name.log" 2>&1 || { test_rc=1; echo "FAILED: $name/$case"; }
  done
  grep -h "relative error\|mismatches\|error:\|failure\|CUDA error\|No errors\|fatal\|compared" "$out/$name.log" |
    sed "s|^.*$name.cpp([0-9]*): |$name: |" | head -60
done
for bench in .device/bin/gpu_ceilings .device/bin/bench_cuda_*; do
  [ -x "$bench" ] || continue
  echo "== $(basename "$bench")"
  timeout 120 "$bench" 2>&1 | tee "$out/$(basename "$bench").log"
done
echo "gpu tests exit $test_rc"
exit "$test_rc"
