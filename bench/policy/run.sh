#!/bin/sh
# Policy benchmark: 10 000 jobs decided before and after one link change (wlan0, the primary, goes
# down; wwan0 remains), for every shipped policy. Goal: <= 50 ms for the 20 000 decisions.
#
#   bench/policy/run.sh [--jobs N] [--rounds N]
#
# Builds a release binary into .build-release (ignored by git) so it does not disturb the debug build.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
swift build -c release --scratch-path .build-release --product bench-policy >&2
exec .build-release/release/bench-policy --policy policies "$@"
