"""The reference renewable Huber update: ``update(state, X, y, w, config) -> (state, diagnostics)``.

Written from shared/spec/method.md to the letter, with the shared numerical choices of
docs/numerics.md. It is the oracle: the golden corpus records it and every engine is compared
with it. Array work follows the array namespace of X (NumPy or CuPy); the d × d ladder runs on
the host.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import NumericalError
from ..profiling import _hooks as _prof
from . import drift, inference, sqrt_info
from .huber import robust_scale, weighted_median, weighted_std
from .problem import BatchProblem
from .solvers import newton_step, qr_step, reliable, solve
from .types import Config, Diagnostics, State
from .validation import validate_batch
from .xp import namespace, to_host


def _pilot_scale(y: Any, w: Any) -> float:
    s = robust_scale(y, w)
    if math.isnan(s):
        s = weighted_std(y, w)
    return s if math.isfinite(s) and s > 0 else 1.0


def _start_point(problem: BatchProblem, y: Any, w: Any, config: Config, tau: float,
                 xp: Any) -> Any:
    """The first batch's start (contract v4). Unpenalized: the weighted least-squares fit
    (X̃ᵀWX̃ + ridge·I) β = X̃ᵀWy — the Newton step from 0 with every residual inside, the ridge
    taken as every Newton step takes it (solvers.newton_step) — unless it is not finite or its
    system overflows, or its objective at the first solve's bandwidth ``tau`` is above the zero
    point's (an outlier can pull a least-squares fit so far that no residual is inside: the
    Newton matrix there is zero and the solve could not leave it). Otherwise β⁰ = 0 with
    intercept = wmedian(y)."""
    beta = xp.zeros(problem.Xt.shape[1], dtype=problem.dtype)
    if not config.penalized:
        inside = math.inf
        try:
            fit = None
            try:
                H = problem.newton_matrix(y, inside)
                g = problem.gradient(beta, y, inside)
                _, (fit, rung, rcond) = newton_step(H, g, config.ridge)
            except NumericalError:
                if not problem.qr:
                    raise
            if problem.qr and (fit is None or not reliable(rung, rcond, problem.dtype)):
                # the least-squares fit by QR of the rows, as the qr mode's steps take it where
                # the normal equations lose the digits or overflow (solvers.newton)
                fit = qr_step(problem, beta, y, inside)[0]
        except NumericalError:  # the system overflows: the start below
            fit = None
        if fit is not None:
            fit = xp.asarray(fit, dtype=problem.dtype)
            if bool(xp.all(xp.isfinite(fit))) and \
                    problem.objective(fit, tau) <= problem.objective(beta, tau):
                return fit
    if config.fit_intercept:
        beta[-1] = weighted_median(y, w)
    return beta


def update(
    previous_state: State | None, X: Any, y: Any, sample_weight: Any, config: Config,
    trace: list | None = None,
) -> tuple[State, Diagnostics]:
    """Advance the stream by one batch. Pure: ``previous_state`` is never modified.

    Raises ValueError / TypeError on bad input or parameters and NumericalError when the result
    is not finite; in every case no new state exists, so the caller's state is untouched.
    ``trace``: None, or a list that receives one record per solver iteration
    (core/tracing.py, docs/tracing.md), also when the update raises.
    """
    p = _prof.ACTIVE
    if p is None:
        return _update(previous_state, X, y, sample_weight, config, trace)
    # Profiled: one batch of the profile, its bricks timed in Python (docs/profiling.md).
    started = p.begin_batch(_rows(X))
    iterations = 0
    try:
        out = _update(previous_state, X, y, sample_weight, config, trace)
        iterations = out[1].n_iter
        return out
    finally:
        if started:
            p.end_batch(iterations)


def _rows(X: Any) -> int:
    shape = getattr(X, "shape", None)
    if shape:
        return int(shape[0])
    try:
        return len(X)
    except TypeError:
        return 0


def _update(
    previous_state: State | None, X: Any, y: Any, sample_weight: Any, config: Config,
    trace: list | None,
) -> tuple[State, Diagnostics]:
    p = _prof.ACTIVE
    t0 = _prof.now() if p is not None else 0
    config.validate()
    if config.penalized and config.l1_solver != "lamm":
        raise ValueError(
            f"l1_solver={config.l1_solver!r} is an opt-in variant of the native CPU engine "
            "(backend='native_cpu'); the reference engine solves L1 batches with the contract's "
            "LAMM (l1_solver='lamm')")
    X, y, w = validate_batch(X, y, sample_weight, previous_state, config.fit_intercept)
    if p is not None:
        n, p_ = X.shape
        p.record(_prof.VALIDATE, t0, n * p_, (n * p_ + 2 * n) * _prof.itemsize(X))
        t0 = _prof.now()
    xp = namespace(X)
    dtype = np.dtype(X.dtype)
    d = X.shape[1] + int(config.fit_intercept)
    state = previous_state
    if state is None or state.batch_count == 0:
        state = State.empty(d, dtype, xp, config.inference_matrices)
    # A state of the other factorization continues in this one (a ValueError when a Cholesky
    # history has no square root; the caller's state is untouched, as on every error).
    state = sqrt_info.in_mode(state, config.factorization)
    if state.batch_count > 0:
        gamma = config.discount(drift.sum_weight(w, xp))
        if gamma is not None:  # forgetting: the history is discounted before the batch sees it
            state = drift.discount(state, gamma)
    problem = BatchProblem.build(state, X, y, w, config, xp)
    n_total = problem.W + problem.sum_w  # N_b of the schedules
    n_features = X.shape[1]
    if p is not None:
        n = X.shape[0]
        p.record(_prof.STAGE, t0, n + d, (2 * n * d + n) * _prof.itemsize(X))
    tol = config.resolved_tol(dtype)
    as_tau = lambda scale: float(dtype.type(config.epsilon * scale))  # noqa: E731 — τ in the dtype

    n_iter = halvings = 0
    first = state.batch_count == 0
    if config.tau is not None:
        scale = float(config.tau) / float(config.epsilon)
        tau = float(dtype.type(config.tau))
        beta = _start_point(problem, y, w, config, tau, xp) if first else state.coef
    elif first:
        pilot_scale = _pilot_scale(y, w)
        pilot_tau = as_tau(pilot_scale)
        beta0 = _start_point(problem, y, w, config, pilot_tau, xp)
        problem.lam = config.batch_lambda(pilot_tau, n_total, n_features)
        pilot = solve(problem, beta0, pilot_tau, config.max_iter, tol, trace, "pilot")
        n_iter, halvings = pilot.n_iter, pilot.halvings
        beta = pilot.beta
        scale = robust_scale(problem.residual(beta), w)
        scale = pilot_scale if math.isnan(scale) else scale
        tau = as_tau(scale)
    else:
        batch_scale = robust_scale(problem.residual(state.coef), w)
        batch_scale = state.scale if math.isnan(batch_scale) else batch_scale
        scale = (problem.W * state.scale + problem.sum_w * batch_scale) / n_total
        tau = as_tau(scale)
        beta = state.coef

    lam = problem.lam = config.batch_lambda(tau, n_total, n_features)
    test = drift.drift_test(problem, tau, lam, float(state.previous_lambda), first)
    result = solve(problem, beta, tau, config.max_iter, tol, trace)
    beta = result.beta
    if p is not None:
        p.next_iteration()  # the final evaluation, as native_cpu counts it
    r = problem.residual(beta)
    bandwidth = None  # h_b, with the smoothed curvature only
    if config.curvature == "smoothed":
        bandwidth = float(dtype.type(config.batch_bandwidth(tau, scale, n_total, n_features)))
    c = problem.curvature(r, tau, bandwidth)
    t0 = _prof.now() if p is not None else 0
    factor = {}
    model = result.model
    if problem.qr and lam == 0 and bandwidth is None and model is not None and \
            model.tau == tau and np.array_equal(sqrt_info.pattern(r, w, tau), model.pattern):
        # The final β has the last QR step's pattern: the update's rows √(w c)[x̃ | y] and
        # linear term are that step's, and its factorization carried [√w y; z̃] along.
        R, z = sqrt_info.absorb_factor(model.factor, model.factor.second, model.linear,
                                       problem.dtype)
        information = sqrt_info.information_from_factor(R)
        factor = {"information_factor": R, "information_vector": z}
    elif problem.qr:
        rows = sqrt_info.model_rows(problem.Xt, y, w, r, tau, c)
        if lam > 0:
            # The history must not pull at β_b, as J̃'s quadratic does not (method.md): the L1
            # term's share of the gradient there is the historical subgradient W λ̃ s̃ the next
            # batch adds. Unpenalized, the gradient left is the solve's tolerance: kept, as z̃ is.
            smooth = problem.gradient(beta, r, tau) + problem.history_pull
            rows = rows._replace(linear=rows.linear + np.asarray(to_host(smooth)))
        R, z = sqrt_info.absorb(to_host(problem.R), to_host(problem.z), rows)
        information = sqrt_info.information_from_factor(R)
        factor = {"information_factor": R, "information_vector": z}
    else:
        information = state.information + problem.weighted_gram(w * c)
    if p is not None:
        n = X.shape[0]
        p.record(_prof.INFO_UPDATE, t0, n, (2 * n * d + 2 * d * d) * _prof.itemsize(X),
                 2 * n * d * d + n * d)
    objective = problem.objective(beta, tau)

    if not (bool(xp.all(xp.isfinite(beta))) and bool(xp.all(xp.isfinite(information)))):
        raise NumericalError("the batch update produced non-finite coefficients or information")
    if not math.isfinite(objective):
        raise NumericalError("the batch update produced a non-finite objective")
    sums = inference.accumulate(state, problem.Xt, w, r, tau, c, config.inference_matrices, xp)

    next_state = State(
        coef=beta,
        information=information,
        n_samples_seen=int(state.n_samples_seen) + int(X.shape[0]),
        effective_weight=float(state.effective_weight) + problem.sum_w,
        batch_count=int(state.batch_count) + 1,
        previous_lambda=lam,
        scale=float(scale),
        **sums,
        **factor,
    )
    diagnostics = Diagnostics(
        converged=result.converged,
        n_iter=n_iter + result.n_iter,
        objective=objective,
        lambda_=lam,
        bandwidth=tau if bandwidth is None else bandwidth,
        solver=result.solver,
        line_search_halvings=halvings + result.halvings,
        rcond=result.rcond,
        drift_statistic=test.statistic,
        drift_df=test.df,
        drift_pvalue=test.pvalue,
        stationarity_step=stationarity_step(result.gradient_mapping, information,
                                            config.fit_intercept),
    )
    return next_state, diagnostics


def stationarity_step(mapping: Any, information: Any, intercept: bool = False) -> float:
    """How far a LAMM solve's last iterate is from the minimizer, in coefficient units: a Newton
    step on the gradient mapping G along each coefficient, max_j |G_j| / J̃_jj over the
    coefficients whose information J̃_jj is finite and positive — and with an intercept (the last
    coefficient), along each slope together with it, the 2 × 2 Newton step on (j, intercept),
    since a column far from centred moves with the intercept and each alone understates that
    distance (Statsmodels' cancer data: 2e-4 alone, 7.7 with it, 25 from the minimizer). A pair
    whose determinant is not above 1e-12 of its diagonal's product (a column constant up to
    rounding) counts alone. NaN without a mapping (Newton) or without a usable coefficient
    (docs/numerics.md, "LAMM's step rule")."""
    if mapping is None:
        return math.nan
    J = np.asarray(to_host(information), dtype=np.float64)
    curvature = np.diag(J)
    mapping = np.asarray(to_host(mapping), dtype=np.float64)
    usable = np.isfinite(curvature) & (curvature > 0)
    if not usable.any():
        return math.nan
    step = float(np.max(np.abs(mapping[usable]) / curvature[usable]))
    last = len(mapping) - 1
    if intercept and usable[last]:
        slopes = np.flatnonzero(usable[:last])
        a, c, b = curvature[slopes], curvature[last], J[slopes, last]
        det = a * c - b * b
        paired = np.isfinite(det) & (det > 1e-12 * (a * c))
        if paired.any():
            a, b, det, g = a[paired], b[paired], det[paired], mapping[slopes[paired]]
            along = np.abs(c * g - b * mapping[last]) / det
            with_intercept = np.abs(a * mapping[last] - b * g) / det
            step = max(step, float(np.max(along)), float(np.max(with_intercept)))
    return step
