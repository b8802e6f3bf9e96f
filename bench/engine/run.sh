#!/usr/bin/env bash
# The lab parts of the engine benchmark (issue 5), measured from the kernel's counters (root):
#   - leakage: bytes received on wwan0 while it was the metered primary uplink (goal <= 64 KiB);
#   - pause latency: after the primary moves from wlan0 to the metered wwan0 with both links up, how
#     long wlan0 still receives bytes (the kernel-side "no more bytes read", at the 5 ms sampling
#     resolution; it includes draining the TCP receive window, so it is an upper bound);
#   - the engine's own pause events, when its --json output has them (`"event": "paused"`).
# Usage: bash bench/engine/run.sh [TOGGLES=50] [SPEED=2]
# Env: BIN (default: a release build in .build-release), DOWNLOADER (engine | get; default engine),
#      SIZE (default 256MiB), POLICY (default policies/default.yaml).
set -euo pipefail
cd "$(dirname "$0")/../.."
toggles="${1:-50}"
speed="${2:-2}"
if [ "$(id -u)" -ne 0 ]; then echo "bench/engine: needs root (network namespaces)" >&2; exit 77; fi
if [ -z "${BIN:-}" ]; then
    [ -f .ci/setup ] && source .ci/setup
    swift build -c release --scratch-path .build-release --product meterwise >/dev/null
    BIN=.build-release/release/meterwise
fi
downloader="${DOWNLOADER:-engine}"
size="${SIZE:-256MiB}"
policy="${POLICY:-policies/default.yaml}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Two generated scenarios, one toggle per second of scenario time:
#   drop: wlan0 goes down (wwan0 becomes the primary) and comes back;
#   swap: both stay up, the primary moves wlan0 -> wwan0 -> wlan0 (the dual-uplink case).
gen() {  # gen NAME KIND
    local name="$1" kind="$2" t=1
    {
        echo "name: bench-$name"
        echo "links:"
        echo "  wlan0: { kind: wlan }"
        echo "  wwan0: { kind: wwan }"
        echo "steps:"
        echo "  - { at: 0s, up: [wlan0, wwan0], primary: wlan0 }"
        for _ in $(seq 1 "$toggles"); do
            if [ "$kind" = drop ]; then
                echo "  - { at: ${t}s, down: [wlan0], primary: wwan0 }"
                echo "  - { at: $((t + 1))s, up: [wlan0], primary: wlan0 }"
            else
                echo "  - { at: ${t}s, primary: wwan0 }"
                echo "  - { at: $((t + 1))s, primary: wlan0 }"
            fi
            t=$((t + 2))
        done
    } >"$work/$name.yaml"
}
gen drop drop
gen swap swap

for kind in drop swap; do
    echo "bench/engine: $kind, $toggles toggles at speed $speed ($downloader)" >&2
    "$BIN" lab "$work/$kind.yaml" --json --size "$size" --speed "$speed" --policy "$policy" \
        --downloader "$downloader" 2>"$work/$kind.err" | tail -n 1 >"$work/$kind.json" || true
    if ! [ -s "$work/$kind.json" ]; then
        echo "bench/engine: the $kind run printed no summary:" >&2
        tail -n 20 "$work/$kind.err" >&2
    fi
done

python3 - "$work" "$toggles" "$speed" "$downloader" <<'PY'
import json, sys, os, datetime
work, toggles, speed, downloader = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
def load(kind):
    try:
        with open(os.path.join(work, kind + ".json")) as f: return json.loads(f.read())
    except Exception: return None
def pct(values, p):
    if not values: return None
    values = sorted(values); k = min(len(values) - 1, max(0, round(p / 100 * (len(values) - 1))))
    return values[k]
def fmt(v, unit):
    return "n/a" if v is None else (f"{v:.1f} {unit}" if isinstance(v, float) else f"{v} {unit}")
rows = []
for kind in ("drop", "swap"):
    r = load(kind)
    if r is None:
        rows.append((kind, "no result (see stderr)", "", "", "")); continue
    leak = r.get("metered_primary_rx_bytes", {}).get("wwan0")
    lat = [s["last_rx_after_ms"]["wlan0"] for s in r.get("steps", [])
           if s.get("primary") == "wwan0" and "wlan0" in s.get("last_rx_after_ms", {})]
    # The engine's own pause events, matched to the step before them.
    steps = [s for s in r.get("steps", []) if s.get("primary") == "wwan0"]
    paused = [e["at_ms"] for e in r.get("engine_events", [])
              if isinstance(e.get("event"), dict) and "pause" in json.dumps(e["event"]).lower()]
    ev = []
    for s in steps:
        after = [t - s["at_ms"] for t in paused if t >= s["at_ms"]]
        if after: ev.append(min(after))
    rows.append((kind,
                 f"{leak} B" if leak is not None else "n/a",
                 f"{fmt(pct(lat, 50), 'ms')} / {fmt(pct(lat, 99), 'ms')} over {len(lat)}" if kind == "swap" else "-",
                 f"{fmt(pct(ev, 50), 'ms')} / {fmt(pct(ev, 99), 'ms')} over {len(ev)}" if ev else "pending engine events",
                 f"sha256_ok={r.get('sha256_ok')}, exit {r.get('engine_exit')}, wlan0 rx {r['interfaces'].get('wlan0', {}).get('rx_bytes')}, wwan0 rx {r['interfaces'].get('wwan0', {}).get('rx_bytes')}"))
print(f"engine lab bench, {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, {toggles} toggles, speed {speed}, downloader {downloader}")
print()
print("| scenario | leakage on wwan0 while metered primary (goal ≤ 64 KiB) | wlan0 last rx after swap, p50 / p99 | engine pause event, p50 / p99 (goal p99 ≤ 20 ms) | run |")
print("|---|---|---|---|---|")
for row in rows: print("| " + " | ".join(row) + " |")
PY
