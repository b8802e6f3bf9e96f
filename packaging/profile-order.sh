#!/usr/bin/env bash
# Writes packaging/meterwise.order: the functions `meterwise get` runs, in the order it first runs them,
# for lld's --symbol-ordering-file (packaging/release-flags.sh). Laid out together, the code a download
# touches fills few pages instead of one 64 KiB fault-around window per function spread over NIO,
# AsyncHTTPClient, Foundation and the stdlib: peak RSS of `get` 27.7 -> 23.5 MiB (bench/README.md).
#
#   bash packaging/profile-order.sh [BINARY]   (default: the release build in .build-release)
#
# Runs under valgrind's callgrind (apt-get install valgrind): `get` from `meterwise serve` on 127.0.0.1,
# with automatic segments, one segment and --print-sha256, to tmpfs and to disk. Nothing else is
# contacted. A name that a later build no longer has is ignored by the linker; run this again after large
# changes to the download path.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
binary="${1:-$root/.build-release/release/meterwise}"
command -v valgrind >/dev/null || { echo "profile-order.sh: valgrind is needed (apt-get install valgrind)" >&2; exit 69; }
work="$(mktemp -d -t meterwise-order.XXXXXX)"
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
# valgrind cannot read the DWARF of the release build; the symbol table is all it needs.
cp "$binary" "$work/meterwise"
strip --strip-debug "$work/meterwise"
"$work/meterwise" serve --port 0 --size 24MiB >"$work/serve.json" &
server=$!
for _ in $(seq 1 100); do [ -s "$work/serve.json" ] && break; sleep 0.05; done
url="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$work/serve.json")"
run=0
for args in "" "--segments 1" "--print-sha256"; do
    for target in /dev/shm "$work"; do
        run=$((run + 1))
        # shellcheck disable=SC2086
        valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/profile.$run" \
            "$work/meterwise" get "$url" -o "$target/meterwise-order.bin" --force $args >/dev/null 2>&1
        rm -f "$target/meterwise-order.bin"
    done
done
python3 - "$work/meterwise" "$root/packaging/meterwise.order" "$work"/profile.* <<'PY'
import re, sys
binary, out, profiles = sys.argv[1], sys.argv[2], sys.argv[3:]
order, seen = [], set()
for path in profiles:
    names, objects, current, called = {}, {}, None, None
    for line in open(path, errors="replace"):
        m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            kind, number, name = m.groups()
            if name: objects[number] = name
            if kind == "ob": current = objects.get(number)
            else: called = objects.get(number)
            continue
        m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not m: continue
        kind, number, name = m.groups()
        if name: names[number] = name
        owner = current if kind == "fn" else called
        symbol = re.sub(r"'\d+$", "", names.get(number, ""))
        if owner == binary and symbol and " " not in symbol and "(" not in symbol and symbol not in seen:
            seen.add(symbol)
            order.append(symbol)
if len(order) < 1000:
    sys.exit(f"profile-order.sh: only {len(order)} functions seen; did `get` run?")
open(out, "w").write("\n".join(order) + "\n")
print(f"{out}: {len(order)} functions from {len(profiles)} runs")
PY
