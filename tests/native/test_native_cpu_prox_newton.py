"""The opt-in proximal Newton L1 solver of the native CPU engine: the same convex problem as the
contract's LAMM, so on random streams its states match the reference engine's LAMM run to a tight
tolerance (the golden corpus runs it too: tests/test_engines.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from native_cpu_support import batch, native  # noqa: F401  (skips or fails without the module)

from rhuber import RenewableHuberRegressor
from rhuber.core import Config, update
from rhuber.engines import make_engine


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(60, 400),
    p=st.integers(1, 8),
    alpha=st.sampled_from([0.001, 0.02, 0.2]),
    fit_intercept=st.booleans(),
)
def test_prox_newton_matches_the_reference_lamm(seed, n, p, alpha, fit_intercept):
    # Both solved tightly: LAMM's own stopping rule (a small step at a large phi) leaves it
    # further from the optimum than the contract's tolerance on some problems.
    lamm = Config(alpha=alpha, fit_intercept=fit_intercept, tol=1e-13, max_iter=200_000)
    newton = dataclasses.replace(lamm, l1_solver="prox_newton", max_iter=500)
    engine = make_engine("native_cpu")
    ref_state = native_state = None
    for k in range(3):
        X, y, w = batch(seed + k, n, p)
        w[:: 7] = 0.0  # zero weights too
        w[1] = 2.5
        ref_state, _ = update(ref_state, X, y, w, lamm)
        native_state, diag = engine.update(native_state, X, y, w, newton)
        assert diag.converged
        assert diag.solver in ("prox_newton", "lamm")  # lamm: continued where the model is flat
        scale = np.maximum(1.0, np.abs(ref_state.coef))
        assert np.all(np.abs(native_state.coef - ref_state.coef) <= 1e-6 * scale), (
            native_state.coef, ref_state.coef)
        info_scale = np.maximum(1.0, np.abs(ref_state.information))
        assert np.all(np.abs(native_state.information - ref_state.information)
                      <= 1e-6 * info_scale)


def test_estimator_runs_prox_newton_on_native_cpu_in_fewer_iterations():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(6000, 20))
    y = X @ np.r_[np.zeros(10), np.linspace(1, 3, 10)] + rng.standard_t(2, size=6000)
    lamm = RenewableHuberRegressor(alpha=0.01, batch_size=2000, backend="native_cpu").fit(X, y)
    newton = RenewableHuberRegressor(alpha=0.01, batch_size=2000, backend="native_cpu",
                                     l1_solver="prox_newton").fit(X, y)
    assert [d["solver"] for d in newton.diagnostics_] == ["prox_newton"] * 3
    assert all(d["converged"] for d in newton.diagnostics_)
    assert sum(d["n_iter"] for d in newton.diagnostics_) < sum(
        d["n_iter"] for d in lamm.diagnostics_)
    np.testing.assert_allclose(newton.coef_, lamm.coef_, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", ["numpy"])
def test_engines_without_prox_newton_refuse_it_and_keep_the_state(backend):
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(300, 3)), rng.normal(size=300)
    est = RenewableHuberRegressor(alpha=0.01, backend=backend).partial_fit(X, y)
    before = est.state_dict()
    est.set_params(l1_solver="prox_newton")
    with pytest.raises(ValueError, match="opt-in variant of the native CPU engine"):
        est.partial_fit(X, y)
    after = est.set_params(l1_solver="lamm").state_dict()  # the parameters are saved too
    assert before.keys() == after.keys()
    for key in before:
        np.testing.assert_array_equal(np.asarray(before[key]), np.asarray(after[key]))


def test_an_unknown_l1_solver_is_named():
    with pytest.raises(ValueError, match="l1_solver"):
        RenewableHuberRegressor(l1_solver="fista").fit(np.ones((5, 1)), np.arange(5.0))
    with pytest.raises(ValueError, match="l1_solver must be one of"):
        Config(l1_solver="fista").validate()


def test_the_l1_model_costs_less_than_the_newton_matrix_on_a_wide_batch():
    # 4,096 x 256 with the seed's schedule: at the first batch's pilot few rows are in the
    # quadratic zone, the model's H is nearly singular and sweeping its coordinate descent to the
    # exact minimum took thousands of O(d^2) sweeps (6x the Gram's time); an inexact model step
    # over a working set costs a fraction of the Gram that forms H.
    import rhuber as rh
    from rhuber.datasets import make_contaminated_stream

    X, y = make_contaminated_stream(4096, 256, batch_size=4096, seed=0).batch(0)
    est = RenewableHuberRegressor(backend="native_cpu", l1_solver="prox_newton",
                                  lambda_scale=0.5, tau=1.345)
    with rh.profile() as prof:
        est.partial_fit(X, y)
    report = prof.report()
    assert est.diagnostics_[-1]["converged"]
    assert report["solve"].total_ns < report["gram"].total_ns
