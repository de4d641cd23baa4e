#!/usr/bin/env python3
"""The staged pipeline's group step (the shuffle) in DuckDB, for one large machine.

    group.py --work DIR [--part J/M] [--threads T] [--memory-limit 20GB] [--temp-directory D]

Replaces `dupfind stage group --work DIR --part J/M` for every partition (or only J with
--part) and writes the same files (docs/staged.md): `group/part-J.parquet`, the buckets of two
or more documents of partition J's keys, with `table` (int32), `key` (int64), `docs`
(list<int64>, increasing) and `aux` (list<int64>: the content table's low hash halves, parallel
to `docs`; empty for bands), tagged with the run (footer key-value metadata `dupfind.run`); then
`group/part-J.json` ({"run", "part", "keys", "buckets", "largest"}), last. Each file is written
under a temporary name, fsynced and renamed into place, as the stages write theirs.

DuckDB sorts and spills to disk past its memory limit, so a partition larger than memory is
grouped all the same (see docs/staged-engines.md for the whole pipeline around it).
"""

import argparse
import json
import os
import sys
import uuid

import duckdb

# The grouping, one partition at a time: {files} is the list of its key files. Rows are sorted
# by (doc, aux) within a bucket, as `stage group` sorts them, and the content table (-1) alone
# keeps its aux values.
GROUP_SQL = """
SELECT "table", key,
       list(doc ORDER BY doc, aux) AS docs,
       CASE WHEN "table" = -1 THEN list(aux ORDER BY doc, aux) ELSE []::BIGINT[] END AS aux
FROM read_parquet({files})
GROUP BY "table", key
HAVING count(*) >= 2
ORDER BY "table", key
"""


def sql_string(s):
    """`s` as an SQL string literal."""
    return "'" + s.replace("'", "''") + "'"


def sql_list(items):
    """A list of strings as an SQL list literal."""
    return "[" + ", ".join(sql_string(i) for i in items) + "]"


def read_json(path, what):
    """A JSON file a stage wrote; exits naming the stage to run when it is missing."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise SystemExit(f"group.py: {path} is missing: {what}") from None


def check_signed(con, work, plan):
    """Refuses to group before every shard is signed, or key files of another run."""
    run, shards, parts = plan["run"], plan["shards"], plan["parts"]
    for shard in range(shards):
        path = os.path.join(work, "sign", f"shard-{shard:06d}.json")
        summary = read_json(path, f"shard {shard} has not been signed "
                                  f"(run `dupfind stage sign --shard {shard}/{shards}`)")
        if summary.get("run") != run:
            raise SystemExit(f"group.py: {path} belongs to another run "
                             f"(run {summary.get('run')}; this work directory's run is {run})")
    files = [keys_path(work, i, j) for i in range(shards) for j in range(parts)]
    tags = dict(con.execute(
        f"SELECT file_name, decode(value) FROM parquet_kv_metadata({sql_list(files)}) "
        "WHERE decode(key) = 'dupfind.run'").fetchall())
    for f in files:
        if tags.get(f) != run:
            raise SystemExit(f"group.py: {f} belongs to another run (run {tags.get(f)}; "
                             f"this work directory's run is {run}): sign its shard again")


def keys_path(work, shard, part):
    """`sign/shard-I.keys-J.parquet`."""
    return os.path.join(work, "sign", f"shard-{shard:06d}.keys-{part:06d}.parquet")


def commit(temp, path):
    """Makes `temp` durable as `path`: fsync, rename over any older file, fsync the directory."""
    with open(temp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(temp, path)
    fd = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temp_beside(path):
    """A fresh temporary name in `path`'s directory (dot-prefixed, as the stages name theirs)."""
    return os.path.join(os.path.dirname(path), f".dupfind-duckdb-{uuid.uuid4().hex}.tmp")


def group_part(con, work, plan, part):
    """Groups partition `part` into `group/part-J.parquet`, then writes `group/part-J.json`."""
    run = plan["run"]
    files = [keys_path(work, shard, part) for shard in range(plan["shards"])]
    out_dir = os.path.join(work, "group")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"part-{part:06d}.parquet")
    temp = temp_beside(path)
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE buckets AS "
                    + GROUP_SQL.format(files=sql_list(files)))
        con.execute(f"COPY (SELECT * FROM buckets ORDER BY \"table\", key) TO {sql_string(temp)} "
                    f"(FORMAT parquet, COMPRESSION zstd, "
                    f"KV_METADATA {{'dupfind.run': {sql_string(run)}}})")
        commit(temp, path)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    keys = con.execute(f"SELECT count(*) FROM read_parquet({sql_list(files)})").fetchone()[0]
    buckets, largest = con.execute(
        "SELECT count(*), coalesce(max(len(docs)), 0) FROM buckets").fetchone()
    con.execute("DROP TABLE buckets")
    summary = {"run": run, "part": part, "keys": keys, "buckets": buckets, "largest": largest}
    summary_path = os.path.join(out_dir, f"part-{part:06d}.json")
    temp = temp_beside(summary_path)
    try:
        with open(temp, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2)
            f.write("\n")
        commit(temp, summary_path)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    return summary


def parse_part(text, parts):
    """`J/M` as J, checking M against the run's partitions."""
    try:
        j, m = (int(x) for x in text.split("/"))
    except ValueError:
        raise SystemExit(f"group.py: --part {text!r} is not J/M (as 0/4)") from None
    if m != parts:
        raise SystemExit(f"group.py: --part .../{m}: the run has {parts} partitions "
                         "(see its run.json)")
    if not 0 <= j < m:
        raise SystemExit(f"group.py: --part {text}: J must be 0 to {m - 1}")
    return j


def main(argv):
    """Groups the partitions asked for; prints nothing on success (exit 0)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--work", required=True, help="the work directory of a signed run")
    ap.add_argument("--part", help="only partition J of M (J/M); default: every partition")
    ap.add_argument("--threads", type=int, help="DuckDB's threads (default: every core)")
    ap.add_argument("--memory-limit", help="DuckDB's memory limit, as 20GB (default: 80%% of RAM)")
    ap.add_argument("--temp-directory", help="where DuckDB spills (default: beside its database)")
    args = ap.parse_args(argv)
    work = os.path.abspath(args.work)
    plan = read_json(os.path.join(work, "run.json"), "run `dupfind stage init` first")
    parts = [parse_part(args.part, plan["parts"])] if args.part else range(plan["parts"])
    con = duckdb.connect()
    if args.threads:
        con.execute(f"SET threads = {int(args.threads)}")
    if args.memory_limit:
        con.execute(f"SET memory_limit = {sql_string(args.memory_limit)}")
    if args.temp_directory:
        con.execute(f"SET temp_directory = {sql_string(args.temp_directory)}")
    check_signed(con, work, plan)
    for part in parts:
        group_part(con, work, plan, part)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
