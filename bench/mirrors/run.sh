#!/usr/bin/env bash
# Mirrors bench: one file from three mirrors at once, `meterwise get` (several URLs, or --metalink FILE.meta4)
# against aria2c reading the same .meta4, side by side in the same run.
#
# Three nginx "mirrors" (A, B, C: one nginx each, its own prefix, config, pid file and access log in a temp
# dir on /dev/shm, stopped at exit) serve a SIZE_MIB random file on 127.0.0.1. Each mirror is limited to
# RATE_MIB MiB/s in total, however many connections a client opens: as root, everything (nginx, the clients,
# the helpers) runs in a network namespace made for the run (mwbench-PID, deleted at exit) whose `lo` has an
# htb qdisc with one class per mirror port (`rate RATE_MIB*8 mibit`, filter `u32 match ip sport PORT`: what
# nginx sends leaves with its port as the source); other traffic (requests, ACKs) is not shaped. Without
# root, netns or tc it falls back to nginx's `limit_rate RATE_MIBm`, which is per connection (said in the
# output: a client opening more connections gets more). A check first times two curl connections to mirror
# A (CALIBRATE=1).
# The .meta4 (bench/mirrors/make_meta4.py; Metalink v4, RFC 5854): the file's name, size, sha-256, a sha-256
# per 1 MiB piece and the three URLs, priority 1 each.
#
# Scenarios (SCENARIOS picks them), each with meterwise and `aria2c -M -x3 -s3 --min-split-size=1M` (aria2c's
# best for three mirrors), and aria2c with its defaults in the scenarios ARIA_DEFAULTS_IN lists (speed: its
# defaults open one connection to one mirror, 32 s per row at 128 MiB; all six scenarios with it take ~8 min):
#   speed    all three mirrors at RATE_MIB: ideal SIZE / (3 x RATE) (10.7 s for 128 MiB at 4 MiB/s).
#            Rows: `meterwise get A B C -o OUT`, `meterwise get --metalink big.meta4 -o OUT`, `aria2c -M`
#            with its defaults (which here open one connection, to one of the mirrors) and `aria2c -x3 -s3
#            --min-split-size=1M` (its best for three mirrors).
#   kill     mirror B's nginx (master and workers) SIGKILLed once KILL_AT of the file has arrived (counted
#            from what left the mirrors' ports: the htb classes' bytes, or nginx's log + tcp_info); polled
#            every 100 ms after: "switch within" = from the kill to the first 0.5 s in which the two others
#            deliver >= 0.9 x 2/3 of the rate before the kill; the longest stall after it (< 1/10 of that).
#            B is started again after each row.
#   corrupt  mirror CORRUPT_MIRROR (A: the first URL, whose share a split in URL order starts with) serves
#            a copy with 1 MiB (one piece) at CORRUPT_AT_MIB changed: bytes fetched from all mirrors against
#            the file + one piece, sha256, and which mirrors sent the bad piece's range (their access logs:
#            each response's Range start + body bytes). A row that never fetched the range from the corrupt
#            mirror tested nothing: it is run again (up to CORRUPT_TRIES runs in all) with the bad piece moved
#            into the middle of the longest range that mirror did send; if still untested, it says so.
#   slow     two rows per tool: A and B only (a .meta4 with two URLs), then A, B and C with C at SLOW_KIB
#            KiB/s: the second's wall time against the first's (goal: within 10 %).
#   https    speed over TLS: each mirror's nginx also listens on a second port with `ssl` (same root, same
#            access log, the same htb class: the RATE_MIB is the mirror's, whichever port), a certificate for
#            127.0.0.1 (subjectAltName IP) from a CA made for the run (bench_tls_ca in bench/lib.sh, in
#            WORK/tls), and https.meta4 with the three https URLs. Rows: `meterwise get --cacert CA A B C -o
#            OUT`, `meterwise get --cacert CA --metalink https.meta4 -o OUT` and `aria2c -M https.meta4
#            --ca-certificate=CA -x3 -s3 --min-split-size=1M` (its defaults too if ARIA_DEFAULTS_IN has https).
#            Sent / bodies are what nginx handed to TLS; delivered (htb) includes the TLS records' framing and
#            the handshakes. Needs openssl (without it the scenario is left out, said so).
#   hostile  meterwise and aria2c on hostile .meta4 files (1 PiB in 1 KiB pieces = 2^40 pieces; 1 TiB in
#            1 KiB pieces = 2^30; <size>99999999999999999999</size>; bad hex in one piece hash; a billion
#            laughs); their URLs point at a closed port. Exit code, time, peak RSS, stderr's first line.
#            Killed after HOSTILE_TIMEOUT s or once its RSS passes MEMCAP_MIB.
# Every other row is killed after 3x its ideal time (at least 35 s: aria2c's defaults take 32 s for 128 MiB)
# and shows as failed. Per row: wall, CPU (user + sys from wait4), peak RSS (VmHWM sampled every 10 ms), bytes
# each mirror sent (nginx's $bytes_sent, headers included, from its access log; a killed mirror's counted up
# to the kill, tcp_info included), the bodies nginx sent and the bytes the htb classes delivered against the
# file, sha256. bench/mirrors/drive.py runs and measures each command; bench/mirrors/report.py prints the
# tables and the goals. The report is also appended to OUT/mirrors.md, the rows written to
# OUT/mirrors-results.jsonl.
# Usage: BIN=/path/to/meterwise bash bench/mirrors/run.sh   (root for the namespace; without BIN the release
#        build is built). Env: SIZE_MIB (128), RATE_MIB (4), KILL_AT (0.5), CORRUPT_AT_MIB (40),
#        CORRUPT_MIRROR (A), CORRUPT_TRIES (3), SLOW_KIB (100), SCENARIOS ("speed kill corrupt slow https
#        hostile"), ARIA_DEFAULTS_IN ("speed"; "speed kill corrupt slow https" for all), SHAPING (tc; nginx:
#        limit_rate per connection), CALIBRATE (1), HOSTILE_TIMEOUT (5), MEMCAP_MIB (2048), MW_OPTS (more
#        options for every `meterwise get`, word-split), OUT (bench/out), KEEP (1: keep the run's directory:
#        logs, each row's output; not the data).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/bench/mirrors"
SIZE_MIB=${SIZE_MIB:-128}
RATE_MIB=${RATE_MIB:-4}
KILL_AT=${KILL_AT:-0.5}
CORRUPT_AT_MIB=${CORRUPT_AT_MIB:-40}
CORRUPT_MIRROR=${CORRUPT_MIRROR:-A}
CORRUPT_TRIES=${CORRUPT_TRIES:-3}
SLOW_KIB=${SLOW_KIB:-100}
SCENARIOS=${SCENARIOS:-speed kill corrupt slow https hostile}
ARIA_DEFAULTS_IN=${ARIA_DEFAULTS_IN:-speed}
SHAPING=${SHAPING:-tc}
CALIBRATE=${CALIBRATE:-1}
HOSTILE_TIMEOUT=${HOSTILE_TIMEOUT:-5}
MEMCAP_MIB=${MEMCAP_MIB:-2048}
MW_OPTS=${MW_OPTS:-}
OUT=${OUT:-$ROOT/bench/out}
PIECE=1048576
# Both clients read http_proxy; this bench talks to 127.0.0.1 only.
unset http_proxy https_proxy all_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY no_proxy NO_PROXY

need() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
for pair in nginx:nginx-light aria2c:aria2 python3:python3-minimal ss:iproute2 curl:curl sha256sum:coreutils; do
    if ! need "${pair%%:*}"; then
        echo "bench/mirrors skipped: ${pair%%:*} is missing (apt-get install ${pair#*:})"
        exit 0
    fi
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# The outer run: the binary, then the namespace, and this script again inside it.
if [ -z "${MWBENCH_INSIDE:-}" ]; then
    bench_binary "$ROOT"
    export BIN
    if [ "$SHAPING" = tc ]; then
        why=""
        if [ "$(id -u)" != 0 ]; then why="not root"
        elif ! need ip || ! need tc; then why="ip or tc is missing (iproute2)"
        fi
        NS="mwbench-$$"
        if [ -z "$why" ]; then
            if ! ip netns add "$NS" 2>/dev/null; then
                why="could not make a network namespace"
            elif ! ip -n "$NS" link set lo up 2>/dev/null || ! tc -n "$NS" qdisc add dev lo root handle 1: htb 2>/dev/null; then
                why="could not put an htb qdisc on a network namespace's lo"
                ip netns del "$NS" 2>/dev/null || true
            fi
        fi
        if [ -z "$why" ]; then
            # The run's directory is made here, so that this side can remove it whatever happens inside.
            WORK=$(mktemp -d /dev/shm/mwbench-mirrors.XXXXXX)
            inner=""
            outer_cleanup() {
                trap '' INT TERM HUP
                # A signal: everything in the namespace is this run's (the inner script, drive.py, the client
                # measured, nginx); TERM first so the inner script stops its nginx and cleans up, then KILL.
                if [ -n "$inner" ] && kill -0 "$inner" 2>/dev/null; then
                    ip netns pids "$NS" 2>/dev/null | xargs -r kill -TERM 2>/dev/null || true
                    for _ in $(seq 50); do kill -0 "$inner" 2>/dev/null || break; sleep 0.1; done
                fi
                ip netns pids "$NS" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
                ip netns del "$NS" 2>/dev/null || true
                if [ "${KEEP:-0}" != 1 ]; then rm -rf "$WORK"; fi
            }
            trap outer_cleanup EXIT
            trap 'exit 143' TERM
            trap 'exit 130' INT
            trap 'exit 129' HUP
            MWBENCH_INSIDE=1 MWBENCH_WORK=$WORK SHAPING=tc ip netns exec "$NS" bash "$0" "$@" &
            inner=$!
            code=0
            wait "$inner" || code=$?
            exit "$code"
        fi
        echo "bench/mirrors: $why: falling back to nginx's limit_rate, which is per connection" >&2
        SHAPING_NOTE="nginx limit_rate ${RATE_MIB}m per connection ($why): not an aggregate limit"
        SHAPING=nginx
    fi
fi
SHAPING_NOTE=${SHAPING_NOTE:-}
if [ "$SHAPING" = tc ]; then
    SHAPING_NOTE="htb on lo of network namespace $(ip netns identify 2>/dev/null || echo '?'): ${RATE_MIB} MiB/s per mirror in total"
elif [ -z "$SHAPING_NOTE" ]; then
    SHAPING_NOTE="nginx limit_rate ${RATE_MIB}m per connection (SHAPING=nginx): not an aggregate limit"
fi

WORK=${MWBENCH_WORK:-$(mktemp -d /dev/shm/mwbench-mirrors.XXXXXX)}
chmod 755 "$WORK" # nginx workers run as nobody
cleanup() {
    local m
    trap '' INT TERM HUP
    for m in A B C; do
        pid=$(cat "$WORK/$m/nginx.pid" 2>/dev/null || true)
        if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
    done
    if [ "${KEEP:-0}" = 1 ]; then
        rm -f "$WORK"/data/* "$WORK"/*/www/big.bin
        echo "bench/mirrors: kept $WORK" >&2
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP
mkdir -p "$WORK/data" "$WORK/hostile" "$WORK/rows" "$OUT"

# HTTPS (the https scenario): a second port per mirror with TLS, its certificate from a CA made for this run.
TLS=0
if [[ " $SCENARIOS " == *" https "* ]]; then
    if need openssl; then
        TLS=1
        mkdir -p "$WORK/tls"
        bench_tls_ca "$WORK/tls"
        CA="$WORK/tls/ca.pem"
    else
        echo "bench/mirrors: openssl is missing (apt-get install openssl): the https scenario is left out" >&2
        SCENARIOS=$(echo " $SCENARIOS " | sed 's/ https / /g')
    fi
fi

SIZE=$((SIZE_MIB << 20))
if [ "$CORRUPT_AT_MIB" -ge "$SIZE_MIB" ]; then CORRUPT_AT_MIB=$((SIZE_MIB * 5 / 16)); fi
echo "writing a $SIZE_MIB MiB random file, its .meta4 files and the hostile ones ..." >&2
SHA=$(python3 "$HERE/make_meta4.py" data "$WORK/data/big.bin" "$SIZE")
chmod 644 "$WORK/data/"*

declare -A PORT TPORT
for m in A B C; do PORT[$m]=$(bench_free_port); done
if [ "$TLS" = 1 ]; then for m in A B C; do TPORT[$m]=$(bench_free_port); done; fi
# The ports whose connections a row waits to see closed (drive.py idle): the TLS ones too.
IDLE_PORTS=("${PORT[@]}" "${TPORT[@]}")
CLOSED_PORT=$(bench_free_port) # nothing listens there: the hostile files' URLs
url() { echo "http://127.0.0.1:${PORT[$1]}/big.bin"; }
tls_url() { echo "https://127.0.0.1:${TPORT[$1]}/big.bin"; }
python3 "$HERE/make_meta4.py" meta4 "$WORK/data/big.bin" "$WORK/big.meta4" "$PIECE" "$(url A)" "$(url B)" "$(url C)"
python3 "$HERE/make_meta4.py" meta4 "$WORK/data/big.bin" "$WORK/two.meta4" "$PIECE" "$(url A)" "$(url B)"
if [ "$TLS" = 1 ]; then
    python3 "$HERE/make_meta4.py" meta4 "$WORK/data/big.bin" "$WORK/https.meta4" "$PIECE" "$(tls_url A)" "$(tls_url B)" "$(tls_url C)"
fi
python3 "$HERE/make_meta4.py" hostile "$WORK/hostile" "$WORK/data/big.bin" "$PIECE" "http://127.0.0.1:$CLOSED_PORT/big.bin"

# One access log per mirror, the delta bench's format (bench/mirrors/drive.py reads it).
# shellcheck disable=SC2016
FORMAT='$msec\t$remote_port\t$connection\t$connection_requests\t$status\t$bytes_sent\t$body_bytes_sent\t$request_length\t"$request"\t"$http_range"\t"$sent_http_content_type"'
# mirror_conf NAME [RATE]: nginx's config for a mirror (RATE: its limit_rate, in the nginx fallback only). With
# TLS, a second server on TPORT with ssl: the same root and access log, and per request its TLS in tls.log.
mirror_conf() {
    local m=$1 rate=${2:-}
    local -a servers=("server { listen 127.0.0.1:${PORT[$m]}; root $WORK/$m/www; access_log $WORK/$m/logs/access.log delta;${rate:+ limit_rate $rate;} }")
    if [ "$TLS" = 1 ]; then
        servers+=("log_format tls '\$ssl_protocol \$ssl_cipher';" "ssl_certificate $WORK/tls/server.pem;" "ssl_certificate_key $WORK/tls/server.key;"
            "server { listen 127.0.0.1:${TPORT[$m]} ssl; root $WORK/$m/www; access_log $WORK/$m/logs/access.log delta; access_log $WORK/$m/logs/tls.log tls;${rate:+ limit_rate $rate;} }")
    fi
    bench_nginx_conf "$WORK/$m" "log_format delta '$FORMAT';" "${servers[@]}" >"$WORK/$m/nginx.conf"
}
start_mirror() {
    local m=$1
    rm -f "$WORK/$m/nginx.pid"
    "$NGINX" -p "$WORK/$m" -c "$WORK/$m/nginx.conf"
    for _ in $(seq 50); do
        [ -s "$WORK/$m/nginx.pid" ] && [ -n "$(ss -tlnH "( sport = :${PORT[$m]} )")" ] &&
            { [ "$TLS" = 0 ] || [ -n "$(ss -tlnH "( sport = :${TPORT[$m]} )")" ]; } && return 0
        sleep 0.1
    done
    echo "bench/mirrors: mirror $m did not start" >&2
    exit 1
}
mirror_alive() { [ -s "$WORK/$1/nginx.pid" ] && kill -0 "$(cat "$WORK/$1/nginx.pid")" 2>/dev/null; }
# mirror_rate NAME RATE: RATE like 32mibit (tc) / 4m (nginx).
set_rate() {
    local m=$1 mibit=$2 nginx_rate=$3
    if [ "$SHAPING" = tc ]; then
        tc class change dev lo parent 1: classid "1:$(printf %x "${PORT[$m]}")" htb rate "$mibit" ceil "$mibit" quantum 60000
    else
        mirror_conf "$m" "$nginx_rate"
        "$NGINX" -p "$WORK/$m" -c "$WORK/$m/nginx.conf" -s reload
        sleep 0.5
    fi
}
FULL_TC="$((RATE_MIB * 8))mibit"
SLOW_TC="$((SLOW_KIB * 8))kibit"
for m in A B C; do
    mkdir -p "$WORK/$m/logs" "$WORK/$m/tmp" "$WORK/$m/www"
    chmod 755 "$WORK/$m" "$WORK/$m/www"
    ln "$WORK/data/big.bin" "$WORK/$m/www/big.bin"
    : >"$WORK/$m/logs/access.log"
    if [ "$SHAPING" = tc ]; then
        mirror_conf "$m"
        minor=$(printf %x "${PORT[$m]}")
        tc class add dev lo parent 1: classid "1:$minor" htb rate "$FULL_TC" ceil "$FULL_TC" quantum 60000
        # The TLS port (if any) into the same class: the mirror's rate is its total over both ports.
        for port in "${PORT[$m]}" ${TPORT[$m]:+"${TPORT[$m]}"}; do
            tc filter add dev lo parent 1: protocol ip prio 1 u32 match ip protocol 6 0xff \
                match ip sport "$port" 0xffff flowid "1:$minor"
        done
    else
        mirror_conf "$m" "${RATE_MIB}m"
    fi
    start_mirror "$m"
done
cat "$WORK/data/big.bin" >/dev/null # into the page cache (tmpfs: already)

CALIBRATION=""
if [ "$CALIBRATE" = 1 ]; then
    # Two connections to mirror A, 8 MiB each: their total rate is the mirror's.
    start=$(date +%s.%N)
    curl -s -o /dev/null -r 0-8388607 "$(url A)" & c1=$!
    curl -s -o /dev/null -r 8388608-16777215 "$(url A)" & c2=$!
    wait "$c1" "$c2"
    CALIBRATION=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", 16 / (b - a) }')
    echo "shaping check: two curl connections to mirror A, 8 MiB each: $CALIBRATION MiB/s in all (limit $RATE_MIB)" >&2
fi

RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
lines() { python3 "$HERE/drive.py" lines "$WORK/$1/logs/access.log"; }

# The command of a tool: mw-urls, mw-meta4 (META4 below), aria2c, aria2c-x3; into $WORK/out/big.bin. With
# SCENARIO https: the https URLs, and each tool trusts the run's CA (meterwise --cacert, aria2c --ca-certificate).
command_of() {
    local tool=$1 meta4=$2 scenario=${3:-}
    local -a opts aria urls tls=() aria_tls=()
    read -r -a opts <<<"$MW_OPTS"
    urls=("$(url A)" "$(url B)" "$(url C)")
    if [ "$scenario" = https ]; then
        urls=("$(tls_url A)" "$(tls_url B)" "$(tls_url C)")
        tls=(--cacert "$CA")
        aria_tls=(--ca-certificate="$CA")
    fi
    aria=(aria2c --no-conf=true --enable-color=false --allow-overwrite=true --auto-file-renaming=false --file-allocation=none
        --summary-interval=0 --show-console-readout=false --console-log-level=error -d "$WORK/out" "${aria_tls[@]}")
    case $tool in
    mw-urls) cmd=("$BIN" get "${tls[@]}" "${urls[@]}" -o "$WORK/out/big.bin" --json "${opts[@]}") ;;
    mw-meta4) cmd=("$BIN" get "${tls[@]}" --metalink "$meta4" -o "$WORK/out/big.bin" --json "${opts[@]}") ;;
    mw-hostile) cmd=("$BIN" get --metalink "$meta4" -o "$WORK/out/big.bin" "${opts[@]}") ;;
    aria2c) cmd=("${aria[@]}" -M "$meta4") ;;
    aria2c-x3) cmd=("${aria[@]}" -x3 -s3 --min-split-size=1M -M "$meta4") ;;
    esac
}

# row SCENARIO TOOL META4 IDEAL [kill]: one run of TOOL, recorded in RESULTS with ROW_FACTS (KEY=VALUE) added.
# Sets ROW_LOG_FROM: the corrupt mirror's access log's line count before the run.
ROW_FACTS=()
ROW_LOG_FROM=0
row() {
    local scenario=$1 tool=$2 meta4=$3 ideal=$4 mode=${5:-} m timeout
    local -A from
    local -a extra=()
    rm -rf "$WORK/out"
    mkdir -p "$WORK/out"
    command_of "$tool" "$meta4" "$scenario"
    for m in A B C; do from[$m]=$(lines "$m"); done
    local wire_from=""
    [ "$SHAPING" = tc ] && wire_from=$(python3 "$HERE/drive.py" tc "${PORT[A]}" "${PORT[B]}" "${PORT[C]}")
    timeout=$(awk -v i="$ideal" 'BEGIN { t = 3 * i; printf "%.0f", (t < 35 ? 35 : t) }')
    if [ "$mode" = kill ]; then
        extra=(--kill B "$WORK/B/nginx.pid" "$(awk -v s="$SIZE" -v f="$KILL_AT" 'BEGIN { printf "%d", s * f }')")
        for m in A B C; do extra+=(--mirror "$m" "${PORT[$m]}" "$WORK/$m/logs/access.log"); done
        [ "$SHAPING" = tc ] && extra+=(--tc)
    fi
    local base="$WORK/rows/$scenario-$tool"
    python3 "$HERE/drive.py" run "$base" "$timeout" 4096 "${extra[@]}" -- "${cmd[@]}"
    python3 "$HERE/drive.py" idle "${IDLE_PORTS[@]}"
    local -a facts=(scenario="$scenario" tool="$tool" ideal="$ideal" size="$SIZE" sha_expected="$SHA"
        output="$WORK/out/big.bin" "${ROW_FACTS[@]}")
    for m in A B C; do
        facts+=("sent_$m=$(python3 "$HERE/drive.py" sent "$WORK/$m/logs/access.log" "${from[$m]}" "$(lines "$m")")")
        if [ "$scenario" = corrupt ]; then
            facts+=("bad_$m=$(python3 "$HERE/drive.py" region "$WORK/$m/logs/access.log" "${from[$m]}" "$(lines "$m")" \
                "$((CORRUPT_AT << 20))" "$(((CORRUPT_AT << 20) + PIECE))")")
        fi
    done
    ROW_LOG_FROM=${from[$CORRUPT_MIRROR]}
    if [ -n "$wire_from" ]; then
        facts+=("wire=$(python3 "$HERE/drive.py" tc "${PORT[A]}" "${PORT[B]}" "${PORT[C]}" | awk -v f="$wire_from" \
            '{ split(f, a, " "); for (i = 1; i <= NF; i++) printf "%s%d", (i > 1 ? " " : ""), $i - a[i] }')")
    fi
    python3 "$HERE/report.py" add "$RESULTS" "$base" "${facts[@]}"
    python3 "$HERE/report.py" line "$RESULTS" >&2
    if [ "$mode" = kill ] && ! mirror_alive B; then start_mirror B; fi
    rm -rf "$WORK/out"
}

# The aria2c rows of a scenario: -x3 always; its defaults where ARIA_DEFAULTS_IN says ("slow": both slow rows).
aria_tools() {
    if [[ " $ARIA_DEFAULTS_IN " == *" $1 "* ]]; then echo aria2c; fi
    echo aria2c-x3
}
IDEAL=$(awk -v s="$SIZE_MIB" -v r="$RATE_MIB" 'BEGIN { printf "%.2f", s / (3 * r) }')
for scenario in $SCENARIOS; do
    case $scenario in
    speed)
        echo "speed: three mirrors at $RATE_MIB MiB/s each (ideal $IDEAL s) ..." >&2
        for tool in mw-urls mw-meta4 $(aria_tools speed); do row speed "$tool" "$WORK/big.meta4" "$IDEAL"; done
        ;;
    https)
        echo "https: three mirrors over TLS at $RATE_MIB MiB/s each (ideal $IDEAL s) ..." >&2
        for tool in mw-urls mw-meta4 $(aria_tools https); do row https "$tool" "$WORK/https.meta4" "$IDEAL"; done
        ;;
    kill)
        ideal=$(awk -v s="$SIZE_MIB" -v r="$RATE_MIB" -v f="$KILL_AT" 'BEGIN { printf "%.2f", s * f / (3 * r) + s * (1 - f) / (2 * r) }')
        echo "kill: mirror B killed once $KILL_AT of the file has arrived (ideal $ideal s) ..." >&2
        for tool in mw-meta4 $(aria_tools kill); do row kill "$tool" "$WORK/big.meta4" "$ideal" kill; done
        ;;
    corrupt)
        echo "corrupt: mirror $CORRUPT_MIRROR serves 1 MiB at $CORRUPT_AT_MIB MiB changed ..." >&2
        corrupt_at() { # MiB: mirror CORRUPT_MIRROR serves a copy with that piece changed
            CORRUPT_AT=$1
            python3 "$HERE/make_meta4.py" corrupt "$WORK/data/big.bin" "$WORK/data/big.corrupt" "$((CORRUPT_AT << 20))" "$PIECE"
            chmod 644 "$WORK/data/big.corrupt"
            ln -f "$WORK/data/big.corrupt" "$WORK/$CORRUPT_MIRROR/www/big.bin"
        }
        for tool in mw-meta4 $(aria_tools corrupt); do
            corrupt_at "$CORRUPT_AT_MIB"
            earlier=""
            for attempt in $(seq "$CORRUPT_TRIES"); do
                ROW_FACTS=(corrupt_mirror="$CORRUPT_MIRROR" corrupt_at_mib="$CORRUPT_AT" earlier="$earlier")
                row corrupt "$tool" "$WORK/big.meta4" "$IDEAL"
                # Did the client fetch the bad piece from the corrupt mirror at all? If not, the row tested
                # nothing: again, with the piece moved into the middle of the longest range it did fetch there.
                tail -1 "$RESULTS" | python3 -c 'import json, sys; r = json.load(sys.stdin); sys.exit(r.get("bad_" + r["corrupt_mirror"], 0) < 0.99)' && break
                next=$(python3 "$HERE/drive.py" longest "$WORK/$CORRUPT_MIRROR/logs/access.log" "$ROW_LOG_FROM" \
                    "$(lines "$CORRUPT_MIRROR")" "$PIECE")
                [ "$attempt" -lt "$CORRUPT_TRIES" ] && [ -n "$next" ] || break
                echo "  (the bad piece at $CORRUPT_AT MiB was not fetched from $CORRUPT_MIRROR: again with it at $next MiB)" >&2
                sed -i '$d' "$RESULTS"
                earlier="$earlier${earlier:+, }$CORRUPT_AT MiB"
                corrupt_at "$next"
            done
        done
        ROW_FACTS=()
        ln -f "$WORK/data/big.bin" "$WORK/$CORRUPT_MIRROR/www/big.bin"
        ;;
    slow)
        two=$(awk -v s="$SIZE_MIB" -v r="$RATE_MIB" 'BEGIN { printf "%.2f", s / (2 * r) }')
        three=$(awk -v s="$SIZE_MIB" -v r="$RATE_MIB" -v k="$SLOW_KIB" 'BEGIN { printf "%.2f", s / (2 * r + k / 1024) }')
        echo "slow: A and B only (ideal $two s), then A, B and C at $SLOW_KIB KiB/s (ideal $three s) ..." >&2
        for tool in mw-meta4 $(aria_tools slow); do row two "$tool" "$WORK/two.meta4" "$two"; done
        set_rate C "$SLOW_TC" "${SLOW_KIB}k"
        for tool in mw-meta4 $(aria_tools slow); do row slow "$tool" "$WORK/big.meta4" "$three"; done
        set_rate C "$FULL_TC" "${RATE_MIB}m"
        ;;
    hostile)
        echo "hostile .meta4 files ..." >&2
        for file in pieces billion-pieces huge-size bad-hex laughs; do
            for tool in mw-hostile aria2c; do
                rm -rf "$WORK/out"
                mkdir -p "$WORK/out"
                command_of "$tool" "$WORK/hostile/$file.meta4"
                base="$WORK/rows/hostile-$file-$tool"
                python3 "$HERE/drive.py" run "$base" "$HOSTILE_TIMEOUT" "$MEMCAP_MIB" -- "${cmd[@]}"
                python3 "$HERE/report.py" add "$RESULTS" "$base" scenario=hostile tool="$tool" file="$file" \
                    meta4_bytes="$(stat -c %s "$WORK/hostile/$file.meta4")"
                python3 "$HERE/report.py" line "$RESULTS" >&2
            done
        done
        rm -rf "$WORK/out"
        ;;
    *) echo "bench/mirrors: unknown scenario $scenario (speed kill corrupt slow https hostile)" >&2; exit 1 ;;
    esac
done

{
    echo
    echo "## mirrors, $(date -u +%Y-%m-%dT%H:%MZ)"
    echo
    echo "$SIZE_MIB MiB from three nginx mirrors on 127.0.0.1 (nginx $("$NGINX" -v 2>&1 | sed 's|.*nginx/||'), one worker each), $RATE_MIB MiB/s each: $SHAPING_NOTE${CALIBRATION:+; shaping check: two curl connections to one mirror got $CALIBRATION MiB/s}."
    if [[ " $SCENARIOS " == *" https "* ]]; then
        # What the HTTPS rows negotiated (nginx's $ssl_protocol $ssl_cipher, per request, all mirrors).
        negotiated=$(cat "$WORK"/?/logs/tls.log 2>/dev/null | sort | uniq -c |
            awk '{ printf "%s%s %s (%d requests)", (NR > 1 ? ", " : ""), $2, $3, $1 }')
        shaped="limit_rate on it too"
        [ "$SHAPING" = tc ] && shaped="in the mirror's htb class with the plain port"
        echo "HTTPS: a second port of each mirror's nginx with \`ssl\` ($shaped), certificate for 127.0.0.1 from a CA made for the run (nginx built with OpenSSL $("$NGINX" -V 2>&1 | awk '/^built with OpenSSL/ { print $4 }')); negotiated: ${negotiated:-nothing logged}."
    fi
    echo "$(aria2c --version | head -1), $(nproc) cores, $(uname -r); $(basename "$BIN") $(stat -c %s "$BIN") bytes ($BIN); output to tmpfs."
    echo
    python3 "$HERE/report.py" show "$RESULTS" "$SIZE_MIB" "$RATE_MIB" "$SLOW_KIB" "$CORRUPT_AT_MIB" "$KILL_AT" "$CORRUPT_MIRROR"
} | tee -a "$OUT/mirrors.md"
cp "$RESULTS" "$OUT/mirrors-results.jsonl"
