#!/usr/bin/env bash
# Set up (as scripts/setup.sh) and run every test that needs no GPU, then the sanitizer
# build's unit tests and fuzz harnesses (scripts/sanitize.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
(cd build && ctest --label-exclude gpu --output-on-failure --timeout 600 -j 2)
scripts/sanitize.sh
