#!/usr/bin/env bash
# Latency from a kernel link change in a netns to the monitor's snapshot (p50, p99 over TOGGLES toggles),
# with ROUTES extra routes in the table: first snapshot, churn CPU, peak memory.
# Usage: bench/links/run.sh [TOGGLES] [ROUTES]   e.g. bench/links/run.sh 200 1000000
# Builds release into .build-release (ignored by git). Needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."
source .ci/setup
swift build -c release --scratch-path .build-release --product bench-links >/dev/null
.build-release/release/bench-links "${1:-200}" "${2:-0}"
