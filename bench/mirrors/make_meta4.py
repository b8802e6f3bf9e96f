#!/usr/bin/env python3
"""Data and Metalink v4 files (RFC 5854) for the mirrors bench.

  make_meta4.py data FILE SIZE                 SIZE random bytes into FILE; prints its sha256
  make_meta4.py meta4 FILE OUT.meta4 PIECE URL...
                                               a .meta4 for FILE (its name, size, sha-256 and one sha-256 per
                                               PIECE bytes), one <url priority="1"> per URL
  make_meta4.py corrupt SRC DST OFFSET LENGTH  DST: a copy of SRC with LENGTH bytes at OFFSET replaced by others
                                               (each byte XOR 0xA5: the piece's hash cannot match)
  make_meta4.py hostile DIR FILE PIECE URL     the hostile .meta4 files into DIR, from FILE's real metadata where
                                               one is needed: pieces.meta4 (1 PiB in 1 KiB pieces: 2^40 pieces
                                               declared, 65 536 <hash> elements, ~6 MB), billion-pieces.meta4
                                               (1 TiB in 1 KiB pieces: 2^30), huge-size.meta4
                                               (<size>99999999999999999999</size>), bad-hex.meta4 (one piece
                                               hash with non-hex characters; the rest right), laughs.meta4 (a
                                               billion-laughs entity bomb: 10^9 "lol" in the file's name)
"""
import hashlib, os, sys
from xml.sax.saxutils import escape

NS = "urn:ietf:params:xml:ns:metalink"
HEAD = f'<?xml version="1.0" encoding="UTF-8"?>\n<metalink xmlns="{NS}">\n  <generator>meterwise bench/mirrors</generator>\n'


def write_random(path, size):
    digest = hashlib.sha256()
    with open(path, "wb") as f:
        left = size
        while left:
            chunk = os.urandom(min(left, 8 << 20))
            digest.update(chunk)
            f.write(chunk)
            left -= len(chunk)
    return digest.hexdigest()


def hashes(path, piece):
    whole, pieces = hashlib.sha256(), []
    with open(path, "rb") as f:
        while True:
            chunk = f.read(piece)
            if not chunk:
                break
            whole.update(chunk)
            pieces.append(hashlib.sha256(chunk).hexdigest())
    return whole.hexdigest(), pieces


def document(name, size, sha, piece, pieces, urls, doctype=""):
    out = [HEAD.replace("<metalink", doctype + "<metalink", 1) if doctype else HEAD]
    out.append(f'  <file name="{name}">\n    <size>{size}</size>\n    <hash type="sha-256">{sha}</hash>\n')
    out.append(f'    <pieces type="sha-256" length="{piece}">\n')
    out.extend(f"      <hash>{h}</hash>\n" for h in pieces)
    out.append("    </pieces>\n")
    out.extend(f'    <url priority="1">{escape(u)}</url>\n' for u in urls)
    out.append("  </file>\n</metalink>\n")
    return "".join(out)


def save(path, text):
    with open(path, "w") as f:
        f.write(text)


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "data":
        print(write_random(args[0], int(args[1])))
    elif command == "meta4":
        path, out, piece, urls = args[0], args[1], int(args[2]), args[3:]
        sha, pieces = hashes(path, piece)
        save(out, document(os.path.basename(path), os.path.getsize(path), sha, piece, pieces, urls))
    elif command == "corrupt":
        src, dst, offset, length = args[0], args[1], int(args[2]), int(args[3])
        with open(src, "rb") as f:
            data = bytearray(f.read())
        data[offset:offset + length] = bytes(b ^ 0xA5 for b in data[offset:offset + length])
        with open(dst, "wb") as f:
            f.write(data)
    elif command == "hostile":
        out, path, piece, url = args[0], args[1], int(args[2]), args[3]
        name, size = os.path.basename(path), os.path.getsize(path)
        sha, pieces = hashes(path, piece)
        # 65 536 distinct-looking piece hashes (~6 MB with the markup) for a file that would need 2^30 or 2^40.
        many = [hashlib.sha256(i.to_bytes(8, "little")).hexdigest() for i in range(65536)]
        save(f"{out}/pieces.meta4", document(name, 1 << 50, sha, 1024, many, [url]))
        save(f"{out}/billion-pieces.meta4", document(name, 1 << 40, sha, 1024, many, [url]))
        save(f"{out}/huge-size.meta4", document(name, "99999999999999999999", sha, piece, pieces, [url]))
        bad = list(pieces)
        bad[3] = "zz" + bad[3][2:-4] + "g!#q"  # 64 characters, not hex
        save(f"{out}/bad-hex.meta4", document(name, size, sha, piece, bad, [url]))
        entities = ['<!ENTITY lol "lol">'] + [
            f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">' for i in range(1, 10)]
        doctype = "<!DOCTYPE metalink [\n  " + "\n  ".join(entities) + "\n]>\n"
        save(f"{out}/laughs.meta4", document("&lol9;", size, sha, piece, pieces, [url], doctype))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
