#!/usr/bin/env python3
"""dupfind.dedup against rensa and datasketch on one pyarrow table, one thread each.

    python3 benches/python_peers.py [--corpus DIR] [--truth TSV] [--scorer BIN]
                                    [--libs dupfind,rensa,datasketch] [--repeat N]

The corpus (the 10k benchmark corpus, benches/bench.sh's `corpus-10000`) is read once into a
table of (path, text), written to a temporary Parquet file, and each library runs in a process
of its own that reads the table into memory and then deduplicates it through its usual Python
API, on one thread:

    dupfind      dupfind.dedup(table, id_column="path", threads=1): the engine reads the table
                 through the Arrow C stream interface, verifies every candidate exactly and
                 returns the table with its five columns
    rensa        RMinHash + RMinHashLSH over the text column, shingled in Python as
                 benches/peers.py does (dupfind's word 5-grams), candidates not verified
    datasketch   MinHash + MinHashLSH, the same way

Each prints its wall and CPU seconds (user + sys of every thread, the call alone, from the table
in memory to the answer), its MB/s (the texts' bytes over the wall time, and over the CPU time:
on a loaded machine the second is the one to compare), its peak RSS during the call (the peak
reset just before it) and that peak's growth over the RSS before the call (the interpreter and
the table). The pairs each reports (a
duplicate and its representative for dupfind; the LSH candidates for the others) are scored by
the corpus tool against the exact reference (`corpus score`, benches/corpus.rs): recall (the
reference pairs whose two documents end up joined) and precision (the reported pairs whose
exact Jaccard reaches 0.8). Not a test: the numbers depend on the machine and its load (given
in the output).

Needs pyarrow and the dupfind package (pip install ./python), and `pip install rensa
datasketch` for the peers (never in tests/python/requirements.txt); the scorer is
`cargo build --release --example corpus`.
"""

import argparse
import importlib.metadata
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
THRESHOLD, NUM_PERM, NGRAM = 0.8, 128, 5


def read_corpus(root):
    """The corpus as a table of (path relative to `root`, text), files in sorted order, decoded
    as dupfind reads them (a BOM dropped, invalid bytes replaced)."""
    import pyarrow as pa

    paths, texts = [], []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                texts.append(f.read().decode("utf-8-sig", errors="replace"))
            paths.append(os.path.relpath(path, root))
    return pa.table({"path": paths, "text": texts})


def status_mb(field):
    """A field of /proc/self/status (VmRSS, VmHWM), in MB."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise KeyError(field)


def reset_peak():
    """Starts the peak RSS (VmHWM) again from the RSS now (Linux 4.0 and later), so that the
    peak after a call is the call's, not the table's reading."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_dupfind(table):
    """(duplicate, representative) pairs by path."""
    import pyarrow.compute as pc

    import dupfind

    out = dupfind.dedup(table, id_column="path", threads=1, threshold=THRESHOLD,
                        num_perm=NUM_PERM, ngram=NGRAM)
    dups = out.filter(pc.invert(out["dupfind_keep"]))
    return list(zip(dups["path"].to_pylist(), dups["dupfind_duplicate_of"].to_pylist()))


def run_peer(lib, table):
    """A peer's LSH candidates, by path, through benches/peers.py's runner of it."""
    sys.path.insert(0, HERE)
    import peers

    paths = table["path"].to_pylist()
    docs = []
    for path, text in zip(paths, table["text"].to_pylist()):
        sh = peers.shingles(text, NGRAM)
        if sh:
            docs.append((path, sh, len(text)))
    args = argparse.Namespace(threshold=THRESHOLD, num_perm=NUM_PERM)
    found = peers.RUNNERS[lib](docs, args)
    return [(docs[i][0], docs[j][0]) for i, j in found if i != j]


def child(lib, parquet, out):
    """One library's run, in this process: prints its measurements as JSON."""
    import pyarrow.parquet as pq

    table = pq.read_table(parquet)
    text_bytes = table["text"].chunk(0).buffers()[2].size if table["text"].num_chunks == 1 \
        else sum(c.buffers()[2].size for c in table["text"].chunks)
    reset_peak()
    before = status_mb("VmRSS")
    cpu, start = cpu_seconds(), time.perf_counter()
    pairs = run_dupfind(table) if lib == "dupfind" else run_peer(lib, table)
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    peak = status_mb("VmHWM")
    seen = set()
    with open(out, "w", encoding="utf-8") as f:
        for a, b in pairs:
            key = (min(a, b), max(a, b))
            if key not in seen:
                seen.add(key)
                f.write(f"{key[0]}\t{key[1]}\n")
    print(json.dumps({"lib": lib, "version": importlib.metadata.version(lib),
                      "rows": table.num_rows, "text_mb": text_bytes / 1e6, "wall": wall,
                      "cpu": cpu, "mb_s": text_bytes / 1e6 / wall,
                      "mb_cpu_s": text_bytes / 1e6 / cpu, "peak_mb": peak,
                      "growth_mb": peak - before, "pairs": len(seen)}))


def score(scorer, truth, root, pairs):
    """The corpus tool's recall and precision of `pairs` (a TSV of relative paths)."""
    out = subprocess.run([scorer, "score", "--truth", truth, "--root", root, "--pairs", pairs],
                         capture_output=True, text=True, check=True).stdout
    return dict(kv.split("=", 1) for kv in out.split())


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", default=os.path.join(ROOT, "target", "bench", "corpus-10000"))
    p.add_argument("--truth", default=None, help="default: CORPUS.truth.tsv")
    p.add_argument("--scorer", default=os.path.join(ROOT, "target", "release", "examples",
                                                    "corpus"))
    p.add_argument("--libs", default="dupfind,rensa,datasketch")
    p.add_argument("--repeat", type=int, default=1, help="runs of each library (best kept)")
    p.add_argument("--child", nargs=3, metavar=("LIB", "PARQUET", "OUT"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(*args.child)
        return 0

    import pyarrow.parquet as pq

    truth = args.truth or args.corpus.rstrip("/") + ".truth.tsv"
    table = read_corpus(args.corpus)
    print(f"corpus {args.corpus}: {table.num_rows} documents; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores at the start", file=sys.stderr)
    env = dict(os.environ, RAYON_NUM_THREADS="1", OMP_NUM_THREADS="1")
    rows = []
    with tempfile.TemporaryDirectory(prefix="dupfind-peers-") as tmp:
        parquet = os.path.join(tmp, "corpus.parquet")
        pq.write_table(table, parquet, compression="none")
        for lib in args.libs.split(","):
            best = None
            for _ in range(args.repeat):
                out = os.path.join(tmp, f"{lib}.tsv")
                proc = subprocess.run([sys.executable, __file__, "--child", lib, parquet, out],
                                      capture_output=True, text=True, env=env, check=False)
                if proc.returncode != 0:
                    print(f"{lib}: failed (pip install {lib}?)\n{proc.stderr}", file=sys.stderr)
                    break
                run = json.loads(proc.stdout.strip().splitlines()[-1])
                if best is None or run["wall"] < best["wall"]:
                    best = run
            if best is None:
                continue
            if os.access(args.scorer, os.X_OK) and os.path.exists(truth):
                best.update(score(args.scorer, truth, args.corpus, out))
            rows.append(best)
    print(f"load average {os.getloadavg()[0]:.2f} at the end", file=sys.stderr)
    print("| library | version | wall s | CPU s | MB/s (wall) | MB/CPU-s | peak RSS MB "
          "| growth MB | pairs | recall | precision |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['lib']} | {r['version']} | {r['wall']:.2f} | {r['cpu']:.2f} "
              f"| {r['mb_s']:.1f} | {r['mb_cpu_s']:.1f} | {r['peak_mb']:.0f} "
              f"| {r['growth_mb']:.0f} | {r['pairs']} "
              f"| {r.get('recall', '-')} | {r.get('precision', '-')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
