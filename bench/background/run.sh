#!/usr/bin/env bash
# Background bench (issue 27): does a download give way to other traffic? Root: two network namespaces of
# its own joined by a veth pair; nothing of the machine's network is touched.
#
# The server namespace's side of the veth is shaped like a home router or a cell tower: `tc qdisc tbf rate
# RATE burst 64kb latency 250ms` (a deep queue), segmentation offloads off, and the server namespace's TCP is
# reno (this kernel allows only reno and bbr in a namespace; bbr keeps queues short by itself). nginx serves
# the files there. For each tool (curl, aria2c -x4, meterwise get, meterwise get --background) and each rate,
# bench/background/drive.py measures, in one run:
#   alone      the download alone: its throughput, and its share of curl's;
#   ping       a foreground probe's round trip (ping every 10 ms) during the download: p50 / p95, idle beside;
#   fg         a foreground curl of FG_MIB started during the download: its time against its time alone;
#   back       after the foreground ends, how long until the download uses >= 85 % of the link again.
# Plus a row with two `meterwise get --background --segments 4` at once.
# Usage: bash bench/background/run.sh   Env: BIN (default: the release build), RATES ("20 5", Mbit/s),
#        TOOLS ("curl aria2c meterwise background"), PAIR (1: the two-job row at the first rate).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RATES=${RATES:-20 5}
TOOLS=${TOOLS:-curl aria2c meterwise background}
PAIR=${PAIR:-1}
if [ "$(id -u)" -ne 0 ]; then echo "bench/background: needs root (network namespaces)" >&2; exit 77; fi

need() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
missing=""
for pair in curl:curl aria2c:aria2 nginx:nginx-light ping:iputils-ping ethtool:ethtool tc:iproute2 python3:python3-minimal; do
    need "${pair%%:*}" || missing="$missing ${pair#*:}"
done
if [ -n "$missing" ]; then
    apt-get update -qq >/dev/null
    # shellcheck disable=SC2086
    apt-get install -y -qq $missing >/dev/null
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_binary "$ROOT"

NS="mw-bg-c$$"
NS_SERVER="mw-bg-s$$"
WORK=$(mktemp -d /dev/shm/mw-bg.XXXXXX)
cleanup() {
    [ -f "$WORK/nginx.pid" ] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
    bench_netns_remove "$NS" "$NS_SERVER"
    rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/www" "$WORK/logs" "$WORK/tmp" "$WORK/out"
chmod 755 "$WORK" "$WORK/www"
# Random bytes (nothing compresses them on the way), large enough to outlast every phase at these rates;
# drive.py makes the smaller files.
head -c $((256 << 20)) /dev/urandom >"$WORK/www/endless.bin"

bench_netns_pair "$NS" "$NS_SERVER" mwbc mwbs 10.78.0.2/24 10.78.0.1/24
ip netns exec "$NS_SERVER" ethtool -K mwbs tso off gso off gro off >/dev/null 2>&1 || true
ip netns exec "$NS" ethtool -K mwbc tso off gso off gro off >/dev/null 2>&1 || true
ip netns exec "$NS_SERVER" sysctl -qw net.ipv4.tcp_congestion_control=reno

bench_nginx_conf "$WORK" "server { listen 10.78.0.1:8080; root $WORK/www; }" >"$WORK/nginx.conf"
ip netns exec "$NS_SERVER" "$NGINX" -p "$WORK" -c "$WORK/nginx.conf"
sleep 0.3

BIN="$BIN" NS="$NS" NS_SERVER="$NS_SERVER" WORK="$WORK" RATES="$RATES" TOOLS="$TOOLS" PAIR="$PAIR" \
    python3 "$ROOT/bench/background/drive.py"
