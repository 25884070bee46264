"""The linear-solver ladder (method.md, contract v2): the Newton matrix equilibrated by its
diagonal, then Cholesky → LU → minimum-norm SVD, with LAPACK condition estimates.

The d × d systems are small, so the ladder runs on the host even when the batch lives on a GPU.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import scipy.linalg
from scipy.linalg import lapack

from ..errors import NumericalError
from .xp import to_host

#: Below these rconds (method.md) the estimator warns that digits of the estimate may be lost.
RCOND_WARNING = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-10}


def ill_conditioned(rcond: float | None, dtype: Any) -> bool:
    """Whether a batch's last Newton step warrants an IllConditionedWarning (the svd rung reports
    0, so it always does; a batch without a Newton system, rcond None, never does)."""
    return rcond is not None and rcond < RCOND_WARNING[np.dtype(dtype)]


def ill_conditioning_message(batch: int, diag: dict, dtype: np.dtype,
                             factorization: str = "cholesky") -> str:
    """What an IllConditionedWarning says about one batch's last Newton step."""
    cause = ("Collinear or constant columns are the usual cause (a constant column duplicates "
             "the intercept); remove or combine them.")
    if factorization == "cholesky":
        cause += (" If no column is redundant and the design is ill-conditioned by nature (a "
                  "high-degree polynomial, say), factorization='qr' solves by QR of the rows "
                  "instead of the normal equations and keeps about twice the digits "
                  "(docs/numerics.md).")
    if diag["solver"] == "svd":
        return (f"batch {batch}: the Newton system is numerically singular even after "
                "equilibration (solver 'svd'): the estimate is the minimum-norm one in "
                f"equilibrated units and is not unique. {cause}")
    rcond = float(diag["rcond"])
    digits = np.finfo(dtype).precision
    # The qr rung's rcond is R's squared (the Newton matrix's), but a QR solve loses the digits
    # of R's condition only: half as many.
    lost_fraction = 0.5 if diag["solver"] == "qr" else 1.0
    lost = min(-np.log10(rcond) * lost_fraction, digits) if rcond > 0 else digits
    return (f"batch {batch}: the Newton system is ill-conditioned even after equilibration "
            f"(rcond {rcond:.2g}, solver '{diag['solver']}'): about {lost:.0f} of the "
            f"{digits} significant digits of {np.dtype(dtype).name} may be lost in the "
            f"estimate. {cause}")


class LadderResult(NamedTuple):
    step: np.ndarray  # the solution of H x = rhs, host array in H's dtype
    rung: str  # "cholesky", "lu" or "svd"
    rcond: float  # 1-norm reciprocal condition estimate of the equilibrated matrix; 0 for svd


def equilibration_scales(H: np.ndarray) -> np.ndarray:
    """s_i = 1/√H_ii, 1 where H_ii is not a finite positive normal number (in H's dtype): for a
    subnormal H_ii, s_i · s_j overflows and Ĥ would hold inf or NaN, on which LAPACK's SVD can
    loop forever (tests/test_reliability_numbers.py).

    Written out rather than LAPACK's ?poequ/?laqsy: ?poequ stops at the first non-positive
    diagonal entry and ?laqsy scales only when it judges it worthwhile, while the contract always
    scales and keeps 1 for such entries.
    """
    diagonal = np.diagonal(H)
    usable = np.isfinite(diagonal) & (diagonal >= np.finfo(diagonal.dtype).tiny)
    scales = np.ones_like(diagonal)
    scales[usable] = 1 / np.sqrt(diagonal[usable])
    return scales


def _accept(x: np.ndarray, rcond: float, rcond_min: float) -> bool:
    return rcond >= rcond_min and bool(np.all(np.isfinite(x)))


def _rungs(H: np.ndarray, b: np.ndarray, eps: float | None = None) -> LadderResult:
    """Cholesky → LU → SVD on an already equilibrated matrix; ``b`` has one column per
    right-hand side and so has the solution. ``eps``: the precision H's entries carry (None:
    its dtype's), which rcond_min and the SVD's cut are relative to."""
    d = H.shape[0]
    rcond_min = d * (float(np.finfo(H.dtype).eps) if eps is None else eps)
    anorm = float(np.abs(H).sum(axis=0).max())

    if np.array_equal(H, H.T):
        potrf, pocon, potrs = lapack.get_lapack_funcs(("potrf", "pocon", "potrs"), (H,))
        c, info = potrf(H, lower=1)
        if info == 0:
            rcond, _ = pocon(c, anorm, uplo="L")
            x, info = potrs(c, b, lower=1)
            if info == 0 and _accept(x, rcond, rcond_min):
                return LadderResult(x, "cholesky", float(rcond))

    getrf, gecon, getrs = lapack.get_lapack_funcs(("getrf", "gecon", "getrs"), (H,))
    lu, piv, info = getrf(H)
    if info == 0:
        rcond, _ = gecon(lu, anorm, norm="1")
        x, info = getrs(lu, piv, b)
        if info == 0 and _accept(x, rcond, rcond_min):
            return LadderResult(x, "lu", float(rcond))

    try:
        x = scipy.linalg.lstsq(H, b, cond=rcond_min, lapack_driver="gelsd", check_finite=False)[0]
    except np.linalg.LinAlgError as exc:  # the last rung: nothing left to fall back on
        raise NumericalError("the minimum-norm (SVD) solve of the Newton system failed to "
                             f"converge ({exc})") from exc
    return LadderResult(x.astype(H.dtype, copy=False), "svd", 0.0)


def _require_finite(values: np.ndarray, what: str) -> None:
    """A Newton system with a non-finite entry has no usable step, and LAPACK must not see it
    (its SVD can loop forever on one). The diagonal (Σ w x², which overflows first) and the
    right-hand side are checked, as the native ladder does."""
    if not np.all(np.isfinite(values)):
        raise NumericalError(f"the Newton system's {what} is not finite: the data's squares or "
                             f"products overflow {values.dtype.name}; rescale the columns of X, "
                             "y or the sample weights")


def solve(H: Any, rhs: Any) -> LadderResult:
    """Solve H x = rhs through Ĥ = D⁻¹HD⁻¹ (s_i = 1/√H_ii): Ĥ z = s ∘ rhs, x = s ∘ z."""
    H = np.asarray(to_host(H))
    _require_finite(np.diagonal(H), "matrix")
    s = equilibration_scales(H)
    # The product s_i · s_j first, so that an exactly symmetric H gives an exactly symmetric Ĥ.
    H_hat = np.ascontiguousarray(H * (s[:, None] * s[None, :]))
    b = (s * np.asarray(to_host(rhs), dtype=H.dtype).reshape(-1)).reshape(-1, 1)
    _require_finite(b, "right-hand side")
    z, rung, rcond = _rungs(H_hat, b)
    return LadderResult(s * z[:, 0], rung, rcond)


def solve_matrix(H: Any, rhs: Any, eps: float | None = None) -> LadderResult:
    """Solve H X = rhs (d × k) through the same equilibrated ladder: X = D Ĥ⁻¹ D rhs. ``eps``:
    the precision H's entries were computed in, where it is coarser than H's dtype (a float32
    stream's matrices solved in float64): the rungs' rcond_min and cut are relative to it."""
    H = np.asarray(to_host(H))
    _require_finite(np.diagonal(H), "matrix")
    s = equilibration_scales(H)
    H_hat = np.ascontiguousarray(H * (s[:, None] * s[None, :]))
    B = np.asfortranarray(s[:, None] * np.asarray(to_host(rhs), dtype=H.dtype))
    _require_finite(B, "right-hand side")
    z, rung, rcond = _rungs(H_hat, B, eps)
    return LadderResult(s[:, None] * z, rung, rcond)
