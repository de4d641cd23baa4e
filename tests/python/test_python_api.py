"""The Python package (python/, docs/python.md) against the CLI: `dedup` of every input kind
equals `scan --write-dataset --annotate` of the same table as a Parquet dump; option refusals
carry the CLI's messages; nulls, empty and non-string text columns; the same answers whatever
the thread count; `scan()` is the CLI's report; `jaccard` is what the report verifies;
Ctrl-C interrupts a scan that cannot end; the installed `dupfind` command is the binary.

.ci/python-tests installs the package into the venv from the checkout (pip install ./python).
"""

import json
import os
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import dupfind as dp
from conftest import ROOT, run
from test_dataset import ADDED, table, write

pd = pytest.importorskip("pandas")


@pytest.fixture
def dump(tmp_path):
    """A table of every column kind (nulls every ninth text), written as the CLI's dump."""
    t = table(0, 150)
    write(t, tmp_path / "d.parquet")
    return tmp_path, pq.read_table(tmp_path / "d.parquet")


def cli_dataset(dupfind_bin, cwd, *args):
    """`scan --write-dataset out --annotate d.parquet` and its dataset as pyarrow reads it."""
    status, _ = run([dupfind_bin, "scan", "-q", "--write-dataset", "out", "--annotate", *args,
                     "d.parquet"], ok=(0, 2), cwd=cwd)
    assert status == 2  # the null texts
    return pq.read_table(os.path.join(cwd, "out"))


def quietly(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dp.DupfindWarning)
        return fn(*args, **kw)


def test_dedup_equals_the_clis_annotated_dataset(dupfind, dump):
    cwd, t = dump
    expected = cli_dataset(dupfind, cwd, "--num-perm", "64", "--threshold", "0.7")
    got = quietly(dp.dedup, t, id_column="id", num_perm=64, threshold=0.7)
    assert got.column_names == t.column_names + ADDED
    assert got.select(t.column_names).equals(t)
    # The CLI writes every row, as dedup returns it: those without text kept, unclustered.
    assert got.select(["id", *ADDED]).equals(expected.select(["id", *ADDED]))
    assert pc.sum(pc.invert(got["dupfind_keep"])).as_py() > 10
    without = got.filter(pc.is_null(got["text"]))
    assert without.num_rows == 16
    assert without["dupfind_keep"].to_pylist() == [True] * 16
    for c in ("dupfind_cluster", "dupfind_duplicate_of", "dupfind_similarity"):
        assert without[c].null_count == 16
    # The filter is the dataset without --annotate.
    status, _ = run([dupfind, "scan", "-q", "--num-perm", "64", "--threshold", "0.7",
                     "--write-dataset", "plain", "d.parquet"], ok=(2,), cwd=cwd)
    kept = got.filter(got["dupfind_keep"])
    assert kept.select(t.column_names).equals(pq.read_table(cwd / "plain").select(t.column_names))


def test_without_an_id_column_a_duplicate_names_its_representatives_row(dupfind, dump):
    cwd, t = dump
    t = t.drop_columns(["id"])
    write(t, cwd / "d.parquet")
    expected = cli_dataset(dupfind, cwd)
    got = quietly(dp.dedup, t)
    same = [c for c in ADDED if c != "dupfind_duplicate_of"]
    assert got.select(same).equals(expected.select(same))
    # The CLI names a row of a dump without ids `d.parquet:LINE` (LINE from 1); dedup by its
    # row number from 0.
    cli = [None if v is None else str(int(v.rsplit(":", 1)[1]) - 1)
           for v in expected["dupfind_duplicate_of"].to_pylist()]
    assert got["dupfind_duplicate_of"].to_pylist() == cli
    rows = [int(v) for v in got["dupfind_duplicate_of"].to_pylist() if v is not None]
    assert rows and all(got["dupfind_keep"][r].as_py() for r in rows)


def test_a_representative_without_an_id_is_named_by_its_row(dump):
    """With `id_column`, a duplicate names its representative's id; a representative whose id
    is null, by its row number from 0, as every row is named without `id_column`."""
    _, t = dump
    ref = quietly(dp.dedup, t, id_column="id")
    reps = sorted({int(v[3:]) for v in ref["dupfind_duplicate_of"].to_pylist() if v})
    assert reps
    ids = t["id"].to_pylist()
    ids[reps[0]] = None
    nulled = t.set_column(0, pa.field("id", pa.string()), pa.array(ids, pa.string()))
    got = quietly(dp.dedup, nulled, id_column="id")
    want = [str(reps[0]) if v == f"doc{reps[0]:04}" else v
            for v in ref["dupfind_duplicate_of"].to_pylist()]
    assert got["dupfind_duplicate_of"].to_pylist() == want
    assert str(reps[0]) in want
    # A pandas frame's rows are named by their place in it, whatever its index says.
    df = t.select(["text"]).to_pandas()
    df.index = range(1000, 1000 + len(df))
    out = quietly(dp.dedup, df)
    rows = quietly(dp.dedup, t.select(["text"]))["dupfind_duplicate_of"].to_pylist()
    assert out["dupfind_duplicate_of"].tolist() == rows


def test_the_tables_columns_are_not_copied(tmp_path):
    """The text column the engine read, and every other column, come back as the same memory:
    the engine reads the table through the Arrow C stream interface, where it lies, and the
    result only adds columns. Nothing is written to a file either (neither the table nor the
    candidates' texts for verification): a TMPDIR that does not exist changes nothing."""
    words = [f"w{i}" for i in range(5000)]
    texts = [" ".join(words[(i * 37 + k) % 5000] for k in range(200)) for i in range(20000)]
    texts[7] = texts[3]
    texts[11] = texts[5].replace("w", "v", 1)
    t = pa.table({"text": texts, "n": pa.array(range(20000), pa.int64())})
    text_bytes = t["text"].chunk(0).buffers()[2].size
    assert text_bytes > 20_000_000
    before = pa.total_allocated_bytes()
    got = dp.dedup(t, threads=1)
    # pyarrow allocated about the five columns' size, not the text's.
    assert pa.total_allocated_bytes() - before < text_bytes / 20
    for name in ("text", "n"):
        assert got[name].num_chunks == t[name].num_chunks
        for a, b in zip(got[name].chunks, t[name].chunks):
            assert [x.address for x in a.buffers() if x] == [x.address for x in b.buffers() if x]
    assert got["dupfind_duplicate_of"].to_pylist()[7] == "3"
    assert got["dupfind_duplicate_of"].to_pylist()[11] == "5"
    pq.write_table(t, tmp_path / "t.parquet")
    code = ("import sys, pyarrow.parquet as pq, dupfind\n"
            "got = dupfind.dedup(pq.read_table(sys.argv[1]), threads=1)\n"
            "print(got['dupfind_duplicate_of'].to_pylist()[:12])\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "t.parquet")],
                          env=dict(os.environ, TMPDIR=str(tmp_path / "missing")),
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{got['dupfind_duplicate_of'].to_pylist()[:12]}\n"


def test_a_categorical_text_and_a_text_in_many_batches(dump):
    """A dictionary-encoded text column (a pandas categorical) is read as its strings, as the
    CLI reads it from Parquet; rows are numbered across the table's batches."""
    _, t = dump
    t = t.select(["text"])
    ref = quietly(dp.dedup, t)
    small = pa.Table.from_batches(t.combine_chunks().to_batches(max_chunksize=7))
    assert small["text"].num_chunks > 10
    assert quietly(dp.dedup, small).select(ADDED).equals(ref.select(ADDED))
    coded = t.set_column(0, "text", pc.dictionary_encode(t["text"]))
    got = quietly(dp.dedup, coded)
    assert got["text"].type == coded["text"].type
    assert got.select(ADDED).equals(ref.select(ADDED))


def test_a_table_with_an_added_columns_name_is_refused(dump):
    _, t = dump
    t = t.select(["id", "text"]).append_column("dupfind_keep", pa.array([True] * t.num_rows))
    with pytest.raises(dp.DupfindError, match='the table already has a column "dupfind_keep"'):
        quietly(dp.dedup, t, id_column="id")


class Stream:
    """An object that only speaks the Arrow PyCapsule stream interface."""

    def __init__(self, t):
        self.t = t

    def __arrow_c_stream__(self, requested_schema=None):
        return self.t.__arrow_c_stream__(requested_schema)


def test_every_input_kind_returns_its_kind_with_the_same_columns(dump):
    _, t = dump
    t = t.select(["id", "text", "n", "score"])
    ref = quietly(dp.dedup, t, id_column="id")
    annotations = ref.select(ADDED)

    reader = quietly(dp.dedup, pa.RecordBatchReader.from_batches(t.schema, t.to_batches()),
                     id_column="id")
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.read_all().equals(ref)

    assert quietly(dp.dedup, Stream(t), id_column="id").equals(ref)

    df = t.to_pandas()
    df.index = [f"r{i}" for i in range(len(df))]
    out = quietly(dp.dedup, df, id_column="id")
    assert isinstance(out, pd.DataFrame)
    assert list(out.index) == list(df.index)
    assert list(out.columns) == list(df.columns) + ADDED
    pd.testing.assert_frame_equal(out[list(df.columns)], df)
    assert out["dupfind_keep"].tolist() == annotations["dupfind_keep"].to_pylist()
    assert [None if pd.isna(v) else int(v) for v in out["dupfind_cluster"]] \
        == annotations["dupfind_cluster"].to_pylist()
    assert out["dupfind_duplicate_of"].tolist() == annotations["dupfind_duplicate_of"].to_pylist()

    pl = pytest.importorskip("polars")
    pdf = pl.from_arrow(t)
    out = quietly(dp.dedup, pdf, id_column="id")
    assert isinstance(out, pl.DataFrame)
    assert out.columns == pdf.columns + ADDED
    assert out.select(ADDED).to_arrow().equals(
        pl.from_arrow(annotations).to_arrow())


def test_a_hugging_face_dataset_when_installed(dump):
    datasets = pytest.importorskip("datasets", reason="datasets is not in requirements.txt")
    _, t = dump
    t = t.select(["id", "text"])
    ref = quietly(dp.dedup, t, id_column="id")
    ds = datasets.Dataset(datasets.table.InMemoryTable(t))
    out = quietly(dp.dedup, ds, id_column="id")
    assert isinstance(out, datasets.Dataset)
    assert out.column_names == ["id", "text"] + ADDED
    for c in ADDED:
        assert out[c] == ref[c].to_pylist()


def test_a_null_text_is_warned_about_kept_and_unclustered(dump):
    _, t = dump
    with pytest.warns(dp.DupfindWarning) as caught:
        got = dp.dedup(t, id_column="id")
    messages = [str(w.message) for w in caught]
    assert messages[0] == 'row 8: "text" is null'
    # Ten rows, then how many more (as the CLI warns about a dump's bad lines).
    assert messages[-1] == "6 more rows could not be read"
    assert got["dupfind_keep"][8].as_py() is True
    assert got["dupfind_cluster"][8].as_py() is None


def test_empty_texts_and_a_table_of_nulls(tmp_path):
    t = pa.table({"text": pa.array(["", "  ", None, "one two three four five six"] * 2)})
    got = quietly(dp.dedup, t)
    # The two copies of the one text with words are a cluster; the rest are kept alone.
    assert got["dupfind_keep"].to_pylist() == [True] * 7 + [False]
    assert got["dupfind_cluster_size"].to_pylist() == [None] * 3 + [2] + [None] * 3 + [2]
    assert got["dupfind_duplicate_of"].to_pylist()[7] == "3"
    nothing = quietly(dp.dedup, pa.table({"text": pa.array([None, None], pa.string())}))
    assert nothing["dupfind_keep"].to_pylist() == [True, True]
    empty = dp.dedup(pa.table({"text": pa.array([], pa.string())}))
    assert empty.num_rows == 0 and empty.column_names == ["text"] + ADDED


def test_a_text_column_of_type_null_and_an_empty_frame(dupfind, tmp_path):
    """A column of None only is of Arrow type `null` in pandas and pyarrow (an empty frame's
    object column too): rows whose text is null, not a table that cannot be read (review 7,
    finding 02), as the CLI reads such a Parquet dump."""
    import pandas as pd

    frame = pd.DataFrame({"id": ["a", "b"], "text": [None, None]})
    assert pa.Table.from_pandas(frame).schema.field("text").type == pa.null()
    with pytest.warns(dp.DupfindWarning) as caught:
        got = dp.dedup(frame)
    assert [str(w.message) for w in caught] == ['row 0: "text" is null', 'row 1: "text" is null']
    assert got["dupfind_keep"].tolist() == [True, True]
    assert got["dupfind_cluster"].isna().all()
    table = quietly(dp.dedup, pa.table({"text": pa.nulls(3)}))
    assert table["dupfind_keep"].to_pylist() == [True] * 3
    empty = dp.dedup(pd.DataFrame({"text": pd.Series([], dtype=object)}))
    assert len(empty) == 0 and list(empty.columns) == ["text"] + ADDED
    frame.to_parquet(tmp_path / "d.parquet")
    proc = subprocess.run([dupfind, "scan", "--annotate", "--write-dataset", "out", "d.parquet"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert pq.read_table(tmp_path / "out")["dupfind_keep"].to_pylist() == [True, True]


def test_a_text_column_that_is_not_text_is_the_clis_error(dupfind, tmp_path):
    t = pa.table({"text": pa.array([1, 2, 3])})
    pq.write_table(t, tmp_path / "d.parquet")
    proc = subprocess.run([dupfind, "scan", "d.parquet"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert proc.returncode == 2
    with pytest.raises(dp.DupfindError) as e:
        dp.dedup(t)
    # The CLI's warning for the whole dump, which dedup raises (nothing could be read).
    assert proc.stderr == f"dupfind: warning: d.parquet: {e.value}\n"
    assert "int64, not a string" in str(e.value)
    with pytest.raises(ValueError, match="no column 'body'"):
        dp.dedup(t, text_column="body")
    with pytest.raises(TypeError, match="not list"):
        dp.dedup([1, 2])


# Each refused option of dedup, and the same flag given to the CLI.
REFUSALS = [
    ({"threshold": 1.5}, ["--threshold", "1.5"]),
    ({"threshold": -0.1}, ["--threshold=-0.1"]),
    ({"method": "lsh"}, ["--method", "lsh"]),
    ({"shingle": "line"}, ["--shingle", "line"]),
    ({"ngram": 0}, ["--ngram", "0"]),
    ({"num_perm": 0}, ["--num-perm", "0"]),
    ({"cluster": "loose"}, ["--cluster", "loose"]),
    ({"keep": "best"}, ["--keep", "best"]),
    ({"keep": "none", "keep_by": "n"}, ["--keep", "none", "--keep-by", "n"]),
    ({"verify": "maybe"}, ["--verify", "maybe"]),
    ({"method": "simhash", "verify": "edit"}, ["--method", "simhash", "--verify", "edit"]),
    ({"threads": 0}, ["--threads", "0"]),
    ({"max_memory": "lots"}, ["--max-memory", "lots"]),
    ({"max_memory": 1}, ["--max-memory", "1"]),
    ({"seed": -1}, ["--seed=-1"]),
    ({"normalize": "nope"}, ["--normalize", "nope"]),
    ({"method": "simhash", "sketch": "kperm"}, ["--method", "simhash", "--sketch", "kperm"]),
    ({"max_distance": 6}, ["--max-distance", "6"]),
    ({"containment": True, "verify": "estimate"}, ["--containment", "--verify", "estimate"]),
    ({"min_similarity": 0.5}, ["--min-similarity", "0.5"]),
    ({"max_size": "big"}, ["--max-size", "big"]),
]


@pytest.mark.parametrize("options,flags", REFUSALS, ids=[str(o) for o, _ in REFUSALS])
def test_a_refused_option_carries_the_clis_message(dupfind, dump, options, flags):
    cwd, t = dump
    proc = subprocess.run([dupfind, "scan", *flags, "d.parquet"], cwd=cwd, capture_output=True,
                          text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    with pytest.raises((ValueError, dp.DupfindError)) as e:
        quietly(dp.dedup, t, id_column="id", **options)
    message = str(e.value)
    assert message, options
    assert message in proc.stderr, (message, proc.stderr)


# The options of `dupfind scan --help` that are not dedup's keywords, and why: a table is no
# files (files_from ... extension), dedup names its columns (text_column, id_column), a table
# is scanned on its own and its annotation returned (against ... annotate_prefix), the report
# is not returned (format ... progress); null: NUL-separated names of files.
NOT_FOR_A_TABLE = {
    "files_from", "null", "jsonl", "dumps", "include", "exclude", "min_size", "follow_links",
    "hidden", "no_ignore", "unrestricted", "max_depth", "extension", "text_field", "id_field",
    "against", "update", "prune", "write_dataset", "dataset_format", "annotate",
    "annotate_prefix", "format", "output", "color", "pairs", "exit_code", "quiet", "verbose",
    "progress", "help", "version",
}


def test_dedup_takes_every_scan_option_that_applies_to_a_table(dupfind):
    import inspect
    import re

    out = subprocess.run([dupfind, "scan", "--help"], capture_output=True, text=True,
                         check=True).stdout
    flags = {m.replace("-", "_") for m in re.findall(r"^  (?:-\w, |    )--([a-z-]+)", out, re.M)}
    assert "normalize" in flags and "files_from" in flags, flags
    keywords = set(inspect.signature(dp.dedup).parameters) - {"data"}
    assert flags - NOT_FOR_A_TABLE - keywords == set()
    assert keywords - flags == {"text_column", "id_column"}


# dedup's options past the defaults, and the CLI's flags for them (review finding 14: dedup had
# no normalize, sketch, bands/rows, max_distance, containment, min_similarity, max_size).
OPTIONS = [
    ({"normalize": "punct,digits"}, ["--normalize", "punct,digits"]),
    ({"sketch": "kperm"}, ["--sketch", "kperm"]),
    ({"sketch": "bottom-k", "threshold": 0.7}, ["--sketch", "bottom-k", "--threshold", "0.7"]),
    ({"bands": 16, "rows": 4}, ["--bands", "16", "--rows", "4"]),
    ({"method": "simhash", "max_distance": 8}, ["--method", "simhash", "--max-distance", "8"]),
    ({"containment": True, "threshold": 0.6}, ["--containment", "--threshold", "0.6"]),
    ({"threshold": 0.6, "min_similarity": 0.9}, ["--threshold", "0.6", "--min-similarity", "0.9"]),
    ({"max_size": 1950}, ["--max-size", "1950"]),
]


@pytest.mark.parametrize("options,flags", OPTIONS, ids=[str(o) for o, _ in OPTIONS])
def test_dedup_with_an_option_equals_the_cli_with_its_flag(dupfind, dump, options, flags):
    cwd, t = dump
    expected = cli_dataset(dupfind, cwd, *flags)
    got = quietly(dp.dedup, t, id_column="id", **options)
    assert got.select(["id", *ADDED]).equals(expected.select(["id", *ADDED])), options


def test_dedup_normalizes_as_jaccard_does():
    a = "The harbor bridge reopened on Monday after two years of repairs to its deck and rails"
    b = a.replace(" ", ", ") + "!"
    t = pa.table({"text": [a, b]})
    assert dp.jaccard(a, b, normalize="punct") == 1.0
    assert dp.dedup(t)["dupfind_keep"].to_pylist() == [True, True]
    assert dp.dedup(t, normalize="punct")["dupfind_keep"].to_pylist() == [True, False]


def test_the_same_answers_whatever_the_thread_count(dump):
    _, t = dump
    one = quietly(dp.dedup, t, id_column="id", threads=1)
    two = quietly(dp.dedup, t, id_column="id", threads=2)
    assert one.equals(two)
    texts = [s for s in t["text"].to_pylist() if s is not None]
    assert np.array_equal(dp.signatures(texts, threads=1),
                          dp.signatures(texts, threads=2))


def test_scan_is_the_clis_report(dupfind, docs, scan):
    for options, kwargs in [([], {}),
                            (["--num-perm", "64", "--cluster", "components", "--keep", "newest"],
                             {"num_perm": 64, "cluster": "components", "keep": "newest"}),
                            (["--method", "simhash"], {"method": "simhash"})]:
        _, out = scan(["--format", "json", *options])
        assert dp.scan(docs, quiet=True, **kwargs) == json.loads(out)
    with pytest.raises(ValueError, match="invalid value 'x' for '--threshold"):
        dp.scan(docs, threshold="x")
    with pytest.raises(ValueError, match="returns the JSON report"):
        dp.scan(docs, format="text")
    with pytest.raises(dp.DupfindError, match="--threshold"):
        dp.scan(docs, method="simhash", threshold=0.5)


def test_jaccard_is_what_the_report_verifies(dupfind, tmp_path):
    a = " ".join(f"w{i}" for i in range(200))
    b = a.replace("w50 ", "x50 ").replace("w120 ", "x120 ")
    (tmp_path / "a.txt").write_text(a)
    (tmp_path / "b.txt").write_text(b)
    report = dp.scan(tmp_path, threshold=0.5)
    [pair] = report["clusters"][0]["duplicates"]
    assert dp.jaccard(a, b) == pytest.approx(pair["similarity"], abs=1e-3)
    assert dp.jaccard(a, a) == 1.0
    assert dp.jaccard(a, "nothing in common at all here") == 0.0
    # 2 changed words touch 10 five-word shingles of 196: 186 shared of 206.
    assert dp.jaccard(a, b) == pytest.approx(186 / 206)
    # Tokens are lowercased, and whitespace only separates them.
    assert dp.jaccard("One two THREE four five", "one  two three\nfour five") == 1.0
    assert dp.jaccard("abcdef", "abcdeg", shingle="char", ngram=3) == pytest.approx(3 / 5)


def test_signatures_estimate_jaccard():
    a = " ".join(f"w{i}" for i in range(400))
    b = a.replace("w100 ", "x100 ")
    s = dp.signatures([a, b, a, ""], num_perm=256)
    assert s.dtype == np.uint32 and s.shape == (4, 256)
    assert np.array_equal(s[0], s[2])
    assert (s[3] == np.iinfo(np.uint32).max).all()
    estimate = (s[0] == s[1]).mean()
    assert abs(estimate - dp.jaccard(a, b)) < 0.1
    assert not np.array_equal(dp.signatures([a], seed=1), dp.signatures([a]))
    with pytest.raises((ValueError, dp.DupfindError), match="--num-perm"):
        dp.signatures([a], num_perm=0)
    with pytest.raises(ValueError, match="--shingle"):
        dp.signatures([a], shingle="line")


def test_signatures_refuse_one_text_for_a_list_of_texts():
    """A str is a sequence of characters: taken as texts it gave a signature per character."""
    text = "The harbor bridge reopened on Monday"
    for one in (text, text.encode(), bytearray(text.encode()), memoryview(text.encode())):
        with pytest.raises(TypeError, match=r"must be a list of texts \(str\), not one .*\[text\]"):
            dp.signatures(one)
    assert dp.signatures([text]).shape == (1, 128)
    assert dp.signatures(t for t in [text, text]).shape == (2, 128)


def test_signatures_threads_have_the_bound_of_dash_j(tmp_path):
    """rayon starts every thread it is asked for and aborts the process when it cannot: 20,000
    from `threads` or RAYON_NUM_THREADS ended Python with SIGABRT."""
    text = "The harbor bridge reopened on Monday"
    for threads in (0, 5000):
        with pytest.raises(dp.DupfindError, match=rf"threads={threads}: give 1 to 1024"):
            dp.signatures([text], threads=threads)
    assert dp.signatures([text], threads=2).shape == (1, 128)
    code = ("import dupfind\n"
            "try:\n"
            "    dupfind.signatures(['one text'])\n"
            "except dupfind.DupfindError as e:\n"
            "    print('refused:', e)\n")
    env = dict(os.environ, RAYON_NUM_THREADS="20000")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "refused: RAYON_NUM_THREADS=20000: not a number of worker threads" in done.stdout


def test_ctrl_c_interrupts_a_scan_that_cannot_end(tmp_path):
    """`scan('-')` reads standard input to its end, which the test holds open: only
    KeyboardInterrupt can end the call."""
    code = ("import dupfind, sys\n"
            "print('ready', flush=True)\n"
            "try:\n"
            "    dupfind.scan('-')\n"
            "except KeyboardInterrupt:\n"
            "    print('interrupted', flush=True)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"ready\n"
        proc.stdin.write(b"some text that is never finished ")
        proc.stdin.flush()
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        assert proc.stdout.readline() == b"interrupted\n"
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        proc.stdin.close()


def commands(tmp_path):
    """Runs of the CLI: a scan with warnings and errors, a usage error, other commands."""
    (tmp_path / "docs").mkdir()
    text = " ".join(f"w{i}" for i in range(100))
    (tmp_path / "docs" / "a.txt").write_text(text)
    (tmp_path / "docs" / "b.txt").write_text(text.replace("w7 ", "x7 "))
    (tmp_path / "docs" / "c.txt").write_text(text)
    (tmp_path / "docs" / "d.jsonl").write_text('{"text": "x"}\nnot json\n')
    return [
        ["scan", "docs"],
        ["scan", "--format", "text", "--color", "never", "docs"],
        ["scan", "--threshold", "2", "docs"],
        ["scan", "missing"],
        ["scan", "--bogus"],
        ["docs"],
        ["explain", "--threshold", "0.7"],
        ["--version"],
        ["scan", "--help"],
    ]


def test_the_installed_command_is_the_binary(dupfind, tmp_path):
    command = dp.command()
    assert command and os.path.dirname(command) == os.path.dirname(sys.executable)
    for args in commands(tmp_path):
        ours = subprocess.run([command, *args], cwd=tmp_path, capture_output=True)
        theirs = subprocess.run([dupfind, *args], cwd=tmp_path, capture_output=True)
        assert (ours.returncode, ours.stdout, ours.stderr.replace(command.encode(), b"dupfind")) \
            == (theirs.returncode, theirs.stdout,
                theirs.stderr.replace(dupfind.encode(), b"dupfind")), args
    # A closed pipe ends the command quietly, as it ends the binary.
    big = tmp_path / "big"
    big.mkdir()
    # A report far larger than a pipe's buffer: 1,500 members of 20 clusters.
    for i in range(1500):
        (big / f"{i:04}.txt").write_text(" ".join(f"w{i % 20}x{j}" for j in range(60)))
    for binary in (command, dupfind):
        proc = subprocess.Popen([binary, "scan", "big"],
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdout.read(10)
        proc.stdout.close()
        assert proc.wait(timeout=60) == 0
        assert proc.stderr.read() == b""


def test_the_spark_driver_finds_the_installed_command(monkeypatch):
    sys.path.insert(0, os.path.join(ROOT, "contrib", "spark"))
    import dupfind_spark

    monkeypatch.setenv("PATH", "/nonexistent")
    assert dupfind_spark.find_binary(None) == dp.command()


def test_refusals_name_the_callers_columns(dump):
    """A pandas frame is converted by the columns dedup reads: a refusal still names the frame's
    own columns, and a missing keep_by column is named before the engine runs."""
    frame = pd.DataFrame({"x": [1], "body": ["a b c"]})
    with pytest.raises(ValueError, match=r"no column 'text' \(text_column\): the table has \['x', 'body'\]"):
        dp.dedup(frame)
    _, t = dump
    t = t.select(["id", "text", "n"])
    with pytest.raises(ValueError, match=r"no column 'qual' \(keep_by\): the table has \['id', 'text', 'n'\]"):
        dp.dedup(t, keep_by="qual:min")
    with pytest.raises(ValueError, match=r"\(keep_by\): the table has \['id', 'text', 'n'\]"):
        dp.dedup(t.to_pandas(), keep_by="qual")


def test_dedup_reads_a_dotted_text_column_in_a_struct_as_the_cli_reads_it(dupfind, tmp_path):
    # Review finding 11: text_column="meta.text" was refused, though --text-field meta.text
    # reads the same table as a Parquet dump and keep_by takes a dotted field.
    a = "The harbor bridge reopened on Monday after two years of repairs to its deck."
    texts = [a, a[:-1] + "!", "Knead the dough for ten minutes, then let it rise for an hour."]
    t = pa.table({"id": ["x", "y", "z"],
                  "meta": [{"text": s, "q": q} for s, q in zip(texts, [1, 5, 2])]})
    write(t, tmp_path / "d.parquet")
    run([dupfind, "scan", "-q", "-t", "0.7", "--text-field", "meta.text", "--keep-by",
         "meta.q", "--write-dataset", "out", "--annotate", "d.parquet"], cwd=tmp_path)
    expected = pq.read_table(tmp_path / "out")
    got = dp.dedup(t, text_column="meta.text", id_column="id", threshold=0.7, keep_by="meta.q")
    assert got["dupfind_keep"].to_pylist() == [False, True, True]
    assert got.select(["id", *ADDED]).equals(expected.select(["id", *ADDED]))
    got = dp.dedup(t.to_pandas(), text_column="meta.text", threshold=0.7, keep_by="meta.q")
    assert got["dupfind_keep"].tolist() == [False, True, True]
    with pytest.raises(ValueError, match="no column 'note.text'"):
        dp.dedup(t, text_column="note.text")


def test_dedup_finds_a_column_whose_name_holds_a_dot_as_the_cli_does(dupfind, tmp_path):
    # Review 8 finding 07: a column named "meta.text" (as json_normalize writes) was
    # `no column "meta.text" (columns: meta.text)`, from dedup and the CLI alike.
    a = "The harbor bridge reopened on Monday after two years of repairs to its deck."
    texts = [a, a[:-1] + "!", "Knead the dough for ten minutes, then let it rise for an hour."]
    t = pa.table({"meta.id": ["x", "y", "z"], "meta.text": texts, "q.x": [1, 5, 2]})
    write(t, tmp_path / "d.parquet")
    run([dupfind, "scan", "-q", "-t", "0.7", "--text-field", "meta.text", "--id-field",
         "meta.id", "--keep-by", "q.x", "--write-dataset", "out", "--annotate", "d.parquet"],
        cwd=tmp_path)
    expected = pq.read_table(tmp_path / "out")
    got = dp.dedup(t, text_column="meta.text", id_column="meta.id", threshold=0.7, keep_by="q.x")
    assert got["dupfind_keep"].to_pylist() == [False, True, True]
    assert got["dupfind_duplicate_of"].to_pylist() == ["y", None, None]
    assert got.select(["meta.id", *ADDED]).equals(expected.select(["meta.id", *ADDED]))
    got = dp.dedup(t.to_pandas(), text_column="meta.text", threshold=0.7, keep_by="q.x:min")
    assert got["dupfind_keep"].tolist() == [True, False, True]
    # A name both a struct's field and a column have: refused, as the CLI refuses the dump.
    both = t.append_column("meta", pa.array([{"text": s} for s in texts]))
    for data in (both, both.to_pandas()):
        with pytest.raises(dp.DupfindError, match='"meta.text" names more than one field'):
            dp.dedup(data, text_column="meta.text")


def test_a_lazy_polars_frame_is_a_type_error_saying_to_collect_it():
    pl = pytest.importorskip("polars")
    with pytest.raises(TypeError, match="collect"):
        dp.dedup(pl.DataFrame({"text": ["a b c"]}).lazy())


def test_scan_of_no_paths_is_refused_not_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("one two three four five six seven")
    (tmp_path / "b.txt").write_text("one two three four five six seven")
    with pytest.raises(ValueError, match="no paths"):
        dp.scan([], quiet=True)
    with pytest.raises(ValueError, match="no paths"):
        dp.scan(iter(()), quiet=True)
    assert dp.scan(".", quiet=True)["stats"]["clusters"] == 1


def test_scan_of_a_list_needs_no_path_as_the_clis_files_from(tmp_path, monkeypatch):
    # Review finding 09: `dupfind scan --files-from LIST` with no path scans the list; scan()
    # refused every way to give no path, and "." scanned the directory besides.
    monkeypatch.chdir(tmp_path)
    text = " ".join(f"word{i}" for i in range(80))
    (tmp_path / "a.txt").write_text(text)
    (tmp_path / "b.txt").write_text(text + " extra")
    (tmp_path / "other.txt").write_text(text)
    (tmp_path / "list.txt").write_text("a.txt\nb.txt\n")
    for args in [(), (None,), ([],)]:
        report = dp.scan(*args, files_from="list.txt", quiet=True)
        assert report["stats"]["documents"] == 2, args
        assert report["stats"]["clusters"] == 1, args
