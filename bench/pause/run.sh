#!/usr/bin/env bash
# Pause bench: bytes a pause throws away, p50/p99 over PAUSES pauses (root: two network namespaces of its
# own joined by a veth pair, so nothing of the machine's network is touched).
#
# The server side's veth is shaped with tbf (RATE, a queue of QUEUE_MS: the bytes a real uplink holds in
# flight). bench/pause/server.py serves a random file from the server namespace and records, per
# connection, what the client's kernel acknowledged (tcp_info bytes_acked). `meterwise get` runs in the
# client namespace, is paused by SIGINT after a random 0.3-0.7 s, and runs again, PAUSES times. Per pause:
#   arrived  = TCP payload that reached the client namespace during the run (its IpExtInOctets less 52
#              bytes of IPv4 + TCP header, timestamps on, per TcpInSegs), including segments that arrived
#              after the close and were answered with a reset;
#   thrown away = arrived - response heads - bytes the run kept in the file (bytes_done after the pause
#              minus before);
# next to what meterwise itself counted (`discarded_bytes`) and the server's view (acknowledged, not kept).
# Usage: bash bench/pause/run.sh [PAUSES=50]   Env: BIN (default: the release build), RATE (100mbit),
#        QUEUE_MS (50), SIZE_MIB (512).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PAUSES=${1:-50}
RATE=${RATE:-100mbit}
QUEUE_MS=${QUEUE_MS:-50}
SIZE_MIB=${SIZE_MIB:-512}
if [ "$(id -u)" -ne 0 ]; then echo "bench/pause: needs root (a network namespace)" >&2; exit 77; fi
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_binary "$ROOT"
NS="mw-pause-c$$"
NS_SERVER="mw-pause-s$$"
WORK=$(mktemp -d /dev/shm/mw-pause.XXXXXX)
cleanup() {
    bench_netns_remove "$NS" "$NS_SERVER"
    rm -rf "$WORK"
}
trap cleanup EXIT

# struct tcp_info offsets of tcpi_bytes_acked, tcpi_bytes_sent, tcpi_bytes_retrans (Linux 4.19 and later).
export ACKED_OFFSET=120 SENT_OFFSET=200 RETRANS_OFFSET=208
head -c "$((SIZE_MIB << 20))" /dev/urandom >"$WORK/object.bin"
SHA=$(sha256sum "$WORK/object.bin" | cut -d' ' -f1)
bench_netns_pair "$NS" "$NS_SERVER" mwpc mwps 10.77.0.2/24 10.77.0.1/24
burst=$(( $(echo "$RATE" | sed 's/mbit//') * 1000000 / 8 / 250 ))   # 4 ms of tokens
[ "$burst" -lt 16384 ] && burst=16384
ip netns exec "$NS_SERVER" tc qdisc add dev mwps root tbf rate "$RATE" burst "$burst" latency "${QUEUE_MS}ms"
PORT=18080
BIND=10.77.0.1 ip netns exec "$NS_SERVER" python3 "$ROOT/bench/pause/server.py" "$WORK/object.bin" "$PORT" "$WORK/conns.jsonl" &
sleep 0.5
URL="http://10.77.0.1:$PORT/object.bin"
nstat_in() {  # TCP payload bytes received in the client namespace since the last call
    ip netns exec "$NS" nstat 2>/dev/null | awk '$1 == "IpExtInOctets" { o = $2 } $1 == "TcpInSegs" { s = $2 } END { print o - 52 * s }'
}
nstat_in >/dev/null
OUTFILE="$WORK/out.bin"
: >"$WORK/conns.jsonl"
: >"$WORK/pauses.tsv"
done_before=0
pauses=0
completions=0
while [ "$pauses" -lt "$PAUSES" ]; do
    ip netns exec "$NS" "$BIN" get "$URL" -o "$OUTFILE" --json >"$WORK/run.jsonl" 2>/dev/null &
    pid=$!
    sleep "$(python3 -c 'import random; print(round(random.uniform(0.3, 0.7), 3))')"
    kill -INT "$pid" 2>/dev/null || true
    code=0
    wait "$pid" || code=$?
    sleep 0.3  # the server logs each connection once the client's close reaches it; late segments land
    arrived=$(nstat_in)
    mv "$WORK/conns.jsonl" "$WORK/conns.run"; : >"$WORK/conns.jsonl"
    last=$(tail -1 "$WORK/run.jsonl")
    if [ "$code" = 0 ]; then
        [ "$(sha256sum "$OUTFILE" | cut -d' ' -f1)" = "$SHA" ] || { echo "bench/pause: wrong file" >&2; exit 1; }
        completions=$((completions + 1)); rm -f "$OUTFILE"; done_before=0; continue
    fi
    [ "$code" = 130 ] || { echo "bench/pause: get exited $code: $last" >&2; exit 1; }
    python3 - "$WORK/conns.run" "$last" "$done_before" "$arrived" >>"$WORK/pauses.tsv" <<'PY'
import json, sys
conns = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
last = json.loads(sys.argv[2]); before = int(sys.argv[3]); arrived = int(sys.argv[4])
acked = sum(c["acked"] for c in conns); heads = sum(c["heads"] for c in conns)
kept = last["bytes_done"] - before
print(f'{arrived - heads - kept}\t{last.get("discarded_bytes", -1)}\t{kept}\t{acked - heads - kept}\t{len(conns)}')
PY
    done_before=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["bytes_done"])' "$last")
    pauses=$((pauses + 1))
done

python3 - "$WORK/pauses.tsv" "$PAUSES" "$RATE" "$QUEUE_MS" "$completions" <<'PY'
import sys
rows = [list(map(int, l.split("\t"))) for l in open(sys.argv[1]) if l.strip()]
def pct(values, p):
    v = sorted(values); return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
thrown = [r[0] for r in rows]; counted = [r[1] for r in rows]; kept = [r[2] for r in rows]; acked = [r[3] for r in rows]
print(f"\n{len(rows)} pauses of `meterwise get` over a {sys.argv[3]} veth with a {sys.argv[4]} ms queue "
      f"(tbf, two namespaces); {sys.argv[5]} runs completed in between\n")
print("| per pause | p50 | p99 | max | goal |")
print("|---|---|---|---|---|")
print(f"| thrown away: payload that reached the client namespace and was not kept | {pct(thrown,50)} B | {pct(thrown,99)} B | {max(thrown)} B | p99 <= 65536 B |")
print(f"| of it acknowledged by the client's kernel (server tcp_info) | {pct(acked,50)} B | {pct(acked,99)} B | {max(acked)} B | |")
print(f"| counted by meterwise (`discarded_bytes`) | {pct(counted,50)} B | {pct(counted,99)} B | {max(counted)} B | |")
print(f"| kept in the file by the run | {pct(kept,50)} B | {pct(kept,99)} B | {max(kept)} B | |")
worst = sorted(rows, reverse=True)[:5]
print("\nlargest five (thrown away B / connections): " + ", ".join(f"{r[0]} / {r[4]}" for r in worst))
print("\ngoal p99 <= 64 KiB:", "met" if pct(thrown, 99) <= 65536 else "MISSED")
if sum(kept) == 0:
    sys.exit("bench/pause: no run kept any byte; the transfer never ran")
PY
