"""What every reader shares: the batch type, the reader interface and the per-batch checks."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ._errors import DataFileError

ColumnLabel = str | int

DEFAULT_BATCH_SIZE = 32_768


class Batch(NamedTuple):
    """One checked batch: float64 features, float64 target (None without one), first row."""

    X: NDArray[np.float64]
    y: NDArray[np.float64] | None
    row_offset: int
    """0-based index of the batch's first data row in the file."""


class BatchReader(ABC):
    """A data file opened for streaming; iterate it (as often as needed) to get :class:`Batch`\\ es.

    Opening reads only the file's header or metadata, so a missing target column is reported
    before any work starts; iterating reads one batch at a time and checks it completely
    (numbers only, no missing or infinite values) before yielding it.

    Attributes
    ----------
    path : Path
        The file.
    format : str
        "csv", "parquet", "npy" or "npz".
    batch_size : int
        Rows per batch (the last batch may be shorter).
    columns : tuple of str or int
        Every column of the file: names for tables, 0-based indices for arrays.
    feature_columns : tuple of str or int
        The feature columns, in the order of the columns of ``X``.
    target : str or int or None
        The target column, or None when the batches carry no target.
    feature_names : tuple of str or None
        Feature names to give the estimator: the column names of a table, None for arrays.
    n_rows : int or None
        Number of data rows when the format records it (not for CSV).
    """

    format: str

    def __init__(self, path: Path, batch_size: int) -> None:
        self.path = path
        self.batch_size = batch_size
        self.columns: tuple[ColumnLabel, ...] = ()
        self.feature_columns: tuple[ColumnLabel, ...] = ()
        self.target: ColumnLabel | None = None
        self.n_rows: int | None = None

    @property
    def feature_names(self) -> tuple[str, ...] | None:
        return None

    @abstractmethod
    def __iter__(self) -> Iterator[Batch]: ...

    def frames(self) -> Iterator[Batch]:
        """The batches with X as a pandas DataFrame whose columns are :attr:`feature_names`, so
        that an estimator fitted on them records the file's column names as
        ``feature_names_in_`` (as ``rhuber fit`` does). Arrays have no names: their X stays an
        array."""
        names = self.feature_names
        if names is None:
            yield from self
            return
        import pandas as pd

        for batch in self:
            yield batch._replace(X=pd.DataFrame(batch.X, columns=list(names), copy=False))

    def where(self, row: int) -> str | None:
        """How to find 1-based data ``row`` in the file, for error messages."""
        return f"index {row - 1}"

    def error(
        self, problem: str, *, row: int | None = None, column: ColumnLabel | None = None
    ) -> DataFileError:
        """A :class:`DataFileError` for this file; ``row`` is the 1-based data row."""
        where = self.where(row) if row is not None else None
        return DataFileError(self.path, problem, row=row, column=column, where=where)

    def _select(
        self,
        target: ColumnLabel | None,
        features: Sequence[ColumnLabel] | None,
        *,
        target_required: bool,
    ) -> None:
        """Resolve the target and feature columns against ``self.columns`` (already resolved)."""
        if target is not None and target not in self.columns:
            if target_required:
                raise self.error(
                    f"there is no target column {target!r}; the columns are "
                    + _list_columns(self.columns)
                )
            target = None
        self.target = target
        if features is None:
            self.feature_columns = tuple(c for c in self.columns if c != target)
        else:
            missing = [c for c in features if c not in self.columns]
            if missing:
                raise self.error(
                    f"there is no feature column {_list_columns(missing)}; the columns are "
                    + _list_columns(self.columns)
                )
            if target is not None and target in features:
                raise self.error(f"the target column {target!r} is also listed as a feature")
            if len(set(features)) != len(features):
                raise self.error(f"a feature column is listed twice in {list(features)}")
            self.feature_columns = tuple(features)
        if not self.feature_columns:
            raise self.error("there is no feature column left once the target is set aside")

    def _checked(
        self,
        X: NDArray[np.float64],
        y: NDArray[np.float64] | None,
        row_offset: int,
        raw: Sequence[Any] | None = None,
    ) -> Batch:
        """Return the batch once every value is finite, else raise for the first bad cell.

        ``raw`` holds, per column of ``X`` then for ``y``, the values as read (before the
        conversion to float); it lets the message show a non-numeric value as it was written.
        """
        bad_x = _first_nonfinite_row(X)
        bad_y = _first_nonfinite_row(y) if y is not None else None
        if bad_x is None and bad_y is None:
            return Batch(X, y, row_offset)
        if bad_y is not None and (bad_x is None or bad_y < bad_x):
            i, j, value = bad_y, len(self.feature_columns), float(y[bad_y])  # type: ignore[index]
            column = self.target
        else:
            i = bad_x  # type: ignore[assignment]
            j = int(np.argmax(~np.isfinite(X[i])))
            value, column = float(X[i, j]), self.feature_columns[j]
        raise self.error(
            _describe(value, None if raw is None else raw[j][i]),
            row=row_offset + i + 1,
            column=column,
        )


def as_float64(values: Any) -> NDArray[np.float64]:
    """Convert one column to float64; text that is not a number becomes NaN (found later).

    Parsing is vectorised by pandas; :meth:`BatchReader._checked` finds the first NaN and shows
    the raw value, so the slow path runs only for the one cell reported.
    """
    values = np.asarray(values)
    if values.dtype.kind in "biuf":
        return values.astype(np.float64, copy=False)
    import pandas as pd

    parsed = pd.to_numeric(values.ravel(), errors="coerce")
    return np.asarray(parsed, dtype=np.float64)


def _first_nonfinite_row(a: NDArray[np.float64]) -> int | None:
    # One vectorised pass; the argmax only runs on the rare bad batch.
    finite = np.isfinite(a)
    if finite.all():
        return None
    rows_ok = finite if finite.ndim == 1 else finite.all(axis=1)
    return int(np.argmin(rows_ok))


def _describe(value: float, raw: Any) -> str:
    if raw is not None and not _is_missing(raw) and math.isnan(value):
        return f"non-numeric value {raw!r}"
    if math.isnan(value):
        return "missing value (empty or NaN)"
    return f"non-finite value {raw if isinstance(raw, str) else value!r}"


def _is_missing(raw: Any) -> bool:
    if raw is None:
        return True
    if isinstance(raw, str):
        return not raw.strip()
    try:
        return bool(math.isnan(raw))
    except TypeError:
        return False


def _list_columns(columns: Sequence[ColumnLabel], limit: int = 20) -> str:
    shown = ", ".join(repr(c) for c in columns[:limit])
    return shown + (f", … ({len(columns)} in all)" if len(columns) > limit else "")
