"""Square-root information (method.md, contract v4, ``factorization="qr"``).

The history enters the batch objective as ½‖R̃β − z̃‖², R̃ upper triangular with a diagonal
≥ 0, as a square-root information filter (Bierman 1977) holds it. Every factor is made by
Householder QR of stacked rows (LAPACK's geqrf through scipy.linalg.qr), never from a product
XᵀX: on a design like NIST's Filip the normal equations lose every digit a QR keeps.

A local quadratic model at β_c is the rows √(w c)[x̃ | y] plus a linear term −lᵀβ with
l = X̃ᵀ(w (ψ(r) − c r)): its gradient at β_c is −X̃ᵀ(wψ(r)), the data term's, whatever c is
(the indicator: l holds only the outside rows' slopes w τ sign(r) x̃; the smoothed c_h too).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import scipy.linalg
from scipy.linalg import lapack

from ..errors import NumericalError
from .types import State
from .xp import to_host


class ModelRows(NamedTuple):
    """A local model's rows [A | b] (host, computation dtype) and its linear term l."""

    A: np.ndarray
    b: np.ndarray
    linear: np.ndarray


class Factor(NamedTuple):
    """The R (diag ≥ 0) and rotated right-hand side of stacked rows, in equilibrated units
    (columns times ``scales``), with the rank test of the contract; ``second`` a second
    right-hand side rotated by the same reflections (None when none rode along)."""

    R: np.ndarray
    rhs: np.ndarray
    scales: np.ndarray
    full_rank: bool
    second: np.ndarray | None = None


class StepModel(NamedTuple):
    """A qr Newton step's factorization kept for the information update: the factor, whose
    ``second`` right-hand side is the update's ([√w y; z̃] rotated), the model's linear term, and
    the point's pattern and τ. At a final β with the same pattern and τ the update's rows and
    linear term are the step's, so the update is this factor (no second QR)."""

    factor: Factor
    linear: np.ndarray
    pattern: np.ndarray
    tau: float


def pattern(r: Any, w: Any, tau: float) -> np.ndarray:
    """Which local model a point has: per row 1 inside (|r| ≤ τ), 2 above, 3 below, 0 for a
    zero weight. Two points with the same pattern (and τ) have the same model rows and linear
    term, so the same model minimizer."""
    r, w = (np.asarray(to_host(a)) for a in (r, w))
    classes = np.where(np.abs(r) <= tau, 1, np.where(r > 0, 2, 3)).astype(np.int8)
    classes[w == 0] = 0
    return classes


def information_from_factor(R: Any) -> np.ndarray:
    """J̃ = R̃ᵀR̃, one triangle mirrored (exactly symmetric), for reading only: no solve of the
    qr mode uses it."""
    R = np.asarray(to_host(R))
    J = R.T @ R
    return np.tril(J) + np.tril(J, -1).T


def factor_from_information(J: Any, beta: Any) -> tuple[np.ndarray, np.ndarray]:
    """(R̃, z̃) = (chol(J̃)ᵀ, R̃β̃): a Cholesky-mode history as square-root information. J̃
    must be positive definite (symmetrized first: a portable checkpoint may hold rounding
    asymmetry)."""
    J = np.asarray(to_host(J))
    beta = np.asarray(to_host(beta))
    sym = 0.5 * (J + J.T)
    try:
        R = scipy.linalg.cholesky(sym, lower=False, check_finite=True)
    except (np.linalg.LinAlgError, ValueError) as exc:
        raise ValueError(
            "the state's information matrix J̃ is not positive definite, so it has no "
            "square-root factor R̃ = chol(J̃) to continue in factorization='qr'; continue "
            "this stream in factorization='cholesky' (or start a new stream in 'qr')") from exc
    R = np.triu(R).astype(J.dtype, copy=False)
    return R, (R @ beta).astype(J.dtype, copy=False)


def in_mode(state: State, factorization: str) -> State:
    """``state`` as the given factorization holds it: a Cholesky-mode history continues in qr
    mode from R̃ = chol(J̃), z̃ = R̃β̃ (the empty state from zeros), a qr history continues in
    the Cholesky mode as J̃ = R̃ᵀR̃ (already its ``information``)."""
    if factorization == state.factorization:
        return state
    if factorization == "cholesky":
        return state.replace(information_factor=None, information_vector=None)
    host = np.asarray(to_host(state.information))
    if state.batch_count == 0:
        R, z = np.zeros_like(host), np.zeros(host.shape[0], host.dtype)
    else:
        R, z = factor_from_information(host, state.coef)
    return state.replace(information=information_from_factor(R), information_factor=R,
                         information_vector=z)


def model_rows(Xt: Any, y: Any, w: Any, r: Any, tau: float, c: Any) -> ModelRows:
    """The local model of the data term at the point whose residual is ``r``: rows
    √(w c)[x̃ | y] where w c > 0, and l = X̃ᵀ(w (ψ(r) − c r))."""
    Xt, y, w, r, c = (np.asarray(to_host(a)) for a in (Xt, y, w, r, c))
    wc = w * c
    keep = wc > 0
    root = np.sqrt(wc[keep])
    A = Xt[keep] * root[:, None]
    b = y[keep] * root
    psi = np.clip(r, -tau, tau)
    linear = Xt.T @ (w * (psi - c * r))  # 0 for inside rows: ψ(r) = r there exactly
    return ModelRows(A, b, linear.astype(Xt.dtype, copy=False))


def _column_scales(M: np.ndarray) -> np.ndarray:
    """s_j = 1/‖column j‖ (1 where that norm is not a finite positive normal number): the
    ladder's 1/√H_jj, as the Newton matrix's diagonal is the squared column norm.

    Written out: LAPACK's ?geequ scales by the largest entry of each column (and of each row,
    which must not move here), not by the 2-norm the ladder's equilibration amounts to."""
    norms = np.linalg.norm(M, axis=0)
    usable = np.isfinite(norms) & (norms >= np.sqrt(np.finfo(M.dtype).tiny))
    scales = np.ones_like(norms)
    scales[usable] = 1 / norms[usable]
    return scales


def factorize(R_hist: np.ndarray, z_hist: np.ndarray, rows: ModelRows,
              second: tuple[np.ndarray, np.ndarray] | None = None) -> Factor:
    """Householder QR of [[A | b]; [R̃ | z̃]] (the batch's rows first), its columns
    equilibrated.

    The right-hand side rides along as the last column, so it is rotated by the same
    reflections (LAPACK's geqrf on the augmented matrix, as ormqr would apply them); so does
    ``second`` = (its rows' entries, its history's), one column further, when given. The row
    order is part of the contract's numbers: on NIST's Filip in batches, the batch rows first
    gave 7.0 to 7.7 correct digits where the history first gave 6.6 to 8.0 (docs/numerics.md)."""
    d = R_hist.shape[0]
    batch = [rows.A, rows.b] + ([] if second is None else [second[0]])
    history = [R_hist, z_hist] + ([] if second is None else [second[1]])
    M = np.concatenate([np.column_stack(batch), np.column_stack(history)])
    if not np.all(np.isfinite(M)):
        raise NumericalError(
            f"the stacked rows of the square-root information are not finite in "
            f"{M.dtype.name}: rescale the columns of X, y or the sample weights")
    scales = _column_scales(M[:, :d])
    M[:, :d] *= scales
    if M.shape[0] < d + 1:  # fewer rows than R's: zero rows (as wide as M) change nothing
        M = np.concatenate([M, np.zeros((d + 1 - M.shape[0], M.shape[1]), M.dtype)])
    (R,) = scipy.linalg.qr(M, mode="r", overwrite_a=True, check_finite=False)
    R = R[:d + 1]
    signs = np.where(np.diagonal(R)[:d] < 0, -1, 1).astype(R.dtype)
    R_H = np.triu(R[:d, :d]) * signs[:, None]
    rhs = R[:d, d] * signs
    full_rank = _full_rank(R_H)
    rotated = None if second is None else R[:d, d + 1] * signs
    return Factor(R_H, rhs, scales, full_rank, rotated)


def _full_rank(R: np.ndarray) -> bool:
    """The rank test of an upper-triangular R (diag ≥ 0, d × d): no diagonal at or below
    eps · d · its largest (the contract's), and LAPACK's estimate of R's reciprocal condition
    (trcon) above eps · d. A QR without column pivoting does not reveal a rank deficiency on its
    diagonal: six inside rows of rank 4 stacked twice (d = 5, duplicated rows) left a diagonal
    ratio of 9e-15, above the cut of 1.1e-15, with trcon 3e-17 and σ_min/σ_max 7e-17 — the qr
    rung then steps along a null direction and the line search stalls, where the same rows
    given weight 2 (four rows, a zero diagonal) take the svd rung. The estimate is held to the
    eps · d at which the svd rung cuts singular values (:func:`_pinv_parts`); trcon estimates
    the 1-norm condition, within a factor of about d of the 2-norm's."""
    diagonal = np.diagonal(R)
    d = diagonal.size
    eps = float(np.finfo(R.dtype).eps)
    cut = d * eps * float(diagonal.max(initial=0.0))
    return (d > 0 and cut > 0 and bool(np.all(diagonal > cut))
            and triangular_rcond(R) > d * eps)


def triangular_rcond(R: np.ndarray) -> float:
    """LAPACK's 1-norm reciprocal condition estimate of an upper-triangular R (trcon)."""
    trcon = lapack.get_lapack_funcs("trcon", (R,))
    rcond, info = trcon(np.asfortranarray(R), norm="1", uplo="U", diag="N")
    return float(rcond) if info == 0 else 0.0


def _pinv_parts(R: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """R's SVD with the singular values at or below eps · d · σ_max cut (their inverses 0).

    The pseudo-inverse is applied by hand because the svd rung needs (R_HᵀR_H)⁺ = V Σ⁺² Vᵀ
    (the minimum-norm Newton step) and absorb needs (R_Hᵀ)⁺: one SVD serves both, where
    scipy.linalg.lstsq would solve one of them per call."""
    U, sv, Vt = np.linalg.svd(R)
    cut = R.shape[0] * float(np.finfo(R.dtype).eps) * float(sv.max(initial=0.0))
    inv = np.zeros_like(sv)
    inv[sv > cut] = 1 / sv[sv > cut]
    return U, inv, Vt


def newton_step(factor: Factor, linear: np.ndarray, beta: np.ndarray, ridge: float
                ) -> tuple[np.ndarray, str, float]:
    """The step to the minimizer of ½‖R_H γ − rhs‖² − (s∘l)ᵀγ (β = s∘γ), and its rung and
    rcond (trcon of R_H, squared).

    Rung ``qr``: R_Hᵀu = s∘l, then R_H γ* = rhs + u, and the step is s∘γ* − β. Rung ``svd``
    (R_H rank-deficient by :func:`_full_rank`): the minimum-norm step by an SVD of
    R_H. With a ridge, as in the Cholesky mode, the undamped factor decides first: a
    rank-deficient one takes its minimum-norm step undamped; otherwise the rows √ridge·I
    (in equilibrated units √ridge·diag(s), right-hand side √ridge·β) join R_H by one more QR.
    """
    s = factor.scales
    lhat = s * linear
    if not factor.full_rank:
        gamma = beta / s
        gradient = factor.R.T @ (factor.R @ gamma - factor.rhs) - lhat
        _, inv, Vt = _pinv_parts(factor.R)
        step = -(Vt.T @ (inv * (inv * (Vt @ gradient))))
        return s * step, "svd", 0.0
    R, rhs = factor.R, factor.rhs
    if ridge:
        root = np.sqrt(R.dtype.type(ridge))
        damped = factorize(R, rhs, ModelRows(np.diag(root * s), root * beta, lhat))
        # The damped factor is in the scales of its own columns: compose them.
        s = s * damped.scales
        lhat = lhat * damped.scales
        R, rhs = damped.R, damped.rhs
    u = scipy.linalg.solve_triangular(R, lhat, trans="T", lower=False, check_finite=False)
    gamma = scipy.linalg.solve_triangular(R, rhs + u, lower=False, check_finite=False)
    rcond = triangular_rcond(R) ** 2
    return s * gamma - beta, "qr", rcond


def absorb(R_hist: np.ndarray, z_hist: np.ndarray, rows: ModelRows
           ) -> tuple[np.ndarray, np.ndarray]:
    """The new (R̃, z̃): the factor of the history rows and the model's rows, z̃ including the
    linear term (R̃ᵀu = l: ½‖R̃β − z̃‖² = ½‖R̃β − rhs‖² − lᵀβ + const), in the data's units.
    A rank-deficient factor takes the minimum-norm u."""
    factor = factorize(R_hist, z_hist, rows)
    return absorb_factor(factor, factor.rhs, rows.linear, R_hist.dtype)


def absorb_factor(factor: Factor, rhs: np.ndarray, linear: np.ndarray, dtype: Any
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(R̃, z̃) from the factor of the update's rows, its rotated right-hand side ``rhs`` and
    the linear term (absorb; a kept step's factor, whose second right-hand side is the
    update's)."""
    s = factor.scales
    lhat = s * linear
    if not np.any(lhat):
        u = np.zeros_like(lhat)
    elif factor.full_rank:
        u = scipy.linalg.solve_triangular(factor.R, lhat, trans="T", lower=False,
                                          check_finite=False)
    else:
        U, inv, Vt = _pinv_parts(factor.R)
        u = U @ (inv * (Vt @ lhat))  # pinv(R_Hᵀ) lhat
    R = factor.R / s[None, :]
    z = rhs + u
    if not (np.all(np.isfinite(R)) and np.all(np.isfinite(z))):
        raise NumericalError("the batch update produced a non-finite information factor")
    return R.astype(dtype, copy=False), z.astype(dtype, copy=False)
