"""The linear-solver ladder: Cholesky → LU → minimum-norm SVD, with LAPACK condition estimates.

The d × d systems are small, so the ladder runs on the host even when the batch lives on a GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg
from scipy.linalg import lapack

from .xp import to_host


def _accept(x: np.ndarray, rcond: float, rcond_min: float) -> bool:
    return rcond >= rcond_min and bool(np.all(np.isfinite(x)))


def solve(H: Any, rhs: Any) -> tuple[np.ndarray, str]:
    """Solve H x = rhs; return x (host array, H's dtype) and the rung that solved it."""
    H = np.ascontiguousarray(to_host(H))
    b = np.asarray(to_host(rhs)).reshape(-1, 1)
    d = H.shape[0]
    rcond_min = d * float(np.finfo(H.dtype).eps)
    anorm = float(np.abs(H).sum(axis=0).max())

    if np.array_equal(H, H.T):
        potrf, pocon, potrs = lapack.get_lapack_funcs(("potrf", "pocon", "potrs"), (H,))
        c, info = potrf(H, lower=1)
        if info == 0:
            rcond, _ = pocon(c, anorm, uplo="L")
            x, info = potrs(c, b, lower=1)
            if info == 0 and _accept(x, rcond, rcond_min):
                return x[:, 0], "cholesky"

    getrf, gecon, getrs = lapack.get_lapack_funcs(("getrf", "gecon", "getrs"), (H,))
    lu, piv, info = getrf(H)
    if info == 0:
        rcond, _ = gecon(lu, anorm, norm="1")
        x, info = getrs(lu, piv, b)
        if info == 0 and _accept(x, rcond, rcond_min):
            return x[:, 0], "lu"

    x = scipy.linalg.lstsq(H, b, cond=rcond_min, lapack_driver="gelsd", check_finite=False)[0]
    return x[:, 0].astype(H.dtype, copy=False), "svd"
