"""Contract v4 on native_cpu, differentially against the NumPy reference: forgetting and the
drift test at the contract's cross-engine tolerance."""

from __future__ import annotations

import math

import numpy as np
import pytest

from helpers import NATIVE_CPU, require_module
from rhuber.core import Config, update
from rhuber.engines import make_engine
from rhuber.lab.golden import RTOL


@pytest.fixture
def native_cpu():
    require_module(*NATIVE_CPU)
    return make_engine("native_cpu")


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
    "f64 no intercept": ({"half_life": 600.0, "fit_intercept": False}, np.float64, False, 2),
}


@pytest.mark.parametrize("gram", ["incremental", "full"])
@pytest.mark.parametrize("name", list(CASES))
def test_native_cpu_matches_the_reference(name, gram):
    require_module(*NATIVE_CPU)
    native_cpu = make_engine("native_cpu", gram=gram)
    params, dtype, weighted, p = CASES[name]
    rng = np.random.default_rng(100 + list(CASES).index(name))
    config = Config(**params)
    rtol = RTOL[np.dtype(dtype).name]
    ref_state = nat_state = None
    for k, (X, y, w) in enumerate(_stream(rng, 6, 250, p, dtype, weighted, jump_at=4)):
        ref_state, ref = update(ref_state, X, y, w, config)
        nat_state, nat = native_cpu.update(nat_state, X, y, w, config)
        where = f"{name}, batch {k + 1}"
        assert _close(nat_state.coef, ref_state.coef, rtol), where
        assert _close(nat_state.information, ref_state.information, rtol), where
        assert nat_state.effective_weight == pytest.approx(ref_state.effective_weight,
                                                           rel=1e-12), where
        for key in ("score_sq_sum", "curvature_sum", "inference_weight"):
            assert _close(getattr(nat_state, key), getattr(ref_state, key), rtol), (where, key)
        assert nat_state.n_samples_seen == ref_state.n_samples_seen
        assert _close(nat.drift_statistic, ref.drift_statistic, rtol), (
            where, nat.drift_statistic, ref.drift_statistic)
        assert (math.isnan(nat.drift_df) and math.isnan(ref.drift_df)) or \
            nat.drift_df == ref.drift_df, where
        assert _close(nat.drift_pvalue, ref.drift_pvalue, rtol), where
        if k == 0:
            assert math.isnan(nat.drift_pvalue)
        else:
            assert 0.0 <= nat.drift_pvalue <= 1.0


def test_native_drift_df_is_the_rank_on_a_rank_deficient_design(native_cpu):
    rng = np.random.default_rng(3)
    ref_state = nat_state = None
    for X, y, w in _stream(rng, 3, 200, 4, np.float64, False, duplicate=True):
        ref_state, ref = update(ref_state, X, y, w, Config())
        nat_state, nat = native_cpu.update(nat_state, X, y, w, Config())
    assert nat.drift_df == ref.drift_df == 4.0  # 5 coefficients, one column duplicated
    assert nat.drift_statistic == pytest.approx(ref.drift_statistic, rel=1e-6)


def test_native_drift_is_nan_for_penalized_batches(native_cpu):
    rng = np.random.default_rng(4)
    batches = _stream(rng, 3, 200, 3, np.float64, False)
    state, _ = native_cpu.update(None, *batches[0], Config())
    _, penalized = native_cpu.update(state, *batches[1], Config(alpha=0.01))
    assert math.isnan(penalized.drift_statistic)
    state, _ = native_cpu.update(state, *batches[1], Config(alpha=0.01))
    _, after_penalized = native_cpu.update(state, *batches[2], Config())
    assert math.isnan(after_penalized.drift_pvalue)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_native_refuses_a_bad_half_life_in_cpp_too(native_cpu, bad):
    # Past Config.validate (a caller of the C ABI): the C++ validation names it.
    from rhuber import _native

    module = _native.load("native_cpu")
    rng = np.random.default_rng(5)
    X, y, _ = _stream(rng, 1, 50, 2, np.float64, False)[0]
    w = np.ones(50)
    engine = module.Engine(threads=1, gram="incremental", chunk_bytes=0)
    arrays = [np.zeros(3), np.zeros((3, 3))]
    out = [np.zeros(3), np.zeros((3, 3))]
    previous = module.state_struct(np.dtype(np.float64), 3, *arrays, None, None)
    following = module.state_struct(np.dtype(np.float64), 3, *out, None, None)
    config = module.Config(fit_intercept=1, epsilon=1.345, has_tol=1, tol=1e-8, max_iter=100,
                           bandwidth_scale=1.0, has_half_life=1, half_life=bad)
    batch = module.Batch(dtype=module.FLOAT64, rows=50, cols=2, X=X.ctypes.data,
                         y=y.ctypes.data, sample_weight=w.ctypes.data)
    with pytest.raises(ValueError, match="half_life"):
        engine.update(previous, batch, config, following)
    assert following.batch_count == 0 and not out[0].any()


def _one_inside_row(dtype):
    """A stream's state after a first batch, and a second batch whose residuals at its
    coefficients are ±5 but for one row (0.1): with tau = 0.5, A = X̃ᵀdiag(w c)X̃ has rank 1."""
    rng = np.random.default_rng(21)
    config = Config(tau=0.5)
    X = rng.normal(size=(200, 4)).astype(dtype)
    y = (X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.3 + rng.normal(size=200)).astype(dtype)
    state, _ = update(None, X, y, None, config)
    X2 = rng.normal(size=(12, 4)).astype(dtype)
    offsets = np.where(rng.random(12) < 0.5, -5.0, 5.0)
    offsets[0] = 0.1
    coef = np.asarray(state.coef, dtype=float)
    y2 = (X2 @ coef[:-1] + coef[-1] + offsets).astype(dtype)
    return state, X2, y2, config


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_batch_curvature_of_rank_one_is_tested_on_one_degree_of_freedom(native_cpu, dtype):
    # A's other eigenvalues are rounding (in float32 1e-8 of the largest, some negative): the
    # ladder cuts them at the stream's precision, d · eps(dtype), though it solves in float64.
    # At float64's eps a float32 stream took them as information: T ~ 1e8 on 5 degrees of
    # freedom, the reference and native_cpu 4x apart.
    state, X2, y2, config = _one_inside_row(dtype)
    _, ref = update(state, X2, y2, None, config)
    _, nat = native_cpu.update(state, X2, y2, None, config)
    assert ref.drift_df == nat.drift_df == 1.0
    assert 0 < ref.drift_statistic < 1e3
    assert _close(nat.drift_statistic, ref.drift_statistic, RTOL[np.dtype(dtype).name])
