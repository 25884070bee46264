"""NumPy ``.npy`` (memory-mapped) and ``.npz`` files: columns are 0-based indices."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._base import Batch, BatchReader, ColumnLabel

#: The most columns an array file may have. Every column gets a label (its index) and a place
#: in the feature list: an array with no rows but a declared shape of 10^8 columns (a few dozen
#: bytes on disk; found by fuzz/) took gigabytes of them. A model of 2^20 features would already
#: need an information matrix of 2^40 values.
MAX_COLUMNS = 1 << 20

# _LOAD_ERRORS: np.load's .npy header parser and zipfile raise a dozen kinds of error on damaged
# bytes (ValueError, EOFError, zlib.error, tokenize.TokenError, NotImplementedError for an unknown
# compression, MemoryError for an absurd declared shape, ...; found by fuzz/). Around np.load
# alone, every one of them means that the file is damaged, so each becomes a DataFileError.


def _reason(exc: Exception) -> str:
    return str(exc) if isinstance(exc, (ValueError, OSError)) else f"{type(exc).__name__}: {exc}"


class _ArrayReader(BatchReader):
    """Slices ``batch_size`` rows at a time out of a 2-D array, or out of an (X, y) pair."""

    def __init__(self, path: Path, batch_size: int) -> None:
        super().__init__(path, batch_size)
        self._X: NDArray[Any] = np.empty((0, 0))  # the features (and the target column)
        self._y: NDArray[Any] | None = None  # a separate target array, as in an .npz X and y

    def _use_matrix(
        self,
        data: NDArray[Any],
        name: str,
        target: ColumnLabel | None,
        features: Sequence[ColumnLabel] | None,
        target_required: bool,
    ) -> None:
        self._check_array(data, name, ndim=2)
        self._X = data
        self.n_rows, n_columns = data.shape
        self.columns = tuple(range(n_columns))
        self._select(
            None if target is None else self._column_index(target, n_columns),
            self._feature_indices(features, n_columns),
            target_required=target_required,
        )

    def _feature_indices(
        self, features: Sequence[ColumnLabel] | None, n_columns: int
    ) -> list[int] | None:
        return None if features is None else [self._column_index(c, n_columns) for c in features]

    def _check_array(self, a: NDArray[Any], name: str, *, ndim: int) -> None:
        expected = "a 2-D array (rows × columns)" if ndim == 2 else "a 1-D array"
        if a.ndim != ndim:
            raise self.error(f"wrong shape: {name} has shape {a.shape}; expected {expected}")
        if a.dtype.kind not in "biuf":
            raise self.error(f"{name} has dtype {a.dtype}; expected numbers")
        if ndim == 2 and a.shape[1] > MAX_COLUMNS:
            raise self.error(
                f"wrong shape: {name} has {a.shape[1]:,} columns; at most {MAX_COLUMNS:,} are read"
            )

    def _column_index(self, spec: ColumnLabel, n_columns: int) -> int:
        # The command line hands over text; a NumPy column can only be named by its index.
        try:
            index = int(spec)
        except ValueError:
            raise self.error(
                f"columns of a NumPy array are numbered 0 to {n_columns - 1} (negative indices "
                f"count from the end), so a column cannot be named {spec!r}"
            ) from None
        if not -n_columns <= index < n_columns:
            raise self.error(f"column index {index} is out of range for {n_columns} columns")
        return index % n_columns

    def __iter__(self) -> Iterator[Batch]:
        features = list(self.feature_columns)
        for start in range(0, self.n_rows or 0, self.batch_size):
            rows = self._X[start : start + self.batch_size]
            # Fancy indexing copies only this batch out of a memory map.
            X = np.asarray(rows[:, features], dtype=np.float64)
            if self._y is not None:
                y = np.asarray(self._y[start : start + self.batch_size], dtype=np.float64)
            elif self.target is not None:
                y = np.asarray(rows[:, self.target], dtype=np.float64)
            else:
                y = None
            yield self._checked(X, y, start)


class NpyReader(_ArrayReader):
    """A 2-D ``.npy`` array, memory-mapped so that only the batch being read is in memory."""

    format = "npy"

    def __init__(
        self,
        path: Path,
        *,
        target: ColumnLabel | None,
        features: Sequence[ColumnLabel] | None,
        batch_size: int,
        target_required: bool,
    ) -> None:
        super().__init__(path, batch_size)
        try:
            data = np.load(path, mmap_mode="r", allow_pickle=False)
        except Exception as exc:  # see _LOAD_ERRORS
            raise self.error(f"cannot be read as a .npy array: {_reason(exc)}") from None
        self._use_matrix(data, "the array", target, features, target_required)


class NpzReader(_ArrayReader):
    """An ``.npz`` archive holding arrays ``X`` and ``y``, or a single 2-D array.

    NumPy decompresses a member as a whole, so the arrays are read into memory when the file is
    opened; batches are then slices of them.
    """

    format = "npz"

    def __init__(
        self,
        path: Path,
        *,
        target: ColumnLabel | None,
        features: Sequence[ColumnLabel] | None,
        batch_size: int,
        target_required: bool,
    ) -> None:
        super().__init__(path, batch_size)
        try:
            archive = np.load(path, allow_pickle=False)
        except Exception as exc:  # see _LOAD_ERRORS
            raise self.error(f"cannot be read as a .npz archive: {_reason(exc)}") from None
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise self.error("holds a single .npy array, not an .npz archive; rename it .npy")
        try:
            with archive:
                members = {name: archive[name] for name in archive.files}
        except Exception as exc:  # see _LOAD_ERRORS
            raise self.error(f"cannot be read as a .npz archive: {_reason(exc)}") from None
        if not members:
            raise self.error("the archive holds no arrays")
        # NumPy hands a member whose name lacks ".npy" over as raw bytes (found by fuzz/).
        raw = [name for name, value in members.items() if not isinstance(value, np.ndarray)]
        if raw:
            raise self.error(f"member {raw[0]!r} of the archive is not a .npy array")
        if "X" in members:
            self._use_pair(members, target, features, target_required)
        elif len(members) == 1:
            ((name, data),) = members.items()
            self._use_matrix(data, f"array {name!r}", target, features, target_required)
        else:
            raise self.error(
                "expected arrays 'X' and 'y', or a single 2-D array; the archive holds "
                + ", ".join(repr(m) for m in members)
            )

    def _use_pair(
        self,
        members: dict[str, NDArray[Any]],
        target: ColumnLabel | None,
        features: Sequence[ColumnLabel] | None,
        target_required: bool,
    ) -> None:
        X, y = members["X"], members.get("y")
        self._check_array(X, "array 'X'", ndim=2)
        self.n_rows, n_features = X.shape
        if target is not None and str(target) != "y":
            raise self.error(
                "the target is array 'y' of this archive; --target selects a column of a single "
                f"2-D array, so leave it out (got {target!r})"
            )
        if y is None:
            if target_required:
                raise self.error("the archive has an array 'X' but no target array 'y'")
        else:
            self._check_array(y, "array 'y'", ndim=1)
            if len(y) != len(X):
                raise self.error(
                    f"wrong shape: array 'X' has {len(X)} rows but array 'y' has {len(y)}"
                )
        self.columns = tuple(range(n_features))
        self._select(None, self._feature_indices(features, n_features), target_required=False)
        self.target = None if y is None else "y"
        self._X, self._y = X, y
