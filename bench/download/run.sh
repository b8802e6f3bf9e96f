#!/usr/bin/env bash
# Download bench: meterwise get (1 segment, auto, auto with --print-sha256) vs curl -o (and curl then
# sha256sum) vs aria2c -x4, a random file served by nginx on 127.0.0.1, written to tmpfs (/dev/shm) and
# to disk; then peak anonymous memory of meterwise and aria2c at MEM_SIZES_MIB (flat in the size?).
# Prints the medians, every ratio from this run, and the issue's goals met or not.
# Usage: bench/download/run.sh   (SIZE_MIB=1024 RUNS=3 MEM_SIZES_MIB="64 4096" by default;
# BIN=path skips the release build)
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

need() { command -v "$1" >/dev/null 2>&1; }
if ! need aria2c || ! need curl || ! need python3; then
    [ "$(id -u)" = 0 ] && { apt-get update -qq >/dev/null; apt-get install -y -qq aria2 curl python3-minimal >/dev/null; }
fi
for tool in curl aria2c nginx python3; do
    if ! need "$tool" && [ ! -x "/usr/sbin/$tool" ]; then
        echo "bench: $tool is missing (apt-get install curl aria2 nginx-light python3-minimal)" >&2
        exit 1
    fi
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

if [ -z "${BIN:-}" ]; then
    echo "building the release binary (static stdlib) into $SCRATCH ..." >&2
    root="$ROOT"; source "$ROOT/packaging/release-flags.sh"
    swift build -c release "${release_flags[@]}" --scratch-path "$SCRATCH" --product meterwise >&2
    BIN="$SCRATCH/release/meterwise"
fi

cleanup() {
    if [ -f "$WORK/nginx.pid" ]; then kill "$(cat "$WORK/nginx.pid")" 2>/dev/null || true; fi
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

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 18473)
cat >"$WORK/nginx.conf" <<CONF
daemon on;
worker_processes 1;
error_log $WORK/logs/error.log warn;
pid $WORK/nginx.pid;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path $WORK/tmp/body;
    proxy_temp_path $WORK/tmp/proxy;
    fastcgi_temp_path $WORK/tmp/fastcgi;
    uwsgi_temp_path $WORK/tmp/uwsgi;
    scgi_temp_path $WORK/tmp/scgi;
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    server { listen 127.0.0.1:$PORT; root $WORK/www; }
}
CONF
"$NGINX" -p "$WORK" -c "$WORK/nginx.conf"
sleep 0.5
URL="http://127.0.0.1:$PORT/object.bin"

RESULTS="$OUT/download-results.tsv"
: >"$RESULTS"
# Warm-up (not measured): nginx, the page cache of the source, tmpfs pages.
curl -s -o "$TMPFS_DIR/warm.bin" "$URL"; rm -f "$TMPFS_DIR/warm.bin"

run_one() { # target dir tool [path]
    local target=$1 dir=$2 tool=$3 path=${4:-/object.bin} out="$2/out.bin"
    local url="http://127.0.0.1:$PORT$path"
    local cmd
    case $tool in
    curl) cmd=(curl -s -o "$out" "$url") ;;
    curl+sha256sum) cmd=(sh -c 'curl -s -o "$1" "$2" && sha256sum "$1" >/dev/null' sh "$out" "$url") ;;
    meterwise-1) cmd=("$BIN" get "$url" -o "$out" --segments 1 --force) ;;
    meterwise-auto) cmd=("$BIN" get "$url" -o "$out" --force) ;;
    meterwise-auto-sha256) cmd=("$BIN" get "$url" -o "$out" --force --print-sha256) ;;
    aria2c-x4) cmd=(aria2c -q -x4 -s4 --file-allocation=none --allow-overwrite=true --auto-file-renaming=false
        -d "$dir" -o out.bin "$url") ;;
    esac
    for run in $(seq 1 "$RUNS"); do
        rm -f "$out" "$out.part" "$out.part.checkpoint"
        sync
        python3 "$MEASURE" "$WORK/measure" -- "${cmd[@]}" || {
            echo "bench: $tool failed: $(tail -3 "$WORK/measure.log")" >&2
            exit 1
        }
        read -r wall cpu rss anon _ <"$WORK/measure"
        if [ "$run" = 1 ] && [ "$path" = /object.bin ]; then
            got=$(sha256sum "$out" | cut -d' ' -f1)
            [ "$got" = "$SHA" ] || { echo "bench: $tool wrote a wrong file ($got)" >&2; exit 1; }
            if [ "$tool" = meterwise-auto-sha256 ]; then
                grep -q "^$SHA " "$WORK/measure.log" || { echo "bench: --print-sha256 printed no/wrong sha256" >&2; exit 1; }
            fi
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$target" "$tool" "$wall" "$cpu" "$rss" "$anon" >>"$RESULTS"
        echo "  $target $tool run $run: ${wall}s cpu ${cpu}s anon ${anon} KiB" >&2
    done
    rm -f "$out"
}

for target in tmpfs disk; do
    dir=$TMPFS_DIR
    [ "$target" = disk ] && dir=$DISK_DIR
    tools="curl meterwise-1 meterwise-auto aria2c-x4"
    [ "$target" = tmpfs ] && tools="$tools meterwise-auto-sha256 curl+sha256sum"
    for tool in $tools; do
        run_one "$target" "$dir" "$tool"
    done
done
for mib in $MEM_SIZES_MIB; do
    for tool in meterwise-auto aria2c-x4; do
        run_one "tmpfs-${mib}MiB" "$TMPFS_DIR" "$tool" "/size-$mib.bin"
    done
done

echo
echo "${SIZE_MIB} MiB from nginx on 127.0.0.1, median of $RUNS runs ($(nproc) cores, $(uname -r)); $(basename "$BIN") $(stat -c %s "$BIN") bytes"
awk -F'\t' -v size="$SIZE_MIB" '
function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function goal(what, value, limit, fmt) {
    printf "| %s | " fmt " | " fmt " | %s |\n", what, value, limit, (value <= limit ? "met" : "**missed**")
}
{ key = $1 "|" $2; wall[key] = wall[key] " " $3; cpu[key] = cpu[key] " " $4; rss[key] = rss[key] " " $5; anon[key] = anon[key] " " $6
  if (!(key in seen)) { order[++count] = key; seen[key] = 1 } }
END {
    printf "| target | tool | wall s | wall / curl | CPU s | CPU / curl | peak RSS MiB | peak anon MiB |\n"
    printf "|---|---|---|---|---|---|---|---|\n"
    for (i = 1; i <= count; i++) {
        split(order[i], k, "|")
        w = median(wall[order[i]]); c = median(cpu[order[i]]); r = median(rss[order[i]]) / 1024; an = median(anon[order[i]]) / 1024
        W[order[i]] = w; C[order[i]] = c; R[order[i]] = r; A[order[i]] = an
        cw = median(wall[k[1] "|curl"]); cc = median(cpu[k[1] "|curl"])
        if (cw > 0) printf "| %s | %s | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f |\n", k[1], k[2], w, w / cw, c, c / cc, r, an
        else printf "| %s | %s | %.2f | | %.2f | | %.1f | %.1f |\n", k[1], k[2], w, c, r, an
    }
    printf "\n| goal | measured | limit | |\n|---|---|---|---|\n"
    goal("wall / curl, tmpfs (meterwise-auto)", W["tmpfs|meterwise-auto"] / W["tmpfs|curl"], 0.8, "%.2f")
    goal("wall / curl, disk (meterwise-auto)", W["disk|meterwise-auto"] / W["disk|curl"], 1.0, "%.2f")
    goal("CPU / curl, tmpfs (meterwise-auto)", C["tmpfs|meterwise-auto"] / C["tmpfs|curl"], 1.1, "%.2f")
    goal("CPU / curl, disk (meterwise-auto)", C["disk|meterwise-auto"] / C["disk|curl"], 1.1, "%.2f")
    goal("CPU with --print-sha256 / (curl + sha256sum)", C["tmpfs|meterwise-auto-sha256"] / C["tmpfs|curl+sha256sum"], 1.0, "%.2f")
    mx = 0; mn = 1e9
    for (i = 1; i <= count; i++) {
        split(order[i], k, "|")
        if (k[2] == "meterwise-auto" && k[1] ~ /^tmpfs/) {
            a = A[order[i]]; if (a > mx) mx = a; if (a < mn) mn = a
            goal("peak anon MiB, " k[1] " (aria2c-x4 as the limit)", a, A[k[1] "|aria2c-x4"], "%.1f")
        }
        if (k[2] ~ /^meterwise/) { if (R[order[i]] > rr) rr = R[order[i]] }
    }
    goal("peak anon, largest / smallest size (flat)", mx / mn, 1.25, "%.2f")
    goal("peak RSS MiB of the static build (any meterwise row)", rr, 24, "%.1f")
}' "$RESULTS"
