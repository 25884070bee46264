"""Array-namespace helpers: the reference runs on NumPy arrays and, unchanged, on CuPy arrays."""

from __future__ import annotations

from typing import Any

import numpy as np


def namespace(*arrays: Any) -> Any:
    """The array module (numpy or cupy) that owns ``arrays``."""
    for a in arrays:
        if type(a).__module__.split(".")[0] == "cupy":
            import cupy

            return cupy
    return np


def to_host(a: Any) -> np.ndarray:
    """A NumPy view or copy of ``a`` (a device array is copied to the host)."""
    if type(a) is np.ndarray:  # the common case, first: the estimator asks twice a batch
        return a
    get = getattr(a, "get", None)
    return get() if callable(get) and not isinstance(a, np.ndarray) else np.asarray(a)


def f64(a: Any, xp: Any) -> Any:
    return a.astype(xp.float64, copy=False)
