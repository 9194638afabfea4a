#!/usr/bin/env bash
# The GPU table of docs/performance.md in one go, on the GPU machine, for the full
# Qwen3-30B-A3B shape with random weights: the CUDA step alone (batch-1 decode next to the
# bandwidth floor, larger batches, a 4,096-token prefill), `troupe serve --device cuda`
# driven by `troupe bench` at concurrency 1, 32 and 128 (512 in / 256 out), and
# transformers' own generate on the same shape. Prepare here with scripts/device_bundle.sh
# (see docs/performance.md), carry .device, run this there. Logs go to $OUT or .device/out.
# --no-transformers leaves the reference out (it takes minutes to build the model).
set -uo pipefail
with_transformers=1
[ "${1:-}" = "--no-transformers" ] && with_transformers=0
cd "$(dirname "$0")/.."
out=${OUT:-.device/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
config=bench/configs/qwen3-30b-a3b
bin=.device/bin
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"

echo "== the CUDA step alone"
timeout 300 "$bin/bench_gpu_forward" "$config" 2>"$out/gpu_forward.err" | tee "$out/gpu_forward.log"

echo "== troupe serve --device cuda, driven by troupe bench"
model=$(mktemp -d)
cp "$config/config.json" .device/tokenizer/tokenizer.json .device/tokenizer/tokenizer_config.json "$model/"
source scripts/device_server.sh
if start serve 300 "$bin/troupe" serve --device cuda --load-format dummy --model "$model" \
     --served-model-name qwen3-30b-a3b --port 0 --max-num-seqs 128 --max-num-batched-tokens 8192 --max-model-len 4096; then
  for c in 1 32 128; do
    prompts=$((c * 4 < 16 ? 16 : c * 4))
    timeout 300 "$bin/troupe" bench --base-url "$url" --model qwen3-30b-a3b --random-input-len 512 \
      --random-output-len 256 --num-prompts "$prompts" --max-concurrency "$c" --disable-progress \
      --json "$out/serve_c$c.json" | tee "$out/serve_c$c.log"
  done
  stop
fi

[ "$with_transformers" = 1 ] || exit 0
echo "== transformers on the same shape"
timeout 420 python3 bench/transformers_baseline.py --config "$config/config.json" --decode 32 2>&1 |
  grep -v Warning | tee "$out/transformers.log"
