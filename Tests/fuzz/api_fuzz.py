#!/usr/bin/env python3
"""Seeded fuzzer for meterwise's control API: random and mutated HTTP requests against every route of a
running daemon over its Unix socket, one connection each. Bounded in count and time; prints its seed.
Exits 1 (naming the request) if the daemon stops answering: no request may end the process.

usage: api_fuzz.py SOCKET [--seed N] [--count N] [--seconds S] [--job ID]
"""
import argparse
import json
import random
import socket
import sys
import time

ROUTES = ["/v1/jobs", "/v1/jobs/{id}", "/v1/jobs/{id}/explain", "/v1/jobs/{id}/pause", "/v1/jobs/{id}/resume",
          "/v1/jobs/{id}/cancel", "/v1/jobs/{id}/bogus", "/v1/decision", "/v1/usage", "/v1/events", "/v1/links",
          "/metrics", "/", "//", "/v1", "/v1/", "/v1/jobs/", "/v1/jobs//explain", "/v1/jobs/{id}/explain/more",
          "/v1/../v1/links", "/%00", "/v1/jobs/%2e%2e", "/v1/jobs/" + "x" * 5000]
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "CONNECT", "TRACE", "BREW", "get", "G\x00T"]
NAMES = ["size", "tags", "allow_metered", "allow_roaming", "priority", "", "bytes", "x", "size[]", "%", "%zz",
         "\u00e9", "tags%00"]
EXTREMES = ["", "0", "1", "-1", "true", "false", "yes", "1e30", "NaN", "-0", "0x10", " 1", "1 ",
            "9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
            "18446744073709551616", "1125899906842624", "1125899906842625", "1000", "-1000", "1001", "-1001",
            "%", "%f", "%ff", "%00", "%C2%9B", "a,,b,", ",", "x" * 300, ",".join(["t"] * 70), "\u009b31m",
            "9" * 400]


def json_values(rng, depth=0):
    kinds = [None, True, False, 0, -1, 1, 2 ** 40, 2 ** 40 + 1, 2 ** 63 - 1, -2 ** 63, 2 ** 63, 2 ** 64, 1e308,
             -1e308, 1.5, "", "x", "\u009b", "a" * 1000]
    if depth < 3:
        kinds += [[], {}, "LIST", "OBJ"]
    v = rng.choice(kinds)
    if v == "LIST":
        return [json_values(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if v == "OBJ":
        keys = ["bytes", "url", "destination", "priority", "size", "tags", "sha256", "segments", "allow_metered",
                "max_size", "ca_file", "proxy", "head_url", "", "unknown"]
        return {rng.choice(keys): json_values(rng, depth + 1) for _ in range(rng.randint(0, 5))}
    return v


def body(rng):
    choice = rng.randrange(12)
    if choice == 0:
        return b""
    if choice == 1:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 200)))
    if choice == 2:
        return b"[" * 50_000 + b"]" * 50_000  # deep nesting
    if choice == 3:
        return b"{\"bytes\": " + rng.choice([b"1e400", b"-1", b"NaN", b"99999999999999999999999", b"\"1\"", b"null"]) + b"}"
    if choice == 4:
        return json.dumps({"bytes": rng.choice([0, 1, 2 ** 40, 2 ** 40 + 1, 2 ** 63 - 1, -2 ** 63])}).encode()
    if choice == 5:
        return json.dumps({"url": "http://127.0.0.1:1/x", "destination": rng.choice(
            ["/tmp/f", "", "/proc/self/fd/1", "../../etc/passwd", "/dev/null", "a" * 5000]),
            "priority": rng.choice([0, -2 ** 63, 2 ** 63 - 1]), "tags": ["t"] * rng.randint(0, 100)}).encode()
    if choice == 6:
        return b"{" * 3 + b"\"bytes\":1"
    return json.dumps(json_values(rng)).encode()


def query(rng):
    if rng.random() < 0.25:
        return ""
    pairs = []
    for _ in range(rng.randint(0, 6)):
        name = rng.choice(NAMES)
        value = rng.choice(EXTREMES)
        form = rng.randrange(5)
        if form == 0:
            pairs.append(name)
        elif form == 1:
            pairs.append("=" + value)
        else:
            pairs.append(name + "=" + value)
    if rng.random() < 0.1:
        pairs = pairs * 3
    sep = rng.choice(["&", "&&", ";", "&"])
    return "?" + sep.join(pairs) + rng.choice(["", "&", "=", "?", "#frag"])


def request(rng, job):
    method = rng.choice(METHODS[:4]) if rng.random() < 0.8 else rng.choice(METHODS)
    path = rng.choice(ROUTES).replace("{id}", rng.choice([job, job, "nope", "", "%00", job + "/.."]))
    data = body(rng) if method in ("POST", "PUT", "PATCH") or rng.random() < 0.1 else b""
    head = f"{method} {path}{query(rng)} HTTP/1.1\r\nHost: x\r\n"
    if data and rng.random() < 0.9:
        head += "Content-Type: application/json\r\n"
    if rng.random() < 0.1:
        head += f"Content-Length: {rng.choice([0, 1, len(data) + 5, 2 ** 62])}\r\n"
    else:
        head += f"Content-Length: {len(data)}\r\n"
    head += "Connection: close\r\n\r\n"
    raw = head.encode("utf-8", "surrogateescape") + data
    if rng.random() < 0.15:  # mutate a few bytes of a well-formed request
        raw = bytearray(raw)
        for _ in range(rng.randint(1, 8)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        raw = bytes(raw)
    return raw


def send(path, raw, timeout):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
    except OSError as error:
        return None, error
    status = "no-answer"
    try:
        s.sendall(raw)
        reply = s.recv(256)
        if reply.startswith(b"HTTP/1.1 "):
            status = reply[9:12].decode("ascii", "replace")
        elif reply == b"":
            status = "closed"
    except OSError:
        pass  # a timeout (an event stream stays open) or a reset: the daemon's choice, not a death
    finally:
        s.close()
    return status, None


def alive(path):
    status, error = send(path, b"GET /v1/links HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 5)
    return status == "200", error


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("socket")
    parser.add_argument("--seed", type=int, default=random.randrange(2 ** 32))
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--job", default="nojob")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"api fuzz: seed {args.seed} (replay: api_fuzz.py SOCKET --seed {args.seed})", flush=True)
    statuses = {}
    deadline = time.monotonic() + args.seconds
    sent = 0
    for n in range(args.count):
        if time.monotonic() > deadline:
            break
        raw = request(rng, args.job)
        status, error = send(args.socket, raw, 0.5)
        sent += 1
        if error is not None:
            ok, why = alive(args.socket)
            if not ok:
                print(f"api fuzz: the daemon stopped answering after request {n}: {raw[:300]!r} ({why})")
                return 1
            status = "refused"
        statuses[status] = statuses.get(status, 0) + 1
        if n % 100 == 99:
            ok, why = alive(args.socket)
            if not ok:
                print(f"api fuzz: the daemon stopped answering by request {n}: last {raw[:300]!r} ({why})")
                return 1
    ok, why = alive(args.socket)
    if not ok:
        print(f"api fuzz: the daemon stopped answering at the end ({why})")
        return 1
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items()))
    print(f"api fuzz: {sent} requests, seed {args.seed}, the daemon still answers; statuses {summary}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
