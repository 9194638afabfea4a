#!/usr/bin/env bash
# On the GPU machine, after `scripts/device_bundle.sh build/tests/test_cuda_ops
# build/bench/gpu_ceilings` here and a run that carries .device: the CUDA op table, then
# the copy and GEMM ceilings. Logs go to $OUT (the device tool's) or .device/out.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-.device/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# cuBLAS is the machine's own (too large to carry); point the loader at it if needed.
if ldd .device/bin/test_cuda_ops | grep -q "not found"; then
  lib=$(find /usr/local /usr/lib /opt -name 'libcublasLt.so.13' 2>/dev/null | head -1)
  [ -n "$lib" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$lib")
  ldd .device/bin/test_cuda_ops | grep "not found"
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
# One process per test case: a CUDA fault in one op aborts only its own case.
test_rc=0
for case in $(.device/bin/test_cuda_ops --list_content 2>&1 | sed 's/\*$//'); do
  TROUPE_SOURCE_DIR=$PWD timeout 120 .device/bin/test_cuda_ops --run_test="$case" \
    --log_level=test_suite --color_output=no >>"$out/test_cuda_ops.log" 2>&1 || test_rc=1
done
grep -h "relative error\|mismatches\|error:\|failure\|CUDA error\|No errors\|fatal" "$out/test_cuda_ops.log" |
  sed 's|^.*test_cuda_ops.cpp([0-9]*): ||'
timeout 120 .device/bin/gpu_ceilings 2>&1 | tee "$out/gpu_ceilings.log"
echo "test_cuda_ops exit $test_rc"
exit "$test_rc"
