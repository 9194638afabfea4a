#!/usr/bin/env bash
# The second build (build-sanitize/): clang with ASan + UBSan, the unit tests of what reads
# outside bytes and of the model's CPU path, and one libFuzzer harness per parser
# (tests/fuzz/README.md), each run FUZZ_SECONDS (default 10) from its seed corpus.
# scripts/test.sh runs it after the main tests; scripts/fuzz.sh builds with --build-only
# and runs the harnesses longer.
set -euo pipefail
cd "$(dirname "$0")/.."
CC=clang CXX=clang++ cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only" -DTROUPE_SANITIZE=ON \
  -DTROUPE_FUZZ_SECONDS="${FUZZ_SECONDS:-10}" >/dev/null
cmake --build build-sanitize --target sanitized
[ "${1:-}" = --build-only ] && exit 0
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd build-sanitize
ctest --output-on-failure --timeout 600 -j 2
