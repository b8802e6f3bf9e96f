#!/usr/bin/env python3
"""Runs one command and prints "wall cpu peak_rss_kib peak_anon_kib" on one line.

wall: seconds from start to exit; cpu: user + sys seconds (the process and its children, from wait4);
peak_rss_kib: the kernel's high-water mark (ru_maxrss); peak_anon_kib: the largest RssAnon seen in
/proc/PID/status, sampled every 2 ms (anonymous memory: heap, stacks, buffers; not the binary's
file-backed pages, not the page cache of what it writes).
Usage: measure.py OUTFILE -- COMMAND ARGS...   (stdout/stderr of the command go to OUTFILE.log)
"""
import os, sys, time

def rss_anon(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0

def main():
    out = sys.argv[1]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    log = os.open(out + ".log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.execvp(cmd[0], cmd)
    peak_anon = 0
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        peak_anon = max(peak_anon, rss_anon(pid))
        time.sleep(0.002)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    with open(out, "w") as f:
        f.write(f"{wall:.3f} {usage.ru_utime + usage.ru_stime:.3f} {usage.ru_maxrss} {peak_anon} {code}\n")
    sys.exit(0 if code == 0 else 1)

main()
