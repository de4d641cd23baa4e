"""dupfind: near-duplicate documents, found with MinHash or SimHash and verified exactly.

The engine of the `dupfind` CLI, in this process: `dedup` annotates a table, `scan` returns the
report of files and dumps, `signatures` and `jaccard` are the building blocks. Every option is
checked by the CLI's own code, so a refusal carries its message; the defaults are the CLI's.
See docs/python.md.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from typing import TYPE_CHECKING, Any, Dict, Iterable, Optional, Sequence, TypeVar, Union

from dupfind import _native
from dupfind._native import DupfindError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# The types are inline (py.typed); the extension module's are in _native.pyi.
_Data = TypeVar("_Data")

__version__ = _native.__version__
__all__ = [
    "dedup",
    "scan",
    "signatures",
    "jaccard",
    "command",
    "DupfindError",
    "DupfindWarning",
    "ANNOTATIONS",
]

#: The columns `dedup` adds, as `scan --write-dataset --annotate` adds them.
ANNOTATIONS = (
    "dupfind_cluster",
    "dupfind_cluster_size",
    "dupfind_keep",
    "dupfind_duplicate_of",
    "dupfind_similarity",
)

# Input errors turned into warnings, at most; the rest in one more (as the CLI warns).
_WARN_ERRORS = 10


class DupfindWarning(UserWarning):
    """A row or input the engine could not read (the CLI's warning); the row stays unclustered."""


def _flags(options: dict, defaults: dict) -> list:
    """Command-line flags for `options` (name → value): `--name value`, `--name` for True, a
    list repeated; None, False and a value equal to the CLI's default (`defaults`) left out, so
    that a default given to a method it does not apply to is not refused."""
    argv = []
    for name, value in options.items():
        if value is None or value is False or defaults.get(name, object()) == value:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            argv.append(flag)
            continue
        # `--flag=value`: a value starting with `-` (a negative number) is still its value.
        for v in value if isinstance(value, (list, tuple)) else [value]:
            argv.append(f"{flag}={os.fspath(v) if isinstance(v, os.PathLike) else v}")
    return argv


# The CLI's defaults for the options of `dedup`'s signature (`dupfind scan --help`).
_DEFAULTS = {
    "threshold": 0.8,
    "method": "minhash",
    "shingle": "word",
    "ngram": 5,
    "num_perm": 128,
    "sketch": "oph",
    "max_distance": 3,
    "cluster": "strict",
    "verify": "exact",
    "seed": 0,
}


def dedup(
    data: _Data,
    text_column: str = "text",
    id_column: Optional[str] = None,
    *,
    threshold: float = 0.8,
    method: str = "minhash",
    shingle: str = "word",
    ngram: int = 5,
    normalize: Optional[str] = None,
    containment: bool = False,
    num_perm: int = 128,
    sketch: str = "oph",
    bands: Optional[int] = None,
    rows: Optional[int] = None,
    max_distance: int = 3,
    min_similarity: Optional[float] = None,
    cluster: str = "strict",
    keep: Optional[str] = None,
    keep_by: Optional[str] = None,
    verify: str = "exact",
    threads: Optional[int] = None,
    seed: int = 0,
    max_size: Union[int, str, None] = None,
    max_memory: Union[int, str, None] = None,
) -> _Data:
    """Finds the near-duplicate rows of `data` and returns it with five columns added.

    `data`: a pyarrow Table or RecordBatchReader, a pandas or polars DataFrame, a Hugging Face
    `datasets.Dataset`, or any object with `__arrow_c_stream__`; the result is of the same kind
    (a pyarrow Table for the last). The added columns are `scan --write-dataset --annotate`'s:
    `dupfind_cluster` and `dupfind_cluster_size` (int64, null in no cluster), `dupfind_keep`
    (bool: false for a duplicate), `dupfind_duplicate_of` (string: the representative's id, or
    its row number from 0 in `data` without `id_column` or where its id is null; null when
    kept) and `dupfind_similarity` (float64, null when kept). `t.filter(t["dupfind_keep"])` is
    the deduplicated table. The table is read through the Arrow C stream interface, where it
    lies, and its columns are returned as they are, not copied.

    A row whose text is null or has no word (no shingle) is in no cluster and kept; a null text
    is an input error, warned about as a `DupfindWarning` as the CLI warns. The options are the
    CLI's (`dupfind scan --help`: every one that applies to the rows of a table), with its
    defaults: `normalize` steps (`"nfkc,punct"`), `bands`/`rows` chosen from the threshold,
    `keep` oldest (for rows, the first), `keep_by` a column (`"quality"`, `"quality:min"`),
    `threads` all cores, `max_size` a row's text in bytes or a size (a longer one is a row that
    could not be read), `max_memory` bytes or a size (`"4G"`). A refused option raises
    ValueError (a malformed value) or DupfindError (a combination the CLI refuses), with the
    CLI's message. The GIL is released while the engine works; Ctrl-C raises KeyboardInterrupt.
    """
    import pyarrow as pa

    kind, table = _to_table(data, text_column, id_column, keep_by)
    # Named by the caller's columns: a pandas frame's table holds only those dedup reads.
    names = list(map(str, data.columns)) if kind == "pandas" else table.column_names
    if _column(text_column, names) is None:
        raise ValueError(f"no column {text_column!r} (text_column): the table has {names}")
    if id_column is not None and id_column not in names:
        raise ValueError(f"no column {id_column!r} (id_column): the table has {names}")
    if keep_by is not None and _keep_by_column(keep_by, names) is None:
        raise ValueError(f"no column {_keep_by_field(keep_by)!r} (keep_by): the table has {names}")
    argv = ["dupfind", "scan", "--quiet", "--text-field", text_column]
    argv += _flags({"threshold": threshold, "method": method, "shingle": shingle,
                    "ngram": ngram, "normalize": normalize, "containment": containment,
                    "num_perm": num_perm, "sketch": sketch, "bands": bands, "rows": rows,
                    "max_distance": max_distance, "min_similarity": min_similarity,
                    "cluster": cluster, "keep": keep, "keep_by": keep_by, "verify": verify,
                    "threads": threads, "seed": seed, "max_size": max_size,
                    "max_memory": max_memory}, _DEFAULTS)
    # The engine reads the table through the Arrow C stream interface, its buffers where they
    # lie, and returns the five columns the same way: the table's own columns are never copied.
    engine = _decoded(table, [_column(text_column, table.column_names), id_column,
                              _keep_by_column(keep_by, table.column_names)])
    report, _code, added = _native.dedup(engine, argv, id_column)
    _warn_errors(json.loads(report))
    return _like(kind, data, table, pa.table(_Stream(added)))


def _decoded(table, names: Sequence[Optional[str]]):
    """`table` with its dictionary-encoded columns among `names` decoded (a pandas categorical,
    which the engine reads as its strings, as it reads them from Parquet): those columns alone
    are copied, and only for the engine; the table returned keeps them as they are."""
    import pyarrow as pa

    for name in dict.fromkeys(n for n in names if n in table.column_names):
        i = table.schema.get_field_index(name)
        field = table.schema.field(i)
        if pa.types.is_dictionary(field.type):
            value_type = field.type.value_type
            table = table.set_column(i, field.with_type(value_type),
                                     table.column(i).cast(value_type))
    return table


class _Stream:
    """A capsule of an Arrow C stream, as an object of the Arrow PyCapsule interface."""

    def __init__(self, capsule: Any) -> None:
        self.capsule = capsule

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.capsule


def _keep_by_field(keep_by: Optional[str]) -> Optional[str]:
    """The FIELD of `keep_by` (`FIELD[:max|:min]`)."""
    if keep_by is None:
        return None
    for suffix in (":max", ":min"):
        if keep_by.endswith(suffix):
            return keep_by[: -len(suffix)]
    return keep_by


def _keep_by_column(keep_by: Optional[str], columns: Sequence[str]) -> Optional[str]:
    """The column `keep_by` (`FIELD[:max|:min]`, FIELD maybe dotted into a struct) reads."""
    field = _keep_by_field(keep_by)
    return None if field is None else _column(field, columns)


def _column(field: str, columns: Sequence[str]) -> Optional[str]:
    """The column a field reads (the first of `_columns`), None when there is none."""
    found = _columns(field, columns)
    return found[0] if found else None


def _columns(field: str, columns: Sequence[str]) -> list:
    """The columns a field may read: itself (a name may hold dots: `meta.text`, as
    json_normalize writes), and the struct columns a dotted name (`meta.text`) may be in, as the
    CLI's --text-field and --keep-by read a dump's nested fields. The engine refuses a field
    that more than one of them holds."""
    parts = field.split(".")
    names = (".".join(parts[:n]) for n in range(len(parts), 0, -1))
    return [name for name in names if name in columns]


def _warn_errors(report: dict) -> None:
    """The report's input errors as warnings, a row named by its number from 0; an error of the
    whole table (nothing read) raised."""
    errors = report.get("errors", [])
    for e in errors:
        if e.get("line") is None:
            raise DupfindError(e["error"])
    for e in errors[:_WARN_ERRORS]:
        warnings.warn(DupfindWarning(f"row {e['line'] - 1}: {e['error']}"), stacklevel=3)
    if len(errors) > _WARN_ERRORS:
        warnings.warn(DupfindWarning(
            f"{len(errors) - _WARN_ERRORS} more rows could not be read"), stacklevel=3)


def _module(data: Any) -> str:
    return type(data).__module__.split(".")[0]


def _to_table(data: Any, text_column: str, id_column: Optional[str], keep_by: Optional[str]):
    """(kind, pyarrow Table) of `data`: the table itself, or its columns through Arrow."""
    import pyarrow as pa

    if isinstance(data, pa.Table):
        return "table", data
    if isinstance(data, pa.RecordBatchReader):
        return "reader", data.read_all()
    if isinstance(data, pa.RecordBatch):
        return "batch", pa.Table.from_batches([data])
    module = _module(data)
    if module == "pandas":
        # The index is the frame's, not a column; only the columns dedup reads are converted.
        columns = list(map(str, data.columns))
        keep_field = _keep_by_field(keep_by)
        wanted = _columns(text_column, columns) + [id_column]
        wanted += _columns(keep_field, columns) if keep_field is not None else []
        wanted += [c for c in data.columns if str(c).startswith("dupfind_")]
        cols = [c for c in dict.fromkeys(wanted) if c is not None and c in data.columns]
        return "pandas", pa.Table.from_pandas(data[cols], preserve_index=False)
    if module == "polars":
        if not hasattr(data, "to_arrow"):
            raise TypeError(
                f"dedup takes a polars DataFrame, not a {type(data).__name__}: collect() it first")
        return "polars", data.to_arrow()
    if module == "datasets":
        # The rows in the dataset's order (an indices mapping applied), as Arrow.
        return "datasets", data.with_format("arrow")[:]
    if hasattr(data, "__arrow_c_stream__"):
        return "table", pa.table(data)
    raise TypeError(
        "dedup takes a pyarrow Table or RecordBatchReader, a pandas or polars DataFrame, a "
        f"datasets.Dataset or an object with __arrow_c_stream__, not {type(data).__name__}")


def _like(kind: str, data: Any, table, added):
    """`data` with the columns of `added`, of `data`'s kind."""
    import pyarrow as pa

    if kind in ("table", "reader", "batch"):
        out = table
        for field in added.schema:
            out = out.append_column(field, added.column(field.name))
        if kind == "reader":
            return pa.RecordBatchReader.from_batches(out.schema, out.to_batches())
        if kind == "batch":
            return out.combine_chunks().to_batches()[0] if out.num_rows else pa.RecordBatch.from_pylist([], out.schema)
        return out
    if kind == "pandas":
        import pandas as pd

        out = data.copy(deep=False)
        types = {
            "dupfind_cluster": pd.Int64Dtype(),
            "dupfind_cluster_size": pd.Int64Dtype(),
            "dupfind_keep": bool,
            "dupfind_duplicate_of": object,
            "dupfind_similarity": pd.Float64Dtype(),
        }
        for name in added.column_names:
            values = added.column(name).to_pylist()
            out[name] = pd.Series(values, index=data.index, dtype=types[name])
        return out
    if kind == "polars":
        import polars as pl

        return data.hstack(pl.from_arrow(added).get_columns())
    if kind == "datasets":
        out = data.flatten_indices() if getattr(data, "_indices", None) is not None else data
        for name in added.column_names:
            out = out.add_column(name, added.column(name).to_pylist())
        return out
    raise AssertionError(kind)


def scan(paths: Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]], None] = None,
         **options: Any) -> Dict[str, Any]:
    """Runs `dupfind scan PATHS` with `options` and returns its report: exactly the JSON the
    CLI prints with `--format json`, as a dict.

    With `files_from="LIST"` the paths may be left out (None, or no argument): the list's files
    are scanned, as `dupfind scan --files-from LIST` does; paths given too are scanned besides.

    Options are scan's flags with `_` for `-` (`num_perm=64`, `keep_by="quality"`,
    `write_dataset="out"`, `exclude=["*.log", "tmp/"]`); True gives a bare flag. The CLI checks
    them: a malformed value raises ValueError, a refused combination DupfindError, each with the
    CLI's message. Warnings and progress go to stderr as the CLI writes them (`quiet=True`
    silences them). `format` and `output` are not options here: the report is the return value.
    """
    for name in ("format", "output", "o"):
        if name in options:
            raise ValueError(
                f"scan() returns the JSON report: {name!r} is not an option of scan() "
                "(run the dupfind command for another format or an output file)")
    if paths is None:
        paths = []
    elif isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    paths = list(paths)
    if not paths and options.get("files_from") in (None, False):
        # The CLI scans `.` without a path; an empty list here is most often a glob that
        # matched nothing, and scanning the working directory instead would be a surprise.
        raise ValueError("scan() got no paths (a glob that matched nothing?): give \".\" to "
                         "scan the working directory, or files_from=LIST to scan a list")
    argv = ["dupfind", "scan"] + _flags(options, {})
    argv += ["--"] + [os.fspath(p) for p in paths]
    report, _code = _native.scan(argv)
    return json.loads(report)


def _similarity_argv(shingle: str, ngram: int, num_perm: int, seed: int,
                     normalize: Optional[str], sketch: Optional[str]) -> list:
    return ["dupfind", "scan"] + _flags(
        {"shingle": shingle, "ngram": ngram, "num_perm": num_perm, "seed": seed,
         "normalize": normalize, "sketch": sketch}, {}) + ["--", "."]


def signatures(texts: Iterable[str], *, shingle: str = "word", ngram: int = 5,
               num_perm: int = 128, seed: int = 0, normalize: Optional[str] = None,
               sketch: Optional[str] = None,
               threads: Optional[int] = None) -> "npt.NDArray[np.uint32]":
    """The MinHash signatures of `texts`, as `scan` computes them: a numpy array of uint32,
    one row of `num_perm` values per text. A text without a word (empty, or only whitespace),
    which `scan` reports as empty and never compares, has no signature: its row is all
    2**32 - 1, as an empty datasketch MinHash holds. A text of fewer words than `ngram` is one
    shingle. The fraction of equal values of two rows estimates their Jaccard
    similarity. The options are scan's, with its defaults and checks; `sketch` oph (default) or
    kperm. Signed on `threads` threads (default all cores), the GIL released. One str (or
    bytes) rather than a sequence of texts raises TypeError: pass `[text]`.
    """
    import numpy as np

    # A str is iterable by character (bytes by integer): one text given where a sequence of
    # texts is would be signed a character at a time, never as the one text it is.
    if isinstance(texts, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"texts must be a list of texts (str), not one {type(texts).__name__}: "
                        f"for one text's signature pass [text]")
    texts = list(texts)
    argv = _similarity_argv(shingle, ngram, num_perm, seed, normalize, sketch)
    values, k = _native.signatures(texts, argv, threads)
    return np.frombuffer(values, dtype=np.uint32).reshape(len(texts), k)


def jaccard(a: str, b: str, *, shingle: str = "word", ngram: int = 5,
            normalize: Optional[str] = None) -> float:
    """The exact Jaccard similarity of the shingle sets of texts `a` and `b`: what `scan`
    verifies a candidate pair with (`--verify exact`). 1.0 for two texts without a shingle."""
    argv = _similarity_argv(shingle, ngram, 128, 0, normalize, None)
    return _native.jaccard(a, b, argv)


def command() -> Optional[str]:
    """The path of the `dupfind` command this package installed, or None when it is not found
    (for programs that run the CLI, as the Spark driver does, without it on PATH)."""
    import sysconfig

    names = ["dupfind.exe", "dupfind"] if os.name == "nt" else ["dupfind"]
    dirs = [sysconfig.get_path("scripts"), os.path.dirname(sys.executable)]
    try:
        dirs.append(sysconfig.get_path("scripts", f"{os.name}_user"))
    except KeyError:
        pass
    for d in dirs:
        for name in names:
            path = os.path.join(d or "", name)
            if d and os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return None
