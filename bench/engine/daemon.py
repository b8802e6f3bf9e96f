#!/usr/bin/env python3
"""Daemon benchmarks: RSS with N queued jobs (10 000 by default; run it again with --jobs 100000), the
latency of each `add` (p50/p99), how long one pass deciding every job takes (a policy reload by SIGHUP
decides every job, as a link change does; the daemon's /metrics reports the pass), idle CPU over 60 s,
resume latency after the hysteresis (from `meterwise demo --json`). Prints a Markdown table.

Usage: bench/engine/daemon.py BINARY [--jobs 10000] [--idle 60]
Traffic: none leaves this machine; jobs point at 127.0.0.1:9 and never start (the links are metered).
"""
import argparse, http.client, json, os, shutil, signal, socket, subprocess, sys, tempfile, time

class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=60)
        self.path = path
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)

def rss_kib(pid, field="VmRSS:"):
    """VmRSS, or RssAnon: the anonymous part (heap, stacks), without the binary's file-backed pages."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return 0

def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--idle", type=int, default=60)
    parser.add_argument("--no-demo", action="store_true", help="skip the demo's latencies")
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    work = tempfile.mkdtemp(prefix="mw-bench-")
    scenario = os.path.join(work, "cellular.yaml")
    with open(scenario, "w") as f:
        f.write("links:\n  wwan0: { kind: wwan }\nsteps:\n  - { at: 0s, up: [wwan0], primary: wwan0 }\nend: 24h\n")
    sock = os.path.join(work, "d.sock")
    # A copy: the bench rewrites it to turn every decision around.
    policy = os.path.join(work, "policy.yaml")
    shutil.copyfile(os.path.join(root, "policies/default.yaml"), policy)
    daemon = subprocess.Popen([args.binary, "daemon", "--links", "scenario", "--scenario", scenario,
                               "--state", os.path.join(work, "state"), "--socket", sock, "--policy", policy],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = []
    try:
        for _ in range(200):
            if os.path.exists(sock): break
            time.sleep(0.05)
        rss_empty = rss_kib(daemon.pid)
        anon_empty = rss_kib(daemon.pid, "RssAnon:")
        conn = UnixHTTP(sock)
        started = time.monotonic()
        latencies = []
        for i in range(args.jobs):
            # Mixed sizes, priorities and tags, as a fleet's queue would be.
            body = json.dumps({"url": f"http://127.0.0.1:9/f{i}.bin", "destination": os.path.join(work, f"f{i}.bin"),
                               "size": (i % 7 + 1) << 20, "priority": i % 3, "tags": [["os", "apt", "media"][i % 3]]})
            t = time.monotonic()
            conn.request("POST", "/v1/jobs", body=body, headers={"Content-Type": "application/json"})
            response = conn.getresponse(); response.read()
            latencies.append(time.monotonic() - t)
            if response.status != 201:
                raise SystemExit(f"add failed: {response.status}")
        add_seconds = time.monotonic() - started
        latencies.sort()
        p50 = latencies[len(latencies) // 2] * 1000; p99 = latencies[int(len(latencies) * 0.99)] * 1000
        def metrics():
            conn.request("GET", "/metrics"); text = conn.getresponse().read().decode()
            values = {}
            for line in text.splitlines():
                if line.startswith("meterwise_decision_pass") or line.startswith('meterwise_jobs{state="waiting"}'):
                    name, value = line.rsplit(" ", 1); values[name] = float(value)
            return values
        waiting = int(metrics().get('meterwise_jobs{state="waiting"}', 0))
        passes = []
        for _ in range(5):
            daemon.send_signal(signal.SIGHUP)   # reload: every job decided again, as on a link change
            time.sleep(1.5)
            m = metrics()
            passes.append((m.get("meterwise_decision_pass_seconds", 0) * 1000, int(m.get("meterwise_decision_pass_jobs", 0))))
        passes.sort()
        # Every decision turned around, as when the link becomes allowed: a policy that runs everything
        # (every job's decision changes from pause to run; the first --max-active start, against
        # 127.0.0.1:9, and the rest queue for a slot), then the shipped policy again (run -> pause).
        flips = []
        for text in ["version: 1\ndefaults:\n  action: run\n", open(os.path.join(root, "policies/default.yaml")).read()]:
            # The daemon sees the change itself (inotify); a SIGHUP as well would add a second pass, with
            # nothing left to change, and the metric shows the last pass.
            with open(policy, "w") as f: f.write(text)
            time.sleep(3)
            m = metrics()
            flips.append((m.get("meterwise_decision_pass_seconds", 0) * 1000, int(m.get("meterwise_decision_pass_jobs", 0))))
        conn.close()
        time.sleep(2)
        rss_full = rss_kib(daemon.pid)
        anon_full = rss_kib(daemon.pid, "RssAnon:")
        ticks_before = cpu_ticks(daemon.pid); t0 = time.monotonic()
        time.sleep(args.idle)
        ticks = cpu_ticks(daemon.pid) - ticks_before; elapsed = time.monotonic() - t0
        idle_pct = 100.0 * ticks / os.sysconf("SC_CLK_TCK") / elapsed
        rows += [("daemon RSS (anonymous), no jobs", f"{rss_empty/1024:.1f} MiB ({anon_empty/1024:.1f} MiB)", ""),
                 (f"daemon RSS (anonymous), {args.jobs} queued jobs ({waiting} waiting on a metered link)",
                  f"{rss_full/1024:.1f} MiB ({anon_full/1024:.1f} MiB)",
                  "anonymous <= 16 MiB at 10 000, <= 48 MiB at 100 000"),
                 (f"adding {args.jobs} jobs over the API (one fsync'd insert each)", f"{add_seconds:.1f} s", ""),
                 (f"`add` latency p50 / p99 (client side, {args.jobs} adds)", f"{p50:.2f} / {p99:.2f} ms", "p99 <= 5 ms"),
                 (f"one pass deciding every job (median of 5 reloads; jobs decided)", f"{passes[2][0]:.1f} ms ({passes[2][1]})", "<= 50 ms at 100 000"),
                 ("a pass where every decision changes: pause -> run, run -> pause (jobs decided)",
                  f"{flips[0][0]:.1f} ms ({flips[0][1]}), {flips[1][0]:.1f} ms ({flips[1][1]})", "<= 50 ms at 100 000"),
                 (f"daemon idle CPU over {args.idle} s", f"{idle_pct:.3f} %", "< 0.1 %")]
    finally:
        daemon.terminate(); daemon.wait(10)
    if args.no_demo:
        shutil.rmtree(work, ignore_errors=True)
        print("| metric | value | goal |\n|---|---|---|")
        for row in rows: print(f"| {row[0]} | {row[1]} | {row[2]} |")
        return
    # Resume latency: time from the unmetered link's return to the transfer restarting, minus resume_after.
    demo = subprocess.run([args.binary, "demo", "--json", "--size", "16MiB"], cwd=root, capture_output=True, text=True)
    events = [json.loads(l) for l in demo.stdout.splitlines() if l.startswith("{")]
    back = [e["elapsed_seconds"] for e in events if e.get("event") == "links" and e.get("metered") is False]
    resumed = [e["elapsed_seconds"] for e in events if e.get("event") == "started" and e.get("resumed_from", 0) > 0]
    if len(back) >= 2 and resumed:
        rows.append(("resume latency after the 5 s hysteresis (demo)", f"{(resumed[0] - back[1] - 5.0) * 1000:.1f} ms", ""))
    paused = [e["elapsed_seconds"] for e in events if e.get("event") == "paused"]
    metered = [e["elapsed_seconds"] for e in events if e.get("event") == "links" and e.get("metered") is True]
    if paused and metered:
        rows.append(("pause latency, link event -> transfer paused (demo)", f"{(paused[0] - metered[0]) * 1000:.1f} ms", ""))
    summary = json.loads(demo.stdout.strip().splitlines()[-1])
    rows.append(("demo: cellular bytes / wasted bytes", f"{summary['bytes_by_kind'].get('wwan', 0)} / {summary['wasted_bytes']}", "<= 64 KiB cellular"))
    shutil.rmtree(work, ignore_errors=True)
    print("| metric | value | goal |\n|---|---|---|")
    for row in rows: print(f"| {row[0]} | {row[1]} | {row[2]} |")

if __name__ == "__main__":
    main()
