"""`--write-dataset` as Parquet and `--annotate`, read back by pyarrow, DuckDB and (when they
import) polars and Hugging Face `datasets`: a dump with typed, nested and nullable columns keeps
its schema and values; the rows left out are exactly those the report lists as duplicates; the
added columns agree with the report; the staged pipeline's parts are scan's table."""

import datetime
import decimal
import json
import os
import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from conftest import ROOT, run

RUN_LOCAL = os.path.join(ROOT, "contrib", "staged", "run-local.sh")
ADDED = ["dupfind_cluster", "dupfind_cluster_size", "dupfind_keep", "dupfind_duplicate_of",
         "dupfind_similarity"]


def texts(rng, n):
    """`n` texts: families of near-copies (a few words changed), byte-identical copies, unique
    ones, and a null every ninth."""
    words = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(3, 8)))
             for _ in range(400)]
    out = []
    for i in range(n):
        if i % 9 == 8:
            out.append(None)
        elif i % 5 in (1, 2) and out[i - 1] is not None:
            base = out[i - 1].split()
            for k in rng.sample(range(len(base)), 3):
                base[k] = f"edited{i}x{k}"
            out.append(" ".join(base))
        elif i % 7 == 3:
            out.append(out[0])
        else:
            out.append(" ".join(rng.choice(words) for _ in range(300)))
    return out


def table(first, n, seed=7):
    """Rows `first`..`first + n` of a dump with every kind of column pyarrow writes."""
    rng = random.Random(seed + first)
    ids = [f"doc{first + i:04}" for i in range(n)]
    paris = datetime.timezone(datetime.timedelta(hours=1))
    columns = {
        "id": pa.array(ids),
        "text": pa.array(texts(rng, n), pa.large_string()),
        "n": pa.array([None if i % 4 == 0 else i * 11 for i in range(n)], pa.int32()),
        "score": pa.array([None if i % 6 == 0 else i / 7 for i in range(n)], pa.float64()),
        "at": pa.array([datetime.datetime(2024, 1, 1 + i % 28, tzinfo=paris) for i in range(n)],
                       pa.timestamp("us", tz="Europe/Paris")),
        "day": pa.array([datetime.date(2020, 1, 1 + i % 28) for i in range(n)], pa.date32()),
        "price": pa.array([None if i % 5 == 0 else decimal.Decimal(f"{i}.25") for i in range(n)],
                          pa.decimal128(12, 2)),
        "blob": pa.array([bytes([i % 256, 0, 255]) for i in range(n)], pa.binary()),
        "tags": pa.array([None if i % 8 == 0 else list(range(i % 4)) for i in range(n)],
                         pa.list_(pa.int16())),
        "meta": pa.array([None if i % 10 == 0 else {"source": f"s{i % 3}", "rank": i}
                          for i in range(n)],
                         pa.struct([("source", pa.string()), ("rank", pa.int64())])),
        "lang": pa.array(["en" if i % 2 else "fr" for i in range(n)]).dictionary_encode(),
    }
    schema = pa.schema([pa.field(k, v.type) for k, v in columns.items()],
                       metadata={"origin": "dupfind-test", "rows": str(n)})
    schema = schema.set(0, schema.field(0).with_nullable(False))
    return pa.table(list(columns.values()), schema=schema)


def write(t, path):
    pq.write_table(t, path, row_group_size=40, compression="snappy")


def scan(dupfind, cwd, *args):
    status, out = run([dupfind, "scan", *args], ok=(0, 1, 2), cwd=cwd)
    return status, json.loads(out)


def duplicate_ids(report):
    """id → (cluster id, size, representative id, similarity) of every listed duplicate."""
    return {d["id"]: (c["id"], c["size"], c["representative"]["id"], d["similarity"])
            for c in report["clusters"] for d in c["duplicates"]}


def documents(t):
    """The rows that are documents (those with text)."""
    return t.filter(pc.is_valid(t["text"]))


@pytest.fixture
def dump(tmp_path):
    """A dump, and its table as pyarrow reads it (Parquet names a list's item `element`)."""
    write(table(0, 150), tmp_path / "d.parquet")
    return tmp_path, pq.read_table(tmp_path / "d.parquet")


def test_pyarrow_reads_the_input_schema_and_the_rows_not_listed_as_duplicates(dupfind, dump):
    cwd, t = dump
    status, report = scan(dupfind, cwd, "--write-dataset", "out", "d.parquet")
    dups = duplicate_ids(report)
    assert len(dups) > 10
    out = pq.read_table(cwd / "out")
    assert out.schema.equals(t.schema, check_metadata=True)
    # Every row but the duplicates: a row without text is no duplicate, and is written.
    keep = pa.array([i not in dups for i in t["id"].to_pylist()])
    assert out.equals(t.filter(keep))
    assert documents(t).num_rows < t.num_rows
    # Bounded row groups, zstd.
    meta = pq.read_metadata(cwd / "out" / "part-00000-00000-d.parquet")
    assert meta.row_group(0).column(0).compression == "ZSTD"


def test_annotate_columns_agree_with_the_report_and_filter_to_the_dataset(dupfind, dump):
    cwd, t = dump
    _, report = scan(dupfind, cwd, "--annotate", "--write-dataset", "ann", "d.parquet")
    scan(dupfind, cwd, "--write-dataset", "plain", "d.parquet")
    out = pq.read_table(cwd / "ann")
    assert out.schema.names == t.schema.names + ADDED
    assert out.schema.metadata == t.schema.metadata
    assert [str(out.schema.field(n).type) for n in ADDED] == \
        ["int64", "int64", "bool", "string", "double"]
    assert out.select(t.schema.names).equals(t)
    dups = duplicate_ids(report)
    members = {m["id"]: (c["id"], c["size"]) for c in report["clusters"] for m in c["members"]}
    for row in out.select(["id"] + ADDED).to_pylist():
        cluster, size = members.get(row["id"], (None, None))
        assert (row["dupfind_cluster"], row["dupfind_cluster_size"]) == (cluster, size)
        d = dups.get(row["id"])
        assert row["dupfind_keep"] == (d is None)
        assert row["dupfind_duplicate_of"] == (d and d[2])
        assert row["dupfind_similarity"] == (d and d[3])
    kept = out.filter(out["dupfind_keep"]).select(t.schema.names)
    assert kept.equals(pq.read_table(cwd / "plain"))


def test_duckdb_reads_the_same_rows(dupfind, dump):
    duckdb = pytest.importorskip("duckdb")
    cwd, t = dump
    scan(dupfind, cwd, "--annotate", "--write-dataset", "ann", "d.parquet")
    want = pq.read_table(cwd / "ann")
    con = duckdb.connect()
    got = con.execute(f"select * from read_parquet('{cwd}/ann/*.parquet')").fetch_arrow_table()
    assert got.num_rows == want.num_rows
    for name in ["id", "text", "n", "score", "price", "blob", "tags", "meta"] + ADDED:
        assert got[name].to_pylist() == want[name].to_pylist(), name
    kept = con.execute(
        f"select count(*) from read_parquet('{cwd}/ann/*.parquet') where dupfind_keep").fetchone()
    assert kept[0] == pc.sum(want["dupfind_keep"]).as_py()


@pytest.mark.parametrize("annotate", [False, True])
def test_a_duckdb_dumps_uuid_and_json_columns_read_back_as_the_dump_reads(dupfind, tmp_path,
                                                                          annotate):
    # Review finding 08: DuckDB writes the UUID and JSON logical types and no Arrow schema;
    # pyarrow (from 18/19) reads them as the arrow.uuid and arrow.json extension types.
    duckdb = pytest.importorskip("duckdb")
    os.mkdir(tmp_path / "in")
    duckdb.sql(
        "copy (select i as id, 'one two three four five six seven eight ' || (i % 2) as text, "
        "('{\"a\":' || i || '}')::json as j, uuid() as u from range(6) t(i)) "
        f"to '{tmp_path}/in/duck.parquet'")
    extra = ["--annotate"] if annotate else []
    scan(dupfind, tmp_path, "--write-dataset", "scan-out", *extra, "in")
    run(["bash", RUN_LOCAL, "--shards", "2", "--parts", "2", "--work", "w", "--dupfind",
         dupfind, "-q", "--write-dataset", "staged-out", *extra, "in"], cwd=tmp_path)
    want = pq.read_schema(tmp_path / "in" / "duck.parquet")
    dump = pq.read_table(tmp_path / "in" / "duck.parquet")
    for out in ("scan-out", "staged-out"):
        got = pq.read_table(tmp_path / out)
        # A pyarrow that reads the logical types as the extension types (26 does; CI's 18 reads
        # the dump's as string and fixed_size_binary[16], and the part's embedded Arrow schema,
        # like the one pyarrow 26 writes, as the extension types).
        if isinstance(want.field("u").type, pa.ExtensionType):
            for name in ("j", "u"):
                assert got.schema.field(name).type == want.field(name).type, (out, name)
        # The logical types themselves, which a pyarrow before the extension types reads past.
        for part in (tmp_path / out).glob("*.parquet"):
            columns = pq.ParquetFile(part).schema
            logical = {columns.column(i).name: columns.column(i).logical_type.type
                       for i in range(len(columns))}
            assert (logical["j"], logical["u"]) == ("JSON", "UUID"), part
        # Every row is written with --annotate; without it, those of the four copies but one.
        assert got.num_rows == (6 if annotate else 2), out
        def values(t):
            """id → (j, u), their stored values whichever type pyarrow reads them as."""
            cols = [t[c].combine_chunks() for c in ("j", "u")]
            cols = [c.storage if isinstance(c, pa.ExtensionArray) else c for c in cols]
            return dict(zip(t["id"].to_pylist(), zip(*(c.to_pylist() for c in cols))))

        dumped = values(dump)
        assert all(v == dumped[i] for i, v in values(got).items()), out


def test_polars_and_datasets_read_it_when_installed(dupfind, dump):
    cwd, t = dump
    scan(dupfind, cwd, "--annotate", "--write-dataset", "ann", "d.parquet")
    want = pq.read_table(cwd / "ann")
    readers = 0
    try:
        import polars as pl
    except ImportError:
        pl = None
    if pl is not None:
        df = pl.read_parquet(str(cwd / "ann" / "*.parquet"))
        assert df["id"].to_list() == want["id"].to_pylist()
        assert df["dupfind_keep"].to_list() == want["dupfind_keep"].to_pylist()
        readers += 1
    try:
        from datasets import Dataset
    except ImportError:
        Dataset = None
    if Dataset is not None:
        ds = Dataset.from_parquet(str(cwd / "ann" / "*.parquet"),
                                  cache_dir=str(cwd / "hf-cache"))
        assert ds["id"] == want["id"].to_pylist()
        assert ds["dupfind_similarity"] == want["dupfind_similarity"].to_pylist()
        readers += 1
    if readers == 0:
        pytest.skip("neither polars nor datasets is installed")


@pytest.mark.parametrize("annotate", [False, True])
def test_the_staged_parts_are_the_scans_table(dupfind, tmp_path, annotate):
    os.mkdir(tmp_path / "in")
    for name, first, n in [("a", 0, 60), ("b", 60, 50), ("c", 110, 70)]:
        write(table(first, n, seed=3), tmp_path / "in" / f"{name}.parquet")
    extra = ["--annotate"] if annotate else []
    scan(dupfind, tmp_path, "--write-dataset", "scan-out", *extra, "in")
    want = pq.read_table(tmp_path / "scan-out")
    assert want.num_rows > 50
    for shards in (1, 3):
        out = f"staged-{shards}"
        run(["bash", RUN_LOCAL, "--shards", str(shards), "--parts", "2", "--work",
             f"w{shards}", "--dupfind", dupfind, "-q", "--write-dataset", out, *extra, "in"],
            ok=(0, 1, 2), cwd=tmp_path)
        got = pq.read_table(tmp_path / out)
        assert got.schema.equals(want.schema, check_metadata=True)
        assert got.equals(want), f"{shards} shards"


def test_a_hive_partitioned_dump_reads_back_with_its_partition_columns(dupfind, tmp_path):
    """Review finding 09: the parts were flat, so a hive reader of the dataset lost the columns
    the input's `key=value` directories gave it. pyarrow and DuckDB read the dataset's
    partitions as the input's, with the rows not listed as duplicates; a text column that is a
    dictionary stays one (finding 15)."""
    import pyarrow.dataset as ds
    t = table(0, 90)
    t = t.set_column(1, "text", pc.dictionary_encode(t["text"].cast(pa.string())))
    for (region, batch), part in [(("eu", "1"), t.slice(0, 40)), (("us", "1"), t.slice(0, 0)),
                                  (("us", "2"), t.slice(40))]:
        d = tmp_path / "crawl" / f"region={region}" / f"batch={batch}"
        os.makedirs(d)
        write(part, d / "part-0.parquet")
    _, report = scan(dupfind, tmp_path, "--write-dataset", "out", "crawl")
    dups = duplicate_ids(report)
    assert dups
    want = ds.dataset(tmp_path / "crawl", partitioning="hive").to_table()
    got = ds.dataset(tmp_path / "out", partitioning="hive").to_table()
    assert got.schema.names == t.schema.names + ["region", "batch"]
    assert got.schema.equals(want.schema)
    assert str(got.schema.field("text").type).startswith("dictionary")
    keep = pa.array([i not in dups for i in want["id"].to_pylist()])
    # As values: a dictionary column's dictionaries differ once rows are left out.
    assert got.to_pylist() == want.filter(keep).to_pylist()
    parts = sorted(os.path.relpath(os.path.join(d, f), tmp_path / "out")
                   for d, _, files in os.walk(tmp_path / "out") for f in files)
    # The empty input (us/1) has a part of its schema and no rows, as pyarrow and Spark write
    # an empty table (docs/dumps-and-index.md), numbered by its place among the inputs.
    assert parts == ["region=eu/batch=1/part-00000-00000-part-0.parquet",
                     "region=us/batch=1/part-00000-00001-part-0.parquet",
                     "region=us/batch=2/part-00000-00002-part-0.parquet"]
    # The file alone (read_table would add the columns of its hive directories).
    empty = pq.ParquetFile(tmp_path / "out" / "region=us" / "batch=1"
                           / "part-00000-00001-part-0.parquet")
    assert empty.metadata.num_rows == 0 and empty.schema_arrow.equals(t.schema)
    duckdb = pytest.importorskip("duckdb")
    query = "select id, region, batch from read_parquet('{}/**/*.parquet', hive_partitioning=true)"
    con = duckdb.connect()
    rows = con.execute(query.format(tmp_path / "out")).fetchall()
    inputs = con.execute(query.format(tmp_path / "crawl")).fetchall()
    assert rows == [r for r in inputs if r[0] not in dups]
