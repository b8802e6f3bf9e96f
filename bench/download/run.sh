#!/usr/bin/env bash
# Download bench: meterwise get (1 segment, auto, auto with --print-sha256, --http2) vs curl -o (and curl
# then sha256sum) vs aria2c -x4, a random file served by nginx on 127.0.0.1 over plain HTTP, HTTPS (TLS with
# a CA made here, HTTP/1.1), HTTPS through tinyproxy's CONNECT tunnel, and HTTPS with http2 offered; written
# to tmpfs (/dev/shm) and to disk. Then peak anonymous memory of meterwise and aria2c at MEM_SIZES_MIB (flat
# in the size?), and STABLE_RUNS default-segment HTTPS downloads of STABLE_MIB in a row (none over 1.2x the
# median?). The slow-range row: a 32 MiB file whose ranged request starting at 16 MiB (aria2c's and ours alike,
# in four segments) nginx sends at SLOW_RATE (1m, one connection held back). Prints the medians, every ratio from this run, bytes thrown away (discarded + refetched), and
# the issues' goals met or not.
# Usage: bench/download/run.sh   (SIZE_MIB=1024 RUNS=3 MEM_SIZES_MIB="64 4096" STABLE_RUNS=20 STABLE_MIB=256
# by default; BIN=path skips the release build; TARGETS="..." picks rows, e.g. TARGETS="https-tmpfs")
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SIZE_MIB=${SIZE_MIB:-1024}
RUNS=${RUNS:-3}
MEM_SIZES_MIB=${MEM_SIZES_MIB:-64 4096}
MEASURE="$ROOT/bench/download/measure.py"
SCRATCH=${SCRATCH:-$ROOT/.build-release}
DISK_DIR=${DISK_DIR:-$ROOT/.build-release/bench-disk}
TMPFS_DIR=${TMPFS_DIR:-/dev/shm/meterwise-bench}
WORK=$(mktemp -d /dev/shm/meterwise-bench-src.XXXXXX)
OUT=${OUT:-$ROOT/bench/out}

SLOW_RATE=${SLOW_RATE:-1m}
STABLE_RUNS=${STABLE_RUNS:-20}
STABLE_MIB=${STABLE_MIB:-256}
TARGETS=${TARGETS:-tmpfs disk https-tmpfs https-disk https-proxy-tmpfs h2-tmpfs slow-range}

need() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/usr/bin/$1" ]; }
if ! need aria2c || ! need curl || ! need python3 || ! need tinyproxy || ! need openssl; then
    [ "$(id -u)" = 0 ] && { apt-get update -qq >/dev/null; apt-get install -y -qq aria2 curl python3-minimal tinyproxy openssl >/dev/null; }
fi
for tool in curl aria2c nginx python3 tinyproxy openssl; do
    if ! need "$tool"; then
        echo "bench: $tool is missing (apt-get install curl aria2 nginx-light python3-minimal tinyproxy openssl)" >&2
        exit 1
    fi
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
TINYPROXY=$(command -v tinyproxy || echo /usr/sbin/tinyproxy)

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_binary "$ROOT" "$SCRATCH"

cleanup() {
    if [ -f "$WORK/nginx.pid" ]; then kill "$(cat "$WORK/nginx.pid")" 2>/dev/null || true; fi
    if [ -n "${PROXY_PID:-}" ]; then kill "$PROXY_PID" 2>/dev/null || true; fi
    rm -rf "$WORK" "$TMPFS_DIR" "$DISK_DIR"
}
trap cleanup EXIT

mkdir -p "$WORK/www" "$WORK/logs" "$WORK/tmp" "$TMPFS_DIR" "$DISK_DIR" "$OUT"
chmod 755 "$WORK" "$WORK/www"  # nginx workers run as nobody
echo "writing a ${SIZE_MIB} MiB random file ..." >&2
head -c "$((SIZE_MIB * 1024 * 1024))" /dev/urandom >"$WORK/www/object.bin"
SHA=$(sha256sum "$WORK/www/object.bin" | cut -d' ' -f1)
for mib in $MEM_SIZES_MIB; do
    # Sparse: nginx serves zeros from the page cache; memory, not speed, is measured with these.
    truncate -s "${mib}M" "$WORK/www/size-$mib.bin"
done
head -c $((32 << 20)) "$WORK/www/object.bin" >"$WORK/www/slow.bin"

PORT=$(bench_free_port)
TLS_PORT=$(bench_free_port)
H2_PORT=$(bench_free_port)
PROXY_PORT=$(bench_free_port)
SLOW_PORT=$(bench_free_port)

# A CA made for this run, and nginx's certificate for 127.0.0.1 signed by it.
bench_tls_ca "$WORK"

cat >"$WORK/tinyproxy.conf" <<CONF
Port $PROXY_PORT
Listen 127.0.0.1
Timeout 60
MaxClients 64
Allow 127.0.0.1
ConnectPort $TLS_PORT
DisableViaHeader Yes
LogLevel Error
LogFile "$WORK/logs/tinyproxy.log"
CONF
[ "$(id -u)" = 0 ] && printf 'User nobody\nGroup nogroup\n' >>"$WORK/tinyproxy.conf" && chmod 777 "$WORK/logs"
"$TINYPROXY" -d -c "$WORK/tinyproxy.conf" >/dev/null 2>&1 &
PROXY_PID=$!

bench_nginx_conf "$WORK" "server { listen 127.0.0.1:$PORT; root $WORK/www; }" \
    "ssl_certificate $WORK/server.pem;" "ssl_certificate_key $WORK/server.key;" \
    "server { listen 127.0.0.1:$TLS_PORT ssl; root $WORK/www; }" \
    "server { listen 127.0.0.1:$H2_PORT ssl http2; root $WORK/www; }" \
    "map \$http_range \$slow_rate { \"~^bytes=16777216-\" $SLOW_RATE; default 0; }" \
    "server { listen 127.0.0.1:$SLOW_PORT; root $WORK/www; limit_rate \$slow_rate; }" >"$WORK/nginx.conf"
"$NGINX" -p "$WORK" -c "$WORK/nginx.conf"
sleep 0.5
URL="http://127.0.0.1:$PORT/object.bin"
CA="$WORK/ca.pem"

RESULTS="$OUT/download-results.tsv"
: >"$RESULTS"
# Warm-up (not measured): nginx, the page cache of the source, tmpfs pages.
curl -s -o "$TMPFS_DIR/warm.bin" "$URL"; rm -f "$TMPFS_DIR/warm.bin"

# How each target reaches the server: the URL, and each tool's options for it.
target_setup() { # target
    scheme_url=$URL; curl_opts=(); aria_opts=(); mw_opts=()
    case $1 in
    https-* | h2-*)
        local port=$TLS_PORT
        [[ $1 == h2-* ]] && port=$H2_PORT
        scheme_url="https://127.0.0.1:$port"
        curl_opts=(--cacert "$CA"); aria_opts=(--ca-certificate="$CA"); mw_opts=(--cacert "$CA")
        ;;
    slow-*) scheme_url="http://127.0.0.1:$SLOW_PORT"; aria_opts=(--min-split-size=1M) ;;
    *) scheme_url="http://127.0.0.1:$PORT" ;;
    esac
    if [[ $1 == *-proxy-* ]]; then
        curl_opts+=(-x "http://127.0.0.1:$PROXY_PORT")
        aria_opts+=(--all-proxy="http://127.0.0.1:$PROXY_PORT")
        mw_opts+=(--proxy "http://127.0.0.1:$PROXY_PORT")
    fi
}

run_one() { # target dir tool [path] [runs]
    local target=$1 dir=$2 tool=$3 path=${4:-/object.bin} runs=${5:-$RUNS} out="$2/out.bin"
    target_setup "$target"
    local url="$scheme_url$path"
    local cmd
    case $tool in
    curl) cmd=(curl -s "${curl_opts[@]}" -o "$out" "$url") ;;
    curl+sha256sum) cmd=(sh -c 'curl -s "$@" && sha256sum "$0" >/dev/null' "$out" "${curl_opts[@]}" -o "$out" "$url") ;;
    meterwise-1) cmd=("$BIN" get "$url" -o "$out" --segments 1 --force --json "${mw_opts[@]}") ;;
    meterwise-auto) cmd=("$BIN" get "$url" -o "$out" --force --json "${mw_opts[@]}") ;;
    meterwise-http2) cmd=("$BIN" get "$url" -o "$out" --force --json --http2 "${mw_opts[@]}") ;;
    meterwise-auto-sha256) cmd=("$BIN" get "$url" -o "$out" --force --print-sha256 "${mw_opts[@]}") ;;
    aria2c-x4) cmd=(aria2c -q -x4 -s4 --file-allocation=none --allow-overwrite=true --auto-file-renaming=false
        "${aria_opts[@]}" -d "$dir" -o out.bin "$url") ;;
    esac
    for run in $(seq 1 "$runs"); do
        rm -f "$out" "$out.part" "$out.part.checkpoint"
        sync
        python3 "$MEASURE" "$WORK/measure" -- "${cmd[@]}" || {
            echo "bench: $tool failed: $(tail -3 "$WORK/measure.log")" >&2
            exit 1
        }
        read -r wall cpu rss anon _ <"$WORK/measure"
        if [ "$run" = 1 ] && { [ "$path" = /object.bin ] || [ "$path" = /slow.bin ]; }; then
            got=$(sha256sum "$out" | cut -d' ' -f1)
            want=$SHA
            [ "$path" = /slow.bin ] && want=$(sha256sum "$WORK/www/slow.bin" | cut -d' ' -f1)
            [ "$got" = "$want" ] || { echo "bench: $tool wrote a wrong file ($got)" >&2; exit 1; }
            if [ "$tool" = meterwise-auto-sha256 ]; then
                grep -q "^$SHA " "$WORK/measure.log" || { echo "bench: --print-sha256 printed no/wrong sha256" >&2; exit 1; }
            fi
        fi
        # Bytes received and not kept, or received twice (meterwise's own counts, from --json's last line).
        thrown=-
        if grep -q '"state":"completed"' "$WORK/measure.log"; then
            thrown=$(tail -1 "$WORK/measure.log" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["discarded_bytes"] + d["refetched_bytes"])')
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$target" "$tool" "$wall" "$cpu" "$rss" "$anon" "$thrown" >>"$RESULTS"
        echo "  $target $tool run $run: ${wall}s cpu ${cpu}s anon ${anon} KiB thrown ${thrown}" >&2
    done
    rm -f "$out"
}

for target in $TARGETS; do
    dir=$TMPFS_DIR
    [[ $target == *disk ]] && dir=$DISK_DIR
    tools="curl meterwise-1 meterwise-auto aria2c-x4"
    [ "$target" = tmpfs ] && tools="$tools meterwise-auto-sha256 curl+sha256sum"
    # aria2c speaks no HTTP/2: beside curl (which takes h2 when offered) it is the HTTP/1.1 figure.
    [[ $target == h2-* ]] && tools="curl meterwise-auto meterwise-http2 aria2c-x4"
    if [ "$target" = slow-range ]; then
        # curl asks for no range, so nothing holds it back: the row compares the segmented tools.
        for tool in meterwise-auto aria2c-x4; do run_one "$target" "$TMPFS_DIR" "$tool" /slow.bin; done
        continue
    fi
    for tool in $tools; do
        run_one "$target" "$dir" "$tool"
    done
done
for mib in $MEM_SIZES_MIB; do
    for tool in meterwise-auto aria2c-x4; do
        run_one "tmpfs-${mib}MiB" "$TMPFS_DIR" "$tool" "/size-$mib.bin"
    done
done
if [ "$STABLE_RUNS" -gt 0 ]; then
    head -c "$((STABLE_MIB * 1024 * 1024))" "$WORK/www/object.bin" >"$WORK/www/stable.bin"
    run_one "https-tmpfs-${STABLE_MIB}MiB-x$STABLE_RUNS" "$TMPFS_DIR" meterwise-auto /stable.bin "$STABLE_RUNS"
fi

echo
echo "${SIZE_MIB} MiB from nginx on 127.0.0.1, median of $RUNS runs ($(nproc) cores, $(uname -r)); $(basename "$BIN") $(stat -c %s "$BIN") bytes"
awk -F'\t' -v size="$SIZE_MIB" -v rate_mib="$(python3 -c "import sys; r=sys.argv[1].lower(); print(float(r[:-1]) / 1024 if r.endswith('k') else float(r.rstrip('m')))" "$SLOW_RATE")" '
function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function goal(what, value, limit, fmt) {
    printf "| %s | " fmt " | " fmt " | %s |\n", what, value, limit, (value <= limit ? "met" : "**missed**")
}
{ key = $1 "|" $2; wall[key] = wall[key] " " $3; cpu[key] = cpu[key] " " $4; rss[key] = rss[key] " " $5; anon[key] = anon[key] " " $6
  if ($7 != "-") { if (!(key in thrown) || $7 + 0 > thrown[key]) thrown[key] = $7 + 0 }
  if (!(key in seen)) { order[++count] = key; seen[key] = 1; n[key] = 0 }
  n[key]++; if ($3 + 0 > mxw[key]) mxw[key] = $3 + 0 }
END {
    printf "| target | tool | wall s | wall / curl | CPU s | CPU / curl | peak RSS MiB | peak anon MiB | most thrown away KiB |\n"
    printf "|---|---|---|---|---|---|---|---|---|\n"
    for (i = 1; i <= count; i++) {
        split(order[i], k, "|")
        w = median(wall[order[i]]); c = median(cpu[order[i]]); r = median(rss[order[i]]) / 1024; an = median(anon[order[i]]) / 1024
        W[order[i]] = w; C[order[i]] = c; R[order[i]] = r; A[order[i]] = an
        t = (order[i] in thrown) ? sprintf("%.0f", thrown[order[i]] / 1024) : ""
        cw = median(wall[k[1] "|curl"]); cc = median(cpu[k[1] "|curl"])
        if (cw > 0) printf "| %s | %s | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f | %s |\n", k[1], k[2], w, w / cw, c, c / cc, r, an, t
        else printf "| %s | %s | %.2f | | %.2f | | %.1f | %.1f | %s |\n", k[1], k[2], w, c, r, an, t
    }
    printf "\n| goal | measured | limit | |\n|---|---|---|---|\n"
    for (i = 1; i <= count; i++) {
        split(order[i], k, "|")
        if (k[2] != "meterwise-auto" || !((k[1] "|curl") in W)) continue
        t = k[1]; wl = (t ~ /disk/) ? 1.0 : 0.8
        goal("wall / curl, " t " (meterwise-auto)", W[t "|meterwise-auto"] / W[t "|curl"], wl, "%.2f")
        goal("CPU / curl, " t " (meterwise-auto)", C[t "|meterwise-auto"] / C[t "|curl"], 1.1, "%.2f")
        if ((t "|aria2c-x4") in A) goal("peak anon MiB, " t " (aria2c-x4 as the limit)", A[t "|meterwise-auto"], A[t "|aria2c-x4"], "%.1f")
        if (t ~ /^(https|h2)/) goal("most thrown away KiB in a run, " t " (meterwise-auto)", thrown[t "|meterwise-auto"] / 1024, 256, "%.0f")
    }
    if (("slow-range|meterwise-auto") in W) {
        goal("wall s, slow-range (meterwise-auto; a quarter of the held-back 8 MiB segment alone)", W["slow-range|meterwise-auto"], 8 / rate_mib / 4, "%.2f")
        goal("most thrown away KiB in a run, slow-range (meterwise-auto)", thrown["slow-range|meterwise-auto"] / 1024, 256, "%.0f")
    }
    if (("tmpfs|meterwise-auto-sha256") in C)
        goal("CPU with --print-sha256 / (curl + sha256sum)", C["tmpfs|meterwise-auto-sha256"] / C["tmpfs|curl+sha256sum"], 1.0, "%.2f")
    for (i = 1; i <= count; i++) {
        split(order[i], k, "|")
        if (k[1] ~ /-x[0-9]+$/) {
            goal("slowest / median of " n[order[i]] " runs, " k[1] " (" k[2] ")", mxw[order[i]] / W[order[i]], 1.2, "%.2f")
            goal("most thrown away KiB in a run, " k[1], thrown[order[i]] / 1024, 256, "%.0f")
        }
    }
    mx = 0; mn = 1e9
    for (i = 1; i <= count; i++) {
        split(order[i], k, "|")
        if (k[2] == "meterwise-auto" && k[1] ~ /^tmpfs-[0-9]+MiB$/) {
            a = A[order[i]]; if (a > mx) mx = a; if (a < mn) mn = a
            goal("peak anon MiB, " k[1] " (aria2c-x4 as the limit)", a, A[k[1] "|aria2c-x4"], "%.1f")
        }
        if (k[2] == "meterwise-auto" && k[1] == "tmpfs") { a = A[order[i]]; if (a > mx) mx = a; if (a < mn) mn = a }
        if (k[2] ~ /^meterwise/) { if (R[order[i]] > rr) rr = R[order[i]] }
    }
    goal("peak anon, largest / smallest size (flat)", mx / mn, 1.25, "%.2f")
    goal("peak RSS MiB of the static build (any meterwise row)", rr, 24, "%.1f")
}' "$RESULTS"
