#!/usr/bin/env bash
# Download bench: meterwise get (1 segment and auto) vs curl -o vs aria2c -x4, a random file served by
# nginx on 127.0.0.1, written to tmpfs (/dev/shm) and to disk. Prints median wall time, ratio to curl,
# CPU (user+sys), and peak RSS. Usage: bench/download/run.sh   (SIZE_MIB=1024 RUNS=3 by default;
# BIN=path skips the release build)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SIZE_MIB=${SIZE_MIB:-1024}
RUNS=${RUNS:-3}
SCRATCH=${SCRATCH:-$ROOT/.build-release}
DISK_DIR=${DISK_DIR:-$ROOT/.build-release/bench-disk}
TMPFS_DIR=${TMPFS_DIR:-/dev/shm/meterwise-bench}
WORK=$(mktemp -d /dev/shm/meterwise-bench-src.XXXXXX)
OUT=${OUT:-$ROOT/bench/out}

need() { command -v "$1" >/dev/null 2>&1; }
if [ ! -x /usr/bin/time ]; then apt-get install -y time >/dev/null; fi
for tool in curl aria2c nginx; do
    if ! need "$tool" && [ ! -x "/usr/sbin/$tool" ]; then
        echo "bench: $tool is missing (apt-get install curl aria2 nginx-light)" >&2
        exit 1
    fi
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

if [ -z "${BIN:-}" ]; then
    echo "building the release binary (static stdlib) into $SCRATCH ..." >&2
    swift build -c release --static-swift-stdlib --scratch-path "$SCRATCH" --product meterwise >&2
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

run_one() { # target dir tool
    local target=$1 dir=$2 tool=$3 out="$2/out.bin"
    local cmd
    case $tool in
    curl) cmd=(curl -s -o "$out" "$URL") ;;
    meterwise-1) cmd=("$BIN" get "$URL" -o "$out" --segments 1 --force) ;;
    meterwise-auto) cmd=("$BIN" get "$URL" -o "$out" --force) ;;
    aria2c-x4) cmd=(aria2c -q -x4 -s4 --file-allocation=none --allow-overwrite=true --auto-file-renaming=false
        -d "$dir" -o out.bin "$URL") ;;
    esac
    for run in $(seq 1 "$RUNS"); do
        rm -f "$out" "$out.part" "$out.part.checkpoint"
        sync
        /usr/bin/time -f "%e %U %S %M" -o "$WORK/time" "${cmd[@]}" >/dev/null 2>"$WORK/stderr" || {
            echo "bench: $tool failed: $(cat "$WORK/stderr")" >&2
            exit 1
        }
        read -r wall user sys rss <"$WORK/time"
        if [ "$run" = 1 ]; then
            got=$(sha256sum "$out" | cut -d' ' -f1)
            [ "$got" = "$SHA" ] || { echo "bench: $tool wrote a wrong file ($got)" >&2; exit 1; }
        fi
        printf '%s\t%s\t%s\t%s\t%s\n' "$target" "$tool" "$wall" "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" "$rss" >>"$RESULTS"
        echo "  $target $tool run $run: ${wall}s" >&2
    done
    rm -f "$out"
}

for target in tmpfs disk; do
    dir=$TMPFS_DIR
    [ "$target" = disk ] && dir=$DISK_DIR
    for tool in curl meterwise-1 meterwise-auto aria2c-x4; do
        run_one "$target" "$dir" "$tool"
    done
done

echo
echo "${SIZE_MIB} MiB from nginx on 127.0.0.1, median of $RUNS runs ($(nproc) cores, $(uname -r))"
awk -F'\t' '
function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ key = $1 "|" $2; wall[key] = wall[key] " " $3; cpu[key] = cpu[key] " " $4; rss[key] = rss[key] " " $5
  if (!(key in seen)) { order[++count] = key; seen[key] = 1 } }
END {
    printf "| target | tool | wall s | wall / curl | CPU s | CPU / curl | peak RSS MiB |\n"
    printf "|---|---|---|---|---|---|---|\n"
    for (i = 1; i <= count; i++) {
        split(order[i], k, "|")
        w = median(wall[order[i]]); c = median(cpu[order[i]]); r = median(rss[order[i]]) / 1024
        cw = median(wall[k[1] "|curl"]); cc = median(cpu[k[1] "|curl"])
        printf "| %s | %s | %.2f | %.2f | %.2f | %.2f | %.1f |\n", k[1], k[2], w, w / cw, c, (cc > 0 ? c / cc : 0), r
    }
}' "$RESULTS"
