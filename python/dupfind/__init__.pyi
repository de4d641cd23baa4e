# Types of the public API (dupfind/__init__.py has the docstrings; docs/python.md the guide).
import os
from typing import Any, Iterable, Optional, Tuple, TypeVar, Union

import numpy as np
import numpy.typing as npt

__version__: str
ANNOTATIONS: Tuple[str, str, str, str, str]

class DupfindError(Exception):
    """A run of dupfind that failed, with the CLI's message."""

class DupfindWarning(UserWarning):
    """A row or input the engine could not read (the CLI's warning)."""

_Data = TypeVar("_Data")
_Path = Union[str, "os.PathLike[str]"]

def dedup(
    data: _Data,
    text_column: str = "text",
    id_column: Optional[str] = None,
    *,
    threshold: float = 0.8,
    method: str = "minhash",
    shingle: str = "word",
    ngram: int = 5,
    num_perm: int = 128,
    cluster: str = "strict",
    keep: Optional[str] = None,
    keep_by: Optional[str] = None,
    verify: str = "exact",
    threads: Optional[int] = None,
    seed: int = 0,
    max_memory: Union[int, str, None] = None,
) -> _Data:
    """`data` with the five `dupfind_` columns of `scan --write-dataset --annotate` added."""

def scan(paths: Union[_Path, Iterable[_Path]], **options: Any) -> dict[str, Any]:
    """`dupfind scan PATHS` with scan's flags as keywords: its JSON report."""

def signatures(
    texts: Iterable[str],
    *,
    shingle: str = "word",
    ngram: int = 5,
    num_perm: int = 128,
    seed: int = 0,
    normalize: Optional[str] = None,
    sketch: Optional[str] = None,
    threads: Optional[int] = None,
) -> npt.NDArray[np.uint32]:
    """The MinHash signatures `scan` computes, one row of `num_perm` values per text."""

def jaccard(
    a: str,
    b: str,
    *,
    shingle: str = "word",
    ngram: int = 5,
    normalize: Optional[str] = None,
) -> float:
    """The exact Jaccard similarity of the shingle sets of `a` and `b`."""

def command() -> Optional[str]:
    """The path of the `dupfind` command this package installed."""
