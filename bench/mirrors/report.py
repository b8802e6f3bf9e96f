#!/usr/bin/env python3
"""The mirrors bench's rows and tables (bench/mirrors/run.sh).

  report.py add RESULTS BASE KEY=VALUE...   appends one row to RESULTS (JSON lines): drive.py's BASE (its
                                            figures), BASE.out / BASE.err (exit, meterwise's last --json
                                            line, the first error line), the sha256 of output=PATH against
                                            sha_expected=HEX, and the KEY=VALUE facts (sent_A="bytes body
                                            requests", bad_A=times, ...)
  report.py line RESULTS                    the last row, on one line (progress)
  report.py show RESULTS SIZE_MIB RATE_MIB SLOW_KIB CORRUPT_AT_MIB KILL_AT CORRUPT_MIRROR
                                            the Markdown tables and the goals
"""
import hashlib, json, os, re, sys

MIB = 1 << 20
MIRRORS = "ABC"
TOOLS = {
    "mw-urls": "meterwise get A B C",
    "mw-meta4": "meterwise get --metalink",
    "mw-hostile": "meterwise get --metalink",
    "aria2c": "aria2c -M (defaults)",
    "aria2c-x3": "aria2c -M -x3 -s3 --min-split-size=1M",
}


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(8 * MIB):
            digest.update(chunk)
    return digest.hexdigest()


def first_error(tool, out, err):
    """meterwise: the first line of stderr, else its --json `failed` message. aria2c: its first `Exception:`
    line (the cause; it prints "Exception caught" first, and some errors on stdout only), else the first line
    of stderr, else its first ERROR line on stdout."""
    clean = lambda s: re.sub(r"\s+", " ", re.sub(r"\x1b\[[0-9;]*m", "", s)).strip()[:200]
    if tool.startswith("aria2c"):
        for line in (err + "\n" + out).splitlines():
            if line.startswith("Exception:"):
                return clean(line)
    for line in err.splitlines():
        if line.strip():
            return clean(line)
    for line in out.splitlines():
        if tool.startswith("mw"):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("event") == "failed":
                return clean(f"(--json) {event.get('code')}: {event.get('message')}")
        elif "ERROR" in line:
            return clean("(stdout) " + line)
    return ""


def add(results, base, facts):
    row = dict(kv.split("=", 1) for kv in facts)
    try:
        with open(base) as f:
            row.update(json.load(f))
    except (FileNotFoundError, ValueError):
        row["exit"] = "not run"
    out, err = read(base + ".out"), read(base + ".err")
    row["error"] = first_error(row["tool"], out, err) if row.get("exit") != 0 else ""
    for line in reversed(out.splitlines()):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("event") == "completed":
            row["mw"] = {k: event.get(k) for k in ("bytes_fetched", "discarded_bytes", "refetched_bytes")}
            break
    output = row.pop("output", None)
    if output and "sha_expected" in row:
        row["sha_ok"] = os.path.exists(output) and sha256(output) == row["sha_expected"]
    if "wire" in row:  # the htb classes' bytes during the row (A B C), headers included
        row["wire"] = sum(int(x) for x in row["wire"].split())
    for m in MIRRORS:
        if f"sent_{m}" in row:
            sent, body, requests = (int(x) for x in row[f"sent_{m}"].split())
            row[f"sent_{m}"], row[f"body_{m}"], row[f"requests_{m}"] = sent, body, requests
        if f"bad_{m}" in row:
            row[f"bad_{m}"] = float(row[f"bad_{m}"])
    # A killed mirror logs nothing for what it was sending: its count is nginx's at the kill (log + tcp_info).
    for m, sent in (row.get("sent_at_kill") or {}).items():
        if sent > row.get(f"sent_{m}", 0):
            row[f"sent_{m}"] = row[f"body_{m}"] = sent
            row[f"killed_{m}"] = True
    with open(results, "a") as f:
        f.write(json.dumps(row) + "\n")


def rows_of(results):
    with open(results) as f:
        return [json.loads(line) for line in f if line.strip()]


def ok(row):
    return row.get("exit") == 0


def result(row):
    code = row.get("exit")
    if code == "timeout":
        return f"failed (killed after {row.get('wall', 0):.0f} s)"
    if code == "memcap":
        return "failed (killed: RSS over the cap)"
    if code != 0:
        return f"failed (exit {code})"
    if row.get("sha_ok") is False:
        return "**wrong sha256**"
    return "ok"


def mib(b):
    return f"{b / MIB:.1f}"


def body_total(row):
    return sum(row.get(f"body_{m}", 0) for m in MIRRORS)


def fetched(row):
    """What reached the client: the htb classes' bytes when shaped by tc (headers included), else what nginx
    wrote (bodies)."""
    return row["wire"] if "wire" in row else body_total(row)


def line(results):
    row = rows_of(results)[-1]
    text = f"  {row['scenario']} {row.get('file', '')} {row['tool']}: {result(row)}, {row.get('wall', 0):.2f} s"
    if "sent_A" in row:
        text += ", MiB from A/B/C " + " / ".join(mib(row.get(f"sent_{m}", 0)) for m in MIRRORS)
    if "switch" in row:
        text += f", killed at {row['kill_at']} s, switch {row['switch']} s, stall {row['stall']} s"
    if row.get("error"):
        text += f": {row['error']}"
    print(text)


def show(results, size_mib, rate_mib, slow_kib, corrupt_at, kill_at, bad_mirror):
    rows = rows_of(results)
    size = int(size_mib) * MIB
    by = {(r["scenario"], r["tool"]): r for r in rows if r["scenario"] != "hostile"}
    labels = {
        "speed": "3 mirrors", "kill": f"B killed at {float(kill_at):.0%}", "corrupt": f"{bad_mirror} has a bad piece",
        "two": "A + B only", "slow": f"A + B + C at {slow_kib} KiB/s", "https": "3 mirrors, https",
    }
    main = [r for r in rows if r["scenario"] != "hostile"]
    if main:
        print("| scenario | tool | result | wall s | ideal s | wall / ideal | wall / aria2c -x3 | CPU s | peak RSS MiB "
              "| sent by A / B / C MiB | bodies sent MiB | delivered MiB (htb) | fetched − file MiB | sha256 | meterwise's fetched / discarded / refetched MiB |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in main:
            aria = by.get((r["scenario"], "aria2c-x3"))
            vs = f"{r['wall'] / aria['wall']:.2f}" if ok(r) and aria and ok(aria) else ""
            of_ideal = f"{r['wall'] / float(r['ideal']):.2f}" if ok(r) else ""
            sent = " / ".join(mib(r.get(f"sent_{m}", 0)) + ("†" if r.get(f"killed_{m}") else "") for m in MIRRORS)
            body = body_total(r)
            counts = ""
            if r.get("mw"):
                counts = " / ".join(mib(r["mw"].get(k) or 0) for k in ("bytes_fetched", "discarded_bytes", "refetched_bytes"))
            print(f"| {labels.get(r['scenario'], r['scenario'])} | {TOOLS[r['tool']]} | {result(r)} | {r.get('wall', 0):.2f} "
                  f"| {float(r['ideal']):.1f} | {of_ideal} | {vs} | {r.get('cpu', 0):.2f} "
                  f"| {r.get('rss_kib', 0) / 1024:.1f} | {sent} | {mib(body)} | {mib(r['wire']) if 'wire' in r else ''} "
                  f"| {f'{(fetched(r) - size) / MIB:+.2f}' if ok(r) else ''} "
                  f"| {'yes' if r.get('sha_ok') else 'no'} | {counts} |")
        print()
        print("Sent: nginx's $bytes_sent (headers included) per mirror; † a mirror killed during the row, its count "
              "up to the kill (its log lacks what was in flight; tcp_info's bytes_sent of its open connections). "
              "Bodies sent: the response bodies of all mirrors, what nginx wrote to its sockets (a client that closes "
              "a connection early leaves what its socket buffers held unread). Delivered: what the mirrors' htb classes "
              "let through to the client, TCP/IP and HTTP headers included (~0.1 %; namespace runs only). "
              "Fetched − file: delivered when there, else bodies.", end=" ")
        if any(r["scenario"] == "https" for r in main):
            print("Over https, sent and bodies are what nginx handed to TLS; delivered includes the TLS records' "
                  "framing and the handshakes.", end=" ")
        print("Failed rows' first error line:")
        for r in main:
            if r.get("error"):
                print(f"- {labels.get(r['scenario'])}, {TOOLS[r['tool']]}: `{r['error'].replace('`', chr(39))}`")
        print()

    kills = [r for r in rows if r["scenario"] == "kill"]
    if kills:
        counted = ("the htb classes' bytes, headers included" if any("wire" in r for r in kills)
                   else "nginx's access log and tcp_info's bytes_sent of the open connections")
        print(f"**Kill**: mirror B's nginx (master and workers) SIGKILLed once {float(kill_at):.0%} of the file had arrived; "
              f"arrival polled every 100 ms after ({counted}).")
        print()
        print("| tool | completed | sha256 | wall s | ideal s | killed at s (arrived MiB) | B had sent MiB | rate before MiB/s | switch within s | longest stall after s |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in kills:
            if "kill_at" not in r:
                print(f"| {TOOLS[r['tool']]} | {result(r)} (B not killed) | | {r.get('wall', 0):.2f} | {float(r['ideal']):.1f} | | | | | |")
                continue
            switch = "never" if r.get("switch") is None else f"{r['switch']:.2f}"
            if not r["sent_at_kill"].get("B"):
                switch = f"{switch} (B unused: not tested)"
            print(f"| {TOOLS[r['tool']]} | {'yes' if ok(r) else result(r)} | {'yes' if r.get('sha_ok') else 'no'} "
                  f"| {r['wall']:.2f} | {float(r['ideal']):.1f} | {r['kill_at']:.2f} ({mib(r['arrived_at_kill'])}) "
                  f"| {mib(r['sent_at_kill'].get('B', 0))} "
                  f"| {r['pre_rate'] / MIB:.2f} | {switch} | {r['stall']:.2f} |")
        print()
        print("Switch within: from the kill to the start of the first 0.5 s in which the other two mirrors delivered "
              "at least 0.9 x 2/3 of the rate before the kill (2/3 is all two of three mirrors can give; the 0.9 "
              "absorbs the 100 ms polling's noise). Longest stall: the longest stretch after the kill with less "
              "than a tenth of that rate arriving.")
        print()

    bad = [r for r in rows if r["scenario"] == "corrupt"]
    if bad:
        print(f"**Corrupt piece**: mirror {bad_mirror} serves 1 MiB (one piece) changed, at {corrupt_at} MiB first. A run "
              f"that fetched that range from the other mirrors only tested nothing: it was run again with the piece "
              f"moved into the middle of the longest range the client did fetch from {bad_mirror} (\"earlier\"), and "
              f"says \"not tested\" if it still missed it.")
        print()
        print("| tool | bad piece at MiB (earlier) | sha256 | bodies sent MiB | delivered MiB (htb) | fetched − file, pieces | goal: ≤ 1 piece (+ 0.25 % headers) | bad piece's range sent (times) by |")
        print("|---|---|---|---|---|---|---|---|")
        for r in bad:
            over = f"{(fetched(r) - size) / MIB:+.2f}" if ok(r) else ""
            verdict = "missed" if not ok(r) else "not tested" if reserved(r) is None else "met" if corrupt_met(r, size) else "missed"
            served = ", ".join(f"{m} ×{r.get(f'bad_{m}', 0):.2f}" + (" (corrupt)" if m == bad_mirror else "")
                               for m in MIRRORS if r.get(f"bad_{m}", 0) > 0)
            earlier = f" ({r['earlier']}: not fetched there)" if r.get("earlier") else ""
            print(f"| {TOOLS[r['tool']]} | {r.get('corrupt_at_mib', corrupt_at)}{earlier} "
                  f"| {'yes' if r.get('sha_ok') else 'no'} ({result(r)}) | {mib(body_total(r))} "
                  f"| {mib(r['wire']) if 'wire' in r else ''} | {over} | {verdict} | {served} |")
        print()

    if any(r["scenario"] in ("two", "slow") for r in rows):
        print(f"**Slow mirror**: C at {slow_kib} KiB/s beside A and B, against A and B alone (a .meta4 with their two URLs).")
        print()
        print(f"| tool | A + B only s | A + B + C at {slow_kib} KiB/s s | ratio | goal: ≤ 1.10 | C sent MiB |")
        print("|---|---|---|---|---|---|")
        for tool in TOOLS:
            two, slow = by.get(("two", tool)), by.get(("slow", tool))
            if not two or not slow:
                continue
            ratio = slow["wall"] / two["wall"] if ok(two) and ok(slow) and slow.get("sha_ok") else None
            print(f"| {TOOLS[tool]} | {two['wall']:.2f} ({result(two)}) | {slow['wall']:.2f} ({result(slow)}) "
                  f"| {'' if ratio is None else f'{ratio:.2f}'} | {'met' if ratio is not None and ratio <= 1.10 else 'missed'} "
                  f"| {mib(slow.get('sent_C', 0))} |")
        print()

    hostile = [r for r in rows if r["scenario"] == "hostile"]
    describe = {
        "pieces": "1 PiB in 1 KiB pieces (2^40 declared), 65 536 hashes",
        "billion-pieces": "1 TiB in 1 KiB pieces (2^30 declared), 65 536 hashes",
        "huge-size": "<size>99999999999999999999</size>",
        "bad-hex": "non-hex in one piece hash",
        "laughs": "billion laughs (10^9 lol in the name)",
    }
    if hostile:
        print("**Hostile .meta4 files** (their URLs point at a closed port: a client that accepts one tries to connect).")
        print()
        print("| .meta4 | size KiB | tool | exit | time s | peak RSS MiB | first line of stderr (aria2c: its `Exception:` line) | goal: refused < 1 s |")
        print("|---|---|---|---|---|---|---|---|")
        for r in hostile:
            print(f"| {describe.get(r['file'], r['file'])} | {int(r['meta4_bytes']) / 1024:.0f} | {TOOLS[r['tool']]} "
                  f"| {r.get('exit')} | {r.get('wall', 0):.2f} | {r.get('rss_kib', 0) / 1024:.1f} "
                  f"| `{r.get('error', '').replace('|', '/').replace('`', chr(39))}` | {'met' if refused(r) else 'missed'} |")
        print()

    goals(rows, by, size)


def corrupt_met(r, size):
    """Right sha256 and at most one piece more than the file (delivered bytes carry headers: 0.25 % allowed)."""
    allowance = 0.0025 * size if "wire" in r else 0
    return bool(ok(r) and r.get("sha_ok") and fetched(r) - size <= MIB + allowance)


def refused(r):
    """Refused at once: an exit code of its own (not a signal, not killed by the bench) within 1 s, with an
    error line that is neither about connecting (the file was accepted), nor about the command line, nor a
    crash's."""
    code = r.get("exit")
    return (isinstance(code, int) and code > 0 and r.get("wall", 99) < 1.0 and bool(r.get("error"))
            and not re.search(r"connection refused|failed to establish connection|could not connect|timed out|unknown option|unexpected argument|usage:|terminate called|"
                              r"fatal error|panic|segmentation fault|core dumped|illegal instruction", r["error"], re.I))


def reserved(r):
    """Which mirrors sent the bad piece's range besides the corrupt one (after it: the range is sent once when
    all goes well); None when the corrupt mirror did not send it whole (the row tested nothing)."""
    bad = r.get("corrupt_mirror", "C")
    if r.get(f"bad_{bad}", 0) < 0.99:
        return None
    others = [m for m in MIRRORS if m != bad and r.get(f"bad_{m}", 0) >= 0.99]
    return ", ".join(others) if others else "no other mirror"


def goals(rows, by, size):
    """Each goal for the meterwise row(s), with both aria2c rows' figures (and whether they would meet it)."""
    out = []
    arias = ("aria2c", "aria2c-x3")

    def goal(what, scenario_of, tool, value, met):
        """value(rows) -> text, met(rows) -> bool; rows: {scenario: row} of one tool."""
        def of(t):
            return {sc: by.get((sc, t)) for sc in scenario_of}
        def cell(t):
            rs = of(t)
            if any(x is None for x in rs.values()):
                return "no row"
            failed = [x for x in rs.values() if not ok(x) or x.get("sha_ok") is False]
            if failed:
                return result(failed[0]), False
            if "corrupt" in rs and reserved(rs["corrupt"]) is None:
                return "; ".join(x for x in (value(rs), "the bad copy's range not fetched") if x), None
            if "kill" in rs and "kill_at" in rs["kill"] and not rs["kill"]["sent_at_kill"].get("B"):
                return f"{value(rs)}; B unused before the kill", None
            return value(rs), bool(met(rs))
        verdict = lambda m: "not tested" if m is None else "met" if m else "not met"
        mine = cell(tool)
        if mine == "no row":
            return
        theirs = []
        for t in arias:
            c = cell(t)
            theirs.append(c if c == "no row" else f"{c[0]} ({verdict(c[1])})")
        out.append(f"| {what} | {mine[0]} | {verdict(mine[1]) if mine[1] is not False else '**not met**'} | {theirs[0]} | {theirs[1]} |")

    best = min((x["wall"] for x in (by.get(("speed", t)) for t in arias) if x and ok(x) and x.get("sha_ok")), default=None)
    for tool in ("mw-urls", "mw-meta4"):
        goal(f"speed ({TOOLS[tool]} for meterwise): wall ≤ 1.10 × ideal", ["speed"], tool,
             lambda rs: f"{rs['speed']['wall']:.2f} s, {rs['speed']['wall'] / float(rs['speed']['ideal']):.2f}× ideal",
             lambda rs: ok(rs["speed"]) and rs["speed"].get("sha_ok") and rs["speed"]["wall"] <= 1.10 * float(rs["speed"]["ideal"]))
        if best is not None:
            goal(f"speed ({TOOLS[tool]} for meterwise): wall ≤ 1.05 × aria2c's best ({best:.2f} s)", ["speed"], tool,
                 lambda rs: f"{rs['speed']['wall']:.2f} s",
                 lambda rs: ok(rs["speed"]) and rs["speed"].get("sha_ok") and rs["speed"]["wall"] <= 1.05 * best)
    # https: both goals of speed on one line, against aria2c's best https row.
    best_tls = min((x["wall"] for x in (by.get(("https", t)) for t in arias) if x and ok(x) and x.get("sha_ok")), default=None)
    for tool in ("mw-urls", "mw-meta4"):
        against = f"{best_tls:.2f} s" if best_tls is not None else "no aria2c row succeeded: ideal only"
        goal(f"https ({TOOLS[tool]} --cacert CA for meterwise): wall ≤ 1.10 × ideal, ≤ 1.05 × aria2c's best ({against})",
             ["https"], tool,
             lambda rs: f"{rs['https']['wall']:.2f} s, {rs['https']['wall'] / float(rs['https']['ideal']):.2f}× ideal"
                        + (f", {rs['https']['wall'] / best_tls:.2f}× aria2c's best" if best_tls is not None else ""),
             lambda rs: ok(rs["https"]) and rs["https"].get("sha_ok") and rs["https"]["wall"] <= 1.10 * float(rs["https"]["ideal"])
                        and (best_tls is None or rs["https"]["wall"] <= 1.05 * best_tls))

    def kill_text(rs):
        r = rs["kill"]
        if "kill_at" not in r:
            return "done before the kill"
        return "completed, switch " + ("never" if r.get("switch") is None else f"{r['switch']:.2f} s")
    goal("kill: completes with the right sha256, switch within ≤ 1 s", ["kill"], "mw-meta4", kill_text,
         lambda rs: ok(rs["kill"]) and rs["kill"].get("sha_ok") and rs["kill"].get("switch") is not None and rs["kill"]["switch"] <= 1.0)
    goal("corrupt: right sha256, fetched ≤ file + 1 piece (+ 0.25 % headers)", ["corrupt"], "mw-meta4",
         lambda rs: f"{(fetched(rs['corrupt']) - size) / MIB:+.2f} MiB over the file",
         lambda rs: corrupt_met(rs["corrupt"], size))
    goal("corrupt: the bad piece fetched again from another mirror", ["corrupt"], "mw-meta4",
         lambda rs: reserved(rs["corrupt"]) or "",
         lambda rs: ok(rs["corrupt"]) and rs["corrupt"].get("sha_ok") and reserved(rs["corrupt"]) not in (None, "no other mirror"))
    goal("slow: wall with C slow ≤ 1.10 × A + B only", ["two", "slow"], "mw-meta4",
         lambda rs: f"{rs['slow']['wall']:.2f} / {rs['two']['wall']:.2f} s = {rs['slow']['wall'] / rs['two']['wall']:.2f}",
         lambda rs: ok(rs["two"]) and ok(rs["slow"]) and rs["slow"].get("sha_ok") and rs["slow"]["wall"] <= 1.10 * rs["two"]["wall"])
    hostile = [r for r in rows if r["scenario"] == "hostile"]
    if hostile:
        count = lambda rs: f"{sum(refused(x) for x in rs)} of {len(rs)}" if rs else "no row"
        mine = [r for r in hostile if r["tool"] == "mw-hostile"]
        met = bool(mine) and all(refused(x) for x in mine)
        out.append(f"| hostile .meta4: each refused < 1 s with an error of its own | {count(mine)} | "
                   f"{'met' if met else '**not met**'} | {count([r for r in hostile if r['tool'] == 'aria2c'])} | |")
    if out:
        print("Goals (met / not met: meterwise's; aria2c's rows beside, measured against the same goal):")
        print()
        print("| goal | meterwise | | aria2c (defaults) | aria2c -x3 -s3 |")
        print("|---|---|---|---|---|")
        print("\n".join(out))


def main():
    command = sys.argv[1]
    if command == "add":
        add(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif command == "line":
        line(sys.argv[2])
    elif command == "show":
        show(*sys.argv[2:9])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
