#!/usr/bin/env bash
# The daemon under a long hostile run: JOBS jobs against rotating server faults (resets, truncations,
# 503s, dripping responses) while the primary link flaps FLAPS times between Wi-Fi and a metered modem
# over MINUTES minutes. Prints a table: deaths, completions, sha256s, memory over time. No root needed;
# loopback only. Builds release into .build-release (ignored by git).
# Usage: bash bench/soak/run.sh [JOBS=50] [MINUTES=10] [FLAPS=100]
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -f .ci/setup ] && source .ci/setup
swift build -c release --scratch-path .build-release --product meterwise >/dev/null
swift build -c release --scratch-path .build-release --product bench-soak >/dev/null
.build-release/release/bench-soak "$PWD/.build-release/release/meterwise" "${1:-50}" "${2:-10}" "${3:-100}"
