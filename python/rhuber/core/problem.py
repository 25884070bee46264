"""One batch's objective Q and its pieces (method.md, "The batch objective")."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..profiling import _hooks as _prof
from .huber import huber_difference, rho, smoothed_curvature
from .types import State
from .xp import f64


def weighted_gram(Xt: Any, row_weights: Any, xp: Any) -> Any:
    """X̃ᵀ diag(row_weights) X̃, lower triangle mirrored so it is exactly symmetric."""
    G = (Xt * row_weights[:, None]).T @ Xt
    lower = xp.tril(G)
    return lower + xp.tril(G, -1).T


@dataclass
class BatchProblem:
    """Q(β) = Σ w ρ(y − X̃β) + ½ δᵀJ̃δ − W λ̃ s̃ᵀδ + (W + Σw) λ ‖β_S‖₁,  δ = β − β̃."""

    Xt: Any  # design with the intercept column last, (n, d)
    y: Any
    w: Any
    sum_w: float
    beta_prev: Any  # β̃
    J: Any  # J̃ exactly as stored (R̃ᵀR̃ in the qr mode, where only the drift test reads it)
    W: float
    history_pull: Any  # W λ̃ s̃ as a dtype vector (0 on the intercept)
    lam: float
    ridge: float
    penalized: Any  # boolean mask of S
    xp: Any
    # factorization="qr": the history is ½‖R̃β − z̃‖² (core/sqrt_info.py); None otherwise.
    R: Any = None
    z: Any = None
    _first_phi: float | None = field(default=None, repr=False)

    @classmethod
    def build(cls, state: State, X: Any, y: Any, w: Any, config, xp: Any) -> BatchProblem:
        Xt = X
        if config.fit_intercept:
            Xt = xp.concatenate([X, xp.ones((X.shape[0], 1), dtype=X.dtype)], axis=1)
        d = Xt.shape[1]
        penalized = xp.ones(d, dtype=bool)
        if config.fit_intercept:
            penalized[-1] = False
        signs = xp.where(penalized, xp.sign(state.coef), 0).astype(X.dtype)
        W = float(state.effective_weight)
        return cls(
            Xt=Xt,
            y=y,
            w=w,
            sum_w=float(xp.sum(f64(w, xp))),
            beta_prev=state.coef,
            J=state.information,
            W=W,
            history_pull=(W * float(state.previous_lambda)) * signs,
            lam=float(config.alpha),
            ridge=float(config.ridge),
            penalized=penalized,
            xp=xp,
            R=state.information_factor,
            z=state.information_vector,
        )

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.Xt.dtype)

    @property
    def qr(self) -> bool:
        return self.R is not None

    def history_gradient(self, beta: Any) -> Any:
        """The history term's gradient: J̃(β − β̃), or R̃ᵀ(R̃β − z̃) in the qr mode."""
        if self.R is not None:
            return self.R.T @ (self.R @ beta - self.z)
        return self.J @ (beta - self.beta_prev)

    def _history_change(self, beta: Any, s: Any) -> float:
        """h(β + s) − h(β) of the history term h in float64, without cancellation: with
        u = R̃β − z̃ and a = R̃s, uᵀa + ½‖a‖² (qr); ½(δᵀJ̃s + sᵀJ̃δ + sᵀJ̃s), δ = β − β̃."""
        xp = self.xp
        s64 = f64(s, xp)
        if self.R is not None:
            R64 = f64(self.R, xp)
            u = R64 @ f64(beta, xp) - f64(self.z, xp)
            a = R64 @ s64
            return float(u @ a) + 0.5 * float(a @ a)
        J64, d64 = f64(self.J, xp), f64(beta - self.beta_prev, xp)
        return 0.5 * float(d64 @ (J64 @ s64) + s64 @ (J64 @ d64) + s64 @ (J64 @ s64))

    @property
    def l1_level(self) -> float:
        """(W + Σw) λ: the L1 weight of this batch."""
        return (self.W + self.sum_w) * self.lam

    def first_phi(self) -> float:
        """LAMM's φ₀ (method.md, contract v4): the mean of the diagonal of X̃ᵀdiag(w)X̃ + J̃ in
        float64, 1 when that is not a finite positive number. It is the curvature of f's
        quadratic part averaged over the coordinates, so the majorizer starts on the scale of
        the batch instead of doubling up to it from 1; the pilot and the main solve share it."""
        if self._first_phi is None:
            xp = self.xp
            X64 = f64(self.Xt, xp)
            with np.errstate(over="ignore", invalid="ignore"):  # an overflow falls back to 1
                if self.R is not None:  # diag(R̃ᵀR̃): the columns' squared norms
                    R64 = f64(self.R, xp)
                    history = xp.sum(R64 * R64, axis=0)
                else:
                    history = xp.diagonal(f64(self.J, xp))
                diagonal = f64(self.w, xp) @ (X64 * X64) + history
                phi = float(xp.mean(diagonal))
            self._first_phi = phi if math.isfinite(phi) and phi > 0 else 1.0
        return self._first_phi

    def residual(self, beta: Any) -> Any:
        p = _prof.ACTIVE
        if p is None:
            return self.y - self.Xt @ beta
        t0 = _prof.now()
        r = self.y - self.Xt @ beta
        n, d = self.Xt.shape
        p.record(_prof.RESIDUAL, t0, n * d, (n * d + 2 * n) * _prof.itemsize(r), 2 * n * d)
        return r

    def gradient(self, beta: Any, r: Any, tau: float) -> Any:
        """∇f = −X̃ᵀ(w ∘ ψ(r)) + J̃ (β − β̃) − W λ̃ s̃."""
        p = _prof.ACTIVE
        if p is None:
            psi = self.xp.clip(r, -tau, tau)
            return (-(self.Xt.T @ (self.w * psi)) + self.history_gradient(beta)
                    - self.history_pull)
        n, d = self.Xt.shape
        size = _prof.itemsize(r)
        t0 = _prof.now()
        weighted_psi = self.w * self.xp.clip(r, -tau, tau)
        p.record(_prof.HUBER, t0, n, 3 * n * size, 3 * n)
        t0 = _prof.now()
        g = -(self.Xt.T @ weighted_psi) + self.history_gradient(beta) - self.history_pull
        p.record(_prof.SCORE, t0, n * d, (n * d + d * d) * size, 2 * n * d + 2 * d * d)
        return g

    def weighted_gram(self, row_weights: Any) -> Any:
        """X̃ᵀ diag(row_weights) X̃, lower triangle mirrored so it is exactly symmetric."""
        return weighted_gram(self.Xt, row_weights, self.xp)

    def curvature(self, r: Any, tau: float, bandwidth: float | None = None) -> Any:
        """c(r) of the information update: 1{|r| ≤ τ}, or c_h(r) with ``bandwidth`` h."""
        p = _prof.ACTIVE
        t0 = _prof.now() if p is not None else 0
        if bandwidth is None:
            c = (self.xp.abs(r) <= tau).astype(self.dtype)
        else:
            c = smoothed_curvature(r, tau, bandwidth, self.xp)
        if p is not None:
            p.record(_prof.HUBER, t0, len(c), 3 * len(c) * _prof.itemsize(c), 2 * len(c))
        return c

    def curvature_weights(self, r: Any, tau: float) -> Any:
        """w ∘ c(r), c(r) = 1{|r| ≤ τ}."""
        p = _prof.ACTIVE
        if p is None:
            return self.w * (self.xp.abs(r) <= tau).astype(self.dtype)
        t0 = _prof.now()
        c = self.w * (self.xp.abs(r) <= tau).astype(self.dtype)
        p.record(_prof.HUBER, t0, len(c), 3 * len(c) * _prof.itemsize(c), 2 * len(c))
        return c

    def newton_matrix(self, r: Any, tau: float) -> Any:
        """X̃ᵀ diag(w ∘ c) X̃ + J̃, undamped: the solver adds the ridge (solvers.newton_step)."""
        c = self.curvature_weights(r, tau)
        p = _prof.ACTIVE
        t0 = _prof.now() if p is not None else 0
        H = self.weighted_gram(c) + self.J
        if p is not None:
            n, d = self.Xt.shape
            p.record(_prof.GRAM, t0, n, (2 * n * d + 2 * d * d) * _prof.itemsize(H),
                     2 * n * d * d + n * d)
        return H

    def smooth_delta(self, r: Any, beta: Any, s: Any, a: Any, tau: float) -> float:
        """f(β + s) − f(β) with a = X̃s, evaluated without cancellation (docs/numerics.md)."""
        p = _prof.ACTIVE
        if p is None:
            return self._smooth_delta(r, beta, s, a, tau)
        t0 = _prof.now()
        delta = self._smooth_delta(r, beta, s, a, tau)
        n, d = self.Xt.shape
        p.record(_prof.LINE_SEARCH, t0, n, 3 * n * _prof.itemsize(r) + 8 * d * d,
                 12 * n + 6 * d * d)
        return delta

    def _smooth_delta(self, r: Any, beta: Any, s: Any, a: Any, tau: float) -> float:
        xp = self.xp
        data = float(xp.sum(f64(self.w, xp) * huber_difference(r, a, tau, xp)))
        quad = self._history_change(beta, s)
        pull = float(f64(self.history_pull, xp) @ f64(s, xp))
        return data + quad - pull

    def objective(self, beta: Any, tau: float) -> float:
        """Q(β), accumulated in float64."""
        xp = self.xp
        r64 = f64(self.residual(beta), xp)
        p = _prof.ACTIVE
        t0 = _prof.now() if p is not None else 0
        data = float(xp.sum(f64(self.w, xp) * rho(r64, tau, xp)))
        if p is not None:
            p.record(_prof.HUBER, t0, len(r64), 16 * len(r64), 6 * len(r64))
        quad, pull, l1 = self._other_terms(beta)
        return data + quad - pull + l1

    def objective_at(self, beta: Any, r: Any, tau: float) -> float:
        """Q(β) from its residual r = y − X̃β, already computed (solver tracing)."""
        xp = self.xp
        data = float(xp.sum(f64(self.w, xp) * rho(f64(r, xp), tau, xp)))
        quad, pull, l1 = self._other_terms(beta)
        return data + quad - pull + l1

    def _other_terms(self, beta: Any) -> tuple[float, float, float]:
        """Q(β)'s terms besides the data term: quadratic, history pull, L1."""
        xp = self.xp
        d64 = f64(beta - self.beta_prev, xp)
        if self.R is not None:  # h(β) − h(β̃): Q keeps its Cholesky-mode meaning
            quad = self._history_change(self.beta_prev, beta - self.beta_prev)
        else:
            quad = 0.5 * float(d64 @ (f64(self.J, xp) @ d64))
        pull = float(f64(self.history_pull, xp) @ d64)
        l1 = self.l1_level * float(xp.sum(xp.abs(f64(beta, xp)[self.penalized])))
        return quad, pull, l1
