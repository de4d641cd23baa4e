#!/usr/bin/env python3
"""The staged pipeline's group step (the shuffle) in DuckDB, for one large machine.

    group.py --work DIR [--part J/M] [--threads T] [--memory-limit 20GB] [--temp-directory D]

Replaces `dupfind stage group --work DIR --part J/M` for every partition (or only J with
--part) and writes the same files (docs/staged.md): `group/part-J.parquet`, the buckets of two
or more documents of partition J's keys, with `table` (int32), `key` (int64), `docs`
(list<int64>, increasing) and `aux` (list<int64>: the content table's low hash halves, parallel
to `docs`; empty for bands), tagged with its lineage (footer key-value metadata `dupfind.run`
and `dupfind.lineage`); then `group/part-J.json` ({"lineage", "part", "keys", "buckets",
"largest"}, sealed), last. Each file is written under a temporary name, fsynced and renamed into
place, as the stages write theirs. The key files are checked against their shards' summaries
first (contrib/staged/workfiles.py): a misplaced, stale or damaged one is refused by name. In a
run --against an index, `attach/keys-J.parquet` (the indexed documents' keys) is grouped too.
DIR may be a URL (s3://bucket/prefix, as the stages take it): the key files are then fetched
into TMPDIR for DuckDB, and each file written is uploaded whole, as the stages write theirs.

DuckDB sorts and spills to disk past its memory limit, so a partition larger than memory is
grouped all the same (see docs/staged-engines.md for the whole pipeline around it).
"""

import argparse
import contextlib
import json
import os
import sys

import duckdb

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "staged"))
import workfiles  # noqa: E402  (the work-file contract, beside run-local.sh)

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


def read_json(work, rel, what):
    """A JSON file a stage wrote; exits naming the stage to run when it is missing."""
    try:
        return json.loads(workfiles.read_bytes(work, rel))
    except FileNotFoundError:
        raise SystemExit(f"group.py: {workfiles.location(work, rel)} is missing: {what}") from None


def check_signed(work, plan, part):
    """Refuses to group before every shard is signed (and, in a run --against an index, the
    indexed documents attached), or key files that are not the ones their producers' summaries
    record; returns the group summary's `consumed` map and each key file, work-relative, with
    the CRC-32 its producer recorded (checked as the file is read, once)."""
    try:
        signed = workfiles.signed_shards(work, plan)
        attached = workfiles.attached(work, plan)
        consumed = workfiles.check_keys(work, plan, signed, part, crc=False,
                                        attached=attached)[0]
    except workfiles.WorkFileError as e:
        raise SystemExit(f"group.py: {e}") from None
    files = [(workfiles.key_file(shard, part), s) for shard, s in enumerate(signed)]
    if attached is not None:
        files.append((workfiles.attach_key_file(part), attached))
    return consumed, [(rel, s["lineage"]["files"][rel]) for rel, s in files]


def group_part(con, work, plan, part):
    """Groups partition `part` into `group/part-J.parquet`, then writes `group/part-J.json`."""
    consumed, keys = check_signed(work, plan, part)
    with contextlib.ExitStack() as stack:
        # Local copies when the work directory is on a store, for DuckDB to read.
        files = []
        for rel, want in keys:
            path, crc = stack.enter_context(workfiles.fetched(work, rel))
            try:
                workfiles.check_crc(work, rel, want, crc)
            except workfiles.WorkFileError as e:
                raise SystemExit(f"group.py: {e}") from None
            files.append(path)
        return group_files(con, work, plan, part, files, consumed)


def group_files(con, work, plan, part, files, consumed):
    """Groups the local key `files` of partition `part` and writes its work files."""
    attempt = workfiles.fresh_attempt()
    kv = workfiles.tag(plan, attempt, "group", part=part)
    rel = f"group/part-{part:06d}.parquet"
    temp = workfiles.temp_for(work, rel)
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE buckets AS "
                    + GROUP_SQL.format(files=sql_list(files)))
        meta = ", ".join(f"{sql_string(k)}: {sql_string(v)}" for k, v in kv.items())
        con.execute(f"COPY (SELECT * FROM buckets ORDER BY \"table\", key) TO {sql_string(temp)} "
                    f"(FORMAT parquet, COMPRESSION zstd, KV_METADATA {{{meta}}})")
        crc = workfiles.crc32_file(temp)
        workfiles.commit(work, rel, temp)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    keys = con.execute(f"SELECT count(*) FROM read_parquet({sql_list(files)})").fetchone()[0]
    buckets, largest = con.execute(
        "SELECT count(*), coalesce(max(len(docs)), 0) FROM buckets").fetchone()
    con.execute("DROP TABLE buckets")
    summary = workfiles.group_summary(plan, attempt, part, keys, buckets, largest, crc, consumed)
    workfiles.write_bytes(work, f"group/part-{part:06d}.json", summary)
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
    ap.add_argument("--work", required=True, help="the work directory (or URL) of a signed run")
    ap.add_argument("--part", help="only partition J of M (J/M); default: every partition")
    ap.add_argument("--threads", type=int, help="DuckDB's threads (default: every core)")
    ap.add_argument("--memory-limit", help="DuckDB's memory limit, as 20GB (default: 80%% of RAM)")
    ap.add_argument("--temp-directory", help="where DuckDB spills (default: beside its database)")
    args = ap.parse_args(argv)
    work = workfiles.local_work(args.work)
    plan = read_json(work, "run.json", "run `dupfind stage init` first")
    parts = [parse_part(args.part, plan["parts"])] if args.part else range(plan["parts"])
    con = duckdb.connect()
    if args.threads:
        con.execute(f"SET threads = {int(args.threads)}")
    if args.memory_limit:
        con.execute(f"SET memory_limit = {sql_string(args.memory_limit)}")
    if args.temp_directory:
        con.execute(f"SET temp_directory = {sql_string(args.temp_directory)}")
    for part in parts:
        group_part(con, work, plan, part)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
