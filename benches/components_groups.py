#!/usr/bin/env python3
"""Synthetic group files for benches/components.sh: a work directory whose `stage components`
input is families of 2 to 6 near-duplicate documents, each family a bucket in about 70% of the
band tables (as a real family shares most of its bands), and every tenth family holding one
byte-identical copy. Takes run.json and group/part-J.json from a work directory that has been
grouped (they carry its run id), and writes the group files of --candidates documents.

    python3 benches/components_groups.py --from W --out W2 --candidates 1000000 [--bands 19]

Needs pyarrow.
"""

import argparse
import json
import random
import shutil
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


M64 = (1 << 64) - 1


def partition(table, key, parts):
    """The group partition of a bucket (src/stages/sign.rs `partition`, key as stored)."""
    z = ((key & M64) ^ (1 << 63)) ^ ((table & 0xFFFFFFFF) << 32)
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return (z ^ (z >> 31)) % parts


def families(n, rng):
    """Consecutive runs of 2 to 6 document numbers covering 0..n."""
    start = 0
    while start < n:
        size = min(rng.randint(2, 6), n - start)
        yield list(range(start, start + size))
        start += size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--from", dest="source", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--candidates", type=int, default=1_000_000)
    ap.add_argument("--bands", type=int, default=19)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    source, out = Path(a.source), Path(a.out)
    plan = json.loads((source / "run.json").read_text())
    shards, parts, run = plan["shards"], plan["parts"], plan["run"]
    shutil.rmtree(out, ignore_errors=True)
    (out / "group").mkdir(parents=True)
    shutil.copy(source / "run.json", out / "run.json")
    summaries = [json.loads((source / "group" / f"part-{j:06d}.json").read_text()) for j in range(parts)]

    rng = random.Random(a.seed)
    n = a.candidates
    # Document i of n is in shard i * shards // n: ids are shard << 32 | position.
    ids = [(i * shards // n) << 32 | i for i in range(n)]
    rows = [[] for _ in range(parts)]
    for f, fam in enumerate(families(n, rng)):
        docs = [ids[i] for i in fam]
        if f % 10 == 0:
            key, low = rng.getrandbits(63), rng.getrandbits(63)
            rows[partition(-1, key, parts)].append((-1, key, docs[:2], [low, low]))
        for t in range(a.bands):
            if rng.random() < 0.7:
                key = rng.getrandbits(64) - (1 << 63)
                rows[partition(t, key, parts)].append((t, key, docs, []))
    for j, mine in enumerate(rows):
        mine.sort(key=lambda r: (r[0], r[1]))
        table = pa.table(
            {
                "table": pa.array([r[0] for r in mine], pa.int32()),
                "key": pa.array([r[1] for r in mine], pa.int64()),
                "docs": pa.array([r[2] for r in mine], pa.list_(pa.int64())),
                "aux": pa.array([r[3] for r in mine], pa.list_(pa.int64())),
            }
        )
        # The tag and CRC-32 every stage checks a file it reads against: the group attempt's
        # (taken from its summary, which then lists this file's CRC-32 and is sealed again).
        summary = summaries[j]
        tag = {k: summary["lineage"][k] for k in ("run", "stage", "part", "attempt", "digest")}
        table = table.replace_schema_metadata(
            {"dupfind.run": run, "dupfind.lineage": json.dumps(tag, separators=(",", ":"))}
        )
        path = out / "group" / f"part-{j:06d}.parquet"
        pq.write_table(table, path, row_group_size=65536)
        mine.clear()
        crc = zlib.crc32(path.read_bytes())
        summary["lineage"]["files"] = {f"group/part-{j:06d}.parquet": f"{crc:08x}"}
        del summary["seal"]
        body = json.dumps(summary, indent=2).encode()
        body = body.rstrip()[:-1].rstrip() + b",\n  "
        seal = zlib.crc32(body)
        sealed = body + f'"seal": "{seal:08x}"\n}}\n'.encode()
        (out / "group" / f"part-{j:06d}.json").write_bytes(sealed)


if __name__ == "__main__":
    main()
