"""contrib/ray/dupfind_ray.py on a local Ray cluster (`ray.init()` on this machine): its report is
`scan`'s, byte for byte, with scan's exit status, and its stderr holds nothing of Ray's.

Skipped when `ray` is not installed (it is not in requirements.txt: see .ci/python-tests). Each
run starts a local cluster (a few seconds) and runs every stage as Ray tasks.
"""

import glob
import os
import subprocess
import sys

import pytest

from conftest import index_files, indexed_then_changed, ROOT, run, scan_against

pytest.importorskip("ray", reason="ray is not installed (pip install ray)")

DRIVER = os.path.join(ROOT, "contrib", "ray", "dupfind_ray.py")


def ray(dupfind, work, shards, parts, options, inputs):
    """Runs the driver; returns the finished process."""
    cmd = [sys.executable, DRIVER, "--dupfind", dupfind, "--work", str(work),
           "--shards", str(shards), "--parts", str(parts), *options, *inputs]
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, check=False)


@pytest.mark.parametrize("options,shards,parts", [
    ([], 3, 2),
    (["--pairs", "--cluster", "components", "--exit-code"], 2, 3),
])
def test_ray_report_is_scans(dupfind, docs, tmp_path, options, shards, parts):
    """The driver prints scan's report, its warnings and exit status, and nothing of Ray's."""
    want = subprocess.run([dupfind, "scan", *options, docs], stdin=subprocess.DEVNULL,
                          capture_output=True, check=False)
    got = ray(dupfind, tmp_path / "work", shards, parts, options, [docs])
    assert got.stdout == want.stdout, "the Ray driver's report differs from scan's"
    assert got.returncode == want.returncode
    assert got.stderr == want.stderr


@pytest.mark.parametrize("update", [[], ["--update"]])
def test_ray_against_an_index_is_scan_against_it(dupfind, docs, tmp_path, update):
    """--against IDX [--update] passed on: the driver prints scan --against's report, stderr and
    exit status, and leaves the index as scan --update leaves it."""
    inputs, idx = indexed_then_changed(dupfind, docs, str(tmp_path))
    want, want_index = scan_against(dupfind, inputs, idx, update)
    assert want.returncode == 0, want.stderr.decode()
    got = ray(dupfind, tmp_path / "work", 3, 2, ["--against", idx, *update], [inputs])
    assert got.stdout == want.stdout, "the Ray driver's report differs from scan's"
    assert got.stderr.decode() == want.stderr.decode()
    assert got.returncode == want.returncode
    assert index_files(idx) == want_index


def test_ray_stage_failure_surfaces_its_stderr(dupfind, docs, tmp_path):
    """A stage that fails stops the run with its message on stderr and scan's status 2."""
    got = ray(dupfind, tmp_path / "w", 2, 1, ["--containment"], [docs])
    assert got.returncode == 2
    assert got.stdout == b""
    err = got.stderr.decode()
    assert "containment" in err and "dupfind stage init failed" in err, err


def test_ray_writes_scans_deduplicated_dataset(dupfind, docs, tmp_path):
    """With --write-dataset, the parts in shard order are scan's one part."""
    run([dupfind, "scan", "-q", "--write-dataset", str(tmp_path / "by-scan"), docs], ok=(0, 1))
    want = (tmp_path / "by-scan" / "part-00000.jsonl").read_bytes()
    got = ray(dupfind, tmp_path / "work", 3, 2,
              ["-q", "--write-dataset", str(tmp_path / "by-ray")], [docs])
    assert got.returncode in (0, 1), got.stderr.decode()
    parts = sorted(glob.glob(str(tmp_path / "by-ray" / "part-*.jsonl")))
    assert len(parts) == 3
    assert b"".join(open(p, "rb").read() for p in parts) == want
