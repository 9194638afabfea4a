#!/usr/bin/env bash
# Expert parallelism over NCCL on a machine with two GPUs, in one go, after
#   scripts/device_bundle.sh build/troupe build/tests/test_cuda_moe_split build/tests/test_nccl_experts \
#     build/tests/nccl_expert_peer
# here and a run that carries .device:
#
#   1. the GPU tests: test_cuda_moe_split (each rank's expert rows summed in routing order
#      are fused_moe's bits) and test_nccl_experts (a random model decoded with its experts
#      split over the two GPUs, in two processes, against one GPU: tokens and top-5 log-probs
#      to the bit; a peer killed mid-step fails the step in time and a new one serves again);
#   2. a small random-weight checkpoint: greedy completions with top-5 log-probs, one at a
#      time, from `troupe serve --device cuda` (one GPU) and from an EP2 cluster (every layer
#      on cuda:0 in the head, experts 8-15 on cuda:1 in node second's process) must be
#      identical (cmp);
#   3. the full Qwen3-30B-A3B shape with dummy weights: the same check of an EP2 cluster
#      (experts 64-127 on cuda:1) against serve on one GPU; with --bench, `troupe bench` at
#      concurrency 1, 32 and 128 (512 in / 256 out) against both, and the table side by side;
#   4. the small checkpoint again: node second's process SIGKILLed during a streamed
#      completion of its EP2 cluster, which must still end with [DONE] and all its tokens
#      (the step fails, the node is started again, the communicator is joined anew, the
#      sequence re-prefilled); and a PP2+EP cluster (a stage on each GPU, each reaching the
#      other's experts) must answer as one GPU too.
#
# Each part says PASS or FAIL; the exit status is 1 when any failed. Logs go to $OUT or
# .device/out. About 6 minutes with --bench on two H200s. Every wait is bounded and ends by
# 7.5 minutes, and a part starts only if it can end by 8 (one left out FAILs, saying so).
# Needs bash, curl and cmp only.
set -uo pipefail
bench=0
[ "${1:-}" = "--bench" ] && bench=1
cd "$(dirname "$0")/.."
out=${OUT:-.device/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bin=.device/bin
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
if [ "$(wc -l <"$out/gpu.txt")" -lt 2 ]; then
  echo "this needs two GPUs"
  exit 1
fi
work=$(mktemp -d)
began=$(date +%s)
deadline=$((began + 450))
# Seconds left before the deadline, at most $1.
left() {
  local l=$((deadline - $(date +%s)))
  [ "$l" -lt "$1" ] && echo $((l > 1 ? l : 1)) || echo "$1"
}
# 0 while there is time for a part that needs about $1 seconds; else says so.
time_for() {
  [ $(($(date +%s) + $1)) -le $((deadline + 30)) ] && return 0
  echo "no time left for it (deadline at 7.5 minutes)"
  return 1
}
verdicts=()
# Records and prints a part's verdict: $1 0 for PASS, $2 what.
verdict() {
  local word=PASS
  [ "$1" = 0 ] || word=FAIL
  verdicts+=("$word $2")
  echo "$word $2 ($(($(date +%s) - began)) s in)"
}

source scripts/device_server.sh

# A cluster.conf of two GPU nodes on this host at $work/$1.conf: replica main with stages
# $2 and experts $3, then lines for [model] ($4) and [engine] ($5).
write_conf() {
  cat >"$work/$1.conf" <<EOF
[cluster]
name = ep-$1
secret = device-test-secret
certs = certs
startup_timeout_s = 240
step_timeout_s = 60

[model]
$4

[gateway]
host = 127.0.0.1
port = 0
node = head

[engine]
$5

[node.head]
address = 127.0.0.1
port = 0
devices = cuda:0

[node.second]
address = 127.0.0.1
port = 0
devices = cuda:1

[replica.main]
stages = $2
experts = $3
EOF
  cp "$work/$1.conf" "$out/$1.conf"
  echo "$work/$1.conf"
}

# Where each process computes while the cluster runs: its log lines and the GPUs' memory.
show_devices() {
  grep -h "computing on" "$out/$1.err" | tee "$out/$1_devices.txt"
  nvidia-smi --query-gpu=index,memory.used --format=csv,noheader | tee -a "$out/$1_devices.txt"
  grep -q "troupe node head: computing on cuda:0" "$out/$1.err" &&
    grep -q "troupe node second: computing on cuda:1" "$out/$1.err"
}

# Every prompt in turn (greedy, $tokens tokens, top-5 log-probs) to $url as model $served,
# into $out/$1.txt. One at a time: requests batched together would make the comparison
# depend on how the scheduler happened to batch them.
prompts=("The quick brown fox" "Once upon a time, in a land far away," "1, 2, 3, 4," "def fibonacci(n):"
         "Experts on two GPUs answer as one")
ask_all() {
  : >"$out/$1.txt"
  local p answer
  for p in "${prompts[@]}"; do
    answer=$(curl -s -m "$(left 90)" "$url/v1/completions" -H 'content-type: application/json' \
      -d "{\"model\":\"$served\",\"prompt\":\"$p\",\"max_tokens\":$tokens,\"temperature\":0,\"logprobs\":5}")
    echo "$answer" | sed 's/"id":"[^"]*"//; s/"created":[0-9]*//' >>"$out/$1.txt"
    echo >>"$out/$1.txt"
    if ! echo "$answer" | grep -q '"text"'; then
      echo "$1 answered no completion to \"$p\":"
      echo "$answer" | head -c 400
      echo
      return 1
    fi
  done
}

# 0 when $out/$1.txt and $out/$2.txt are the same answers, byte for byte.
same_answers() {
  [ -s "$out/$1.txt" ] && [ -s "$out/$2.txt" ] || return 1
  if cmp -s "$out/$1.txt" "$out/$2.txt"; then
    echo "$2 answers the same completions and log-probs as $1"
    return 0
  fi
  echo "$2's answers DIFFER from $1's:"
  diff "$out/$1.txt" "$out/$2.txt" | head -6 | cut -c1-300
  return 1
}

# The pid of node $1's process, which the head ($server) started.
node_pid() {
  local pid
  for pid in $(ps -o pid= --ppid "$server"); do
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "--name $1 " && { echo "$pid"; return; }
  done
}

# Node second's process SIGKILLed while a streamed completion of 600 tokens runs: it must
# end with its 600 tokens and [DONE], no error.
kill_drill() {
  local stream=$out/ep2_killed_stream.txt victim
  curl -s -N -m "$(left 150)" "$url/v1/completions" -H 'content-type: application/json' \
    -d "{\"model\":\"$served\",\"prompt\":\"A long story:\",\"max_tokens\":600,\"temperature\":0,\"ignore_eos\":true,\"stream\":true}" \
    >"$stream" &
  local client=$!
  for _ in $(seq 200); do
    [ "$(grep -c '^data: {' "$stream" 2>/dev/null)" -ge 20 ] && break
    sleep 0.05
  done
  victim=$(node_pid second)
  if [ -z "$victim" ]; then
    echo "no process of node second under the head"
    wait "$client"
    return 1
  fi
  echo "killing node second (pid $victim) after $(grep -c '^data: {' "$stream") chunks"
  kill -KILL "$victim"
  wait "$client"
  local chunks
  chunks=$(grep -c '"text"' "$stream")
  grep -h "lost node\|is back\|step .* failed\|expert_group" "$out/ep2.err" | tail -6
  echo "$chunks chunks, last lines:"
  tail -c 300 "$stream"
  echo
  grep -q '^data: \[DONE\]' "$stream" && ! grep -q '"error"' "$stream" && grep -q '"finish_reason":"length"' "$stream" &&
    grep -q "node second is back" "$out/ep2.err"
}

echo "== 1. GPU tests"
for t in test_cuda_moe_split test_nccl_experts; do
  timeout "$(left 150)" "$bin/$t" --log_level=message >"$out/$t.log" 2>&1
  rc=$?
  grep -E "error|failed after|No errors|failure" "$out/$t.log" | head -12
  verdict "$rc" "$t"
done

echo "== 2. a small random-weight checkpoint: one GPU against EP2"
small=$work/small
"$bin/troupe" make-test-model --out "$small" --layers 6 --hidden 256 --heads 4 --kv-heads 2 --head-dim 64 \
  --experts 16 --top-k 4 --moe-intermediate 128 --intermediate 512 --mlp-only-layers 2 \
  --tokenizer-from .device/tokenizer >"$out/make_model.log" 2>&1 || { echo "make-test-model failed:"; tail -5 "$out/make_model.log"; }
small_model="path = $small
served_model_name = small"
small_engine="max_num_seqs = 16
max_num_batched_tokens = 1024
max_model_len = 1024
kv_cache_mb = 1024"
served=small
tokens=48
rc=1
if start small_serve "$(left 120)" "$bin/troupe" serve --device cuda --model "$small" --served-model-name small --port 0 \
     --max-num-seqs 16 --max-num-batched-tokens 1024 --max-model-len 1024 --gpu-memory-percent 30; then
  ask_all small_serve && rc=0
  stop
fi
verdict "$rc" "small model: troupe serve --device cuda answers"
small_ep2=$(write_conf ep2 "head:0-5" "head:0-7, second:8-15" "$small_model" "$small_engine")
rc=1
if start ep2 "$(left 120)" "$bin/troupe" cluster up "$small_ep2" --port 0; then
  show_devices ep2 || echo "the nodes do not compute on cuda:0 and cuda:1 as placed"
  "$bin/troupe" cluster status "$small_ep2" --url "$url" | tee "$out/ep2_status.txt"
  ask_all ep2 && same_answers small_serve ep2 && rc=0
  stop
fi
verdict "$rc" "small model: EP2 cluster, the same completions and top-5 log-probs as one GPU"

echo "== 3. Qwen3-30B-A3B shape, dummy weights: one GPU against EP2"
big=$work/qwen3-30b-a3b
mkdir -p "$big"
cp bench/configs/qwen3-30b-a3b/config.json .device/tokenizer/tokenizer.json .device/tokenizer/tokenizer_config.json "$big/"
served=qwen3-30b-a3b
tokens=32

# `troupe bench` against $url at concurrency 1, 32 and 128 (twice as many prompts, 8 at
# least: two waves); reports at $out/$1_c$C.log.
drive() {
  local c
  for c in 1 32 128; do
    timeout "$(left 100)" "$bin/troupe" bench --base-url "$url" --model "$served" --random-input-len 512 \
      --random-output-len 256 --num-prompts $((c * 2 < 8 ? 8 : c * 2)) --max-concurrency "$c" --disable-progress \
      --json "$out/$1_c$c.json" >"$out/$1_c$c.log" 2>&1
    echo "$1 concurrency $c: $(grep -h "Output token throughput" "$out/$1_c$c.log" || echo "no result (see $out/$1_c$c.log)")" \
      "$(grep -h "Failed requests" "$out/$1_c$c.log" | grep -v ' 0$')"
  done
}

rc=1
if time_for 60 && start big_serve "$(left 240)" "$bin/troupe" serve --device cuda --load-format dummy --model "$big" \
     --served-model-name "$served" --port 0 --max-num-seqs 128 --max-num-batched-tokens 8192 --max-model-len 4096; then
  ask_all big_serve && rc=0
  [ "$bench" = 1 ] && drive serve1
  stop
fi
verdict "$rc" "Qwen3-30B-A3B shape: troupe serve --device cuda answers"
conf=$(write_conf big_ep2 "head:0-47" "head:0-63, second:64-127" "path = $big
served_model_name = $served
load_format = dummy" "max_num_seqs = 128
max_num_batched_tokens = 8192
max_model_len = 4096")
rc=1
if time_for 80 && start big_ep2 "$(left 240)" "$bin/troupe" cluster up "$conf" --port 0; then
  show_devices big_ep2 || echo "the nodes do not compute on cuda:0 and cuda:1 as placed"
  "$bin/troupe" cluster status "$conf" --url "$url" | tee "$out/big_ep2_status.txt"
  ask_all big_ep2 && same_answers big_serve big_ep2 && rc=0
  [ "$bench" = 1 ] && drive ep2
  stop
fi
verdict "$rc" "Qwen3-30B-A3B shape: EP2 cluster, the same completions and top-5 log-probs as one GPU"

echo "== 4. the small checkpoint again: a node killed under EP2, and PP2+EP"
served=small
tokens=48
drill=1
if time_for 50 && start ep2 "$(left 120)" "$bin/troupe" cluster up "$small_ep2" --port 0; then
  kill_drill && drill=0
  stop
fi
verdict "$drill" "small model: EP2 cluster, node second killed mid-stream, the stream ends whole"
conf=$(write_conf pp2ep "head:0-2, second:3-5" "head:0-7, second:8-15" "$small_model" "$small_engine")
rc=1
if time_for 30 && start pp2ep "$(left 120)" "$bin/troupe" cluster up "$conf" --port 0; then
  ask_all pp2ep && same_answers small_serve pp2ep && rc=0
  stop
fi
verdict "$rc" "small model: PP2+EP cluster, the same completions and top-5 log-probs as one GPU"

if [ "$bench" = 1 ]; then
  # "tok/s (TTFT, TPOT)" of run $1 at concurrency $2, from its report.
  number() { grep -h "$1" "$2" 2>/dev/null | grep -o '[0-9.]*$' || echo "-"; }
  cell() {
    local log="$out/$1_c$2.log"
    echo "$(number "Output token throughput" "$log") ($(number "Mean TTFT" "$log"), $(number "Mean TPOT" "$log"))"
  }
  echo
  echo "output tok/s (mean TTFT ms, mean TPOT ms), 512 in / 256 out:"
  printf "%-12s %-30s %-30s\n" concurrency "EP2 cluster, 2 GPUs" "serve, 1 GPU"
  for c in 1 32 128; do
    printf "%-12s %-30s %-30s\n" "$c" "$(cell ep2 "$c")" "$(cell serve1 "$c")"
  done
fi

echo
printf '%s\n' "${verdicts[@]}"
echo "expert parallelism: $(($(date +%s) - began)) s"
for v in "${verdicts[@]}"; do
  [ "${v%% *}" = PASS ] || exit 1
done
exit 0
