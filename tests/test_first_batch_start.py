"""The first batch's start point (contract v4): an unpenalized stream's solves start from the
weighted least-squares fit, computed alike by every engine; the minimizer does not move."""

import dataclasses

import numpy as np
import pytest

from helpers import NATIVE_CPU, make_problem, require_module
from rhuber.core.types import Config
from rhuber.core.update import update as reference_update
from rhuber.engines import make_engine


def _engines():
    yield "numpy", reference_update
    try:
        require_module(*NATIVE_CPU)
    except pytest.skip.Exception:
        return
    yield "native_cpu", make_engine("native_cpu", threads=1).update


def _linear(rng, n=2000, p=6, dtype=np.float64, noise=0.01):
    X = rng.standard_normal((n, p)).astype(dtype)
    w = rng.uniform(0.5, 2.0, n).astype(dtype)
    y = (X @ np.linspace(-2, 3, p) + 4.0 + noise * rng.standard_normal(n)).astype(dtype)
    return X, y, w


@pytest.mark.parametrize("engine", list(_engines()), ids=lambda e: e[0])
def test_a_batch_whose_residuals_all_lie_inside_is_solved_at_the_start(engine):
    # With every residual inside tau the Huber fit is the weighted least-squares fit: starting
    # there, the first Newton step is below the tolerance (from 0 it takes several, and halvings).
    _, update = engine
    X, y, w = _linear(np.random.default_rng(0))
    state, diag = update(None, X, y, w, Config(tau=100.0))
    assert diag.n_iter == 1 and diag.line_search_halvings == 0
    sw = np.sqrt(w)
    design = np.c_[X, np.ones(len(y))]
    fit = np.linalg.lstsq(design * sw[:, None], y * sw, rcond=None)[0]
    np.testing.assert_allclose(state.coef, fit, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("engine", list(_engines()), ids=lambda e: e[0])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_heavy_tails_take_fewer_iterations_and_reach_the_same_minimizer(engine, dtype):
    _, update = engine
    rng = np.random.default_rng(1)
    X = rng.standard_normal((4096, 16)).astype(dtype)
    y = (X @ np.linspace(-1, 1, 16) + rng.standard_t(3, 4096)).astype(dtype)
    state, diag = update(None, X, y, None, Config(tau=1.345))
    # The old start (0, intercept = median y) took 7 iterations and 3 halvings here in float64.
    assert diag.converged and diag.n_iter <= 4 and diag.line_search_halvings == 0
    # The minimizer: the reference's, solved from the old start to a tight tolerance.
    tight = dataclasses.replace(Config(tau=1.345), tol=1e-12 if dtype == np.float64 else 1e-6)
    reference, _ = reference_update(None, X.astype(np.float64), y.astype(np.float64), None, tight)
    rtol = 1e-7 if dtype == np.float64 else 2e-3
    np.testing.assert_allclose(state.coef, reference.coef, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("engine", list(_engines()), ids=lambda e: e[0])
@pytest.mark.parametrize("tau", [1.0, None], ids=["tau-fixed", "default-scale"])
def test_a_least_squares_fit_pulled_off_every_row_is_not_the_start(engine, tau):
    # One gross outlier drags the least-squares fit so far that no residual lies inside tau: the
    # Newton matrix there is zero, and a solve started there would stop at once, "converged",
    # with a large gradient. The engine starts from the old point instead.
    _, update = engine
    rng = np.random.default_rng(69)  # found by hypothesis (test_reference_properties)
    n = 30
    X, y, _ = make_problem(rng, n, 1)
    w = rng.uniform(0.2, 3.0, size=n)
    design = np.c_[X, np.ones(n)]
    sw = np.sqrt(w)
    fit = np.linalg.lstsq(design * sw[:, None], y * sw, rcond=None)[0]
    assert not np.any(np.abs(y - design @ fit) <= 1.0)  # the case this test is about
    state, diag = update(None, X, y, w, Config(tau=tau))
    assert diag.converged and diag.solver == "cholesky"
    tau_b = diag.bandwidth if tau is None else tau
    gradient = -design.T @ (w * np.clip(y - design @ state.coef, -tau_b, tau_b))
    assert np.max(np.abs(gradient)) <= 1e-6 * w.sum()
