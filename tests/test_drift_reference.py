"""Contract v4 on the NumPy reference: forgetting (half_life) and the drift test."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from rhuber.core import Config, State, update
from rhuber.core.drift import discount


def _batch(rng, n=300, beta=(1.0, -2.0, 0.5), intercept=0.3, noise="t3"):
    X = rng.normal(size=(n, len(beta)))
    e = rng.standard_t(3, size=n) if noise == "t3" else rng.standard_normal(n)
    return X, X @ np.asarray(beta) + intercept + e


def _stream(batches, config, weights=None):
    state, diags = None, []
    for k, (X, y) in enumerate(batches):
        w = None if weights is None else weights[k]
        state, diag = update(state, X, y, w, config)
        diags.append(diag)
    return state, diags


def _direct_statistic(state: State, X, y, w, tau):
    """T from its definition with dense pseudo-inverses: an independent transcription."""
    Xt = np.column_stack([X, np.ones(len(y))])
    r = y - Xt @ state.coef
    psi = np.clip(r, -tau, tau)
    c = (np.abs(r) <= tau).astype(float)
    U = Xt.T @ (w * psi)
    A = (Xt * (w * c)[:, None]).T @ Xt
    v = np.sum(w * psi**2) / np.sum(w * c)
    V = v * (A + A @ np.linalg.solve(state.information, A))
    return float(U @ np.linalg.solve(V, U))


@pytest.mark.parametrize("bad", [0.0, -5.0, math.nan, math.inf, -math.inf])
def test_half_life_must_be_a_finite_positive_weight(bad):
    rng = np.random.default_rng(1)
    X, y = _batch(rng)
    state, _ = update(None, X, y, None, Config())
    before = (state.coef.copy(), state.information.copy())
    with pytest.raises(ValueError, match="half_life"):
        update(state, X, y, None, Config(half_life=bad))
    np.testing.assert_array_equal(state.coef, before[0])
    np.testing.assert_array_equal(state.information, before[1])


def test_half_life_of_wrong_type_is_a_type_error():
    rng = np.random.default_rng(1)
    X, y = _batch(rng)
    with pytest.raises(TypeError, match="half_life"):
        update(None, X, y, None, Config(half_life="4"))


def test_history_is_discounted_before_the_batch():
    rng = np.random.default_rng(2)
    batches = [_batch(rng, n) for n in (200, 150, 120)]
    half_life = 300.0
    state, _ = _stream(batches[:2], Config(half_life=half_life))
    gamma = 2.0 ** (-120 / half_life)
    # One batch from the discounted state without forgetting is the same computation.
    expected, expected_diag = update(discount(state, gamma), *batches[2], None, Config())
    got, got_diag = update(state, *batches[2], None, Config(half_life=half_life))
    np.testing.assert_array_equal(got.coef, expected.coef)
    np.testing.assert_array_equal(got.information, expected.information)
    assert got.effective_weight == expected.effective_weight == gamma * state.effective_weight + 120
    assert got.n_samples_seen == 470 and got.batch_count == 3
    assert got.inference_weight == pytest.approx(gamma * state.inference_weight + 120, rel=1e-15)
    assert got_diag.drift_statistic == expected_diag.drift_statistic
    # and the discount is not a no-op: without it the result differs.
    plain, _ = update(state, *batches[2], None, Config())
    assert not np.array_equal(plain.coef, got.coef)


def test_discount_scales_every_weight_and_keeps_counts():
    rng = np.random.default_rng(3)
    state, _ = _stream([_batch(rng) for _ in range(2)], Config(inference_matrices=True))
    d = discount(state, 0.25)
    np.testing.assert_array_equal(d.information, state.information * 0.25)
    np.testing.assert_array_equal(d.gram, state.gram * 0.25)
    np.testing.assert_array_equal(d.score_gram, state.score_gram * 0.25)
    for name in ("effective_weight", "score_sq_sum", "curvature_sum", "curvature_sq_sum",
                 "inference_weight"):
        assert getattr(d, name) == 0.25 * getattr(state, name)
    for name in ("n_samples_seen", "batch_count", "inference_batches", "scale",
                 "previous_lambda"):
        assert getattr(d, name) == getattr(state, name)
    np.testing.assert_array_equal(d.coef, state.coef)


def test_float32_discount_stays_float32():
    rng = np.random.default_rng(4)
    batches = [tuple(a.astype(np.float32) for a in _batch(rng)) for _ in range(2)]
    state, _ = _stream(batches, Config(half_life=100.0))
    assert state.information.dtype == np.float32 and state.coef.dtype == np.float32


def test_an_endless_half_life_is_no_forgetting_bit_for_bit():
    rng = np.random.default_rng(5)
    batches = [_batch(rng) for _ in range(3)]
    a, da = _stream(batches, Config())
    b, db = _stream(batches, Config(half_life=1e300))  # γ = 2^(−3e−298) = 1.0 exactly
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.information, b.information)
    for x, y in zip(da, db, strict=True):
        for key, value in x.as_dict().items():
            other = y.as_dict()[key]
            assert value == other or (value != value and other != other), key  # NaN == NaN


def test_forgetting_tracks_a_jump():
    rng = np.random.default_rng(6)
    old, new = (1.0, -2.0, 0.5), (1.5, -2.0, 0.5)
    batches = [_batch(rng, 500, old) for _ in range(20)] + [_batch(rng, 500, new)
                                                            for _ in range(10)]
    kept, _ = _stream(batches, Config(tau=1.345))
    forgot, _ = _stream(batches, Config(tau=1.345, half_life=2000.0))
    target = np.array([*new, 0.3])
    err_kept = np.linalg.norm(kept.coef - target)
    err_forgot = np.linalg.norm(forgot.coef - target)
    assert err_forgot < 0.35 * err_kept, (err_forgot, err_kept)


def test_drift_statistic_matches_its_definition():
    rng = np.random.default_rng(7)
    batches = [_batch(rng, 250) for _ in range(3)]
    w = [rng.choice([0.5, 1.0, 2.0], size=250) for _ in range(3)]
    config = Config(tau=1.5)
    state, _ = _stream(batches[:2], config, w[:2])
    _, diag = update(state, *batches[2], w[2], config)
    expected = _direct_statistic(state, *batches[2], w[2], 1.5)
    assert diag.drift_statistic == pytest.approx(expected, rel=1e-9)
    assert diag.drift_df == 4.0
    assert diag.drift_pvalue == pytest.approx(scipy.stats.chi2.sf(expected, 4), rel=1e-9)


def test_drift_statistic_uses_the_discounted_history():
    rng = np.random.default_rng(8)
    batches = [_batch(rng, 250) for _ in range(3)]
    config = Config(tau=1.5, half_life=200.0)
    state, _ = _stream(batches[:2], config)
    _, diag = update(state, *batches[2], None, config)
    discounted = discount(state, 2.0 ** (-250 / 200.0))
    expected = _direct_statistic(discounted, *batches[2], np.ones(250), 1.5)
    assert diag.drift_statistic == pytest.approx(expected, rel=1e-9)


def test_drift_is_nan_where_the_contract_defines_no_test():
    rng = np.random.default_rng(9)
    X, y = _batch(rng)
    _, first = update(None, X, y, None, Config())
    assert math.isnan(first.drift_statistic) and math.isnan(first.drift_pvalue)
    state, _ = update(None, X, y, None, Config(alpha=0.01))
    _, penalized_history = update(state, X, y, None, Config())  # λ̃ > 0
    assert math.isnan(penalized_history.drift_pvalue)
    state, _ = update(None, X, y, None, Config())
    _, penalized = update(state, X, y, None, Config(alpha=0.01))  # λ > 0
    assert math.isnan(penalized.drift_df)
    _, no_inside = update(state, X, y + 1e6, None, Config(tau=1e-3))  # Σ w c(r̃) = 0
    assert math.isnan(no_inside.drift_statistic)


def test_drift_degrees_of_freedom_are_the_rank_on_the_svd_rung():
    rng = np.random.default_rng(10)
    batches = []
    for _ in range(2):
        Z = rng.normal(size=(150, 2))
        X = np.column_stack([Z, Z[:, 0]])  # a duplicated column: V has rank 3 of 4
        batches.append((X, Z @ np.array([1.0, 2.0]) + rng.standard_normal(150)))
    _, diags = _stream(batches, Config())
    assert diags[1].drift_df == 3.0
    assert 0.0 <= diags[1].drift_pvalue <= 1.0


def test_drift_weight_two_equals_two_copies():
    rng = np.random.default_rng(11)
    X1, y1 = _batch(rng, 200)
    X2, y2 = _batch(rng, 100)
    w2 = rng.choice([1.0, 2.0], size=100)
    reps = w2.astype(int)
    config = Config(half_life=150.0)
    s1, _ = update(None, X1, y1, None, config)
    a, da = update(s1, X2, y2, w2, config)
    b, db = update(s1, np.repeat(X2, reps, axis=0), np.repeat(y2, reps), None, config)
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-9)
    assert a.effective_weight == pytest.approx(b.effective_weight, rel=1e-14)
    assert da.drift_statistic == pytest.approx(db.drift_statistic, rel=1e-8)


def test_drift_size_and_power_on_small_streams():
    """Stationary t3 batches: p-values near uniform; a 0.5 jump in one slope is flagged."""
    rng = np.random.default_rng(12)
    null_p, jump_p = [], []
    for _ in range(12):
        batches = [_batch(rng, 200) for _ in range(6)]
        _, diags = _stream(batches, Config(tau=1.345))
        null_p += [d.drift_pvalue for d in diags[1:]]
        state, _ = _stream(batches[:3], Config(tau=1.345))
        _, jump = update(state, *_batch(rng, 200, beta=(1.5, -2.0, 0.5)), None,
                         Config(tau=1.345))
        jump_p.append(jump.drift_pvalue)
    null_p = np.array(null_p)
    assert 0.2 < np.mean(null_p) < 0.8
    assert np.mean(null_p < 0.05) < 0.2
    assert np.mean(np.array(jump_p) < 0.01) >= 0.75


def test_a_test_that_overflows_is_nan_not_an_error():
    from rhuber.core.drift import statistic

    d = 3
    EPS = float(np.finfo(np.float64).eps)
    gram = np.eye(d) * 1e300
    score = np.full(d, 1e300)
    # V = v (A + A J̃⁻¹ A) overflows float64: the diagnostic is NaN, the batch is not refused.
    result = statistic(score, gram, np.eye(d) * 1e-300, 1.0, 1.0, EPS)
    assert all(math.isnan(x) for x in result)
    result = statistic(np.array([np.inf, 0.0, 0.0]), np.eye(d), np.eye(d), 1.0, 1.0, EPS)
    assert all(math.isnan(x) for x in result)
