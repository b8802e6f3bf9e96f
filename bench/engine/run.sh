#!/usr/bin/env bash
# The lab parts of the engine benchmark, from `meterwise lab --json` (root):
#   - pause latency: from the step's `ip -batch` starting (the kernel event follows within its run
#     time, `ip_ms`) to the engine's `paused` event line reaching the lab; goal p99 <= 20 ms. Since
#     issue 24 the event comes once the transfer has stopped with its checkpoint written (before, at the
#     decision), and says how long that took after the decision (`stop_ms`: decision -> stopped);
#   - in flight at a pause: what wlan0 still received from each pause's decision to the next start, next
#     to the job's `discarded_bytes` (what it read and did not keep);
#   - kernel-side pause: with both links up and the primary moved to the metered wwan0, how long after
#     the step wlan0 still received bytes (5 ms sampling; includes the TCP receive window draining);
#   - leakage: bytes received on wwan0 while it was the metered primary uplink; goal <= 64 KiB;
#   - resume latency after the hysteresis: the engine's `started` minus (`waiting` + its remaining_seconds).
# Two generated scenarios of TOGGLES toggles: "drop" (wlan0 goes down, wwan0 becomes primary) and
# "swap" (both stay up, the primary moves to wwan0 and back): 1.4 s on Wi-Fi, then 0.6 s with wwan0
# the primary. The policy is policies/default.yaml with resume_after 500ms, so every Wi-Fi phase runs
# the transfer again before the next toggle. `demo --links netlink` gives up after 120 s, so 50 toggles
# (100 s) and the file (96 MiB at 16 Mbit/s, about 0.9 s of transfer per toggle) must fit in that.
# Usage: bash bench/engine/run.sh [TOGGLES=50]
# Env: BIN (default: a release build in .build-release), DOWNLOADER (engine | get; default engine),
#      SIZE (default 96MiB), FAST_RATE (default 16mbit: the file must outlast the toggles).
set -euo pipefail
cd "$(dirname "$0")/../.."
toggles="${1:-50}"
speed=1  # the engine's hysteresis runs on real time
if [ "$(id -u)" -ne 0 ]; then echo "bench/engine: needs root (network namespaces)" >&2; exit 77; fi
if [ -z "${BIN:-}" ]; then
    [ -f .ci/setup ] && source .ci/setup
    swift build -c release --scratch-path .build-release --product meterwise >/dev/null
    BIN=.build-release/release/meterwise
fi
downloader="${DOWNLOADER:-engine}"
size="${SIZE:-96MiB}"
fast_rate="${FAST_RATE:-16mbit}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
policy="$work/bench-policy.yaml"
sed 's/^  resume_after: .*/  resume_after: 500ms/' policies/default.yaml >"$policy"

# Each toggle: 1.4 s on Wi-Fi, then 0.6 s with wwan0 the primary (times in ms).
gen() {  # gen NAME KIND
    local name="$1" kind="$2" t
    {
        echo "name: bench-$name"
        echo "links:"
        echo "  wlan0: { kind: wlan }"
        echo "  wwan0: { kind: wwan }"
        echo "steps:"
        echo "  - { at: 0s, up: [wlan0, wwan0], primary: wlan0 }"
        t=2000
        for _ in $(seq 1 "$toggles"); do
            if [ "$kind" = drop ]; then
                echo "  - { at: ${t}ms, down: [wlan0], primary: wwan0 }"
                echo "  - { at: $((t + 600))ms, up: [wlan0], primary: wlan0 }"
            else
                echo "  - { at: ${t}ms, primary: wwan0 }"
                echo "  - { at: $((t + 600))ms, primary: wlan0 }"
            fi
            t=$((t + 2000))
        done
    } >"$work/$name.yaml"
}
gen drop drop
gen swap swap

for kind in drop swap; do
    echo "bench/engine: $kind, $toggles toggles at speed $speed ($downloader)" >&2
    "$BIN" lab "$work/$kind.yaml" --json --size "$size" --speed "$speed" --policy "$policy" \
        --fast-rate "$fast_rate" --downloader "$downloader" 2>"$work/$kind.err" | tail -n 1 >"$work/$kind.json" || true
    [ -n "${KEEP:-}" ] && cp "$work/$kind.json" "$KEEP-$kind.json"
    if ! [ -s "$work/$kind.json" ]; then
        echo "bench/engine: the $kind run printed no summary:" >&2
        tail -n 20 "$work/$kind.err" >&2
    fi
done

python3 - "$work" "$toggles" "$downloader" "$fast_rate" <<'PY'
import json, sys, os, datetime
work, toggles, downloader, fast_rate = sys.argv[1:5]
def load(kind):
    try:
        with open(os.path.join(work, kind + ".json")) as f: return json.loads(f.read())
    except Exception: return None
def pct(values, p):
    if not values: return None
    values = sorted(values); return values[min(len(values) - 1, max(0, round(p / 100 * (len(values) - 1))))]
def pp(values, unit="ms"):
    if not values: return "n/a"
    return f"{pct(values, 50):.1f} / {pct(values, 99):.1f} {unit} (n={len(values)})"
def events(r, name):
    return [(e["at_ms"], e["event"]) for e in r.get("engine_events", [])
            if isinstance(e.get("event"), dict) and e["event"].get("event") == name]
rows = []
for kind in ("drop", "swap"):
    r = load(kind)
    if r is None:
        rows.append([kind] + ["no result (see stderr)"] * 7); continue
    metered = [s for s in r.get("steps", []) if s.get("primary") == "wwan0"]
    paused = events(r, "paused")
    pause = []
    for s in metered:
        after = [t - s["at_ms"] for t, _ in paused if s["at_ms"] <= t <= s["at_ms"] + 1000]
        if after: pause.append(min(after))
    ip = [s.get("ip_ms", 0) for s in metered]
    quiet = [s["last_rx_after_ms"]["wlan0"] for s in metered if "wlan0" in s.get("last_rx_after_ms", {})]
    started = events(r, "started")
    resume = []
    for t, e in events(r, "waiting"):
        due = t + 1000 * float(e.get("remaining_seconds", 0))
        later = [s for s, _ in started if s >= t]
        if later: resume.append(min(later) - due)
    # Decision -> stopped: the paused event says it (stop_ms) since the event waits for the stop; an older
    # build published "paused" at the decision and has no stop_ms.
    stop = [e["stop_ms"] for _, e in paused if "stop_ms" in e]
    # What the kernel still received on wlan0 from each pause's decision until the next start, next to the
    # bytes the job discarded in all.
    samples = r.get("rx_samples", {})
    at, rx = samples.get("at_ms", []), samples.get("wlan0", [])
    def rx_at(t):
        value = rx[0] if rx else 0
        for s_at, s_rx in zip(at, rx):
            if s_at > t: break
            value = s_rx
        return value
    after_pause = 0
    for t, e in paused:
        decided = t - float(e.get("stop_ms", 0))
        later = [s for s, _ in started if s > t]
        if rx and later: after_pause += rx_at(min(later)) - rx_at(decided)
    discarded = (r.get("engine_summary") or {}).get("discarded_bytes")
    leak = r.get("metered_primary_rx_bytes", {}).get("wwan0")
    iface = r.get("interfaces", {})
    rows.append([kind,
                 pp(pause) + (f"; ip -batch {pct(ip, 50):.1f} ms" if ip and pause else ""),
                 pp(stop) if stop else "n/a (paused said at the decision)",
                 (f"{after_pause} B / {discarded} B" if rx and discarded is not None else "n/a"),
                 pp(quiet) if kind == "swap" else "- (link down)",
                 "n/a" if leak is None else f"{leak} B",
                 pp(resume),
                 f"sha256_ok {r.get('sha256_ok')}, {len(metered)} toggles, wlan0 rx {iface.get('wlan0', {}).get('rx_bytes')} B, wwan0 rx {iface.get('wwan0', {}).get('rx_bytes')} B, {r.get('duration_seconds')} s"])
print(f"engine lab bench, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {toggles} toggles, downloader {downloader}, wlan0 {fast_rate}, wwan0 3mbit")
print()
print("| scenario | kernel event → engine paused, p50 / p99 (goal p99 ≤ 20 ms) | decision → stopped (stop_ms), p50 / p99 | wlan0 rx from each pause's decision to the next start / job's discarded_bytes | wlan0 last rx after the swap, p50 / p99 | leakage on wwan0 while metered primary (goal ≤ 64 KiB) | resume after the hysteresis, p50 / p99 | run |")
print("|---|---|---|---|---|---|---|---|")
for row in rows: print("| " + " | ".join(row) + " |")
PY
