"""The two batch solvers of method.md: damped semismooth Newton (λ = 0) and LAMM (λ > 0)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import NumericalError
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
    # factorization="qr": the last QR step's factorization, for the information update.
    model: sqrt_info.StepModel | None = None
    # LAMM: φ times its last accepted step in float64, the proximal gradient mapping (0 at a
    # minimizer; update.stationarity_step); None for Newton and for a LAMM solve without a step.
    gradient_mapping: Any = None


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
            ) -> tuple[Any, str, float, sqrt_info.StepModel]:
    """The Newton step of the qr mode (method.md, "Square-root information"): the minimizer of
    the local model [R̃ | z̃] + the inside rows + the outside rows' slopes, by Householder QR of
    the stacked rows, minus β; its rung, rcond and the factorization (on the host).

    Solved for the step itself, with the rows [R̃ | z̃ − R̃β] and [√w x̃ | √w r] (the same
    model in exact arithmetic): the right-hand sides are then the residuals at β, so a second
    step refines the first as iterative refinement does. On an exact fit (NIST's Wampler 1)
    that is worth a digit over solving for the minimizer outright. The information update's
    right-hand side [√w y; z̃] rides along (the factor's ``second``): where the final β has
    this point's pattern, the update is this factorization."""
    c = (problem.xp.abs(r) <= tau).astype(problem.dtype)
    rows = sqrt_info.model_rows(problem.Xt, r, problem.w, r, tau, c)
    beta_host, R, z = to_host(beta), to_host(problem.R), to_host(problem.z)
    keep = np.asarray(to_host(problem.w * c)) > 0
    y_rows = np.asarray(to_host(problem.y))[keep] * np.sqrt(np.asarray(to_host(problem.w))[keep])
    factor = sqrt_info.factorize(R, z - R @ beta_host, rows, second=(y_rows, z))
    zero = np.zeros_like(beta_host)
    step, rung, rcond = sqrt_info.newton_step(factor, rows.linear, zero, problem.ridge)
    model = sqrt_info.StepModel(factor, rows.linear, sqrt_info.pattern(r, problem.w, tau), tau)
    return step, rung, rcond, model


def reliable(rung: str, rcond: float | None, dtype: Any) -> bool:
    """Whether a Cholesky-form step of the qr mode is good enough to take (the Cholesky rung at
    an rcond the estimator would not warn about); else the step is a QR step."""
    return rung == "cholesky" and not ladder.ill_conditioned(rcond, dtype)


def newton(problem: BatchProblem, beta: Any, tau: float, max_iter: int, tol: float,
           trace: list | None = None, phase: str = "main") -> SolveResult:
    """Semismooth Newton with Armijo backtracking on Q (no L1 term: λ = 0). With a ``trace``
    list, each iteration appends its record (core/tracing.py).

    In the qr mode the steps start in Cholesky form (the ladder on X̃ᵀW_cX̃ + R̃ᵀR̃, R̃ᵀ(R̃β − z̃)
    in the gradient: the same Newton step in exact arithmetic, at a Gram's cost) while they find
    the pattern (the inside rows and the outside rows' signs, which fix the local model). Once a
    full step leaves the pattern as it was, or a Cholesky-form step is unreliable (not the
    Cholesky rung, or an rcond the estimator would warn about), negligible or refused by the
    line search, the steps are the contract's QR steps (the pilot solve, which gives only the
    scale and the main solve's start, stays in Cholesky form where that is reliable, as the
    Cholesky mode solves it). Without a ridge (which damps the step
    short of the model's minimizer), a full QR step that leaves the pattern as it was landed on
    the minimizer of a model that is still the point's own: the next step is zero and the solve
    has converged, without factorizing again (docs/numerics.md)."""
    xp = problem.xp
    halvings, rung, rcond = 0, "cholesky", None
    record = None
    cholesky_form = problem.qr  # the qr mode's steps: Cholesky form until the pattern settles
    # The pilot solve only gives the scale and the main solve's start: where the Cholesky form is
    # reliable it finishes the pilot as it does in the Cholesky mode (one QR a batch less).
    finish_with_qr = problem.qr and phase != "pilot"
    previous = None  # the pattern at the last step's point, when that step was taken in full
    last_qr = False  # the last step was a QR step
    model = None  # the last QR step's factorization
    for k in range(1, max_iter + 1):
        p = _prof.ACTIVE
        if p is not None:
            p.next_iteration()
        r = problem.residual(beta)
        if trace is not None:
            record = _trace.open_record(trace, phase, k, problem, beta, r, tau)
        g = problem.gradient(beta, r, tau)
        step = None
        if problem.qr:
            pattern = sqrt_info.pattern(r, problem.w, tau)
            settled = previous is not None and np.array_equal(pattern, previous)
            if settled and last_qr and not problem.ridge:  # at the model's minimizer: a zero step
                if record is not None:
                    record.update(solver=rung, rcond=rcond, step_norm=0.0, step_scale=1.0)
                return SolveResult(beta, True, k, halvings, rung, rcond, model)
            if cholesky_form and not (settled and finish_with_qr):
                try:
                    step, rung, rcond, H = _ladder_step(problem, r, tau, g, p)
                except NumericalError:  # the Newton matrix overflows: the rows may not
                    step = None
                if step is None or not reliable(rung, rcond, problem.dtype) or \
                        (finish_with_qr and _converged(step, beta + step, tol, xp)):
                    step = None
                elif record is not None:
                    record["hessian_diagonal"] = _trace.hessian_diagonal_stats(H)
            if step is None:
                cholesky_form = False
                t0 = _prof.now() if p is not None else 0
                step, rung, rcond, model = qr_step(problem, beta, r, tau)
                if p is not None:  # the QR of the stacked rows stands for the Gram and the solve
                    n, d = problem.Xt.shape
                    p.record(_prof.GRAM, t0, n, (2 * n * d + 2 * d * d) * _prof.itemsize(r),
                             2 * n * d * d)
                if record is not None:  # the stacked columns' squared norms: H's diagonal
                    record["hessian_diagonal"] = _trace.tensor_stats(
                        model.factor.scales ** -2.0, np)
            last_qr = not cholesky_form
        else:
            step, rung, rcond, H = _ladder_step(problem, r, tau, g, p)
            if record is not None:
                record["hessian_diagonal"] = _trace.hessian_diagonal_stats(H)
        step = xp.asarray(step, dtype=problem.dtype)
        if record is not None:
            record.update(solver=rung, rcond=rcond, step_norm=_trace.norm2(step, xp),
                          step_scale=1.0)
        if _converged(step, beta + step, tol, xp):
            # Already below the tolerance: Q cannot resolve a change this small, so Armijo would
            # compare rounding noise (docs/numerics.md, "Solvers").
            return SolveResult(beta + step, True, k, halvings, rung, rcond, model)
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
                t = 0.0
                break
            t *= 0.5
            halvings += 1
        if record is not None:
            record.update(halvings=trial, step_scale=t)
            if t == 0.0:
                record["search_exhausted"] = True
        if t == 0.0:
            if not (problem.qr and cholesky_form):
                return SolveResult(beta, False, k, halvings, rung, rcond, model)
            cholesky_form, previous = False, None  # refused: a QR step from here next
            continue
        taken = t * step
        beta = beta + taken
        if problem.qr:
            previous = pattern if t == 1.0 else None
        if _converged(taken, beta, tol, xp):
            if not (cholesky_form and finish_with_qr):
                return SolveResult(beta, True, k, halvings, rung, rcond, model)
            cholesky_form = False  # a QR step decides convergence
    return SolveResult(beta, False, max_iter, halvings, rung, rcond, model)


def _ladder_step(problem: BatchProblem, r: Any, tau: float, g: Any, p: Any
                 ) -> tuple[Any, str, float, Any]:
    """The Newton step −H⁻¹g through the ladder at the point whose residual is ``r``: the step,
    its rung and rcond, and the matrix that gave it."""
    H = problem.newton_matrix(r, tau)
    t0 = _prof.now() if p is not None else 0
    H, (step, rung, rcond) = newton_step(H, g, problem.ridge)
    if p is not None:
        d = H.shape[0]
        p.record(_prof.SOLVE, t0, d * d, d * d * _prof.itemsize(H), d**3 // 3 + 2 * d * d)
    return step, rung, rcond, H


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
            return SolveResult(beta, True, k, doublings, "lamm", gradient_mapping=phi * s64)
    return SolveResult(beta, False, max_iter, doublings, "lamm", gradient_mapping=phi * s64)


def solve(problem: BatchProblem, beta: Any, tau: float, max_iter: int, tol: float,
          trace: list | None = None, phase: str = "main") -> SolveResult:
    run = lamm if problem.lam > 0 else newton
    return run(problem, beta, tau, max_iter, tol, trace, phase)
