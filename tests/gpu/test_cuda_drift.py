"""Contract v4 on the CUDA engine, differentially against the NumPy reference: forgetting and the
drift test at the contract's cross-engine tolerance (the golden cases forgetting_half_life and
drift_statistic run in test_cuda_golden.py)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from rhuber import DriftWarning, RenewableHuberRegressor
from rhuber.core import Config, update
from rhuber.lab.golden import RTOL


def _close(a, b, rtol):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    both_nan = np.isnan(a) & np.isnan(b)
    return bool(np.all(both_nan | (np.abs(a - b) <= rtol * np.maximum(1.0, np.abs(b)))))


def _stream(rng, count, n, p, dtype, weighted, jump_at=None, duplicate=False):
    out = []
    for b in range(count):
        beta = np.linspace(-1.0, 2.0, p)
        if jump_at is not None and b >= jump_at:
            beta[0] += 0.8
        X = rng.normal(size=(n, p))
        if duplicate:
            X[:, -1] = X[:, 0]
        y = X @ beta + 0.4 + rng.standard_t(3, size=n)
        w = rng.choice([0.5, 1.0, 2.0, 3.0], size=n) if weighted else None
        out.append((X.astype(dtype), y.astype(dtype), None if w is None else w.astype(dtype)))
    return out


CASES = {
    "f64 mad scale, forgetting, weights": ({"half_life": 700.0}, np.float64, True, 3),
    "f64 fixed tau, forgetting, matrices": (
        {"half_life": 300.0, "tau": 1.5, "inference_matrices": True}, np.float64, False, 3),
    "f64 no forgetting, drift only": ({}, np.float64, True, 4),
    "f32 forgetting": ({"half_life": 500.0}, np.float32, False, 3),
    "f64 smoothed curvature, forgetting": (
        {"half_life": 400.0, "curvature": "smoothed", "bandwidth_scale": 4.0}, np.float64, False,
        3),
}


def test_cuda_declares_forgetting_and_the_drift_test(engine):
    assert {"forgetting", "drift_test"} <= engine.contract_features


@pytest.mark.parametrize("name", list(CASES))
def test_cuda_matches_the_reference(engine, name):
    params, dtype, weighted, p = CASES[name]
    rng = np.random.default_rng(100 + list(CASES).index(name))
    config = Config(**params)
    rtol = RTOL[np.dtype(dtype).name]
    ref_state = dev_state = None
    for k, (X, y, w) in enumerate(_stream(rng, 6, 250, p, dtype, weighted, jump_at=4)):
        ref_state, ref = update(ref_state, X, y, w, config)
        dev_state, dev = engine.update(dev_state, X, y, w, config)
        where = f"{name}, batch {k + 1}"
        assert _close(dev_state.coef, ref_state.coef, rtol), where
        assert _close(dev_state.information, ref_state.information, rtol), where
        assert dev_state.effective_weight == pytest.approx(ref_state.effective_weight,
                                                           rel=1e-12), where
        assert _close(dev.drift_statistic, ref.drift_statistic, rtol), (
            where, dev.drift_statistic, ref.drift_statistic)
        assert (math.isnan(dev.drift_df) and math.isnan(ref.drift_df)) or \
            dev.drift_df == ref.drift_df, where
        assert _close(dev.drift_pvalue, ref.drift_pvalue, rtol), where


def test_cuda_drift_df_is_the_rank_on_a_rank_deficient_design(engine):
    rng = np.random.default_rng(3)
    ref_state = dev_state = None
    for X, y, w in _stream(rng, 3, 200, 4, np.float64, False, duplicate=True):
        ref_state, ref = update(ref_state, X, y, w, Config())
        dev_state, dev = engine.update(dev_state, X, y, w, Config())
    assert dev.drift_df == ref.drift_df == 4.0
    assert dev.drift_statistic == pytest.approx(ref.drift_statistic, rel=1e-6)


def test_cuda_estimator_warns_on_drift_and_forgets_like_the_reference():
    rng = np.random.default_rng(9)
    batches = [b[:2] for b in _stream(rng, 6, 500, 3, np.float64, False, jump_at=4)]
    est = RenewableHuberRegressor(backend="cuda", half_life=1500.0, drift_alpha=0.001)
    caught_at = []
    for k, (X, y) in enumerate(batches, start=1):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.partial_fit(X, y)
        if any(issubclass(c.category, DriftWarning) for c in caught):
            caught_at.append(k)
    assert 5 in caught_at
    ref = RenewableHuberRegressor(backend="numpy", half_life=1500.0)
    for X, y in batches:
        ref.partial_fit(X, y)
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-7, atol=1e-7)
    assert est.effective_weight_ == pytest.approx(ref.effective_weight_, rel=1e-12)
