"""Turn user inputs (NumPy, pandas, Polars, PyTorch CPU tensors, table-like objects, lists) into
host arrays, and say where a value in them is unusable.

PyTorch tensors are taken as detached values: the estimator never joins an autograd graph.
Device tensors are not silently copied to the host: the host engines refuse them.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _is_torch_tensor(a: Any) -> bool:
    return type(a).__module__.split(".")[0] == "torch" and hasattr(a, "detach")


def as_host_input(a: Any, name: str) -> Any:
    """Return ``a`` unchanged unless it is a PyTorch tensor, which becomes a NumPy view, or a
    table-like object (:func:`is_table_like`), which becomes its ``to_numpy()``."""
    if a is None:
        return a
    if is_table_like(a):
        return a.to_numpy()
    if not _is_torch_tensor(a):
        return a
    if a.device.type != "cpu":
        raise ValueError(
            f"{name} is a PyTorch tensor on device {a.device}; the host engines take CPU tensors "
            "only (move it with .cpu(), or use backend='cuda')"
        )
    return a.detach().numpy()


def is_table_like(a: Any) -> bool:
    """An object that offers its values through ``to_numpy()`` but not the array protocols
    NumPy and scikit-learn read (a wrapper class, a frame of a library they do not know).
    pandas and Polars frames implement ``__array__`` and scikit-learn reads their column names
    itself, so they are not table-like here."""
    return (callable(getattr(a, "to_numpy", None)) and not hasattr(a, "__array__")
            and not hasattr(a, "__array_interface__") and not _is_torch_tensor(a))


def table_column_names(a: Any) -> np.ndarray | None:
    """The string column names of a table-like ``a`` (its ``columns``), or None when it has
    none or any is not a string (scikit-learn's rule for feature names)."""
    columns = getattr(a, "columns", None)
    if columns is None or isinstance(columns, str):
        return None
    try:
        names = list(columns)
    except TypeError:
        return None
    if not names or not all(isinstance(n, str) for n in names):
        return None
    return np.asarray(names, dtype=object)


def first_unusable_value(X: Any, names: Any = None) -> str | None:
    """Where the first value of ``X`` (2-D, or 1-D like y) that is not a finite real number
    sits, in words ("row 3, column 'b' (index 1) is nan"), or None when every value is one.
    Rows and columns count from 0, the first in row order is named; ``names`` are the column
    names when X had them. Columns that convert to numbers are scanned by NumPy; only a column
    holding text is read value by value, up to its first bad one."""
    try:
        values = np.asarray(X, dtype=np.float64)  # numbers only: no Python object per value
    except (TypeError, ValueError):
        values = None
    try:
        if values is None:
            values = np.asarray(X, dtype=object)
    except Exception:  # a container NumPy cannot even hold: no position to give
        return None
    if values.ndim not in (1, 2):
        return None
    columns = values.reshape(values.shape[0], -1)
    found = [(row, j) for j in range(columns.shape[1])
             if (row := _first_bad_row(columns[:, j])) is not None]
    if not found:
        return None
    i, j = min(found)
    if values.ndim == 1:
        return _unusable(columns[i, j], f"row {i}")
    column = (f"column {names[j]!r} (index {j})" if names is not None and j < len(names)
              else f"column {j}")
    return _unusable(columns[i, j], f"row {i}, {column}")


def _first_bad_row(column: np.ndarray) -> int | None:
    """The first row of a 1-D object array whose value is not a finite real number."""
    try:
        numbers = column.astype(np.float64)
    except (TypeError, ValueError):  # text somewhere: value by value
        for i, value in enumerate(column):
            if _unusable(value, "") is not None:
                return i
        return None
    bad = ~np.isfinite(numbers)
    return int(np.argmax(bad)) if bad.any() else None


def _unusable(value: Any, position: str) -> str | None:
    number = _as_real(value)
    if number is None:
        return f"{position} is {str(value)!r:.40}, not a number"
    if not np.isfinite(number):
        return f"{position} is {number}"
    return None


def _as_real(value: Any) -> float | None:
    if isinstance(value, (str, bytes)):
        try:
            return float(value)  # NumPy converts numeric strings; "1.5" is not the problem
        except ValueError:
            return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
