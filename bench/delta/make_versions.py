#!/usr/bin/env python3
"""Writes a reproducible "old" image and its "new" version for the delta bench, or keeps them if there.

old.img: SIZE random bytes from random.Random(SEED), written 1 MiB at a time.
new.img: old.img with
  - 5 % of its 4096-byte blocks replaced by other random bytes, in runs of 1-8 consecutive blocks at random
    places (runs never touch each other, so each stays 1-8 blocks long);
  - INSERTIONS insertions and DELETIONS deletions of 1-5000 random bytes at random places (never inside a
    changed run or another deletion), which shift everything after them.
Every choice comes from random.Random(SEED) (layout) and random.Random(SEED + 1) (the new bytes), so the
same SIZE and SEED give the same two files byte for byte.

DIR/manifest.json is written last: the parameters, both sizes and sha256s, and what was changed. When it is
there with the same parameters and both files have their sizes, nothing is written again.
Usage: make_versions.py --size BYTES --seed N --dir DIR   (prints the manifest's path)
"""
import argparse, hashlib, json, os, random, sys

VERSION = 1  # bump when the layout of the edits changes: cached files made by another version are remade
BLOCK = 4096
CHUNK = 1 << 20


def layout(size, seed, changed_fraction, insertions, deletions):
    """The edits, in old.img's offsets: (offset, kind, length) with kind "replace", "delete" or "insert"."""
    rng = random.Random(seed)
    blocks = (size + BLOCK - 1) // BLOCK
    target = round(blocks * changed_fraction)
    marked = bytearray(blocks + 2)  # marked[b + 1]: block b is changed (one spare slot each side)
    runs, total = [], 0
    while total < target:
        length = min(rng.randint(1, 8), target - total)
        start = rng.randrange(blocks)
        if start + length > blocks or any(marked[start : start + length + 2]):
            continue  # overlaps or touches another run
        marked[start + 1 : start + length + 1] = b"\x01" * length
        runs.append((start, length))
        total += length
    edits = [(b * BLOCK, "replace", min(n * BLOCK, size - b * BLOCK)) for b, n in runs]

    def free(offset, length):  # [offset, offset + length) misses every changed block and every deletion
        first, last = offset // BLOCK, (offset + max(length, 1) - 1) // BLOCK
        if any(marked[first + 1 : last + 2]):
            return False
        return all(offset + length <= o or o + n <= offset for o, kind, n in edits if kind == "delete")

    for kind, count in (("delete", deletions), ("insert", insertions)):
        placed = 0
        while placed < count:
            length = rng.randint(1, 5000)
            offset = rng.randrange(size - (length if kind == "delete" else 0))
            if free(offset, length if kind == "delete" else 0):
                edits.append((offset, kind, length))
                placed += 1
    # At one offset an insertion goes before what starts there.
    edits.sort(key=lambda e: (e[0], e[1] != "insert"))
    return edits, runs


def write_old(path, size, seed):
    rng = random.Random(seed)
    digest = hashlib.sha256()
    with open(path + ".tmp", "wb") as f:
        left = size
        while left:
            chunk = rng.randbytes(min(CHUNK, left))
            digest.update(chunk)
            f.write(chunk)
            left -= len(chunk)
    os.replace(path + ".tmp", path)
    return digest.hexdigest()


def write_new(old_path, path, size, seed, edits):
    fill = random.Random(seed + 1)
    digest = hashlib.sha256()
    written = 0
    with open(old_path, "rb") as old, open(path + ".tmp", "wb") as f:

        def put(data):
            nonlocal written
            digest.update(data)
            f.write(data)
            written += len(data)

        def copy(start, end):
            old.seek(start)
            while start < end:
                data = old.read(min(CHUNK, end - start))
                put(data)
                start += len(data)

        position = 0
        for offset, kind, length in edits:
            copy(position, offset)
            position = offset
            if kind in ("replace", "insert"):
                put(fill.randbytes(length))
            if kind in ("replace", "delete"):
                position = offset + length
        copy(position, size)
    os.replace(path + ".tmp", path)
    return digest.hexdigest(), written


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, required=True, help="old.img's size in bytes")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--changed", type=float, default=0.05, help="fraction of blocks changed")
    parser.add_argument("--insertions", type=int, default=5)
    parser.add_argument("--deletions", type=int, default=3)
    args = parser.parse_args()
    if args.size < 64 * BLOCK:
        sys.exit("make_versions: --size must be at least 256 KiB")
    params = {"version": VERSION, "size": args.size, "seed": args.seed, "block": BLOCK,
              "changed_fraction": args.changed, "insertions": args.insertions, "deletions": args.deletions}
    manifest_path = os.path.join(args.dir, "manifest.json")
    old_path, new_path = os.path.join(args.dir, "old.img"), os.path.join(args.dir, "new.img")
    try:
        with open(manifest_path) as f:
            manifest = json.load(f)
        if (manifest["params"] == params and os.path.getsize(old_path) == args.size
                and os.path.getsize(new_path) == manifest["new_size"]):
            print(manifest_path)
            return
    except (OSError, ValueError, KeyError):
        pass
    os.makedirs(args.dir, exist_ok=True)
    try:
        os.unlink(manifest_path)
    except FileNotFoundError:
        pass
    print(f"make_versions: writing old.img and new.img ({args.size} bytes, seed {args.seed}) in {args.dir} ...",
          file=sys.stderr)
    edits, runs = layout(args.size, args.seed, args.changed, args.insertions, args.deletions)
    old_sha = write_old(old_path, args.size, args.seed)
    new_sha, new_size = write_new(old_path, new_path, args.size, args.seed, edits)
    by_kind = lambda kind: [n for _, k, n in edits if k == kind]
    manifest = {
        "params": params,
        "old_sha256": old_sha, "new_sha256": new_sha, "new_size": new_size,
        "changed_blocks": sum(n for _, n in runs), "changed_runs": len(runs),
        "changed_bytes": sum(by_kind("replace")),
        "inserted_bytes": by_kind("insert"), "deleted_bytes": by_kind("delete"),
    }
    with open(manifest_path + ".tmp", "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    os.replace(manifest_path + ".tmp", manifest_path)
    print(manifest_path)


main()
