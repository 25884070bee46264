"""Contract v3, the paper's schedules (method.md; docs/method-v3.md): the λ schedule, the smoothed
curvature and its bandwidth, in the reference engine and the estimator."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import rhuber.estimator as estimator_module
from helpers import NATIVE_CPU, make_problem, require_module
from rhuber import RenewableHuberRegressor
from rhuber.core import Config, update
from rhuber.core.huber import smoothed_curvature


def _stream(config, batches):
    state, diags = None, []
    for X, y in batches:
        state, diag = update(state, X, y, None, config)
        diags.append(diag)
    return state, diags


def _batches(seed, n=(150, 120), p=4, scale=1.0):
    rng = np.random.default_rng(seed)
    out = []
    for rows in n:
        X, y, _ = make_problem(rng, rows, p)
        out.append((X, scale * y))
    return out


def test_lambda_schedule_is_lambda_scale_tau_root_q_over_n():
    batches = _batches(1, n=(150, 120, 90), p=5)
    config = Config(lambda_scale=0.7)
    state = None
    weight = 0.0
    for X, y in batches:
        state, diag = update(state, X, y, None, config)
        weight += X.shape[0]
        tau = config.epsilon * state.scale
        want = 0.7 * tau * math.sqrt(math.log(5) / weight)
        assert diag.lambda_ == pytest.approx(want, rel=1e-12)
        assert state.previous_lambda == diag.lambda_
        assert diag.solver == "lamm"


def test_lambda_scale_zero_is_the_unpenalized_stream():
    batches = _batches(2)
    a, da = _stream(Config(lambda_scale=0.0), batches)
    b, db = _stream(Config(), batches)
    assert [d.solver for d in da] == [d.solver for d in db] == ["cholesky", "cholesky"]
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.previous_lambda == 0.0


def test_q_uses_at_least_two_features():
    rng = np.random.default_rng(3)
    X, y, _ = make_problem(rng, 200, 1)
    _, diag = update(None, X, y, None, Config(lambda_scale=1.0, tau=1.5))
    assert diag.lambda_ == pytest.approx(1.5 * math.sqrt(math.log(2) / 200), rel=1e-12)


def test_fixed_tau_bandwidth_is_in_absolute_units_as_the_seed():
    batches = _batches(4, p=3)
    config = Config(tau=1.2, curvature="smoothed", bandwidth_scale=3.0)
    _, diags = _stream(config, batches)
    for diag, n in zip(diags, (150, 270), strict=True):
        assert diag.bandwidth == pytest.approx(min(3.0 / (math.sqrt(n) * math.log(3)), 1.2),
                                               rel=1e-15)


def test_adaptive_bandwidth_is_in_units_of_the_scale_and_capped_at_tau():
    batches = _batches(5, p=3)
    state, diag = update(None, *batches[0], None, Config(curvature="smoothed",
                                                          bandwidth_scale=2.0))
    want = 2.0 * state.scale / (math.sqrt(150) * math.log(3))
    assert diag.bandwidth == pytest.approx(want, rel=1e-15)
    _, capped = update(None, *batches[0], None, Config(curvature="smoothed",
                                                        bandwidth_scale=1e6))
    assert capped.bandwidth == pytest.approx(1.345 * state.scale, rel=1e-15)


def test_smoothing_changes_the_information_not_the_first_batch_estimate():
    X, y = _batches(6)[0]
    a, _ = update(None, X, y, None, Config(curvature="smoothed", bandwidth_scale=5.0))
    b, _ = update(None, X, y, None, Config())
    np.testing.assert_array_equal(a.coef, b.coef)  # the Newton path keeps the indicator
    assert not np.allclose(a.information, b.information)
    np.testing.assert_array_equal(a.information, a.information.T)


@given(r=st.floats(-10, 10), tau=st.floats(0.1, 5), fraction=st.floats(0.01, 1.0))
def test_smoothed_curvature_is_method_md_piecewise_form(r, tau, fraction):
    h = fraction * tau
    if r < -tau - h:
        want = 0.0
    elif r <= -tau + h:
        want = 0.5 + (r + tau) / (2 * h)
    elif r < tau - h:
        want = 1.0
    elif r <= tau + h:
        want = 0.5 - (r - tau) / (2 * h)
    else:
        want = 0.0
    got = float(smoothed_curvature(np.array([r]), tau, h, np)[0])
    assert got == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("config", [
    Config(lambda_scale=0.5, tol=1e-13, max_iter=5000),
    Config(curvature="smoothed", bandwidth_scale=4.0),
    Config(lambda_scale=0.5, curvature="smoothed", inference_matrices=True, tol=1e-13,
           max_iter=5000),
], ids=["lambda", "smoothed", "both"])
@given(k=st.sampled_from([1e-3, 0.37, 8.0, 2.5e4]))
def test_schedules_are_scale_equivariant_when_tau_is_adaptive(config, k):
    """y·k → coef, scale, τ, h, λ ·k; information unchanged; S_ψ² ·k²; S_c unchanged. (The
    stopping rule tol · max(1, ‖β‖∞) is not scale-free, so the L1 cases solve tightly.)"""
    batches = _batches(7, p=5)
    a, da = _stream(config, batches)
    b, db = _stream(config, [(X, k * y) for X, y in batches])
    np.testing.assert_allclose(b.coef, k * a.coef, rtol=1e-6, atol=1e-9 * k)
    assert b.scale == pytest.approx(k * a.scale, rel=1e-9)
    for x, z in zip(da, db, strict=True):
        assert z.bandwidth == pytest.approx(k * x.bandwidth, rel=1e-9)
        assert z.lambda_ == pytest.approx(k * x.lambda_, rel=1e-9)
    np.testing.assert_allclose(b.information, a.information, rtol=1e-6, atol=1e-6)
    assert b.score_sq_sum == pytest.approx(k * k * a.score_sq_sum, rel=1e-6)
    assert b.curvature_sum == pytest.approx(a.curvature_sum, rel=1e-6)


@pytest.mark.parametrize(("changes", "message"), [
    ({"alpha": 0.1, "lambda_scale": 0.5}, "both set"),
    ({"lambda_scale": -1.0}, "lambda_scale"),
    ({"bandwidth_scale": 0.0}, "bandwidth_scale"),
    ({"curvature": "cubic"}, "curvature"),
])
def test_config_refuses_bad_v3_parameters(changes, message):
    with pytest.raises(ValueError, match=message):
        Config(**changes).validate()


def test_estimator_takes_the_v3_parameters_and_refuses_alpha_with_the_schedule():
    X, y = _batches(8)[0]
    est = RenewableHuberRegressor(backend="numpy", lambda_scale=0.4, curvature="smoothed",
                                  bandwidth_scale=2.0).fit(X, y)
    assert est.diagnostics_[0]["lambda"] > 0 and est.previous_lambda_ > 0
    with pytest.raises(ValueError, match="both set"):
        RenewableHuberRegressor(backend="numpy", alpha=0.1, lambda_scale=0.4).fit(X, y)
    with pytest.raises(ValueError, match="curvature"):
        RenewableHuberRegressor(backend="numpy", curvature="cubic").fit(X, y)
    assert RenewableHuberRegressor().get_params()["bandwidth_scale"] == 1.0


def test_an_engine_without_a_v3_feature_refuses_it_clearly(monkeypatch):
    """An engine that would ignore the schedule must not return another model's numbers."""
    require_module(*NATIVE_CPU)
    real = estimator_module.make_engine

    def declaring_nothing(*args, **kwargs):  # an engine built before contract v3
        engine = real(*args, **kwargs)
        engine.contract_features = frozenset()
        return engine

    monkeypatch.setattr(estimator_module, "make_engine", declaring_nothing)
    X, y = _batches(9)[0]
    with pytest.raises(ValueError, match="native_cpu engine does not implement lambda_schedule"):
        RenewableHuberRegressor(backend="native_cpu", lambda_scale=0.5).fit(X, y)
