#!/usr/bin/env bash
# From a D-Bus signal (NetworkManager's Metered, its connectivity, UPower's OnBattery; no kernel change) to
# the daemon's transfer stopped: p50 and p99 over N flips of each, with a real NetworkManager on a private
# bus in a namespace and dbusmock's UPower. Measures the release build the package ships (BIN, else built
# into .build-release with packaging/release-flags.sh); the harness itself is built in debug (it only
# reads the times dbus-monitor and `meterwise watch` print). Needs root.
# Usage: bench/hints/run.sh [N] [metered|connectivity|power|all]
set -euo pipefail
cd "$(dirname "$0")/../.."
source .ci/setup
source bench/lib.sh
bench_binary "$PWD"
swift build --product bench-hints >/dev/null
.build/debug/bench-hints "${1:-20}" "$BIN" "${2:-all}"
