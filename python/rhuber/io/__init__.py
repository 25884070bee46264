"""Streaming readers: a data file, batch by batch, checked before it reaches the estimator.

>>> from rhuber.io import read_batches
>>> for X, y, row_offset in read_batches("data.csv", target="price"):  # doctest: +SKIP
...     model.partial_fit(X, y)

Supported: CSV (``.csv``, ``.tsv``, optionally compressed, e.g. ``.csv.gz``) and Parquet
(``.parquet``, ``.pq``), read a chunk at a time; ``.npy`` (memory-mapped); ``.npz`` (each member
is read whole). Anything wrong with the file is a :class:`DataFileError` naming the file, the
1-based data row and the column.
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from pathlib import Path

from ._arrays import NpyReader, NpzReader
from ._base import DEFAULT_BATCH_SIZE, Batch, BatchReader, ColumnLabel
from ._errors import DataFileError
from ._tables import CSVReader, ParquetReader

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "FORMATS",
    "Batch",
    "BatchReader",
    "DataFileError",
    "detect_format",
    "read_batches",
]

_READERS: dict[str, type[BatchReader]] = {
    "csv": CSVReader,
    "parquet": ParquetReader,
    "npy": NpyReader,
    "npz": NpzReader,
}
FORMATS = tuple(_READERS)
"""Names accepted by the ``format`` argument of :func:`read_batches`."""

_SUFFIXES = {
    ".csv": "csv",
    ".tsv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".npy": "npy",
    ".npz": "npz",
}
_COMPRESSION = {".gz", ".bz2", ".xz", ".zst", ".zip"}


def detect_format(path: str | PathLike[str]) -> str:
    """The format of ``path`` from its suffix (``data.csv.gz`` is CSV).

    Raises
    ------
    DataFileError
        The suffix is not one of the supported formats.
    """
    suffixes = [s.lower() for s in Path(path).suffixes]
    if len(suffixes) >= 2 and suffixes[-1] in _COMPRESSION and suffixes[-2] in (".csv", ".tsv"):
        suffixes.pop()
    if suffixes and suffixes[-1] in _SUFFIXES:
        return _SUFFIXES[suffixes[-1]]
    raise DataFileError(
        path,
        "cannot tell the format from the file name; expected one of "
        + ", ".join(sorted(_SUFFIXES))
        + " (CSV may be compressed: .csv.gz)",
    )


def read_batches(
    path: str | PathLike[str],
    *,
    target: ColumnLabel | None = None,
    features: Sequence[ColumnLabel] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    format: str | None = None,
    target_required: bool = True,
) -> BatchReader:
    """Open a data file for streaming; iterating the result yields :class:`Batch` tuples.

    Parameters
    ----------
    path : path-like
        The file.
    target : str or int, optional
        The response column: a name for CSV and Parquet, a 0-based index (or its text, negative
        from the end) for a 2-D ``.npy`` or single-array ``.npz``. An ``.npz`` holding arrays
        ``X`` and ``y`` needs none. Without a target the batches carry ``y = None``.
    features : sequence of str or int, optional
        The feature columns, in order; by default every column but the target.
    batch_size : int, default=32_768
        Rows per batch; the last batch may be shorter.
    format : {"csv", "parquet", "npy", "npz"}, optional
        Overrides the format told by the file name.
    target_required : bool, default=True
        Whether a ``target`` absent from the file is an error; when False such a target is
        simply not read (a prediction file may or may not still hold the response).

    Returns
    -------
    BatchReader
        Iterable (more than once) over ``Batch(X, y, row_offset)``: ``X`` float64 of shape
        (rows, features), ``y`` float64 of shape (rows,) or None, ``row_offset`` the 0-based
        index of the first row. Every value is finite.

    Raises
    ------
    DataFileError
        At once for a missing file, an unknown format or a missing column; while iterating for
        a non-numeric, missing or infinite value, a ragged CSV row, or a damaged file.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be a positive number of rows, got {batch_size}")
    path = Path(path)
    if format is None:
        format = detect_format(path)
    elif format not in _READERS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    if not path.exists():
        raise DataFileError(path, "no such file")
    if path.is_dir():
        raise DataFileError(path, "is a directory, not a data file")
    return _READERS[format](
        path,
        target=target,
        features=features,
        batch_size=batch_size,
        target_required=target_required,
    )
