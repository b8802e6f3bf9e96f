#!/usr/bin/env python3
"""A range-serving HTTP/1.1 server for the pause bench that reports, per connection, what the client's
kernel actually received: tcp_info's bytes_acked (payload bytes the client acknowledged, response heads
included) and bytes_sent, read just before the server closes the socket. One JSON line per connection
to LOG. Serves one file at /object.bin with sendfile; ETag and Last-Modified so resumes validate.

Usage: server.py FILE PORT LOG   (BIND=ADDRESS, default 127.0.0.1)
"""
import json, os, socket, struct, sys, threading

FILE, PORT, LOG = sys.argv[1], int(sys.argv[2]), sys.argv[3]
SIZE = os.path.getsize(FILE)
ETAG = '"bench-%d"' % SIZE
# struct tcp_info (linux/tcp.h): offsets of tcpi_bytes_acked and tcpi_bytes_sent; see run.sh.
ACKED, SENT = int(os.environ.get("ACKED_OFFSET", "120")), int(os.environ.get("SENT_OFFSET", "200"))
RETRANS = int(os.environ.get("RETRANS_OFFSET", "208"))
lock = threading.Lock()

def tcp_counts(sock):
    """bytes_acked, and the bytes sent once (bytes_sent less bytes_retrans) that were never acknowledged."""
    try:
        raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    except OSError:
        return 0, 0
    def u64(offset):
        return struct.unpack_from("<Q", raw, offset)[0] if len(raw) >= offset + 8 else 0
    acked = u64(ACKED)
    return acked, max(0, u64(SENT) - u64(RETRANS) - acked)

def handle(conn):
    heads = 0
    body = 0
    requests = 0
    try:
        data = b""
        with open(FILE, "rb") as f:
            while True:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, data = data.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                requests += 1
                start, end = 0, SIZE - 1
                status = "200 OK"
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "range" and value.strip().startswith("bytes="):
                        first, _, last = value.strip()[6:].partition("-")
                        start = int(first)
                        end = min(int(last), SIZE - 1) if last else SIZE - 1
                        status = "206 Partial Content"
                length = end - start + 1
                response = ("HTTP/1.1 %s\r\nContent-Length: %d\r\nETag: %s\r\nAccept-Ranges: bytes\r\n"
                            "Last-Modified: Mon, 23 Nov 2026 00:00:00 GMT\r\n" % (status, length, ETAG))
                if status.startswith("206"):
                    response += "Content-Range: bytes %d-%d/%d\r\n" % (start, end, SIZE)
                response = (response + "\r\n").encode()
                conn.sendall(response)
                heads += len(response)
                sent = conn.sendfile(f, offset=start, count=length)
                body += sent
    except OSError:
        pass
    finally:
        acked, sent_total = tcp_counts(conn)
        with lock, open(LOG, "a") as log:
            log.write(json.dumps({"acked": acked, "unacked": sent_total, "heads": heads, "body_written": body,
                                  "requests": requests}) + "\n")
        conn.close()

def main():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((os.environ.get("BIND", "127.0.0.1"), PORT))
    server.listen(64)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()

main()
