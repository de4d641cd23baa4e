"""Shared fixtures of the engine tests: the binary, a generated corpus, and `scan`'s reports.

The binary is $DUPFIND, else the repository's target/release/dupfind (.ci/python-tests builds
it). Every run of a stage or of `scan` that fails raises with the command and its stderr.
"""

import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(__file__))

import corpus  # noqa: E402  (the generator beside this file)

sys.path.insert(0, os.path.join(ROOT, "contrib", "staged"))
import workfiles  # noqa: E402  (the work-file contract the engines share)


def comparable_summary(data):
    """A summary's JSON with what differs between two attempts of the same task left out (the
    attempt id, the files' CRC-32s: another writer's Parquet bytes differ), after checking its
    seal. Everything else — the run, place, digest, the attempts it consumed, the counts — must
    be the same whoever wrote it."""
    why = workfiles.check_seal(data if isinstance(data, bytes) else data.encode())
    assert why is None, why
    summary = __import__("json").loads(data)
    summary.pop("seal")
    lineage = summary["lineage"]
    lineage.pop("attempt")
    lineage["files"] = sorted(lineage["files"])
    return summary


@pytest.fixture(scope="session")
def dupfind():
    """The release binary's absolute path."""
    path = os.environ.get("DUPFIND") or os.path.join(ROOT, "target", "release", "dupfind")
    if not os.access(path, os.X_OK):
        pytest.fail(f"no dupfind binary at {path}: run cargo build --release (or set DUPFIND)")
    return os.path.abspath(path)


@pytest.fixture(scope="session")
def docs(tmp_path_factory):
    """The generated corpus' root folder."""
    root = tmp_path_factory.mktemp("corpus")
    corpus.generate(str(root))
    return str(root)


def run(cmd, ok=(0,), **kw):
    """Runs `cmd`; returns (exit status, stdout bytes). Raises, with stderr, on another status."""
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, check=False, **kw)
    if proc.returncode not in ok:
        raise AssertionError(
            f"{' '.join(map(str, cmd))} exited {proc.returncode}; stderr:\n"
            + proc.stderr.decode("utf-8", "replace"))
    return proc.returncode, proc.stdout


@pytest.fixture(scope="session")
def scan(dupfind, docs):
    """`scan`'s report and exit status for some options (cached per option list)."""
    cache = {}

    def report(options):
        key = tuple(options)
        if key not in cache:
            cache[key] = run([dupfind, "scan", *options, docs], ok=(0, 1))
        return cache[key]

    return report
