"""Predictions X coef + intercept for the estimator's ``predict``.

On the native library's row kernel and the engines' own threads where the library is loaded
already (it is never loaded for this): NumPy's matmul would run a large product on its OpenBLAS
worker threads, which then poll for ~0.1 s beside the engine's, and a stream that predicts each
batch before learning from it took 1.7x as long at ``n_jobs=2`` (docs/native.md, "Predictions").
Elsewhere, and on inputs too small for the engines' threads (where the call's fixed cost, ~10 µs,
is most of a small product's), NumPy's matmul.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._native import cpu as native_cpu

#: Entries of X~ (rows × (features + 1)) from which the engine runs a batch's passes on its
#: threads (BatchOps::min_parallel_entries), and so these rows.
POOL_ENTRIES = 1 << 17


def predict(X: Any, coef: np.ndarray, intercept: Any, threads: int | None) -> Any:
    """X coef + intercept, ``threads`` the estimator's (None: all cores)."""
    if (isinstance(X, np.ndarray) and X.ndim == 2 and X.shape[0] * (X.shape[1] + 1) >= POOL_ENTRIES
            and X.dtype == coef.dtype
            and X.dtype in native_cpu.DTYPE_CODES and X.flags.c_contiguous
            and coef.flags.c_contiguous and coef.ndim == 1):
        out = native_cpu.predict(X, coef, intercept, threads)
        if out is not None:
            return out
    return X @ coef + intercept
