#!/usr/bin/env bash
# Set up (as scripts/setup.sh), then serve the demo model with the OpenAI API on
# http://127.0.0.1:8000. Extra arguments go to `troupe serve` (e.g. --port 9000).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/troupe serve --model models/demo --served-model-name demo "$@"
