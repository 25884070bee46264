"""The L1 penalty's regime of a stream, read from one of its batches as if it were the stream's
first (the first batch, where a decision at the stream's start needs the regime; else the
batch at which the stream asks the advisor: :func:`rhuber.dispatch.start`): how many features
the penalty is expected to keep (docs/tuner.md, "The penalty's regime").

At the start point (β = 0, the intercept at the median of y) the gradient of the smooth part in
feature j is g_j = |x_jᵀψ_τ(r₀)| / N, r₀ = y − median(y). The strong-rule screen keeps feature j
while g_j > λ: the share of features kept estimates the active fraction of the first solve. λ is
the batch's: ``alpha``, or the schedule's λ = lambda_scale · τ · √(log max(p, 2) / N) with the τ
the update would start from (``tau``, else ``epsilon`` times the MAD scale of r₀).

The screen reads at most :data:`SCREEN_ROWS` rows of that batch, at most once per stream: one
pass over them (in the native library where it is loaded), against the solve's passes over
every row of every batch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._native import cpu as native_cpu
from ..core.types import MAD_K, log_features

#: The first batch's rows the screen reads at most (its gradient is a mean over them).
SCREEN_ROWS = 2048
#: A stream is in the sparse regime when the screen keeps at most this share of the features.
SPARSE_ACTIVE_SHARE = 0.5


def start_gradient(X: Any, y: Any, *, tau: float | None, epsilon: float,
                   fit_intercept: bool) -> tuple[np.ndarray, float]:
    """g (one entry a feature, in float64) at the start point over the screen's rows, and the τ
    it used; τ is 0 where the scale of r₀ is 0 (g is then 0 too).

    The native library computes it where it is loaded and the rows are C-contiguous float32 or
    float64; it is never loaded for the screen (in NumPy, :func:`start_gradient_numpy`, the
    screen took ~0.3 ms of a stream's first batch: eight small calls on cold data)."""
    rows, ys = X[:SCREEN_ROWS], y[:SCREEN_ROWS]
    if (isinstance(rows, np.ndarray) and rows.ndim == 2 and rows.flags.c_contiguous
            and rows.dtype in native_cpu.DTYPE_CODES and isinstance(ys, np.ndarray)
            and ys.size == len(rows)):
        ys = ys.ravel()  # (rows, 1) targets as a vector: a view where they are contiguous
        if ys.dtype not in native_cpu.DTYPE_CODES or not ys.flags.c_contiguous:
            ys = np.ascontiguousarray(ys, dtype=np.float64)
        native = native_cpu.start_gradient(rows, ys, tau=tau, mad_factor=epsilon * MAD_K,
                                           fit_intercept=fit_intercept)
        if native is not None:
            return native
    return start_gradient_numpy(X, y, tau=tau, epsilon=epsilon, fit_intercept=fit_intercept)


def start_gradient_numpy(X: Any, y: Any, *, tau: float | None, epsilon: float,
                         fit_intercept: bool) -> tuple[np.ndarray, float]:
    """:func:`start_gradient` in NumPy: the reference, and where no native library is loaded."""
    Xs = np.asarray(X[:SCREEN_ROWS], dtype=np.float64)
    ys = np.asarray(y[:SCREEN_ROWS], dtype=np.float64).ravel()
    r0 = ys - _median(ys) if fit_intercept else ys
    if tau is None:
        center = 0.0 if fit_intercept else _median(r0)  # r0 is centred at its median already
        tau = epsilon * MAD_K * _median(np.abs(r0 - center))
    if not (math.isfinite(tau) and tau > 0):
        return np.zeros(Xs.shape[1]), 0.0
    psi = np.clip(r0, -tau, tau)
    # einsum, not Xs.T @ psi: NumPy's OpenBLAS would run the product on its own threads, which
    # then spin beside the engine's (measured: a 4-batch wide stream 1.7x slower under auto).
    score = np.einsum("ij,i->j", Xs, psi)
    return np.abs(score) / max(1, len(ys)), float(tau)


def _median(v: np.ndarray) -> float:
    """The median of a non-empty vector by one partition (np.median's dispatch costs more than
    the partition on the screen's few rows)."""
    k = len(v) // 2
    part = np.partition(v, (k - 1, k) if len(v) % 2 == 0 else k)
    return float(part[k] if len(v) % 2 else 0.5 * (part[k - 1] + part[k]))


def batch_lambda(alpha: float, lambda_scale: float | None, tau: float, rows: int,
                 features: int) -> float:
    """The first batch's λ: ``alpha``, or the schedule's (weights of 1: N_b = rows)."""
    if lambda_scale is None:
        return float(alpha)
    return float(lambda_scale) * tau * math.sqrt(log_features(features) / max(1, rows))


def active_share(X: Any, y: Any, *, alpha: float, lambda_scale: float | None,
                 tau: float | None, epsilon: float, fit_intercept: bool) -> float:
    """The share of features the strong-rule screen keeps on the first batch ``X``, ``y``
    (module docstring); 1 where the screen cannot tell (no rows, a zero scale, input on a
    device: the screen reads host memory only)."""
    if not (isinstance(X, np.ndarray) and isinstance(y, np.ndarray)) or 0 in X.shape:
        return 1.0
    g, used_tau = start_gradient(X, y, tau=tau, epsilon=epsilon, fit_intercept=fit_intercept)
    if used_tau == 0.0:
        return 1.0
    lam = batch_lambda(alpha, lambda_scale, used_tau, int(X.shape[0]), int(X.shape[1]))
    # A list's comparisons, not NumPy's: on a stream's first batch, with NumPy's code evicted
    # from the caches by the data, np.count_nonzero(g > lam) took ~40 µs (np.mean ~65), a loop
    # over 48 floats ~14; per feature the loop costs ~1 % of the screen's read of its column.
    kept = g.tolist()
    return len([v for v in kept if v > lam]) / len(kept)


def is_sparse(share: float) -> bool:
    """Whether a screen's kept share puts the stream in the sparse regime."""
    return share <= SPARSE_ACTIVE_SHARE
