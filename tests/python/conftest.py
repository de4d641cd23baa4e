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


def index_files(path):
    """The files of the index at `path`, by name, with their bytes."""
    return sorted((name, open(os.path.join(path, name), "rb").read())
                  for name in os.listdir(path))


def restore_index(path, files):
    """Puts `files` (from `index_files`) back as the index at `path`, whatever it holds now."""
    import shutil

    shutil.rmtree(path)
    os.mkdir(path)
    for name, data in files:
        with open(os.path.join(path, name), "wb") as f:
            f.write(data)


def indexed_then_changed(dupfind, docs, root):
    """A copy of the corpus under `root`, indexed (`root/idx`), then a night's changes, as
    tests/integration/staged_against.rs makes them: new near-copies and an exact copy of indexed
    documents, an indexed file edited (it supersedes its indexed document) and one deleted
    (gone, met by a new near-copy). Returns (the inputs' root, the index)."""
    import shutil

    inputs, idx = os.path.join(root, "c"), os.path.join(root, "idx")
    shutil.copytree(docs, inputs)
    run([dupfind, "index", "build", "--index", idx, "-q", inputs])

    def read(rel):
        with open(os.path.join(inputs, rel), encoding="utf-8") as f:
            return f.read()

    def write(rel, text):
        os.makedirs(os.path.dirname(os.path.join(inputs, rel)), exist_ok=True)
        with open(os.path.join(inputs, rel), "w", encoding="utf-8") as f:
            f.write(text)

    def near(text, n):
        # Every n-th word replaced: a near-copy well above the threshold.
        words = text.split(" ")
        return " ".join("changed" if i % n == 7 else w for i, w in enumerate(words))

    gone = read("d001/doc00041.txt")
    write("new/near-0.txt", near(read("d000/doc00000.txt"), 60))
    write("new/copy-2.txt", read("d000/doc00002.txt"))
    write("new/near-gone.txt", near(gone, 50))
    os.unlink(os.path.join(inputs, "d001/doc00041.txt"))
    write("d002/doc00080.txt", read("d002/doc00080.txt") + "And a new ending.\n")
    return inputs, idx


def scan_against(dupfind, inputs, idx, options):
    """`scan --against IDX OPTIONS INPUTS` (which may update the index): the finished process
    and the index's files after it; the index is put back as it was."""
    before = index_files(idx)
    want = subprocess.run([dupfind, "scan", "--against", idx, *options, inputs],
                          stdin=subprocess.DEVNULL, capture_output=True, check=False)
    after = index_files(idx)
    restore_index(idx, before)
    return want, after
