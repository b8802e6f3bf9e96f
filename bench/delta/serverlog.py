#!/usr/bin/env python3
"""Reads the delta bench's nginx access log (the `delta` log_format of bench/delta/run.sh, tab-separated):

  $msec $remote_port $connection $connection_requests $status $bytes_sent $body_bytes_sent
  $request_length "$request" "$http_range" "$sent_http_content_type"

Usage:
  serverlog.py lines LOG                     the number of lines LOG has now
  serverlog.py sum LOG FROM TO               the bytes nginx sent for lines FROM+1..TO (headers included)
  serverlog.py stats LOG FROM TO FILE_SIZE   requests, connections, ranges per request, multipart/byteranges
                                             overhead (one line of `key=value` and a readable summary)
  serverlog.py live LOG FROM PORT            bytes sent so far by the requests after line FROM: the logged
                                             ones, and what the connections still open to PORT have sent
                                             (tcp_info's bytes_sent from `ss`; their logged requests are in it)
"""
import re, subprocess, sys

FIELDS = ("msec", "port", "connection", "requests", "status", "bytes_sent", "body_bytes_sent",
          "request_length", "request", "range", "content_type")


def count_lines(path):
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def entries(path, first, last=None):
    """The parsed lines first+1..last (all after first when last is None)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if number <= first:
                continue
            if last is not None and number > last:
                break
            parts = line.rstrip("\n").split("\t")
            if len(parts) != len(FIELDS):
                continue
            entry = dict(zip(FIELDS, parts))
            for key in ("port", "connection", "requests", "status", "bytes_sent", "body_bytes_sent", "request_length"):
                entry[key] = int(entry[key])
            for key in ("request", "range", "content_type"):
                entry[key] = entry[key].strip('"')
            yield entry


def ranges(header, size):
    """[(first, last)] of a Range header's byte ranges (clipped to the file), [] when there is none."""
    if not header.startswith("bytes="):
        return []
    out = []
    for spec in header[len("bytes="):].split(","):
        first, _, last = spec.strip().partition("-")
        if first == "":  # suffix: the last N bytes
            out.append((max(0, size - int(last)), size - 1))
        else:
            out.append((int(first), min(int(last), size - 1) if last else size - 1))
    return out


def open_connections(port):
    """{client port: bytes_sent} of the established connections to 127.0.0.1:PORT, from the server's side."""
    text = subprocess.run(["ss", "-tinH", "state", "established", f"( sport = :{port} )"],
                          capture_output=True, text=True).stdout
    sent, peer = {}, None
    for line in text.splitlines():
        if not line.startswith((" ", "\t")):
            fields = line.split()
            peer = int(fields[-1].rsplit(":", 1)[1]) if fields else None
            continue
        match = re.search(r"\bbytes_sent:(\d+)", line)
        if peer is not None:
            sent[peer] = int(match.group(1)) if match else 0
    return sent


class Live:
    """Bytes sent for the requests after line FIRST so far, polled cheaply: the log is read on from where the
    last poll stopped; `ss` (a process to start) is asked at most every SS_EVERY seconds. A connection still
    open counts what tcp_info says it sent (its logged requests are part of that), a closed one its lines."""

    SS_EVERY = 0.1

    def __init__(self, path, first, port):
        self.file = open(path, encoding="utf-8", errors="replace")
        self.port, self.skip, self.partial = port, first, ""
        self.by_port, self.connections, self.asked = {}, {}, 0.0

    def poll(self, now):
        data = self.partial + self.file.read()
        lines = data.split("\n")
        self.partial = lines.pop()
        for line in lines:
            if self.skip:
                self.skip -= 1
                continue
            parts = line.split("\t")
            if len(parts) == len(FIELDS):
                port, sent = int(parts[1]), int(parts[5])
                self.by_port[port] = self.by_port.get(port, 0) + sent
        if now - self.asked >= self.SS_EVERY:
            self.connections, self.asked = open_connections(self.port), now
        total = sum(self.by_port.values())
        for port, sent in self.connections.items():
            total += max(0, sent - self.by_port.get(port, 0))
        return total


def live(path, first, port):
    return Live(path, first, port).poll(1e9)


def stats(path, first, last, size):
    rows = list(entries(path, first, last))
    per_request = [len(ranges(e["range"], size)) for e in rows]
    ranged = [n for n in per_request if n]
    multipart = [(e, n) for e, n in zip(rows, per_request) if e["content_type"].startswith("multipart/byteranges")]
    payload = sum(b - a + 1 for e, _ in multipart for a, b in ranges(e["range"], size))
    parts = sum(n for _, n in multipart)
    body = sum(e["body_bytes_sent"] for e, _ in multipart)
    headers = sum(e["bytes_sent"] - e["body_bytes_sent"] for e in rows)
    lengths = sorted(b - a + 1 for e in rows for a, b in ranges(e["range"], size))
    median = lambda xs: xs[len(xs) // 2] if xs else 0
    result = {
        "requests": len(rows),
        "connections": len({e["connection"] for e in rows}),
        "bytes_sent": sum(e["bytes_sent"] for e in rows),
        "ranged_requests": len(ranged),
        "ranges": sum(ranged),
        "ranges_per_request_median": median(sorted(ranged)),
        "ranges_per_request_max": max(ranged, default=0),
        "range_bytes_median": median(lengths),
        "range_bytes": sum(lengths),
        "multipart_responses": len(multipart),
        "multipart_parts": parts,
        "multipart_overhead_per_part": round((body - payload) / parts, 1) if parts else 0,
        "response_header_bytes_per_request": round(headers / len(rows), 1) if rows else 0,
        "request_bytes_per_request": round(sum(e["request_length"] for e in rows) / len(rows), 1) if rows else 0,
        "statuses": ",".join(f"{s}x{sum(1 for e in rows if e['status'] == s)}" for s in sorted({e["status"] for e in rows})),
    }
    return result


def main():
    command, path = sys.argv[1], sys.argv[2]
    if command == "lines":
        print(count_lines(path))
    elif command == "sum":
        print(sum(e["bytes_sent"] for e in entries(path, int(sys.argv[3]), int(sys.argv[4]))))
    elif command == "stats":
        result = stats(path, int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
        print(" ".join(f"{k}={v}" for k, v in result.items()))
    elif command == "live":
        print(live(path, int(sys.argv[3]), int(sys.argv[4])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
