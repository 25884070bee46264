"""A Dask collection's partitions as lazy batches, aligned across X, y and sample_weight."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import dask.dataframe as dd
import numpy as np

#: The names that y and sample_weight take as columns of one frame with X.
_Y, _W = "__rhuber_y__", "__rhuber_sample_weight__"


@dataclass(frozen=True)
class Batches:
    """Per partition, the lazy (X, y, sample_weight) blocks: Delayed objects, never computed
    here. For DataFrames, ``y`` and ``w`` are None and each X block is one pandas frame holding
    y and sample_weight as the columns named in ``columns`` (see :func:`split`)."""

    parts: Sequence[tuple[Any, Any, Any]]
    columns: tuple[list[str], str, str | None] | None

    def __len__(self) -> int:
        return len(self.parts)


def split(X: Any, y: Any, w: Any, columns: tuple[list[str], str, str | None] | None):
    """A partition's X, y, sample_weight, taken apart when it is one joined frame."""
    if columns is None:
        return X, y, w
    features, target, weight = columns
    return X[features], X[target], None if weight is None else X[weight]


def batches(X: Any, y: Any, sample_weight: Any = None) -> Batches:
    """The partitions of X (a Dask array or DataFrame) with the matching ones of y and
    sample_weight (of the same kind), as Delayed objects.

    Arrays: X is rechunked to one chunk of columns, y and sample_weight to X's row chunks.
    DataFrames: y and sample_weight join X as columns (``X.assign``, so pandas' index alignment
    decides which rows go together): X's partitions are the batches. Joining matters: Dask
    optimizes each collection on its own, and a column read alone from Parquet may have its
    partitions fused (``df["y"]`` in 2 partitions where ``df[features]`` has 6).
    """
    if isinstance(X, da.Array):
        return _array_batches(X, y, sample_weight)
    if isinstance(X, dd.DataFrame):
        return _frame_batches(X, y, sample_weight)
    raise TypeError(
        f"X must be a Dask array or DataFrame (dask.array.Array, dask.dataframe.DataFrame), got "
        f"{type(X).__name__}; in-memory data streams with partial_fit")


def _array_batches(X: da.Array, y: Any, w: Any) -> Batches:
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D Dask array (n_samples, n_features), got {X.ndim}-D")
    if y is None:
        raise TypeError("y is required")
    for name, v in (("y", y), ("sample_weight", w)):
        if v is not None and not isinstance(v, da.Array):
            raise TypeError(f"X is a Dask array, so {name} must be one too, got "
                            f"{type(v).__name__}")
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})  # a batch holds every feature
    rows = X.chunks[0]
    ys, ws = (None if v is None else _row_blocks(name, v, X, rows)
              for name, v in (("y", y), ("sample_weight", w)))
    xs = X.to_delayed().reshape(-1)
    ws = [None] * len(xs) if ws is None else ws
    return Batches(list(zip(xs, ys, ws, strict=True)), None)


def _row_blocks(name: str, v: da.Array, X: da.Array, rows: tuple) -> Any:
    """The Delayed blocks of a 1-D array (or one column) in X's row chunks."""
    if v.ndim == 2 and v.shape[1] == 1:
        v = v[:, 0]
    elif v.ndim != 1:
        raise ValueError(f"{name} must be a 1-D Dask array, got shape {v.shape}")
    if v.chunks[0] != rows:
        if any(np.isnan(rows)) or any(np.isnan(v.chunks[0])):
            raise ValueError(
                f"{name} has row chunks {v.chunks[0]} and X has {rows}, and unknown sizes "
                "cannot be rechunked; give them the same chunks (compute_chunk_sizes())")
        if v.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but {name} has {v.shape[0]}")
        v = v.rechunk({0: rows})
    return v.to_delayed().reshape(-1)


def _frame_batches(X: dd.DataFrame, y: Any, w: Any) -> Batches:
    if y is None:
        raise TypeError("y is required")
    named = {key: _series(name, v) for name, key, v in (("y", _Y, y), ("sample_weight", _W, w))
             if v is not None}
    clash = [k for k in named if k in X.columns]
    if clash:
        raise ValueError(f"X has a column named {clash[0]!r}, reserved for joining y")
    joined = X.assign(**named)
    if X.known_divisions and joined.divisions != X.divisions:
        # Aligning y with other divisions split X's partitions: the batches stay X's.
        joined = joined.repartition(divisions=X.divisions)
    columns = (list(X.columns), _Y, _W if _W in named else None)
    return Batches([(part, None, None) for part in joined.to_delayed()], columns)


def _series(name: str, v: Any) -> dd.Series:
    if isinstance(v, dd.DataFrame) and len(v.columns) == 1:
        return v[v.columns[0]]
    if not isinstance(v, dd.Series):
        raise TypeError(f"X is a Dask DataFrame, so {name} must be a Dask Series (or a "
                        f"one-column DataFrame), got {type(v).__name__}")
    return v
