"""Streams that change (method.md, contract v4): forgetting and the drift test.

- :func:`discount` — the state before a batch with its history discounted by γ_b (``half_life``):
  the information, the effective weight and every inference sum times γ_b; counts stay counts.
- :func:`drift_test` — does the batch follow the model of the history? The batch score at the
  previous coefficients, standardized by its variance under no change, is χ²_d.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import scipy.stats

from ..errors import NumericalError
from .ladder import LadderResult, equilibration_scales, solve_matrix
from .problem import BatchProblem
from .sqrt_info import information_from_factor
from .types import State
from .xp import f64, to_host


class DriftResult(NamedTuple):
    statistic: float
    df: float
    pvalue: float


#: The result where the contract defines no test.
NO_TEST = DriftResult(math.nan, math.nan, math.nan)


def discount(state: State, gamma: float) -> State:
    """``state`` with its history times γ: J̃ (in its dtype, γ rounded to it), W and the inference
    sums; in the qr mode R̃ and z̃ times √γ (the history ½‖R̃β − z̃‖² times γ) and J̃ = R̃ᵀR̃.
    The coefficients, scale, λ̃ and the counters are not weights and stay as they are."""
    g = state.dtype.type(gamma)
    matrices = {name: None if getattr(state, name) is None else getattr(state, name) * g
                for name in ("gram", "score_gram")}
    if state.information_factor is not None:
        root = state.dtype.type(math.sqrt(gamma))
        R = state.information_factor * root
        matrices.update(information=information_from_factor(R), information_factor=R,
                        information_vector=state.information_vector * root)
    else:
        matrices["information"] = state.information * g
    return state.replace(
        effective_weight=gamma * float(state.effective_weight),
        score_sq_sum=gamma * float(state.score_sq_sum),
        curvature_sum=gamma * float(state.curvature_sum),
        curvature_sq_sum=gamma * float(state.curvature_sq_sum),
        inference_weight=gamma * float(state.inference_weight),
        **matrices,
    )


def _symmetric_solve(matrix: np.ndarray, rhs: np.ndarray, eps: float
                     ) -> tuple[LadderResult, int]:
    """matrix⁻¹ rhs by the equilibrated ladder, and the rank it used (d unless the SVD rung cut
    singular values below d · eps · σ_max of the equilibrated matrix, as gelsd does). ``eps``:
    the precision of the stream's dtype, which the matrix's entries carry though they are
    solved in float64 (:func:`statistic`)."""
    result = solve_matrix(matrix, rhs, eps)
    d = matrix.shape[0]
    if result.rung != "svd":
        return result, d
    s = equilibration_scales(matrix)
    sv = np.linalg.svd(matrix * (s[:, None] * s[None, :]), compute_uv=False)
    cut = d * eps * float(sv[0]) if sv.size else 0.0
    return result, int(np.count_nonzero(sv > cut))


def statistic(score: np.ndarray, gram: np.ndarray, information: np.ndarray,
              score_sq_sum: float, curvature_sum: float, eps: float) -> DriftResult:
    """T = Uᵀ V⁻¹ U with V = v (A + A J̃⁻¹ A), v = Σwψ² / Σwc, all in float64 on the host.

    ``score`` U = Σ w ψ(r̃) x̃, ``gram`` A = X̃ᵀ diag(w c(r̃)) X̃ and ``information`` J̃ (after any
    discounting). J̃⁻¹A and V⁻¹U go through the equilibrated ladder; V is symmetrized (its two
    triangles differ by rounding only) so that its Cholesky rung applies. On V's SVD rung the
    pseudo-inverse stands for V⁻¹ and the degrees of freedom are its numerical rank.

    ``eps``: the precision of the stream's dtype. The ladder's rcond_min and the SVD's cut are
    d · eps(dtype) (method.md), and A and J̃ carry the stream's precision however they are
    solved: a float32 batch with one inside row has A of rank 1 whose other eigenvalues are
    float32 rounding (1e-8 of the largest, some negative); at float64's eps they passed as
    information and T came out at 7e7 on d = 5 degrees of freedom (10⁸ on the native engine:
    rounding, amplified), where float32's eps gives the svd rung, rank 1 and a T that measures the
    batch.

    A test that cannot be formed in float64 (a batch whose squares overflow, a ladder that
    fails) is NaN: the diagnostic never fails the batch it describes.
    """
    if not curvature_sum > 0:
        return NO_TEST
    v = score_sq_sum / curvature_sum
    if not (np.all(np.isfinite(score)) and np.all(np.isfinite(gram)) and math.isfinite(v)):
        return NO_TEST
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            spread = gram @ _symmetric_solve(information, gram, eps)[0].step
            V = v * (gram + spread)
            V = 0.5 * (V + V.T)
        solved, rank = _symmetric_solve(V, score[:, None], eps)
    except NumericalError:
        return NO_TEST
    T = float(score @ solved.step[:, 0])
    if not math.isfinite(T) or rank == 0:
        return NO_TEST
    return DriftResult(T, float(rank), float(scipy.stats.chi2.sf(T, rank)))


def drift_test(problem: BatchProblem, tau: float, lam: float, previous_lambda: float,
               first: bool) -> DriftResult:
    """The drift test of a batch at the state before it (``problem`` is built from that state,
    after any discounting, so its β̃ and J̃ are the test's), with the batch's τ_b and λ_b."""
    if first or lam > 0 or previous_lambda > 0:
        return NO_TEST
    xp = problem.xp
    r = problem.y - problem.Xt @ problem.beta_prev  # not problem.residual: no profiled pass
    psi = xp.clip(r, -tau, tau)
    c = (xp.abs(r) <= tau).astype(problem.dtype)
    w64, psi64, c64 = f64(problem.w, xp), f64(psi, xp), f64(c, xp)
    score = to_host(f64(problem.Xt.T @ (problem.w * psi), xp))
    gram = to_host(f64(problem.weighted_gram(problem.w * c), xp))
    information = np.asarray(to_host(f64(problem.J, xp)))
    return statistic(np.asarray(score), np.asarray(gram), information,
                     float(xp.sum(w64 * psi64 * psi64)), float(xp.sum(w64 * c64)),
                     float(np.finfo(problem.dtype).eps))


def sum_weight(w: Any, xp: Any) -> float:
    """Σw of a batch in float64, as the batch problem forms it."""
    return float(xp.sum(f64(w, xp)))
