"""contrib/spark/dupfind_spark.py under `local[2]`: its report is `scan`'s, byte for byte.

Each run starts a JVM (a few seconds) and runs every stage; the group step is Spark SQL's,
written by the driver's tasks with pyarrow, and checked here against `dupfind stage group`.
"""

import glob
import os
import shutil
import sys

import pyarrow.parquet as pq
import pytest

from conftest import comparable_summary, ROOT, run

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
        # The same run's group files from `dupfind stage group` hold the same buckets, partition
        # by partition, and the same summaries.
        again = tmp_path / "again"
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
    import subprocess

    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    assert proc.returncode == 2
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert "containment" in err and "dupfind stage init failed" in err, err


def test_spark_refuses_against_before_starting(dupfind, docs, tmp_path):
    """--against (which its Spark SQL group step does not run yet) is refused before init."""
    cmd = [sys.executable, DRIVER, "--master", "local[2]", "--dupfind", dupfind,
           "--work", str(tmp_path / "w"), "--against", str(tmp_path / "idx"), docs]
    import subprocess

    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert "--against is not supported by the Spark driver yet" in proc.stderr.decode()
    assert not (tmp_path / "w").exists()


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
    import subprocess

    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    assert proc.returncode == 2
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert "cannot run the dupfind binary" in err and "no-such-dupfind" in err, err
    assert "dupfind stage sign --shard 0/2 failed" in err, err
