#!/usr/bin/env python3
"""Runs one download of the mirrors bench and measures it; reads the mirrors' access logs.

  drive.py run OUT TIMEOUT MEMCAP_MIB [--mirror NAME PORT LOG]... [--tc] [--kill NAME PIDFILE BYTES] -- CMD...
      Runs CMD (stdout to OUT.out, stderr to OUT.err) and writes OUT, one JSON object: wall, cpu (user + sys
      of it and its children, from wait4), rss_kib (VmHWM, sampled every 10 ms once CMD is exec'd), exit
      (the exit code, or "timeout" after TIMEOUT s, or "memcap" when its RSS passed MEMCAP_MIB: both
      SIGKILLed with its process group; so is it when this is sent SIGTERM, SIGINT or SIGHUP).
      With --mirror (all three) and --kill: polls what has arrived (every 50 ms, then every 100 ms after the
      kill) and SIGKILLs mirror NAME's nginx (master and workers: its process group, from PIDFILE) once BYTES
      have arrived in all. "Arrived" is what left each mirror's port: with --tc the bytes its htb class on
      `lo` has sent (headers included), else what nginx sent (the access log's $bytes_sent of finished
      requests and tcp_info's bytes_sent of the connections still open, from `ss`). Adds: kill_at (s),
      arrived_at_kill, sent_at_kill (per mirror, nginx's count), pre_rate (B/s over the 2 s before the kill),
      switch (s from the kill to the start of the first 0.5 s window in which the other mirrors deliver
      >= 0.9 x 2/3 of pre_rate; null if never), stall (the longest stretch after the kill with less than
      1/10 of pre_rate arriving from them), and samples [[t, arrived from each mirror...], ...].
  drive.py lines LOG                       the number of lines LOG has now
  drive.py sent LOG FROM TO                "bytes_sent body_bytes_sent requests" of lines FROM+1..TO
  drive.py region LOG FROM TO START END    how many times lines FROM+1..TO served [START, END) (the bytes of
                                           each response's body that fall in it, over END - START)
  drive.py longest LOG FROM TO PIECE       the MiB offset of the piece in the middle of the longest range lines
                                           FROM+1..TO sent (nothing if none)
  drive.py tc PORT...                      "bytes bytes ..." the htb classes of these ports have sent so far
  drive.py idle PORT...                    waits (up to 10 s) until no connection to these ports is left

The access log is the delta bench's format (bench/delta/run.sh), tab-separated:
  $msec $remote_port $connection $connection_requests $status $bytes_sent $body_bytes_sent
  $request_length "$request" "$http_range" "$sent_http_content_type"
"""
import json, os, re, signal, subprocess, sys, time

sys.dont_write_bytecode = True


def entries(path, first, last):
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if number <= first:
                continue
            if number > last:
                break
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 11:
                yield {"port": int(parts[1]), "status": int(parts[4]), "sent": int(parts[5]),
                       "body": int(parts[6]), "range": parts[9].strip('"')}


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


def open_connections(ports):
    """{(server port, client port): bytes_sent} of the established connections to these ports."""
    if not ports:
        return {}
    expr = " or ".join(f"sport = :{p}" for p in ports)
    text = subprocess.run(["ss", "-tinH", "state", "established", f"( {expr} )"],
                          capture_output=True, text=True).stdout
    out, key = {}, None
    for line in text.splitlines():
        if not line.startswith((" ", "\t")):
            fields = line.split()
            key = (int(fields[-2].rsplit(":", 1)[1]), int(fields[-1].rsplit(":", 1)[1])) if len(fields) >= 2 else None
            continue
        match = re.search(r"\bbytes_sent:(\d+)", line)
        if key is not None:
            out[key] = int(match.group(1)) if match else 0
    return out


def tc_sent():
    """{port: bytes sent} of the htb classes on lo (run.sh names a mirror's class 1:PORT, the port in hex)."""
    text = subprocess.run(["tc", "-s", "class", "show", "dev", "lo"], capture_output=True, text=True).stdout
    out, minor = {}, None
    for line in text.splitlines():
        m = re.match(r"class htb 1:([0-9a-f]+)", line)
        if m:
            minor = int(m.group(1), 16)
            continue
        m = re.match(r"\s*Sent (\d+) bytes", line)
        if m and minor is not None:
            out[minor] = int(m.group(1))
            minor = None
    return out


class Mirrors:
    """What each mirror has sent since the start, polled."""

    def __init__(self, mirrors, use_tc):
        self.mirrors, self.use_tc = mirrors, use_tc  # [(name, port, log)]
        self.files, self.by_conn = {}, {}
        for name, port, log in mirrors:
            f = open(log, encoding="utf-8", errors="replace")
            f.seek(0, os.SEEK_END)
            self.files[name] = [f, ""]
            self.by_conn[name] = {}
        self.tc_base = tc_sent() if use_tc else {}
        self.dead = set()
        self.frozen = {}

    def sent(self):
        """{name: bytes nginx sent} for this run so far."""
        conns = open_connections([p for n, p, _ in self.mirrors if n not in self.dead])
        out = {}
        for name, port, _ in self.mirrors:
            if name in self.frozen:
                out[name] = self.frozen[name]
                continue
            entry = self.files[name]
            data = entry[1] + entry[0].read()
            lines = data.split("\n")
            entry[1] = lines.pop()
            for line in lines:
                parts = line.split("\t")
                if len(parts) == 11:
                    client = int(parts[1])
                    self.by_conn[name][client] = self.by_conn[name].get(client, 0) + int(parts[5])
            total = sum(self.by_conn[name].values())
            for (sport, client), sent in conns.items():
                if sport == port:
                    total += max(0, sent - self.by_conn[name].get(client, 0))
            out[name] = total
        return out

    def arrived(self):
        """({name: bytes arrived}, {name: nginx's count}) so far."""
        sent = self.sent()
        if not self.use_tc:
            return sent, sent
        now = tc_sent()
        return {n: now.get(p, 0) - self.tc_base.get(p, 0) for n, p, _ in self.mirrors}, sent


def usage(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            hwm = rss = 0
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
                elif line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
            return hwm, rss
    except OSError:
        return 0, 0


def run(argv):
    out, timeout, memcap = argv[0], float(argv[1]), int(argv[2]) * 1024
    cmd = argv[argv.index("--") + 1:]
    opts = argv[3:argv.index("--")]
    mirrors, use_tc, kill = [], False, None
    i = 0
    while i < len(opts):
        if opts[i] == "--mirror":
            mirrors.append((opts[i + 1], int(opts[i + 2]), opts[i + 3]))
            i += 4
        elif opts[i] == "--tc":
            use_tc = True
            i += 1
        elif opts[i] == "--kill":
            kill = (opts[i + 1], opts[i + 2], int(opts[i + 3]))
            i += 4
        else:
            sys.exit(f"drive.py: unknown option {opts[i]}")
    watch = Mirrors(mirrors, use_tc) if kill else None
    stdout = os.open(out + ".out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    stderr = os.open(out + ".err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    ready_r, ready_w = os.pipe()  # close-on-exec: readable (EOF) once the child has exec'd
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)  # its own group: a timeout or a signal to the bench kills whatever it started too
        os.close(ready_r)
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    os.close(ready_w)

    def stop(signum, _frame):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        os._exit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, stop)
    os.read(ready_r, 1)
    os.close(ready_r)
    result = {"exit": None}
    peak = 0
    samples, kill_time, last_poll = [], None, -1.0
    status = rusage = None
    while True:
        done, status, rusage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        now = time.monotonic() - start
        hwm, rss = usage(pid)
        peak = max(peak, hwm)
        if now > timeout or rss > memcap:
            result["exit"] = "timeout" if now > timeout else "memcap"
            os.killpg(pid, signal.SIGKILL)
            _, status, rusage = os.wait4(pid, 0)
            break
        if watch and now - last_poll >= (0.1 if kill_time is not None else 0.05):
            last_poll = now
            arrived, sent = watch.arrived()
            samples.append([round(now, 3)] + [arrived[n] for n, _, _ in mirrors])
            if kill_time is None and sum(samples[-1][1:]) >= kill[2]:
                name, pidfile, _ = kill
                with open(pidfile) as f:
                    master = int(f.read().split()[0])
                os.killpg(master, signal.SIGKILL)  # nginx's master made its own group (setsid); workers are in it
                kill_time = time.monotonic() - start
                trigger_time = samples[-1][0]
                watch.dead.add(name)
                watch.frozen[name] = sent[name]
                result.update(kill_at=round(kill_time, 3), arrived_at_kill=sum(samples[-1][1:]), sent_at_kill=sent)
        time.sleep(0.01)
    wall = time.monotonic() - start
    if result["exit"] is None:
        result["exit"] = os.waitstatus_to_exitcode(status)
    result.update(wall=round(wall, 3), cpu=round(rusage.ru_utime + rusage.ru_stime, 3), rss_kib=peak or rusage.ru_maxrss)
    if watch and kill_time is not None:
        killed = [n for n, _, _ in mirrors].index(kill[0])
        result.update(switch_stats(samples, kill_time, trigger_time, killed))
        result["samples"] = samples
    with open(out, "w") as f:
        json.dump(result, f)


def switch_stats(samples, kill, trigger, killed):
    """The rate before the kill (all mirrors), the switch time and the longest stall after it (the others only:
    what the killed one's queue still delivers after the kill is not counted); see the docstring."""
    before = [(s[0], sum(s[1:])) for s in samples if trigger - 2.0 <= s[0] <= trigger]
    pre = (before[-1][1] - before[0][1]) / (before[-1][0] - before[0][0]) if len(before) > 1 and before[-1][0] > before[0][0] else 0
    # From the poll that triggered the kill (ms before it).
    after = [(s[0], sum(s[1:]) - s[1 + killed]) for s in samples if s[0] >= trigger]
    switch = None
    target = 0.9 * 2 / 3 * pre
    for i, (t0, b0) in enumerate(after):
        for t1, b1 in after[i + 1:]:
            if t1 - t0 >= 0.5:
                if (b1 - b0) / (t1 - t0) >= target:
                    switch = round(max(0.0, t0 - kill), 2)
                break
        if switch is not None:
            break
    stall, run_start = 0.0, None
    for (t0, b0), (t1, b1) in zip(after, after[1:]):
        if (b1 - b0) / (t1 - t0) < pre / 10:
            run_start = t0 if run_start is None else run_start
            stall = max(stall, t1 - run_start)
        else:
            run_start = None
    return {"pre_rate": round(pre), "switch": switch, "stall": round(stall, 2)}


def served(path, first, last):
    """[(start, end)] of the bytes each response of lines FIRST+1..LAST carried (single ranges only)."""
    out = []
    for e in entries(path, first, last):
        header = e["range"]
        if header.startswith("bytes="):
            spec = header[6:]
            if "," in spec:
                continue  # several ranges in one request: not used by these clients
            a, _, _ = spec.partition("-")
            if a == "":
                continue
            begin = int(a)
        else:
            begin = 0
        if e["status"] not in (200, 206):
            continue
        out.append((begin, begin + e["body"]))
    return out


def region(path, first, last, start, end):
    covered = sum(max(0, min(b, end) - max(a, start)) for a, b in served(path, first, last))
    return covered / (end - start)


def longest(path, first, last, piece):
    ranges = [r for r in served(path, first, last) if r[1] - r[0] >= 3 * piece]
    if ranges:
        a, b = max(ranges, key=lambda r: r[1] - r[0])
        print(((a + b) // 2 // piece * piece) >> 20)


def idle(ports):
    deadline = time.monotonic() + 10
    while open_connections(ports) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.1)


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "run":
        run(args)
    elif command == "lines":
        print(count_lines(args[0]))
    elif command == "sent":
        rows = list(entries(args[0], int(args[1]), int(args[2])))
        print(sum(e["sent"] for e in rows), sum(e["body"] for e in rows), len(rows))
    elif command == "region":
        print(f"{region(args[0], int(args[1]), int(args[2]), int(args[3]), int(args[4])):.2f}")
    elif command == "tc":
        sent = tc_sent()
        print(" ".join(str(sent.get(int(p), 0)) for p in args))
    elif command == "longest":
        longest(args[0], int(args[1]), int(args[2]), int(args[3]))
    elif command == "idle":
        idle([int(p) for p in args])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
