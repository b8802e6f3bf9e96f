#!/usr/bin/env bash
# From NetworkManager's D-Bus signal (a link marked metered, no kernel change) to the daemon's transfer
# stopped: p50 and p99 over N flips, with a real NetworkManager on a private bus in a namespace.
# Builds release into .build-release (ignored by git). Needs root.
# Usage: bench/hints/run.sh [N]
set -euo pipefail
cd "$(dirname "$0")/../.."
source .ci/setup
swift build -c release --scratch-path .build-release --product meterwise >/dev/null
swift build -c release --scratch-path .build-release --product bench-hints >/dev/null
.build-release/release/bench-hints "${1:-20}" "$PWD/.build-release/release/meterwise"
