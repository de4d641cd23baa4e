"""`--format parquet`: the report as one table, read back with pyarrow and DuckDB, agrees with
the JSON report; and `--keep-by` on a Parquet dump made by pyarrow keeps, in each cluster, the row
with the greatest value, which DuckDB's anti-join of the dump with the table finds."""

import base64
import json
import os

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from conftest import run


def json_rows(report):
    """The rows the JSON report implies, as the table's columns."""
    rows = []
    for c in report["clusters"]:
        rep = c["representative"]
        listed = {}
        for kind in ("linked", "duplicates"):
            for d in c.get(kind, []):
                listed[(d["path"], d.get("line"))] = (d, kind == "duplicates")
        for m in c["members"]:
            key = (m["path"], m.get("line"))
            entry, duplicate = listed.get(key, (None, False))
            rows.append({
                "cluster": c["id"],
                "size": c["size"],
                "path": m["path"],
                "path_bytes": base64.b64decode(m["path_bytes"]) if "path_bytes" in m else None,
                "line": m.get("line"),
                "id": m.get("id"),
                "bytes": m["bytes"],
                "indexed": bool(m.get("indexed")),
                "representative": rep is not None and (rep["path"], rep.get("line")) == key,
                "duplicate": duplicate,
                "similarity": entry["similarity"] if entry else None,
                "exact": entry["exact"] if entry else None,
            })
    return rows


def test_parquet_report_agrees_with_the_json_report(dupfind, docs, scan, tmp_path):
    """Every clustered document of the corpus (files and dump records) is one row, with the
    report's values, read by pyarrow and by DuckDB."""
    out = tmp_path / "report.parquet"
    for options in ([], ["--keep", "none"], ["--cluster", "components"]):
        _, report = scan(options)
        report = json.loads(report)
        run([dupfind, "scan", "--format", "parquet", "-o", str(out), *options, docs])
        table = pq.read_table(out)
        assert table.to_pylist() == json_rows(report), options
        meta = pq.read_metadata(out).metadata
        assert json.loads(meta[b"dupfind.params"]) == report["params"]
        assert meta[b"dupfind.schema_version"] == str(report["schema_version"]).encode()
        duplicates = sum(len(c["duplicates"]) for c in report["clusters"])
        got = duckdb.sql(f"SELECT count(*) FROM '{out}' WHERE duplicate").fetchone()[0]
        assert got == duplicates > 0
        clusters = duckdb.sql(f"SELECT count(DISTINCT cluster) FROM '{out}'").fetchone()[0]
        assert clusters == len(report["clusters"])


def test_keep_by_on_a_parquet_dump_and_the_anti_join_of_docs_output(dupfind, docs, tmp_path):
    """A pyarrow dump of the corpus' files with a quality column (null on some rows): each
    cluster keeps a row of the greatest quality among its members that have one, and the rows
    DuckDB keeps by anti-joining the report's duplicates are every row but those."""
    texts, paths = [], []
    for root, _, names in sorted(os.walk(docs)):
        for name in sorted(names):
            if name.endswith(".txt"):
                with open(os.path.join(root, name), "rb") as f:
                    data = f.read()
                if b"\0" not in data:
                    texts.append(data.decode("utf-8", "replace"))
                    paths.append(name)
    quality = [None if i % 5 == 0 else (i * 37) % 101 for i in range(len(texts))]
    dump = tmp_path / "crawl.parquet"
    pq.write_table(pa.table({"id": paths, "text": texts,
                             "quality": pa.array(quality, pa.int64())}), dump)
    report_path = tmp_path / "report.parquet"
    cwd = str(tmp_path)
    _, out = run([dupfind, "scan", "--keep-by", "quality", "crawl.parquet"], ok=(0, 1), cwd=cwd)
    report = json.loads(out)
    assert report["params"]["keep_by"] == "quality:max"
    run([dupfind, "scan", "--keep-by", "quality", "--format", "parquet", "-o", str(report_path),
         "crawl.parquet"], ok=(0, 1), cwd=cwd)
    assert report["clusters"], "the corpus has clusters"
    for c in report["clusters"]:
        values = [quality[m["line"] - 1] for m in c["members"]]
        best = max((v for v in values if v is not None), default=None)
        kept = quality[c["representative"]["line"] - 1]
        assert kept == best, (values, c["representative"])
    # The example of docs/output.md: the dump's rows to keep.
    kept = duckdb.sql(f"""
        SELECT d.id FROM read_parquet('{dump}', file_row_number = true) d
        ANTI JOIN (SELECT line FROM '{report_path}' WHERE duplicate) r
          ON r.line = d.file_row_number + 1
        ORDER BY d.file_row_number""").fetchall()
    dropped = {d["line"] for c in report["clusters"] for d in c["duplicates"]}
    want = [(p,) for i, p in enumerate(paths) if i + 1 not in dropped]
    assert kept == want and len(want) < len(paths)
