"""The two batch solvers of method.md: damped semismooth Newton (λ = 0) and LAMM (λ > 0)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..profiling import _hooks as _prof
from . import ladder, sqrt_info
from . import tracing as _trace
from .problem import BatchProblem
from .xp import namespace, to_host

ARMIJO_C = 1e-4
MAX_HALVINGS = 30
MAX_DOUBLINGS = 100


@dataclass
class SolveResult:
    beta: Any
    converged: bool
    n_iter: int
    halvings: int  # line-search halvings (Newton) or φ doublings (LAMM)
    solver: str
    rcond: float | None = None  # the ladder's rcond for the last Newton step; None for LAMM


def _converged(step: Any, beta: Any, tol: float, xp: Any) -> bool:
    return float(xp.max(xp.abs(step))) <= tol * max(1.0, float(xp.max(xp.abs(beta))))


def newton_step(H: Any, g: Any, ridge: float) -> tuple[Any, ladder.LadderResult]:
    """The Newton step −H⁻¹g through the ladder, and the matrix that gave it (method.md,
    "ridge"). With a ridge, the undamped H decides first: singular even after equilibration
    (the SVD rung), its minimum-norm step is taken, as without a ridge. The ridge alone would
    make such a system regular with eigenvalues of only ``ridge`` in the directions no row
    determines, and the solve would put its rounding there multiplied by 1/ridge: two
    roundings of one problem (a row of weight 2 or two copies of it, rows in another order)
    would then predict differently at rows outside the data's span (docs/numerics.md)."""
    if ridge:
        undamped = ladder.solve(H, -g)
        if undamped.rung == "svd":
            return H, undamped
        H = H + ridge * namespace(H).eye(H.shape[0], dtype=H.dtype)
    return H, ladder.solve(H, -g)


def qr_step(problem: BatchProblem, beta: Any, r: Any, tau: float
            ) -> tuple[Any, str, float, sqrt_info.Factor]:
    """The Newton step of the qr mode (method.md, "Square-root information"): the minimizer of
    the local model [R̃ | z̃] + the inside rows + the outside rows' slopes, by Householder QR of
    the stacked rows, minus β; its rung, rcond and the factor (on the host).

    Solved for the step itself, with the rows [R̃ | z̃ − R̃β] and [√w x̃ | √w r] (the same
    model in exact arithmetic): the right-hand sides are then the residuals at β, so a second
    step refines the first as iterative refinement does. On an exact fit (NIST's Wampler 1)
    that is worth a digit over solving for the minimizer outright."""
    c = (problem.xp.abs(r) <= tau).astype(problem.dtype)
    rows = sqrt_info.model_rows(problem.Xt, r, problem.w, r, tau, c)
    beta_host = to_host(beta)
    factor = sqrt_info.factorize(problem.R, problem.z - problem.R @ beta_host, rows)
    zero = np.zeros_like(beta_host)
    step, rung, rcond = sqrt_info.newton_step(factor, rows.linear, zero, problem.ridge)
    return step, rung, rcond, factor


def newton(problem: BatchProblem, beta: Any, tau: float, max_iter: int, tol: float,
           trace: list | None = None, phase: str = "main") -> SolveResult:
    """Semismooth Newton with Armijo backtracking on Q (no L1 term: λ = 0). With a ``trace``
    list, each iteration appends its record (core/tracing.py)."""
    xp = problem.xp
    halvings, rung, rcond = 0, "cholesky", None
    record = None
    for k in range(1, max_iter + 1):
        p = _prof.ACTIVE
        if p is not None:
            p.next_iteration()
        r = problem.residual(beta)
        if trace is not None:
            record = _trace.open_record(trace, phase, k, problem, beta, r, tau)
        g = problem.gradient(beta, r, tau)
        if problem.qr:
            t0 = _prof.now() if p is not None else 0
            step, rung, rcond, factor = qr_step(problem, beta, r, tau)
            if record is not None:  # the stacked columns' squared norms: H's diagonal
                record["hessian_diagonal"] = _trace.tensor_stats(factor.scales ** -2.0, np)
        else:
            H = problem.newton_matrix(r, tau)
            t0 = _prof.now() if p is not None else 0
            H, (step, rung, rcond) = newton_step(H, g, problem.ridge)
            if record is not None:
                record["hessian_diagonal"] = _trace.hessian_diagonal_stats(H)
        step = xp.asarray(step, dtype=problem.dtype)
        if p is not None:
            d = problem.Xt.shape[1]
            p.record(_prof.SOLVE, t0, d * d, d * d * _prof.itemsize(H), d**3 // 3 + 2 * d * d)
        if record is not None:
            record.update(solver=rung, rcond=rcond, step_norm=_trace.norm2(step, xp),
                          step_scale=1.0)
        if _converged(step, beta + step, tol, xp):
            # Already below the tolerance: Q cannot resolve a change this small, so Armijo would
            # compare rounding noise (docs/numerics.md, "Solvers").
            return SolveResult(beta + step, True, k, halvings, rung, rcond)
        t0 = _prof.now() if p is not None else 0
        a = problem.Xt @ step
        if p is not None:
            n, d = problem.Xt.shape
            p.record(_prof.LINE_SEARCH, t0, n, n * d * _prof.itemsize(a), 2 * n * d)
        slope = float(xp.asarray(g, dtype=xp.float64) @ xp.asarray(step, dtype=xp.float64))
        t = 1.0
        for trial in range(MAX_HALVINGS + 1):
            if problem.smooth_delta(r, beta, t * step, t * a, tau) <= ARMIJO_C * t * slope:
                break
            if trial == MAX_HALVINGS:
                if record is not None:
                    record.update(halvings=trial, step_scale=0.0, search_exhausted=True)
                return SolveResult(beta, False, k, halvings, rung, rcond)
            t *= 0.5
            halvings += 1
        if record is not None:
            record.update(halvings=trial, step_scale=t)
        taken = t * step
        beta = beta + taken
        if _converged(taken, beta, tol, xp):
            return SolveResult(beta, True, k, halvings, rung, rcond)
    return SolveResult(beta, False, max_iter, halvings, rung, rcond)


def soft_threshold(z: Any, level: float, mask: Any, xp: Any) -> Any:
    shrunk = xp.sign(z) * xp.maximum(xp.abs(z) - level, 0)
    return xp.where(mask, shrunk, z)


def lamm(problem: BatchProblem, beta: Any, tau: float, max_iter: int, tol: float,
         trace: list | None = None, phase: str = "main") -> SolveResult:
    """Proximal gradient with local adaptive majorization: φ starts at the batch's φ₀
    (:meth:`BatchProblem.first_phi`) and only doubles. With a ``trace`` list, each iteration
    appends its record (core/tracing.py)."""
    xp = problem.xp
    phi, doublings = problem.first_phi(), 0
    record = None
    for k in range(1, max_iter + 1):
        p = _prof.ACTIVE
        if p is not None:
            p.next_iteration()
        r = problem.residual(beta)
        if trace is not None:
            record = _trace.open_record(trace, phase, k, problem, beta, r, tau)
        g = problem.gradient(beta, r, tau)
        g64 = xp.asarray(g, dtype=xp.float64)
        for trial in range(MAX_DOUBLINGS + 1):
            t0 = _prof.now() if p is not None else 0
            z = beta - g / phi
            candidate = soft_threshold(z, problem.l1_level / phi, problem.penalized, xp)
            s = candidate - beta
            if p is not None:
                d = len(s)
                p.record(_prof.PROX, t0, d, 4 * d * _prof.itemsize(s), 6 * d)
            s64 = xp.asarray(s, dtype=xp.float64)
            bound = float(g64 @ s64) + 0.5 * phi * float(s64 @ s64)
            t0 = _prof.now() if p is not None else 0
            a = problem.Xt @ s
            if p is not None:
                n, d = problem.Xt.shape
                p.record(_prof.LINE_SEARCH, t0, n, n * d * _prof.itemsize(a), 2 * n * d)
            if problem.smooth_delta(r, beta, s, a, tau) <= bound:
                break
            if trial == MAX_DOUBLINGS:
                if record is not None:
                    record.update(halvings=trial, search_exhausted=True)
                return SolveResult(beta, False, k, doublings, "lamm")
            phi *= 2.0
            doublings += 1
        if record is not None:
            record.update(halvings=trial, step_norm=_trace.norm2(s, xp), step_scale=1.0)
        beta = candidate
        if _converged(s, beta, tol, xp):
            return SolveResult(beta, True, k, doublings, "lamm")
    return SolveResult(beta, False, max_iter, doublings, "lamm")


def solve(problem: BatchProblem, beta: Any, tau: float, max_iter: int, tol: float,
          trace: list | None = None, phase: str = "main") -> SolveResult:
    run = lamm if problem.lam > 0 else newton
    return run(problem, beta, tau, max_iter, tol, trace, phase)
