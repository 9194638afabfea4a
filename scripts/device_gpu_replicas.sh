#!/usr/bin/env bash
# On the GPU machine, after `scripts/device_bundle.sh build/troupe` here and a run that
# carries .device: replicas of GPU nodes removed and added at runtime. Two GPU nodes on
# 127.0.0.1 (head on cuda:0, second on cuda:1, or on cuda:0 too where the machine has one
# GPU), replica blue on head and green on second, a small random-weight checkpoint:
#   1. 16 streamed completions run while `troupe cluster remove` drains green, some of them
#      on green: each must end with [DONE], without an error event;
#   2. `troupe cluster add` starts green again (its stages on its GPU, their runners and
#      KV caches carved again);
#   3. 32 more completions must all finish, green must be serving and have taken calls,
#      and a greedy completion asked of each replica (by session) must be the same.
# Logs go to $OUT or .device/out. Needs bash, curl and grep only.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-.device/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bin=.device/bin
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
second_gpu=1
[ "$(wc -l <"$out/gpu.txt")" -lt 2 ] && second_gpu=0
work=$(mktemp -d)
"$bin/troupe" make-test-model --out "$work/model" --layers 4 --hidden 256 --heads 4 --kv-heads 2 --head-dim 64 \
  --experts 16 --top-k 4 --moe-intermediate 128 --intermediate 512 --mlp-only-layers 1 \
  --tokenizer-from .device/tokenizer >"$out/make_model.log" 2>&1 ||
  { echo "make-test-model failed:"; tail -5 "$out/make_model.log"; exit 1; }
conf=$work/replicas.conf
cat >"$conf" <<EOF
[cluster]
name = gpu-replicas
secret = device-test-secret
certs = certs
startup_timeout_s = 300
step_timeout_s = 120

[model]
path = $work/model
served_model_name = r

[gateway]
host = 127.0.0.1
port = 0
node = head

[engine]
max_num_seqs = 32
max_model_len = 1024
kv_cache_mb = 1024

[node.head]
address = 127.0.0.1
port = 0
devices = cuda:0

[node.second]
address = 127.0.0.1
port = 0
devices = cuda:$second_gpu

[replica.blue]
stages = head:0-3

[replica.green]
stages = second:0-3
EOF
cp "$conf" "$out/replicas.conf"

source scripts/device_server.sh
start cluster 300 "$bin/troupe" cluster up "$conf" --port 0 || exit 1
rc=0
# Calls routed to green so far (a removed replica's series leaves /metrics: 0).
green_calls() {
  local n
  n=$(curl -s "$url/metrics" | grep "^troupe_replica_requests_total{replica=\"green\"}" | grep -o '[0-9.]*$')
  echo "${n:-0}"
}
# A greedy completion (48 tokens, top-5 log-probs) of session $1: the gateway keeps a
# session on one replica.
greedy() {
  curl -s "$url/v1/completions" -H 'content-type: application/json' -H "x-session-id: $1" \
    -d '{"model":"r","prompt":"The quick brown fox","max_tokens":48,"temperature":0,"logprobs":5}' |
    sed 's/"id":"[^"]*"//; s/"created":[0-9]*//'
}

echo "== 16 streams while green is removed"
for i in $(seq 16); do
  curl -sN "$url/v1/completions" -H 'content-type: application/json' -H "x-session-id: s$i" \
    -d "{\"model\":\"r\",\"prompt\":\"Stream $i\",\"max_tokens\":1000,\"ignore_eos\":true,\"stream\":true}" \
    >"$out/stream_$i.txt" 2>&1 &
done
green_in_flight() { curl -s "$url/admin/replicas" | grep -o '"in_flight":[0-9]*,"last_error":"[^"]*","name":"green"' | grep -o '[0-9]*' | head -1; }
for _ in $(seq 100); do [ "$(green_in_flight)" -gt 0 ] 2>/dev/null && break; sleep 0.1; done
echo "green runs $(green_in_flight) of the streams when it is removed"
[ "$(green_in_flight)" -gt 0 ] 2>/dev/null || { echo "no stream runs on green"; rc=1; }
"$bin/troupe" cluster remove "$conf" green --url "$url" >"$out/remove.log" 2>&1 || { echo "remove failed:"; cat "$out/remove.log"; rc=1; }
wait_streams() { for j in $(jobs -p); do [ "$j" = "$server" ] || wait "$j"; done; }
wait_streams
whole=0
for i in $(seq 16); do
  if tail -c 200 "$out/stream_$i.txt" | grep -q '\[DONE\]' && ! grep -q '"error"' "$out/stream_$i.txt"; then
    whole=$((whole + 1))
  fi
done
echo "streams whole: $whole of 16; $(cat "$out/remove.log")"
[ "$whole" = 16 ] || rc=1
curl -s "$url/admin/replicas" >"$out/replicas_removed.json"
grep -q '"name":"green"[^}]*"state":"off"' "$out/replicas_removed.json" || { echo "green is not off:"; cat "$out/replicas_removed.json"; rc=1; }

echo "== green added again"
before=$(green_calls)
"$bin/troupe" cluster add "$conf" green --url "$url" >"$out/add.log" 2>&1 || { echo "add failed:"; cat "$out/add.log"; rc=1; }
cat "$out/add.log"
curl -s "$url/admin/replicas" >"$out/replicas_added.json"
grep -q '"name":"green"[^}]*"state":"serving"' "$out/replicas_added.json" || { echo "green is not serving:"; cat "$out/replicas_added.json"; rc=1; }
done_count=0
for i in $(seq 32); do
  curl -s "$url/v1/completions" -H 'content-type: application/json' -H "x-session-id: t$i" \
    -d '{"model":"r","prompt":"After","max_tokens":32,"ignore_eos":true}' | grep -q '"finish_reason":"length"' &&
    done_count=$((done_count + 1))
done
after=$(green_calls)
echo "completions after the add: $done_count of 32; green's calls $before -> $after"
[ "$done_count" = 32 ] || rc=1
[ "${after%.*}" -gt "${before%.*}" ] || { echo "green took no call after its add"; rc=1; }

echo "== the same greedy answer from either replica"
: >"$out/greedy.txt"
for s in $(seq 8); do greedy "g$s" >>"$out/greedy.txt"; echo >>"$out/greedy.txt"; done
distinct=$(sort -u "$out/greedy.txt" | grep -c '"text"')
echo "distinct greedy answers over 8 sessions: $distinct"
[ "$distinct" = 1 ] || rc=1
grep -h "weights on\|computing on\|green\|error" "$out/cluster.err" | head -20
echo "gpu replicas exit $rc"
exit "$rc"
