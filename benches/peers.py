#!/usr/bin/env python3
"""Run a Python near-duplicate library on a directory, with dupfind's shingling.

    python3 benches/peers.py --lib {datasketch|rensa|gaoya} --ngram 5 --threshold 0.8 \
        --num-perm 128 --out PAIRS.tsv DIR

Used by benches/bench.sh for the side-by-side table; not part of dupfind or its tests.

Shingling is dupfind's default: UTF-8 (a BOM dropped, invalid bytes replaced), lowercased,
split on white space, word n-grams joined by single spaces; a document with fewer than n tokens
is one shingle of all its tokens; empty documents are skipped. Python's str.split() splits on
the same Unicode White_Space characters except that it also splits on U+001C..U+001F (file,
group, record and unit separators), which never occur in the benchmark corpus.

Every library gets the banding datasketch chooses for the threshold with equal false-positive
and false-negative weights (9 bands x 13 rows for 0.8 and 128 permutations; rensa needs a
divisor of 128 and gets 16 x 8, see run_rensa), and reports its LSH candidates as it returns them. datasketch and rensa do not verify them;
gaoya filters them by the signature estimate.

Prints one line: lib=... version=... docs=... bytes=... seconds=... lib_seconds=...
where seconds is end to end (read, shingle, sketch, index, query) and lib_seconds only the
library calls. A library that is not installed prints "lib=NAME unavailable" and exits 3.
"""

import argparse
import importlib.metadata
import os
import sys
import time


def shingles(text, n):
    tokens = text.lower().split()
    if not tokens:
        return []
    if len(tokens) < n:
        return [" ".join(tokens)]
    return list({" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)})


def documents(root, n):
    """(relative path, shingles, size in bytes) of every regular file, in sorted order."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if not os.path.isfile(path) or os.path.islink(path):
                continue
            with open(path, "rb") as f:
                data = f.read()
            text = data.decode("utf-8-sig", errors="replace")
            sh = shingles(text, n)
            if sh:
                out.append((os.path.relpath(path, root), sh, len(data)))
    return out


def banding(threshold, num_perm):
    from datasketch.lsh import _optimal_param

    return _optimal_param(threshold, num_perm, 0.5, 0.5)


def run_datasketch(docs, args):
    from datasketch import MinHash, MinHashLSH

    b, r = banding(args.threshold, args.num_perm)
    lsh = MinHashLSH(num_perm=args.num_perm, params=(b, r))
    sigs = []
    for i, (_, sh, _) in enumerate(docs):
        m = MinHash(num_perm=args.num_perm, seed=1)
        m.update_batch([s.encode("utf-8") for s in sh])
        lsh.insert(i, m)
        sigs.append(m)
    return [(i, j) for i, m in enumerate(sigs) for j in lsh.query(m)]


def run_rensa(docs, args):
    from rensa import RMinHash, RMinHashLSH

    # rensa needs bands that divide num_perm: take the divisor whose S-curve midpoint
    # (1/b)^(1/r) is the highest one not above the threshold (16 x 8 for 0.8 and 128; 8 x 16
    # would put the midpoint at 0.88, above the threshold).
    k = args.num_perm
    fits = [d for d in range(1, k + 1) if k % d == 0 and (1 / d) ** (d / k) <= args.threshold]
    b = max(fits, key=lambda d: (1 / d) ** (d / k)) if fits else k
    lsh = RMinHashLSH(threshold=args.threshold, num_perm=args.num_perm, num_bands=b)
    sigs = []
    for i, (_, sh, _) in enumerate(docs):
        m = RMinHash(num_perm=args.num_perm, seed=1)
        m.update(sh)
        lsh.insert(i, m)
        sigs.append(m)
    return [(i, j) for i, m in enumerate(sigs) for j in lsh.query(m)]


def run_gaoya(docs, args):
    from gaoya.minhash import MinHashStringIndex

    b, r = banding(args.threshold, args.num_perm)
    # The documents are handed over already shingled, so gaoya's own tokenizer is not used.
    index = MinHashStringIndex(
        hash_size=32,
        jaccard_threshold=args.threshold,
        num_bands=b,
        band_size=r,
        analyzer=lambda shingled: shingled,
    )
    for i, (_, sh, _) in enumerate(docs):
        index.insert_document(i, sh)
    return [(i, j) for i, (_, sh, _) in enumerate(docs) for j in index.query(sh)]


RUNNERS = {"datasketch": run_datasketch, "rensa": run_rensa, "gaoya": run_gaoya}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lib", choices=sorted(RUNNERS), required=True)
    p.add_argument("--ngram", type=int, default=5)
    p.add_argument("--threshold", type=float, default=0.8)
    p.add_argument("--num-perm", type=int, default=128)
    p.add_argument("--out", required=True, help="file for the candidate pairs (a<TAB>b)")
    p.add_argument("dir")
    args = p.parse_args()

    try:
        importlib.import_module(args.lib)
        if args.lib != "datasketch":
            importlib.import_module("datasketch")  # for the shared banding choice
    except ImportError:
        print(f"lib={args.lib} unavailable")
        print(f"peers.py: pip install {args.lib} datasketch", file=sys.stderr)
        return 3
    version = importlib.metadata.version(args.lib)

    start = time.perf_counter()
    docs = documents(args.dir, args.ngram)
    lib_start = time.perf_counter()
    found = RUNNERS[args.lib](docs, args)
    end = time.perf_counter()

    pairs = set()
    for i, j in found:
        if i != j:
            a, b = docs[i][0], docs[j][0]
            pairs.add((min(a, b), max(a, b)))
    with open(args.out, "w", encoding="utf-8") as f:
        for a, b in sorted(pairs):
            f.write(f"{a}\t{b}\n")
    total = sum(size for _, _, size in docs)
    print(
        f"lib={args.lib} version={version} docs={len(docs)} bytes={total} "
        f"seconds={end - start:.3f} lib_seconds={end - lib_start:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
