#!/usr/bin/env bash
# On a machine with two GPUs, after `scripts/device_bundle.sh build/troupe` here and a run
# that carries .device: `troupe cluster up` with two GPU nodes on 127.0.0.1 (node head:
# stage 0 on cuda:0 in the head's process, node second: stage 1 on cuda:1 in a `troupe
# node` process), each stage serving its own layers' experts from its own GPU, and each
# node loading only its own layers' weights. On a machine with one GPU both nodes compute
# on cuda:0 (two processes sharing it): the same checks, and --bench shows each process
# holding half of the full model.
#
#   scripts/device_gpu_cluster.sh          a small random-weight checkpoint: the same greedy
#                                          completions (with top-5 log-probs) asked of the
#                                          cluster and of `troupe serve --device cuda` on one
#                                          GPU, one at a time, must be identical (cmp); and
#                                          `troupe cluster status`
#   scripts/device_gpu_cluster.sh --bench  the full Qwen3-30B-A3B shape with dummy weights:
#                                          `troupe bench` at concurrency 1, 32 and 128 (512
#                                          in / 256 out, as bench/gpu_bench.sh) against the
#                                          PP2 cluster and against serve on one GPU, side by side
#
# Logs go to $OUT or .device/out. Needs bash, curl and cmp only.
set -uo pipefail
part=check
[ "${1:-}" = "--bench" ] && part=bench
cd "$(dirname "$0")/.."
out=${OUT:-.device/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bin=.device/bin
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
second_gpu=1
[ "$(wc -l <"$out/gpu.txt")" -lt 2 ] && second_gpu=0
work=$(mktemp -d)

source scripts/device_server.sh

# A cluster.conf of two GPU nodes on this host, one pipeline stage each, at $work/$1.conf;
# $2: the stages, then lines for [model] and [engine].
write_conf() {
  local name=$1 stages=$2 model_keys=$3 engine_keys=$4
  cat >"$work/$name.conf" <<EOF
[cluster]
name = gpu-$name
secret = device-test-secret
certs = certs
startup_timeout_s = 400
step_timeout_s = 120

[model]
$model_keys

[gateway]
host = 127.0.0.1
port = 0
node = head

[engine]
$engine_keys

[node.head]
address = 127.0.0.1
port = 0
devices = cuda:0

[node.second]
address = 127.0.0.1
port = 0
devices = cuda:$second_gpu

[replica.main]
stages = $stages
EOF
  echo "$work/$name.conf"
}

# Where each process computes while the cluster runs, and the weights it holds: its log
# lines and the GPUs' memory.
show_devices() {
  grep -h "computing on\|weights on cuda" "$out/$1.err" | tee -a "$out/$1_devices.txt"
  nvidia-smi --query-gpu=index,memory.used --format=csv,noheader | tee -a "$out/$1_devices.txt"
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | tee -a "$out/$1_devices.txt"
  grep -q "troupe node head: computing on cuda:0" "$out/$1.err" &&
    grep -q "troupe node second: computing on cuda:$second_gpu" "$out/$1.err"
}

if [ "$part" = check ]; then
  model=$work/model
  "$bin/troupe" make-test-model --out "$model" --layers 6 --hidden 256 --heads 4 --kv-heads 2 --head-dim 64 \
    --experts 16 --top-k 4 --moe-intermediate 128 --intermediate 512 --mlp-only-layers 2 \
    --tokenizer-from .device/tokenizer >"$out/make_model.log" 2>&1 ||
    { echo "make-test-model failed:"; tail -5 "$out/make_model.log"; exit 1; }
  # The same engine sizes for both: the step's buffers and graph buckets follow them.
  limits=(--max-num-seqs 16 --max-num-batched-tokens 1024 --max-model-len 1024)
  conf=$(write_conf small "head:0-2, second:3-5" "path = $model
served_model_name = pp" "max_num_seqs = 16
max_num_batched_tokens = 1024
max_model_len = 1024
kv_cache_mb = 1024")
  cp "$conf" "$out/small.conf"

  prompts=("The quick brown fox" "Once upon a time, in a land far away," "1, 2, 3, 4," "def fibonacci(n):"
           "Pipeline stages hand the residual stream on")
  # Every prompt in turn (greedy, 48 tokens, top-5 log-probs) to $url, into $out/$1.txt.
  # One at a time: requests batched together would make the comparison depend on how the
  # scheduler happened to batch them.
  ask_all() {
    : >"$out/$1.txt"
    local p
    for p in "${prompts[@]}"; do
      curl -s "$url/v1/completions" -H 'content-type: application/json' \
        -d "{\"model\":\"pp\",\"prompt\":\"$p\",\"max_tokens\":48,\"temperature\":0,\"logprobs\":5}" |
        sed 's/"id":"[^"]*"//; s/"created":[0-9]*//' >>"$out/$1.txt"
      echo >>"$out/$1.txt"
    done
    grep -q '"text"' "$out/$1.txt" || { echo "$1 answered no completion:"; head -c 400 "$out/$1.txt"; echo; return 1; }
  }

  rc=0
  echo "== troupe serve --device cuda (one GPU, one stage)"
  if start serve 120 "$bin/troupe" serve --device cuda --model "$model" --served-model-name pp --port 0 \
       "${limits[@]}" --gpu-memory-percent 30; then
    ask_all serve || rc=1
    stop
  else
    rc=1
  fi
  echo "== troupe cluster up: stage 0 on cuda:0 (head), stage 1 on cuda:$second_gpu (node second)"
  if start cluster 300 "$bin/troupe" cluster up "$conf" --port 0; then
    show_devices cluster || { echo "the nodes do not compute on cuda:0 and cuda:$second_gpu as placed"; rc=1; }
    grep -q "weights on cuda:0: layers 0-2 (" "$out/cluster.err" &&
      grep -q "weights on cuda:$second_gpu: layers 3-5 (" "$out/cluster.err" ||
      { echo "the nodes do not load their own layers alone"; rc=1; }
    ask_all cluster || rc=1
    echo "-- troupe cluster status"
    "$bin/troupe" cluster status "$conf" --url "$url" | tee "$out/cluster_status.txt" || rc=1
    grep -q "main/stage_1 .*second .*cuda:$second_gpu" "$out/cluster_status.txt" ||
      { echo "cluster status does not show stage_1 on second's cuda:$second_gpu"; rc=1; }
    stop
  else
    rc=1
  fi
  if [ -s "$out/serve.txt" ] && [ -s "$out/cluster.txt" ]; then
    if cmp -s "$out/serve.txt" "$out/cluster.txt"; then
      echo "the two-stage cluster answers the same completions and log-probs as one stage on one GPU"
    else
      echo "the cluster's answers DIFFER from one GPU's:"
      diff "$out/serve.txt" "$out/cluster.txt" | head -10
      rc=1
    fi
  fi
  head -c 400 "$out/cluster.txt" 2>/dev/null; echo
  echo "gpu cluster exit $rc"
  exit "$rc"
fi

# --bench: the full Qwen3-30B-A3B shape, dummy weights, as bench/gpu_bench.sh serves it.
config=bench/configs/qwen3-30b-a3b
model=$work/qwen3-30b-a3b
mkdir -p "$model"
cp "$config/config.json" .device/tokenizer/tokenizer.json .device/tokenizer/tokenizer_config.json "$model/"
# Two processes on one GPU each take a fixed KV cache: the first to start would take what
# 90% of the GPU leaves.
kv_cache=""
[ "$second_gpu" = 0 ] && kv_cache="kv_cache_mb = 16384"
conf=$(write_conf bench "head:0-23, second:24-47" "path = $model
served_model_name = qwen3-30b-a3b
load_format = dummy" "max_num_seqs = 128
max_num_batched_tokens = 8192
max_model_len = 4096
$kv_cache")
cp "$conf" "$out/bench.conf"

# `troupe bench` against $url at concurrency 1, 32 and 128, as bench/gpu_bench.sh runs it;
# reports at $out/$1_c$C.log.
drive() {
  local c prompts
  for c in 1 32 128; do
    prompts=$((c * 4 < 16 ? 16 : c * 4))
    timeout 150 "$bin/troupe" bench --base-url "$url" --model qwen3-30b-a3b --random-input-len 512 \
      --random-output-len 256 --num-prompts "$prompts" --max-concurrency "$c" --disable-progress \
      --json "$out/$1_c$c.json" >"$out/$1_c$c.log" 2>&1
    echo "$1 concurrency $c: $(grep -h "Output token throughput" "$out/$1_c$c.log" || echo "no result (see $out/$1_c$c.log)")" \
      "$(grep -h "Failed requests" "$out/$1_c$c.log" | grep -v ' 0$')"
  done
}

rc=0
echo "== troupe cluster up: PP2, layers 0-23 on cuda:0 (head), 24-47 on cuda:$second_gpu (node second)"
if start pp2 400 "$bin/troupe" cluster up "$conf" --port 0; then
  show_devices pp2 || { echo "the nodes do not compute on cuda:0 and cuda:$second_gpu as placed"; rc=1; }
  "$bin/troupe" cluster status "$conf" --url "$url" | tee "$out/pp2_status.txt"
  drive pp2
  stop
else
  rc=1
fi
echo "== troupe serve --device cuda on one GPU"
if start serve1 300 "$bin/troupe" serve --device cuda --load-format dummy --model "$model" \
     --served-model-name qwen3-30b-a3b --port 0 --max-num-seqs 128 --max-num-batched-tokens 8192 --max-model-len 4096; then
  drive serve1
  stop
else
  rc=1
fi

# The side-by-side table, from the reports: "tok/s (TTFT, TPOT)" of run $1 at concurrency $2.
number() { grep -h "$1" "$2" 2>/dev/null | grep -o '[0-9.]*$' || echo "-"; }
cell() {
  local log="$out/$1_c$2.log"
  echo "$(number "Output token throughput" "$log") ($(number "Mean TTFT" "$log"), $(number "Mean TPOT" "$log"))"
}
echo
echo "output tok/s (mean TTFT ms, mean TPOT ms), 512 in / 256 out:"
printf "%-12s %-28s %-28s\n" concurrency "PP2 cluster, $((second_gpu + 1)) GPU(s)" "serve, 1 GPU"
for c in 1 32 128; do
  printf "%-12s %-28s %-28s\n" "$c" "$(cell pp2 "$c")" "$(cell serve1 "$c")"
done
exit "$rc"
