#!/usr/bin/env bash
# Set up (as scripts/setup.sh), then run the demo model. Until the HTTP server lands this
# is greedy generation from the command line; extra arguments go to `troupe generate`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/troupe generate --model models/demo --prompt-ids 151644,872,198,9707,11,1879,0 "$@"
