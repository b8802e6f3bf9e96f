#!/usr/bin/env python3
"""Runs a download and kills it with SIGKILL part-way, for the delta bench's kill test.

The kill comes once the server has sent THRESHOLD bytes for this run (serverlog.Live, every 10 ms: the
requests logged since the start, plus what the connections still open have sent by tcp_info, so a long
request counts before it is logged), or after MAX_SECONDS if that comes first. After the kill it waits
until no connection to PORT is left, so that nginx has logged the request it was serving.

Prints one line to OUTFILE: "wall cpu peak_rss_kib sent_at_kill trigger exit" with trigger "bytes",
"time" or "finished" (the command ended before either: it was not killed).
Usage: killrun.py OUTFILE LOG PORT THRESHOLD MAX_SECONDS -- COMMAND ARGS...  (output in OUTFILE.log)
"""
import os, signal, sys, time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serverlog  # noqa: E402


def usage(pid):
    """(user + sys seconds, VmHWM KiB) of a running process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    hwm = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    return cpu, hwm


def main():
    out, log, port, threshold, max_seconds = sys.argv[1:6]
    port, threshold, max_seconds = int(port), int(threshold), float(max_seconds)
    cmd = sys.argv[sys.argv.index("--") + 1:]
    first = serverlog.count_lines(log)
    output = os.open(out + ".log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.dup2(output, 1)
        os.dup2(output, 2)
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    os.close(output)
    trigger, sent, cpu, hwm = "finished", 0, 0.0, 0
    progress = serverlog.Live(log, first, port)
    while True:
        done, status, rusage = os.wait4(pid, os.WNOHANG)
        if done:  # ended before the kill
            cpu = rusage.ru_utime + rusage.ru_stime
            hwm = rusage.ru_maxrss  # may be this Python's, forked, when larger than the command's
            break
        time.sleep(0.01)
        elapsed = time.monotonic() - start
        sent = progress.poll(elapsed)
        if sent >= threshold or elapsed >= max_seconds:
            trigger = "bytes" if sent >= threshold else "time"
            try:
                cpu, hwm = usage(pid)
            except OSError:
                pass
            os.kill(pid, signal.SIGKILL)
            _, status, _ = os.wait4(pid, 0)
            break
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    deadline = time.monotonic() + 10
    while serverlog.open_connections(port) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    with open(out, "w") as f:
        f.write(f"{wall:.3f} {cpu:.3f} {hwm} {sent} {trigger} {code}\n")


main()
