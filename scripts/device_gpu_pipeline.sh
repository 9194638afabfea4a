#!/usr/bin/env bash
# On the GPU machine, after `scripts/device_bundle.sh build/troupe` here and a run that
# carries .device: `troupe serve --device cuda` on a small random-weight checkpoint with 1,
# 2 and 3 pipeline stages sharing the GPU, the same greedy completions (with top-5
# log-probs) asked of each over HTTP; the split servers must answer exactly what the one
# stage does (the stages hand the fp32 residual stream on). Logs go to $OUT or .device/out.
# Needs bash, curl and cmp only.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-.device/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bin=.device/bin
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"

model=$(mktemp -d)
"$bin/troupe" make-test-model --out "$model" --layers 6 --hidden 256 --heads 4 --kv-heads 2 --head-dim 64 \
  --experts 16 --top-k 4 --moe-intermediate 128 --intermediate 512 --mlp-only-layers 2 \
  --tokenizer-from .device/tokenizer >"$out/make_model.log" 2>&1 || { echo "make-test-model failed:"; tail -5 "$out/make_model.log"; exit 1; }

prompts=("The quick brown fox" "Once upon a time, in a land far away," "1, 2, 3, 4," "def fibonacci(n):"
         "Pipeline stages hand the residual stream on")

# Starts serve with $1 stages, asks every prompt in turn (greedy, 48 tokens, top-5
# log-probs), writes the answers to $out/stages_$1.txt. One at a time: requests batched
# together would make the comparison depend on how the scheduler happened to batch them
# (test_gpu_pipeline checks padded batches step by step).
ask_all() {
  local stages=$1 log="$out/serve_stages_$1"
  "$bin/troupe" serve --device cuda --model "$model" --served-model-name pp --port 0 --pipeline-stages "$stages" \
    --max-num-seqs 16 --max-num-batched-tokens 1024 --max-model-len 1024 --gpu-memory-percent 30 \
    >"$log.out" 2>"$log.err" &
  local server=$!
  for _ in $(seq 240); do
    grep -q "serving" "$log.out" 2>/dev/null && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.5
  done
  local url
  url=$(grep -o 'http://[0-9.:]*' "$log.out" | head -1)
  if [ -z "$url" ]; then
    echo "serve with $stages stages did not start:"; tail -5 "$log.err"
    kill -TERM "$server" 2>/dev/null; wait "$server" 2>/dev/null
    return 1
  fi
  : >"$out/stages_$stages.txt"
  local p
  for p in "${prompts[@]}"; do
    curl -s "$url/v1/completions" -H 'content-type: application/json' \
      -d "{\"model\":\"pp\",\"prompt\":\"$p\",\"max_tokens\":48,\"temperature\":0,\"logprobs\":5}" |
      sed 's/"id":"[^"]*"//; s/"created":[0-9]*//' >>"$out/stages_$stages.txt"
    echo >>"$out/stages_$stages.txt"
  done
  kill -TERM "$server" 2>/dev/null
  wait "$server" 2>/dev/null
  grep -q '"text"' "$out/stages_$stages.txt" || { echo "serve with $stages stages answered no completion"; return 1; }
}

rc=0
ask_all 1 || rc=1
for stages in 2 3; do
  ask_all "$stages" || { rc=1; continue; }
  if cmp -s "$out/stages_1.txt" "$out/stages_$stages.txt"; then
    echo "$stages stages: the same completions and log-probs as one stage"
  else
    echo "$stages stages: DIFFERENT from one stage:"
    diff "$out/stages_1.txt" "$out/stages_$stages.txt" | head -10
    rc=1
  fi
done
head -c 400 "$out/stages_1.txt"; echo
echo "gpu pipeline exit $rc"
exit "$rc"
