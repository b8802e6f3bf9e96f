#!/usr/bin/env python3
"""Drives bench/background (run.sh made the namespaces and started nginx): phases per tool and rate, one table.

Environment: BIN, NS (the client namespace), NS_SERVER, WORK (nginx's root is WORK/www), RATES (Mbit/s,
space-separated), TOOLS (curl aria2c meterwise background), PAIR (1: a row with two background jobs).
"""
import os, signal, statistics, subprocess, sys, threading, time

BIN, NS, NS_SERVER, WORK = (os.environ[k] for k in ("BIN", "NS", "NS_SERVER", "WORK"))
RATES = [int(r) for r in os.environ.get("RATES", "20 5").split()]
TOOLS = os.environ.get("TOOLS", "curl aria2c meterwise background").split()
PAIR = os.environ.get("PAIR", "1") == "1"
BASE = "http://10.78.0.1:8080"
OUT = os.path.join(WORK, "out")
WARM_S, PING_S, AFTER_S, BACK_SHARE = 3.0, 3.0, 4.0, 0.85


def ns(args):
    return ["ip", "netns", "exec", NS] + args


def shape(mbit):
    subprocess.run(["ip", "netns", "exec", NS_SERVER, "tc", "qdisc", "replace", "dev", "mwbs", "root", "tbf",
                    "rate", f"{mbit}mbit", "burst", "64kb", "latency", "250ms"], check=True)


def sized(name, mib):
    """A random file of `mib` MiB in nginx's root (made once)."""
    path = os.path.join(WORK, "www", name)
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(os.urandom(mib << 20))
    return f"{BASE}/{name}"


def command(tool, url, out, segments=None):
    if tool == "curl":
        return ["curl", "-s", "-o", out, url]
    if tool == "aria2c":
        return ["aria2c", "-q", "-x4", "-s4", "-k1M", "--file-allocation=none", "--allow-overwrite=true",
                "--auto-file-renaming=false", "-d", os.path.dirname(out), "-o", os.path.basename(out), url]
    extra = ["--background"] if tool.startswith("background") else []
    if segments:
        extra += ["--segments", str(segments)]
    return [BIN, "get", url, "-o", out, "--force", "--json"] + extra


def clean(out):
    for suffix in ("", ".part", ".part.checkpoint", ".aria2"):
        try:
            os.unlink(out + suffix)
        except FileNotFoundError:
            pass


class Sampler:
    """The client namespace's received bytes (the veth's rx_bytes), every 50 ms, on the monotonic clock."""

    def __init__(self):
        code = ("import time,sys\n"
                "p='/sys/class/net/mwbc/statistics/rx_bytes'\n"
                "while True:\n"
                " print(time.monotonic(), open(p).read().strip(), flush=True); time.sleep(0.05)\n")
        self.proc = subprocess.Popen(ns(["python3", "-c", code]), stdout=subprocess.PIPE, text=True)
        self.samples = []
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self):
        for line in self.proc.stdout:
            t, b = line.split()
            self.samples.append((float(t), int(b)))

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.thread.join(timeout=1)

    def rate(self, start, end):
        """Bytes per second received between two instants."""
        inside = [s for s in self.samples if start <= s[0] <= end]
        if len(inside) < 2:
            return 0.0
        return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])


def timed(cmd, timeout=None):
    start = time.monotonic()
    try:
        subprocess.run(ns(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    return time.monotonic() - start


def ping(seconds):
    """Round trips in ms of a ping every 10 ms for `seconds`."""
    count = int(seconds / 0.01)
    run = subprocess.run(ns(["ping", "-n", "-i", "0.01", "-c", str(count), "-W", "2", "10.78.0.1"]),
                         capture_output=True, text=True)
    times = []
    for line in run.stdout.splitlines():
        if "time=" in line:
            times.append(float(line.split("time=")[1].split()[0]))
    return times


def pct(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def with_traffic(tools, fg_url, fg_alone, link):
    """The phases during a running download (or several): ping, a foreground curl, the way back."""
    outs = [os.path.join(OUT, f"endless-{i}.bin") for i in range(len(tools))]
    for out in outs:
        clean(out)
    sampler = Sampler()
    procs = [subprocess.Popen(ns(command(tool, f"{BASE}/endless.bin", out, segments)),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for (tool, segments), out in zip(tools, outs)]
    time.sleep(WARM_S)
    start = time.monotonic()
    rtts = ping(PING_S)
    busy = sampler.rate(start, time.monotonic())
    fg_out = os.path.join(OUT, "fg.bin")
    clean(fg_out)
    fg = timed(["curl", "-s", "-o", fg_out, fg_url], timeout=120)
    fg_end = time.monotonic()
    time.sleep(AFTER_S)
    stop(procs)
    sampler.stop()
    back = None
    t = fg_end
    while t + 0.5 <= fg_end + AFTER_S:
        if sampler.rate(t, t + 0.5) >= BACK_SHARE * link:
            back = t - fg_end
            break
        t += 0.05
    for out in outs:
        clean(out)
    return {"p50": pct(rtts, 50), "p95": pct(rtts, 95), "fg": fg, "fg_ratio": fg / fg_alone if fg else None,
            "back": back, "busy": busy}


def alone(tool, url, size):
    out = os.path.join(OUT, "alone.bin")
    clean(out)
    sampler = Sampler()
    start = time.monotonic()
    seconds = timed(command(tool, url, out))
    end = time.monotonic()
    sampler.stop()
    wire = sampler.rate(start, end)
    clean(out)
    return size / seconds, wire


def main():
    rows = []
    for mbit in RATES:
        shape(mbit)
        # About 5 s of the link alone; a foreground of about 1.7 s alone (4 MiB at 20 Mbit/s).
        alone_mib = max(2, mbit * 5 * 1000 * 1000 // 8 >> 20)
        fg_mib = 4 if mbit >= 20 else 1
        alone_url = sized(f"alone-{alone_mib}.bin", alone_mib)
        fg_url = sized(f"fg-{fg_mib}.bin", fg_mib)
        idle = ping(2.0)
        fg_alone = timed(["curl", "-s", "-o", os.path.join(OUT, "fg.bin"), fg_url])
        curl_rate, curl_wire = alone("curl", alone_url, alone_mib << 20)
        results = {}
        for tool in TOOLS:
            rate, wire = (curl_rate, curl_wire) if tool == "curl" else alone(tool, alone_url, alone_mib << 20)
            phases = with_traffic([(tool, None)], fg_url, fg_alone, curl_wire)
            results[tool] = (rate, phases)
            print(f"# {mbit} Mbit/s {tool}: {rate * 8 / 1e6:.2f} Mbit/s alone; {phases}", file=sys.stderr, flush=True)
        if PAIR and mbit == RATES[0]:
            phases = with_traffic([("background", 4), ("background", 4)], fg_url, fg_alone, curl_wire)
            results["2 x background, 4 segments each"] = (None, phases)
            print(f"# {mbit} Mbit/s pair: {phases}", file=sys.stderr, flush=True)
        rows.append((mbit, idle, fg_alone, fg_mib, curl_rate, results))

    print(f"tbf rate R burst 64kb latency 250ms on the server's side of a veth; reno; offloads off; "
          f"{os.uname().release}; {os.path.basename(BIN)} {os.path.getsize(BIN)} bytes")
    print()
    print("| link | tool | alone (Mbit/s) | of curl's | ping p50 / p95 during (ms) | foreground (s) | × alone "
          "| back to 85 % after it |")
    print("|---|---|---|---|---|---|---|---|")
    for mbit, idle, fg_alone, fg_mib, curl_rate, results in rows:
        print(f"| {mbit} Mbit/s idle | – | – | – | {pct(idle, 50):.2f} / {pct(idle, 95):.2f} "
              f"| {fg_alone:.2f} ({fg_mib} MiB alone) | 1.00 | – |")
        for tool, (rate, p) in results.items():
            name = {"meterwise": "meterwise get", "background": "meterwise get --background",
                    "aria2c": "aria2c -x4"}.get(tool, tool)
            share = f"{rate / curl_rate:.2f}" if rate else "–"
            alone_text = f"{rate * 8 / 1e6:.2f}" if rate else "–"
            fg = f"{p['fg']:.2f}" if p["fg"] else "> 120"
            ratio = f"{p['fg_ratio']:.2f}" if p["fg_ratio"] else "–"
            back = f"{p['back']:.2f} s" if p["back"] is not None else f"not within {AFTER_S:.0f} s"
            print(f"| {mbit} Mbit/s | {name} | {alone_text} | {share} | {p['p50']:.2f} / {p['p95']:.2f} | {fg} "
                  f"| {ratio} | {back} |")
    print()
    print("Goals (issue 27) for --background: alone >= 0.90 of curl's; ping p95 <= idle p95 + 10 ms; "
          "foreground <= 1.25 x alone; back to 85 % of the link within 3 s.")
    for mbit, idle, fg_alone, fg_mib, curl_rate, results in rows:
        for tool in ("background", "2 x background, 4 segments each"):
            if tool not in results:
                continue
            rate, p = results[tool]
            checks = []
            if rate:
                checks.append(("throughput", rate / curl_rate >= 0.90))
            checks.append(("latency", p["p95"] <= pct(idle, 95) + 10))
            checks.append(("foreground", p["fg_ratio"] is not None and p["fg_ratio"] <= 1.25))
            checks.append(("way back", p["back"] is not None and p["back"] <= 3))
            print(f"{mbit} Mbit/s, {tool}: " + ", ".join(f"{n} {'met' if ok else 'MISSED'}" for n, ok in checks))


if __name__ == "__main__":
    main()
