#!/usr/bin/env python3
"""Runs one command and prints "wall cpu peak_rss_kib peak_anon_kib" on one line.

wall: seconds from start to exit; cpu: user + sys seconds (the process and its children, from wait4);
peak_rss_kib: the program's high-water mark (VmHWM in /proc/PID/status, last seen); peak_anon_kib: the
largest RssAnon seen there (anonymous memory: heap, stacks, buffers; not the binary's file-backed pages,
not the page cache of what it writes). Both sampled every 2 ms, and only once the command is exec'd: the
forked child is a copy of this Python process until then, and its memory is not the command's (wait4's
ru_maxrss keeps the pre-exec high-water mark, so it is not used).
Usage: measure.py OUTFILE -- COMMAND ARGS...   (stdout/stderr of the command go to OUTFILE.log)
"""
import os, sys, time

def memory(pid):
    """(RssAnon, VmHWM) in KiB from /proc/PID/status; zeros once the process is gone."""
    anon = hwm = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    anon = int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
    except OSError:
        pass
    return anon, hwm

def main():
    out = sys.argv[1]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    log = os.open(out + ".log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    # Closed by the child's exec (os.pipe is close-on-exec): from then on /proc/PID is the command's.
    ready_r, ready_w = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        os.dup2(log, 1)
        os.dup2(log, 2)
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    os.close(ready_w)
    os.read(ready_r, 1)
    os.close(ready_r)
    peak_anon = 0
    peak_rss = 0
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        anon, hwm = memory(pid)
        peak_anon = max(peak_anon, anon)
        peak_rss = max(peak_rss, hwm)
        time.sleep(0.002)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    with open(out, "w") as f:
        f.write(f"{wall:.3f} {usage.ru_utime + usage.ru_stime:.3f} {peak_rss or usage.ru_maxrss} {peak_anon} {code}\n")
    sys.exit(0 if code == 0 else 1)

main()
