"""contrib/spark/dupfind_spark.py under `local[2]`: its report is `scan`'s, byte for byte.

Each run starts a JVM (a few seconds) and runs every stage; the group step is Spark SQL's,
written by the driver's tasks with pyarrow, and checked here against `dupfind stage group`.
"""

import glob
import os
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from conftest import (comparable_summary, index_files, indexed_then_changed, ROOT, run,
                      scan_against)

DRIVER = os.path.join(ROOT, "contrib", "spark", "dupfind_spark.py")


def spark(dupfind, work, shards, parts, options, inputs, extra=(), ok=(0, 1)):
    """Runs the driver (`extra`: its own options); returns (exit status, stdout)."""
    cmd = [sys.executable, DRIVER, "--master", "local[2]", "--dupfind", dupfind, *extra,
           "--work", str(work), "--shards", str(shards), "--parts", str(parts),
           *options, *inputs]
    return run(cmd, ok=ok)


def bucket_rows(work):
    """Every bucket of a work directory's group files, as a sorted list of tuples."""
    rows = []
    for path in sorted(glob.glob(os.path.join(work, "group", "part-*.parquet"))):
        for r in pq.read_table(path).to_pylist():
            rows.append((os.path.basename(path), r["table"], r["key"], tuple(r["docs"]),
                         tuple(r["aux"])))
    return sorted(rows)


@pytest.mark.parametrize("options,shards,parts,extra", [
    ([], 3, 2, []),
    (["-m", "simhash"], 2, 3, ["--conf", "spark.task.cpus=1", "--timings"]),
    (["--pairs", "--cluster", "components", "--exit-code"], 4, 4, []),
])
def test_spark_report_is_scans(dupfind, docs, scan, tmp_path, options, shards, parts, extra):
    """The driver prints scan's report and exits with scan's status."""
    work = tmp_path / "work"
    status, out = spark(dupfind, work, shards, parts, options, [docs], extra)
    want_status, want = scan(options)
    assert out == want, "the Spark driver's report differs from scan's"
    assert status == want_status
    if options == []:
        assert_group_is_binarys(dupfind, work, tmp_path / "again", parts)


def assert_group_is_binarys(dupfind, work, again, parts):
    """The same run's group files from `dupfind stage group` hold the same buckets, partition
    by partition, and the same summaries."""
    shutil.copytree(work, again)
    shutil.rmtree(again / "group")
    for j in range(parts):
        run([dupfind, "stage", "group", "--work", str(again), "--part", f"{j}/{parts}"])
    assert bucket_rows(work) == bucket_rows(again)
    for j in range(parts):
        name = f"part-{j:06d}.json"
        assert (comparable_summary((work / "group" / name).read_bytes())
                == comparable_summary((again / "group" / name).read_bytes()))


def test_spark_stage_failure_surfaces_its_stderr(dupfind, docs, tmp_path):
    """A stage that fails stops the run with its message on stderr and a non-zero status."""
    cmd = [sys.executable, DRIVER, "--master", "local[2]", "--dupfind", dupfind,
           "--work", str(tmp_path / "w"), "--shards", "2", "--containment", docs]
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    assert proc.returncode == 2
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert "containment" in err and "dupfind stage init failed" in err, err


@pytest.mark.parametrize("update", [[], ["--update"]])
def test_spark_against_an_index_is_scan_against_it(dupfind, docs, tmp_path, update):
    """--against IDX [--update] passed on: the driver prints scan --against's report, stderr and
    exit status, and leaves the index as scan --update leaves it; its group files (the indexed
    documents' keys among them) are `dupfind stage group`'s."""
    inputs, idx = indexed_then_changed(dupfind, docs, str(tmp_path))
    want, want_index = scan_against(dupfind, inputs, idx, update)
    assert want.returncode == 0, want.stderr.decode()
    assert (want_index == index_files(idx)) == (not update)
    work = tmp_path / "work"
    got = subprocess.run([sys.executable, DRIVER, "--master", "local[2]", "--dupfind", dupfind,
                          "--work", str(work), "--shards", "3", "--parts", "2",
                          "--against", idx, *update, inputs],
                         stdin=subprocess.DEVNULL, capture_output=True, check=False)
    assert got.stdout == want.stdout, "the Spark driver's report differs from scan's"
    assert got.stderr.decode() == want.stderr.decode()
    assert got.returncode == want.returncode
    assert index_files(idx) == want_index
    if not update:
        assert_group_is_binarys(dupfind, work, tmp_path / "again", 2)


def test_spark_against_a_url_is_refused_by_init(dupfind, docs, tmp_path):
    """An index on an object store is refused as `stage init` refuses it: its message, exit
    status 2, nothing on stdout."""
    cmd = [sys.executable, DRIVER, "--master", "local[2]", "--dupfind", dupfind,
           "--work", str(tmp_path / "w"), "--against", "s3://bucket/idx", docs]
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    want = subprocess.run([dupfind, "scan", "--against", "s3://bucket/idx", docs],
                          stdin=subprocess.DEVNULL, capture_output=True, check=False)
    assert proc.returncode == 2 == want.returncode
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert want.stderr.decode() in err and "dupfind stage init failed" in err, err


def test_spark_writes_scans_deduplicated_dataset(dupfind, docs, tmp_path):
    """With --write-dataset, the driver's dataset parts, in shard order, are scan's one part."""
    run([dupfind, "scan", "-q", "--write-dataset", str(tmp_path / "by-scan"), docs], ok=(0, 1))
    want = (tmp_path / "by-scan" / "part-00000.jsonl").read_bytes()
    assert want.count(b"\n") > 10, "the corpus has documents that are kept"
    _, out = spark(dupfind, tmp_path / "work", 3, 2,
                   ["--write-dataset", str(tmp_path / "by-spark")], [docs])
    assert b'"clusters"' in out
    parts = sorted(glob.glob(str(tmp_path / "by-spark" / "part-*.jsonl")))
    assert len(parts) == 3
    got = b"".join(open(p, "rb").read() for p in parts)
    assert got == want


def test_spark_says_when_executors_cannot_run_the_binary(dupfind, docs, tmp_path):
    """--executor-dupfind naming no binary: the first stage's tasks fail with a message that
    names what to do, exit status 2, nothing on stdout."""
    cmd = [sys.executable, DRIVER, "--master", "local[2]", "--dupfind", dupfind,
           "--executor-dupfind", str(tmp_path / "no-such-dupfind"),
           "--work", str(tmp_path / "w"), "--shards", "2", docs]
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    assert proc.returncode == 2
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert "cannot run the dupfind binary" in err and "no-such-dupfind" in err, err
    assert "dupfind stage sign --shard 0/2 failed" in err, err


def test_a_task_without_the_index_says_where_it_must_be(dupfind, tmp_path):
    """A sign or verify task on a machine without the run's index (an executor of a cluster
    without a shared file system) fails with a message that says where the index must be,
    before the binary runs; the other stages' tasks never open it."""
    sys.path.insert(0, os.path.dirname(DRIVER))
    import dupfind_spark

    missing = str(tmp_path / "no-index")
    for stage in ("sign", "verify"):
        r = dupfind_spark.run_stage(("path", dupfind), stage, str(tmp_path / "w"), "--shard", 1,
                                    4, 1, missing)
        assert r["status"] == 2
        assert f"stage {stage} 1/4 on " in r["stderr"], r["stderr"]
        assert f"there is no index at {missing} (--against) on this machine" in r["stderr"]
        assert "every machine that runs tasks" in r["stderr"], r["stderr"]
    # The binary's own refusal (no run in the work directory), not the index's.
    r = dupfind_spark.run_stage(("path", dupfind), "route", str(tmp_path / "w"), "--shard", 0, 1,
                                1, missing)
    assert r["status"] == 2 and "no index" not in r["stderr"], r["stderr"]
