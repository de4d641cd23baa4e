"""contrib/duckdb/group.py: the same buckets as `dupfind stage group`, and scan's report when it
stands in for the group stage of a whole pipeline."""

import glob
import os
import sys

import pyarrow.parquet as pq
import pytest

from conftest import ROOT, comparable_summary, indexed_then_changed, run, scan_against
from test_spark_cluster import BUCKET, s3_env  # noqa: F401  (moto, as the Spark tests start it)

GROUP = os.path.join(ROOT, "contrib", "duckdb", "group.py")


def stage(dupfind, name, work, *args):
    """Runs one stage of the binary."""
    return run([dupfind, "stage", name, "--work", str(work), *args])


def signed(dupfind, work, docs, shards, parts, options):
    """A work directory through init and sign."""
    stage(dupfind, "init", work, "--shards", str(shards), "--parts", str(parts), *options, docs)
    for i in range(shards):
        stage(dupfind, "sign", work, "--shard", f"{i}/{shards}")


def buckets(work):
    """Every bucket in the group files as (file, table, key, docs, aux), sorted, and the
    summaries' text."""
    rows = []
    for path in sorted(glob.glob(os.path.join(work, "group", "part-*.parquet"))):
        meta = pq.read_metadata(path).metadata
        assert b"dupfind.run" in meta and b"dupfind.lineage" in meta, f"{path} has no lineage"
        for r in pq.read_table(path).to_pylist():
            rows.append((os.path.basename(path), r["table"], r["key"], tuple(r["docs"]),
                         tuple(r["aux"])))
    summaries = {os.path.basename(p): comparable_summary(open(p, "rb").read())
                 for p in glob.glob(os.path.join(work, "group", "part-*.json"))}
    return sorted(rows), summaries


@pytest.mark.parametrize("options,shards,parts", [
    ([], 3, 4),
    (["-m", "simhash"], 2, 3),
    ([], 2, 64),  # most partitions without a bucket: empty files
])
def test_duckdb_groups_as_the_group_stage(dupfind, docs, tmp_path, options, shards, parts):
    """DuckDB's buckets (table, key, docs, aux) and summaries are the Rust stage's."""
    rust, duck = tmp_path / "rust", tmp_path / "duck"
    signed(dupfind, rust, docs, shards, parts, options)
    import shutil

    shutil.copytree(rust, duck)
    for j in range(parts):
        stage(dupfind, "group", rust, "--part", f"{j}/{parts}")
    run([sys.executable, GROUP, "--work", str(duck)])
    got, got_summaries = buckets(duck)
    want, want_summaries = buckets(rust)
    assert got == want
    assert got_summaries == want_summaries
    assert len(got_summaries) == parts
    assert any(r[1] == -1 for r in want), "the corpus has byte-identical copies"


@pytest.mark.parametrize("options,shards,parts", [
    ([], 3, 2),
    (["-m", "simhash"], 2, 2),
    (["--pairs", "--exit-code"], 1, 3),
])
def test_pipeline_with_duckdb_group_reports_as_scan(dupfind, docs, scan, tmp_path, options,
                                                    shards, parts):
    """init, sign, DuckDB's group (one partition at a time, as a job array would), components,
    route, verify, report: scan's report and status."""
    work = tmp_path / "work"
    signed(dupfind, work, docs, shards, parts, options)
    for j in range(parts):
        run([sys.executable, GROUP, "--work", str(work), "--part", f"{j}/{parts}"])
    stage(dupfind, "components", work)
    for i in range(shards):
        stage(dupfind, "route", work, "--shard", f"{i}/{shards}")
    for k in range(parts):
        stage(dupfind, "verify", work, "--part", f"{k}/{parts}")
    status, out = run([dupfind, "stage", "report", "--work", str(work)], ok=(0, 1))
    want_status, want = scan(options)
    assert out == want
    assert status == want_status


def test_pipeline_with_duckdb_group_and_its_work_on_s3_reports_as_scan(dupfind, docs, scan,
                                                                       s3_env):
    """Review finding 12: with --work s3://…, group.py took the URL for a local path and said
    to run `stage init`; it reads and writes the work files on the store, as the stages do."""
    work = f"s3://{BUCKET}/duckdb-run"
    on_s3 = {"env": s3_env}
    run([dupfind, "stage", "init", "--work", work, "--shards", "2", "--parts", "2", docs],
        **on_s3)
    for i in range(2):
        run([dupfind, "stage", "sign", "--work", work, "--shard", f"{i}/2"], **on_s3)
    run([sys.executable, GROUP, "--work", work], **on_s3)
    for name, flag in [("components", None), ("route", "--shard"), ("verify", "--part")]:
        for i in range(2 if flag else 1):
            run([dupfind, "stage", name, "--work", work, *([flag, f"{i}/2"] if flag else [])],
                **on_s3)
    status, out = run([dupfind, "stage", "report", "--work", work], ok=(0, 1), **on_s3)
    assert (status, out) == scan([])
    # Uploaded, not written under a local path named after the URL.
    assert not os.path.exists("s3:")


def test_duckdb_groups_the_indexed_documents_keys_of_a_run_against_an_index(dupfind, docs,
                                                                            tmp_path):
    """In a run --against an index, DuckDB groups attach's keys with the shards' (one more
    source, its summary consumed), as the group stage does, and the run reports as scan
    --against does."""
    inputs, idx = indexed_then_changed(dupfind, docs, str(tmp_path))
    rust, duck = tmp_path / "rust", tmp_path / "duck"
    signed(dupfind, rust, inputs, 2, 3, ["--against", idx])
    stage(dupfind, "attach", rust)
    import shutil

    shutil.copytree(rust, duck)
    for j in range(3):
        stage(dupfind, "group", rust, "--part", f"{j}/3")
    run([sys.executable, GROUP, "--work", str(duck)])
    assert buckets(duck) == buckets(rust)
    stage(dupfind, "components", duck)
    for i in range(2):
        stage(dupfind, "route", duck, "--shard", f"{i}/2")
    for k in range(3):
        stage(dupfind, "verify", duck, "--part", f"{k}/3")
    _, out = run([dupfind, "stage", "report", "--work", str(duck)])
    want, _ = scan_against(dupfind, inputs, idx, [])
    assert out == want.stdout


def test_duckdb_refuses_an_unsigned_run(dupfind, docs, tmp_path):
    """Grouping before every shard is signed names the shard to sign."""
    work = tmp_path / "work"
    stage(dupfind, "init", work, "--shards", "2", docs)
    stage(dupfind, "sign", work, "--shard", "0/2")
    import subprocess

    proc = subprocess.run([sys.executable, GROUP, "--work", str(work)], capture_output=True,
                          stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode != 0
    assert b"shard 1 has not been signed" in proc.stderr, proc.stderr


def test_duckdb_refuses_misplaced_or_damaged_key_files_and_its_groups_go_stale(dupfind, docs,
                                                                               tmp_path):
    """The DuckDB group step checks each key file's lineage and CRC-32 as `stage group` does,
    and a shard signed again after it grouped makes its summary stale for `stage report`."""
    import shutil
    import subprocess

    work = tmp_path / "work"
    signed(dupfind, work, docs, 2, 2, [])

    def group():
        return subprocess.run([sys.executable, GROUP, "--work", str(work)], capture_output=True,
                              stdin=subprocess.DEVNULL, check=False)

    a = work / "sign" / "shard-000000.keys-000000.parquet"
    b = work / "sign" / "shard-000000.keys-000001.parquet"
    saved = a.read_bytes()
    shutil.copyfile(b, a)
    proc = group()
    assert proc.returncode != 0
    assert b"was written for stage sign, shard 0, partition 1, not stage sign, shard 0, " \
           b"partition 0: it is misplaced" in proc.stderr, proc.stderr
    flipped = bytearray(saved)
    flipped[len(flipped) // 3] ^= 0x10
    a.write_bytes(bytes(flipped))
    proc = group()
    assert proc.returncode != 0 and b"is damaged: its CRC-32 is" in proc.stderr, proc.stderr
    a.write_bytes(saved)
    assert group().returncode == 0
    # Shard 1 signed again (a retried task) after DuckDB grouped its keys.
    stage(dupfind, "sign", work, "--shard", "1/2")
    status = subprocess.run([dupfind, "stage", "status", "--work", str(work), "--todo", "group"],
                            capture_output=True, stdin=subprocess.DEVNULL, check=True)
    assert status.stdout == b"0\n1\n"
