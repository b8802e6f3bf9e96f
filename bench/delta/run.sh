#!/usr/bin/env bash
# Delta bench: a zsync-style download of the new version of an image when the old version is at hand.
# The reference client `zsync` against `meterwise get --zsync`, both from nginx on 127.0.0.1 (a port of its
# own; nginx with its own prefix and config in a temp dir, stopped at exit) over plain HTTP; and meterwise
# alone over HTTPS (zsync 0.6.2 has no https): a second port of the same nginx, same root, TLS with a
# certificate from a CA made for the run (bench_tls_ca in bench/lib.sh).
#
# The data (bench/delta/make_versions.py, cached between runs in DELTA_WORK/<bytes>-seed<SEED>/): old.img,
# SIZE random bytes from a seeded PRNG; new.img, the same with 5 % of its 4096-byte blocks changed in runs of
# 1-8 blocks, 5 insertions and 3 deletions of 1-5000 bytes that shift what follows; new.img.zsync from
# `zsyncmake -b 4096 -u new.img` (uncompressed, served next to new.img). Rows, each on a fresh copy of old.img:
#   zsync               zsync -i seed.img -o out.img http://.../new.img.zsync
#   meterwise --seed    meterwise get http://.../new.img -o out.img --zsync --seed seed.img
#   meterwise in place  the old version already at -o: meterwise get http://.../new.img -o out.img --zsync
#   ... (https)         the two meterwise rows above with https://127.0.0.1:TLS_PORT/new.img and --cacert
#                       CA.pem (HTTPS=1); their bytes and ratios are against zsync's HTTP row
#   ... killed + re-run the --seed row (and zsync's) killed with SIGKILL once the server has sent KILL_AT of
#                       the uninterrupted run's bytes (or at KILL_TIME of its wall time, if that comes
#                       first), then run again to the end: the bytes of both runs against the uninterrupted
#                       one (the re-run should not fetch again what the first run had).
# Wall time, CPU (user + sys) and peak RSS from bench/download/measure.py; bytes fetched are what nginx sent
# ($bytes_sent, headers included) for the requests the run made: its access log's lines before and after.
# Over HTTPS that is what nginx handed to TLS: the records' framing and the handshakes are not in it.
# Every output's sha256 is checked. A meterwise without `get --zsync` gives a row saying so, not a failure.
# Usage: bash bench/delta/run.sh   Env: SIZE (1GiB; e.g. 64MiB), SEED (1), DELTA_WORK (/tmp/mw-delta-data),
#        TOOLS ("zsync meterwise"), KILL (1: the kill rows), HTTPS (1: meterwise's HTTPS rows), KILL_AT
#        (0.5), KILL_TIME (0.9), BIN (default: the release build, built only when TOOLS has meterwise),
#        MW_OPTS (more options for every `meterwise get`, word-split), KEEP (1: keep the run's directory:
#        nginx's access log, each client's output; not the images).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/bench/delta"
SIZE=${SIZE:-1GiB}
SEED=${SEED:-1}
DELTA_WORK=${DELTA_WORK:-/tmp/mw-delta-data}
TOOLS=${TOOLS:-zsync meterwise}
KILL=${KILL:-1}
HTTPS=${HTTPS:-1}
KILL_AT=${KILL_AT:-0.5}
KILL_TIME=${KILL_TIME:-0.9}
MW_OPTS=${MW_OPTS:-}
MEASURE="$ROOT/bench/download/measure.py"
# Both clients read http_proxy; this bench talks to 127.0.0.1 only.
unset http_proxy https_proxy all_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY

need() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
missing=""
for pair in zsync:zsync zsyncmake:zsync nginx:nginx-light python3:python3-minimal ss:iproute2 openssl:openssl; do
    need "${pair%%:*}" || missing="$missing ${pair#*:}"
done
if [ -n "$missing" ] && [ "$(id -u)" = 0 ]; then
    apt-get update -qq >/dev/null
    # shellcheck disable=SC2086
    apt-get install -y -qq $missing >/dev/null
fi
for tool in zsync zsyncmake nginx python3 ss openssl; do
    need "$tool" || { echo "bench/delta: $tool is missing (apt-get install zsync nginx-light python3-minimal iproute2 openssl)" >&2; exit 1; }
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
MW=""
if [[ " $TOOLS " == *" meterwise "* ]]; then
    bench_binary "$ROOT"
    MW=$BIN
fi

# 64MiB, 1GiB, 512K, 1048576 -> bytes
size_bytes() {
    local number=${1%%[!0-9]*} unit=${1#"${1%%[!0-9]*}"}
    case $unit in
    "" | B) echo "$number" ;;
    K | KiB) echo $((number << 10)) ;;
    M | MiB) echo $((number << 20)) ;;
    G | GiB) echo $((number << 30)) ;;
    *) echo "bench/delta: SIZE=$1: use bytes or a KiB/MiB/GiB suffix" >&2; return 1 ;;
    esac
}
BYTES=$(size_bytes "$SIZE")
DATA="$DELTA_WORK/$BYTES-seed$SEED"
mkdir -p "$DATA"
chmod 755 "$DELTA_WORK" "$DATA" # nginx workers run as nobody
python3 "$HERE/make_versions.py" --size "$BYTES" --seed "$SEED" --dir "$DATA" >/dev/null
manifest() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$DATA/manifest.json" "$1"; }
NEW_SHA=$(manifest new_sha256)
NEW_SIZE=$(manifest new_size)
CHANGED_BLOCKS=$(manifest changed_blocks)
CHANGED_RUNS=$(manifest changed_runs)
if [ ! -s "$DATA/new.img.zsync" ] || [ "$DATA/manifest.json" -nt "$DATA/new.img.zsync" ]; then
    echo "zsyncmake -b 4096 on new.img ..." >&2
    start=$(date +%s.%N)
    (cd "$DATA" && zsyncmake -b 4096 -o new.img.zsync.tmp -u new.img new.img && mv new.img.zsync.tmp new.img.zsync)
    echo "  zsyncmake took $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s" >&2
fi
chmod 644 "$DATA"/*.img "$DATA"/*.zsync

WORK=$(mktemp -d "$DELTA_WORK/run.XXXXXX")
cleanup() {
    if [ -f "$WORK/nginx.pid" ]; then kill "$(cat "$WORK/nginx.pid")" 2>/dev/null || true; fi
    if [ "${KEEP:-0}" = 1 ]; then
        rm -rf "$WORK/out"
        echo "bench/delta: kept $WORK (access log, clients' output)" >&2
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
mkdir -p "$WORK/logs" "$WORK/tmp" "$WORK/out"

PORT=$(bench_free_port)
TLS_PORT=$(bench_free_port)
LOG="$WORK/logs/access.log"
# One line per request, tab-separated (bench/delta/serverlog.py reads it); the log is written as each
# request ends, so the lines of a run are those added while it ran.
# shellcheck disable=SC2016
FORMAT='$msec\t$remote_port\t$connection\t$connection_requests\t$status\t$bytes_sent\t$body_bytes_sent\t$request_length\t"$request"\t"$http_range"\t"$sent_http_content_type"'
# The HTTPS server logs to the same file (rows run one at a time) and, per request, its TLS to tls.log.
bench_tls_ca "$WORK"
bench_nginx_conf "$WORK" "log_format delta '$FORMAT';" "log_format tls '\$ssl_protocol \$ssl_cipher';" \
    "ssl_certificate $WORK/server.pem;" "ssl_certificate_key $WORK/server.key;" \
    "server { listen 127.0.0.1:$PORT; root $DATA; access_log $LOG delta; }" \
    "server { listen 127.0.0.1:$TLS_PORT ssl; root $DATA; access_log $LOG delta; access_log $WORK/logs/tls.log tls; }" \
    >"$WORK/nginx.conf"
"$NGINX" -p "$WORK" -c "$WORK/nginx.conf"
for _ in $(seq 50); do [ -s "$WORK/nginx.pid" ] && [ -f "$LOG" ] && break; sleep 0.1; done
URL="http://127.0.0.1:$PORT/new.img"
TLS_URL="https://127.0.0.1:$TLS_PORT/new.img"
CA="$WORK/ca.pem"
# Not measured: both versions into the page cache (nginx reads new.img, every row copies old.img).
cat "$DATA/new.img" "$DATA/old.img" >/dev/null

lines() { python3 "$HERE/serverlog.py" lines "$LOG"; }
sent() { python3 "$HERE/serverlog.py" sum "$LOG" "$1" "$2"; }
# Until nginx has no connection from the client left (so it has logged every request of the run).
wait_idle() {
    for _ in $(seq 200); do
        [ -z "$(ss -tnH state established "( sport = :$PORT or sport = :$TLS_PORT )")" ] && break
        sleep 0.05
    done
    sleep 0.1
}

RESULTS="$WORK/results.tsv" # row, wall, cpu, rss KiB, bytes sent, sha256 ok, log lines from, to, note
: >"$RESULTS"
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS"; }

# A fresh directory holding a copy of old.img named $1.
fresh() {
    rm -rf "$WORK/out"
    mkdir -p "$WORK/out"
    cp "$DATA/old.img" "$WORK/out/$1"
    sync
}

# The command of a row, run in $WORK/out: zsync, meterwise-seed, meterwise-inplace, and the last two with
# -https (over TLS, trusting the run's CA only).
command_of() {
    local -a opts
    read -r -a opts <<<"$MW_OPTS"
    case $1 in
    zsync) cmd=(zsync -i seed.img -o out.img "$URL.zsync") ;;
    meterwise-seed) cmd=("$MW" get "$URL" -o out.img --zsync --seed seed.img "${opts[@]}") ;;
    meterwise-inplace) cmd=("$MW" get "$URL" -o out.img --zsync "${opts[@]}") ;;
    meterwise-seed-https) cmd=("$MW" get "$TLS_URL" -o out.img --zsync --seed seed.img --cacert "$CA" "${opts[@]}") ;;
    meterwise-inplace-https) cmd=("$MW" get "$TLS_URL" -o out.img --zsync --cacert "$CA" "${opts[@]}") ;;
    esac
}

# A log's last line, its progress redraws and tabs taken out.
last_line() { tr '\r\t' '\n ' <"$1" | awk 'NF { last = $0 } END { print substr(last, 1, 200) }'; }

sha_ok() {
    if [ -f "$WORK/out/out.img" ] && [ "$(sha256sum "$WORK/out/out.img" | cut -d' ' -f1)" = "$NEW_SHA" ]; then echo yes; else echo "**no**"; fi
}

# measured NAME: one uninterrupted run on a fresh copy; sets wall cpu rss bytes code.
measured() {
    local name=$1 seed=seed.img from to
    [[ $name == meterwise-inplace* ]] && seed=out.img
    fresh "$seed"
    command_of "$name"
    from=$(lines)
    (cd "$WORK/out" && python3 "$MEASURE" "$WORK/measure" -- "${cmd[@]}") || true
    wait_idle
    to=$(lines)
    read -r wall cpu rss _ code <"$WORK/measure"
    bytes=$(sent "$from" "$to")
    cp "$WORK/measure.log" "$WORK/$name.log"
    local ok note=""
    ok=$(sha_ok)
    [ "$code" = 0 ] || note="exit $code: $(last_line "$WORK/measure.log")"
    row "$name" "$wall" "$cpu" "$rss" "$bytes" "$ok" "$from" "$to" "$note"
    echo "  $name: ${wall}s cpu ${cpu}s rss ${rss} KiB, server sent $bytes bytes, sha256 ok: $ok $note" >&2
}

# killed NAME: the run killed once the server sent KILL_AT of the uninterrupted run's bytes, then again.
killed() {
    local name=$1 full_bytes full_wall from mid to w1 c1 r1 at trigger code1 b1 b2 ok note
    full_bytes=$(awk -F'\t' -v n="$name" '$1 == n { print $5 }' "$RESULTS")
    full_wall=$(awk -F'\t' -v n="$name" '$1 == n { print $2 }' "$RESULTS")
    if awk -F'\t' -v n="$name" '$1 == n && $9 ~ /^exit/ { found = 1 } END { exit !found }' "$RESULTS"; then
        row "$name-killed" - - - - - - - "not run: the uninterrupted run failed"
        return
    fi
    fresh seed.img
    command_of "$name"
    from=$(lines)
    (cd "$WORK/out" && python3 "$HERE/killrun.py" "$WORK/kill" "$LOG" "$PORT" \
        "$(awk -v b="$full_bytes" -v f="$KILL_AT" 'BEGIN { printf "%d", b * f }')" \
        "$(awk -v w="$full_wall" -v f="$KILL_TIME" 'BEGIN { printf "%.3f", w * f }')" -- "${cmd[@]}")
    read -r w1 c1 r1 at trigger code1 <"$WORK/kill"
    mid=$(lines)
    (cd "$WORK/out" && python3 "$MEASURE" "$WORK/measure" -- "${cmd[@]}") || true
    wait_idle
    to=$(lines)
    read -r wall cpu rss _ code <"$WORK/measure"
    b1=$(sent "$from" "$mid")
    b2=$(sent "$mid" "$to")
    cp "$WORK/kill.log" "$WORK/$name-killed.log"
    cp "$WORK/measure.log" "$WORK/$name-rerun.log"
    ok=$(sha_ok)
    note="killed ($trigger, exit $code1) after ${w1}s, the server had sent $b1 B; the re-run fetched $b2 B"
    [ "$code" = 0 ] || note="$note; re-run exit $code: $(last_line "$WORK/measure.log")"
    row "$name-killed" "$(awk -v a="$w1" -v b="$wall" 'BEGIN { print a + b }')" \
        "$(awk -v a="$c1" -v b="$cpu" 'BEGIN { print a + b }')" "$((r1 > rss ? r1 : rss))" \
        "$((b1 + b2))" "$ok" "$from" "$to" "$note"
    echo "  $name killed + re-run: $b1 + $b2 bytes (uninterrupted: $full_bytes), sha256 ok: $ok" >&2
}

MW_ZSYNC=0
# Not `... | grep -q`: grep leaving at the first match would make pipefail see meterwise's SIGPIPE.
if [ -n "$MW" ] && grep -q -- --zsync <<<"$("$MW" get --help 2>&1 || true)"; then MW_ZSYNC=1; fi
for tool in $TOOLS; do
    case $tool in
    zsync)
        echo "zsync ..." >&2
        measured zsync
        if [ "$KILL" = 1 ]; then killed zsync; fi
        ;;
    meterwise)
        if [ "$MW_ZSYNC" = 0 ]; then
            echo "meterwise: not built with --zsync yet" >&2
            for name in meterwise-seed meterwise-inplace meterwise-seed-killed meterwise-seed-https meterwise-inplace-https; do
                [ "$KILL" = 1 ] || [ "$name" != meterwise-seed-killed ] || continue
                [ "$HTTPS" = 1 ] || [[ $name != *-https ]] || continue
                row "$name" - - - - - - - "meterwise: not built with --zsync yet"
            done
            continue
        fi
        echo "meterwise ..." >&2
        measured meterwise-seed
        measured meterwise-inplace
        if [ "$KILL" = 1 ]; then killed meterwise-seed; fi
        if [ "$HTTPS" = 1 ]; then
            echo "meterwise over HTTPS ..." >&2
            measured meterwise-seed-https
            measured meterwise-inplace-https
        fi
        ;;
    *) echo "bench/delta: unknown tool $tool (zsync, meterwise)" >&2; exit 1 ;;
    esac
done

echo
echo "$((BYTES >> 20)) MiB old.img -> new.img ($NEW_SIZE bytes; $CHANGED_BLOCKS of $(((BYTES + 4095) / 4096)) 4 KiB blocks changed in $CHANGED_RUNS runs, $(manifest inserted_bytes | tr -d ' ') bytes inserted, $(manifest deleted_bytes | tr -d ' ') deleted; seed $SEED)"
# What the HTTPS rows negotiated (nginx's $ssl_protocol $ssl_cipher, per request).
TLS_USED=""
[ -s "$WORK/logs/tls.log" ] && TLS_USED=" (HTTPS: $(sort -u "$WORK/logs/tls.log" | paste -sd, | sed 's/,/, /g'))"
echo "new.img.zsync $(stat -c %s "$DATA/new.img.zsync") bytes (-b 4096); nginx $("$NGINX" -v 2>&1 | sed 's|.*nginx/||') on 127.0.0.1$TLS_USED, $(nproc) cores, $(uname -r)${MW:+; $(basename "$MW") $(stat -c %s "$MW") bytes}"
echo
awk -F'\t' -v size="$NEW_SIZE" -v control="$(stat -c %s "$DATA/new.img.zsync")" '
BEGIN {
    label["zsync"] = "zsync -i"; label["zsync-killed"] = "zsync -i, killed + re-run"
    label["meterwise-seed"] = "meterwise --zsync --seed"; label["meterwise-inplace"] = "meterwise --zsync, old at -o"
    label["meterwise-seed-killed"] = "meterwise --zsync --seed, killed + re-run"
    label["meterwise-seed-https"] = "meterwise --zsync --seed (https)"; label["meterwise-inplace-https"] = "meterwise --zsync, old at -o (https)"
}
{ n[++count] = $1; wall[$1] = $2; cpu[$1] = $3; rss[$1] = $4; bytes[$1] = $5; ok[$1] = $6; note[$1] = $9 }
END {
    printf "| tool | wall s | CPU s | peak RSS MiB | bytes fetched (server-sent, MiB) | × zsync'"'"'s bytes | %% of file | sha256 ok |\n"
    printf "|---|---|---|---|---|---|---|---|\n"
    for (i = 1; i <= count; i++) {
        k = n[i]
        if (wall[k] == "-") { printf "| %s | %s | | | | | | |\n", label[k], note[k]; continue }
        x = (bytes["zsync"] > 0) ? sprintf("%.3f", bytes[k] / bytes["zsync"]) : ""
        printf "| %s | %.2f | %.2f | %.1f | %.2f | %s | %.2f | %s |\n", label[k], wall[k], cpu[k], rss[k] / 1024, bytes[k] / 1048576, x, 100 * bytes[k] / size, ok[k]
    }
    print ""
    for (i = 1; i <= count; i++) {
        k = n[i]
        if (wall[k] == "-") continue
        if (k ~ /-killed$/) {
            base = substr(k, 1, length(k) - 7)
            printf "- %s: %s; both runs %.0f B against %.0f B uninterrupted: %+.0f B (%+.2f MiB; new.img.zsync is %d B)\n", label[k], note[k], bytes[k], bytes[base], bytes[k] - bytes[base], (bytes[k] - bytes[base]) / 1048576, control
        } else if (note[k] != "") printf "- %s: %s\n", label[k], note[k]
        if (k ~ /^meterwise/ && k !~ /-killed$/ && note[k] !~ /^exit/ && wall["zsync"] > 0)
            printf "- %s vs zsync%s: wall %.2f×, CPU %.2f×, bytes %.3f×\n", label[k], (k ~ /-https$/) ? "'"'"'s HTTP run" : "", wall[k] / wall["zsync"], cpu[k] / cpu["zsync"], bytes[k] / bytes["zsync"]
    }
}' "$RESULTS"

# What zsync said, and how each client asked for the bytes (from the access log).
if [ -f "$WORK/zsync.log" ]; then
    echo
    # Its progress bars (redrawn with \r) left out.
    echo "zsync printed: $(tr '\r' '\n' <"$WORK/zsync.log" | grep -Ev '^ *$|^[-#]|\*\*\*|kBps' | sed 's/ *$//' | paste -sd'|' | sed 's/|/ | /g')"
fi
for name in meterwise-seed meterwise-inplace meterwise-seed-https meterwise-inplace-https; do
    if [ -f "$WORK/$name.log" ]; then
        echo "$name printed: $(tr '\r' '\n' <"$WORK/$name.log" | grep -E 'Scanned|Resuming|to fetch|Done' | paste -sd'|' | sed 's/|/ | /g')"
    fi
done
echo
echo "| run | requests | connections | ranges | ranges per request, median / max | median range B | bytes in the ranges | multipart/byteranges responses (parts) | multipart overhead per part B | response headers per request B | statuses |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
while IFS=$'\t' read -r name wall _ _ _ _ from to _; do
    [ "$wall" = - ] && continue
    # shellcheck disable=SC2046
    declare $(python3 "$HERE/serverlog.py" stats "$LOG" "$from" "$to" "$NEW_SIZE")
    # shellcheck disable=SC2154
    echo "| $name | $requests | $connections | $ranges | $ranges_per_request_median / $ranges_per_request_max | $range_bytes_median | $range_bytes | $multipart_responses ($multipart_parts) | $multipart_overhead_per_part | $response_header_bytes_per_request | $statuses |"
done <"$RESULTS"
