"""Contract v3, inference (method.md; docs/inference.md): the sums, the covariances against
statsmodels' RLM, merges, checkpoints, refusals and a small coverage check."""

from __future__ import annotations

import json

import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.robust.robust_linear_model import RLMResults

from helpers import NATIVE_CPU, make_problem, require_module
from rhuber import RenewableHuberRegressor
from rhuber.core import Config, update
from rhuber.core import inference as inf
from rhuber.core.inference import InferenceError

EPSILON = 1.345


def _one_batch(seed, n=500, p=3, errors="t3"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    noise = rng.standard_t(3, size=n) if errors == "t3" else rng.standard_normal(n)
    y = X @ np.linspace(-1, 2, p) + 0.5 + noise
    return X, y


def _statsmodels_cov(X, y, state, cov_type):
    """statsmodels' own bcov_scaled (its RLMResults machinery) at our β and scale."""
    design = np.column_stack([X, np.ones(len(y))])  # our order: the intercept last
    model = sm.RLM(y, design, M=sm.robust.norms.HuberT(t=EPSILON))
    results = RLMResults(model, np.asarray(state.coef), np.linalg.pinv(design.T @ design),
                         state.scale, cov=cov_type)
    return results.bcov_scaled


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("cov_type", ["H1", "H2", "H3"])
def test_one_batch_equals_statsmodels_rlm_formula_at_our_estimate(seed, cov_type):
    X, y = _one_batch(seed, p=2 + seed)
    state, _ = update(None, X, y, None, Config(epsilon=EPSILON, inference_matrices=True))
    ours = inf.covariance(state, cov_type)
    theirs = _statsmodels_cov(X, y, state, cov_type)
    assert np.max(np.abs(ours - theirs) / np.abs(theirs).max()) < 1e-10
    np.testing.assert_allclose(np.sqrt(np.diag(ours)), np.sqrt(np.diag(theirs)), rtol=1e-10)


def test_hc0_is_the_sandwich_of_the_information_and_the_score_gram():
    X, y = _one_batch(3)
    state, _ = update(None, X, y, None, Config(inference_matrices=True))
    design = np.column_stack([X, np.ones(len(y))])
    r = y - design @ state.coef
    tau = EPSILON * state.scale
    psi = np.clip(r, -tau, tau)
    J = (design * (np.abs(r) <= tau)[:, None]).T @ design
    K = (design * (psi**2)[:, None]).T @ design
    want = np.linalg.inv(J) @ K @ np.linalg.inv(J)
    np.testing.assert_allclose(inf.covariance(state, "HC0"), want, rtol=1e-10)


def test_standard_errors_agree_with_rlm_fit_within_its_solutions_distance():
    """RLM solves its own problem (scale re-estimated each IRLS step, MAD about 0), so its bse
    differ from ours by about as much as its coefficients and scale differ from ours."""
    X, y = _one_batch(4, n=4000, p=3)
    est = RenewableHuberRegressor(backend="numpy", inference_matrices=True).fit(X, y)
    design = np.column_stack([X, np.ones(len(y))])
    fit = sm.RLM(y, design, M=sm.robust.norms.HuberT(t=EPSILON)).fit(cov="H1")
    ours = est.bse("H1")
    distance = max(abs(fit.scale / est.scale_ - 1),
                   float(np.max(np.abs(fit.params - est._state.coef) / fit.bse)))
    assert distance < 0.1
    np.testing.assert_allclose(ours, fit.bse, rtol=max(2 * distance, 0.02))


@pytest.mark.parametrize("cov_type", ["H1", "H2", "H3"])
def test_without_intercept_too(cov_type):
    X, y = _one_batch(5)
    state, _ = update(None, X, y, None, Config(fit_intercept=False, inference_matrices=True))
    model = sm.RLM(y, X, M=sm.robust.norms.HuberT(t=EPSILON))
    theirs = RLMResults(model, state.coef, np.linalg.pinv(X.T @ X), state.scale, cov=cov_type)
    np.testing.assert_allclose(inf.covariance(state, cov_type), theirs.bcov_scaled, rtol=1e-10)


@settings(max_examples=10)
@given(seed=st.integers(0, 10_000))
def test_weight_two_rows_give_the_sums_of_duplicated_rows(seed):
    rng = np.random.default_rng(seed)
    X, y, _ = make_problem(rng, 120, 3)
    w = rng.choice([0.0, 1.0, 2.0, 3.0], size=120)
    w[0] = 1.0
    repeats = w.astype(int)
    config = Config(inference_matrices=True)
    a, _ = update(None, X, y, w, config)
    b, _ = update(None, np.repeat(X, repeats, axis=0), np.repeat(y, repeats), None, config)
    for key in ("score_sq_sum", "curvature_sum", "curvature_sq_sum", "inference_weight"):
        assert getattr(a, key) == pytest.approx(getattr(b, key), rel=1e-9), key
    np.testing.assert_allclose(a.gram, b.gram, rtol=1e-12)
    np.testing.assert_allclose(a.score_gram, b.score_gram, rtol=1e-9, atol=1e-12)
    for cov_type in inf.COV_TYPES:
        np.testing.assert_allclose(inf.covariance(a, cov_type), inf.covariance(b, cov_type),
                                   rtol=1e-8)


def test_sums_accumulate_over_batches_and_empty_state_starts_at_zero():
    batches = [_one_batch(s, n=200) for s in range(3)]
    config = Config(inference_matrices=True)
    state, total_w = None, 0.0
    for k, (X, y) in enumerate(batches, start=1):
        state, _ = update(state, X, y, None, config)
        total_w += len(y)
        assert state.inference_batches == k and state.inference_weight == total_w
    X = np.vstack([b[0] for b in batches])
    np.testing.assert_allclose(state.gram, np.column_stack([X, np.ones(len(X))]).T
                               @ np.column_stack([X, np.ones(len(X))]), rtol=1e-12)
    empty = update.__globals__["State"].empty(4, np.float64, np, inference_matrices=True)
    assert empty.score_sq_sum == 0 and not empty.gram.any()
    plain, _ = update(None, *batches[0], None, Config())
    assert plain.gram is None and plain.inference_batches == 1


def test_merge_adds_the_sums_and_keeps_matrices_only_when_both_have_them():
    (X1, y1), (X2, y2) = _one_batch(6), _one_batch(7)
    a = RenewableHuberRegressor(backend="numpy", inference_matrices=True).fit(X1, y1)
    b = RenewableHuberRegressor(backend="numpy", inference_matrices=True).fit(X2, y2)
    sa, sb = a._state, b._state
    merged = a.merge(b)._state
    for key in ("score_sq_sum", "curvature_sum", "curvature_sq_sum", "inference_weight",
                "inference_batches"):
        assert getattr(merged, key) == getattr(sa, key) + getattr(sb, key)
    np.testing.assert_array_equal(merged.gram, sa.gram + sb.gram)
    np.testing.assert_array_equal(merged.score_gram, sa.score_gram + sb.score_gram)
    assert a.cov_params("H1").shape == (4, 4)
    c = RenewableHuberRegressor(backend="numpy").fit(X1, y1)
    c.merge(RenewableHuberRegressor(backend="numpy", inference_matrices=True).fit(X2, y2))
    assert c._state.gram is None and c._state.inference_batches == 2
    assert np.all(c.bse("H2") > 0)


def test_checkpoint_round_trip_carries_the_sums_and_matrices(tmp_path):
    X, y = _one_batch(8, n=900)
    est = RenewableHuberRegressor(backend="numpy", inference_matrices=True,
                                  batch_size=300).fit(X, y)
    est.save_checkpoint(tmp_path / "m.npz")
    back = RenewableHuberRegressor.load_checkpoint(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as raw:
        assert int(raw["format_version"]) == 4 and "gram" in raw.files
    for cov_type in inf.COV_TYPES:
        np.testing.assert_array_equal(back.cov_params(cov_type), est.cov_params(cov_type))
    plain = RenewableHuberRegressor(backend="numpy").fit(X, y)
    plain.save_checkpoint(tmp_path / "p.npz")
    with np.load(tmp_path / "p.npz") as raw:
        assert "gram" not in raw.files
    np.testing.assert_array_equal(
        RenewableHuberRegressor.load_checkpoint(tmp_path / "p.npz").bse("H2"), plain.bse("H2"))


def test_a_format_2_checkpoint_loads_and_inference_covers_the_later_batches(tmp_path):
    batches = [_one_batch(s, n=400) for s in (9, 10, 11)]
    est = RenewableHuberRegressor(backend="numpy", inference_matrices=True)
    est.partial_fit(*batches[0]).partial_fit(*batches[1])
    payload = est.state_dict()
    for key in ("score_sq_sum", "curvature_sum", "curvature_sq_sum", "inference_weight",
                "inference_batches", "gram", "score_gram", "factorization"):
        payload.pop(key)
    payload["format_version"] = np.int64(2)
    np.savez(tmp_path / "v2.npz", **payload)
    old = RenewableHuberRegressor.load_checkpoint(tmp_path / "v2.npz")
    with pytest.raises(InferenceError, match="cover no batch"):
        old.summary()
    old.partial_fit(*batches[2])
    assert old._state.inference_batches == 1 and old.n_batches_ == 3
    summary = old.summary()
    assert not summary.coverage.complete
    assert "the last 1 of 3 batches" in str(summary)
    full = est.partial_fit(*batches[2])
    # The later batch's per-weight averages stand for the stream: close to the full sums.
    np.testing.assert_allclose(old.bse("H1"), full.bse("H1"), rtol=0.15)
    np.testing.assert_allclose(old.bse("H2"), full.bse("H2"), rtol=0.15)


def test_penalized_streams_refuse_inference_saying_why():
    X, y = _one_batch(12)
    for params in ({"alpha": 0.05}, {"lambda_scale": 0.5}):
        est = RenewableHuberRegressor(backend="numpy", **params).fit(X, y)
        with pytest.raises(InferenceError, match="post-selection"):
            est.summary()
    est = RenewableHuberRegressor(backend="numpy", alpha=0.05).partial_fit(X, y)
    est.set_params(alpha=0.0).partial_fit(X, y)
    with pytest.raises(InferenceError, match="post-selection"):
        est.bse("H2")
    est = RenewableHuberRegressor(backend="numpy", lambda_scale=0.0).fit(X, y)
    assert np.all(est.bse() > 0)  # a zero schedule is the unpenalized stream


def test_matrix_types_need_inference_matrices_and_say_so():
    X, y = _one_batch(13)
    est = RenewableHuberRegressor(backend="numpy").fit(X, y)
    for cov_type in ("H1", "H3", "HC0"):
        with pytest.raises(InferenceError, match="inference_matrices=True"):
            est.cov_params(cov_type)
    assert est.summary().cov_type == "H2"
    with pytest.raises(ValueError, match="cov_type must be one of"):
        est.cov_params("HC3")


def test_a_singular_information_matrix_is_an_error_naming_it():
    rng = np.random.default_rng(14)
    Z = rng.normal(size=(300, 2))
    X = np.column_stack([Z, Z[:, 0]])
    y = Z @ [1.0, -1.0] + rng.standard_normal(300)
    with pytest.warns(UserWarning):
        est = RenewableHuberRegressor(backend="numpy", inference_matrices=True).fit(X, y)
    with pytest.raises(InferenceError, match="information matrix J is singular"):
        est.bse("H2")
    with pytest.raises(InferenceError, match="Gram matrix G is singular"):
        est.bse("H1")


def test_summary_table_names_rows_and_reports_counts():
    pd = pytest.importorskip("pandas")
    X, y = _one_batch(15, n=600)
    frame = pd.DataFrame(X, columns=["age", "dose", "weight"])
    est = RenewableHuberRegressor(backend="numpy", inference_matrices=True,
                                  batch_size=200).fit(frame, y)
    text = str(est.summary())
    for word in ("coef", "std err", "P>|z|", "[0.025", "0.975]", "age", "dose", "intercept",
                 "Covariance type:   H1", "all 3 batches", "600 rows"):
        assert word in text, word
    data = est.summary(cov_type="HC0", alpha=0.1).as_dict()
    json.dumps(data)
    assert data["cov_type"] == "HC0" and [r["name"] for r in data["coefficients"]][-1] == (
        "intercept")
    assert est.summary().frame().shape == (4, 6)
    ci = est.conf_int(alpha=0.05)  # a DataFrame: the model was fitted on one
    assert list(ci.index) == ["age", "dose", "weight", "intercept"]
    ci = ci.to_numpy()
    np.testing.assert_allclose(ci[:, 1] - ci[:, 0], 2 * 1.959963984540054 * est.bse(),
                               rtol=1e-12)
    np.testing.assert_allclose(est.tvalues(), est._state.coef / est.bse(), rtol=1e-12)
    assert np.all((est.pvalues() >= 0) & (est.pvalues() <= 1))


def test_native_cpu_sums_match_the_reference():
    """native_cpu's inference sums and matrices meet the reference's (weighted batches)."""
    require_module(*NATIVE_CPU)
    from rhuber.engines import make_engine

    rng = np.random.default_rng(16)
    batches = [make_problem(rng, 300, 4)[:2] for _ in range(2)]
    config = Config(inference_matrices=True)
    native, reference = make_engine("native_cpu"), make_engine("numpy")
    a = b = None
    for X, y in batches:
        w = rng.choice([0.0, 1.0, 2.5], size=len(y))
        a, _ = native.update(a, X, y, w, config)
        b, _ = reference.update(b, X, y, w, config)
    for key in ("score_sq_sum", "curvature_sum", "inference_weight", "inference_batches"):
        assert getattr(a, key) == pytest.approx(getattr(b, key), rel=1e-7)
    np.testing.assert_allclose(a.score_gram, b.score_gram, rtol=1e-7)


def test_coverage_of_gaussian_streams_is_nominal():
    """A small coverage study (scripts/studies/coverage.py runs the full one): 1000 Gaussian
    streams of two batches; each cov type's 95 % interval for a slope covers within a binomial
    band (±3.3 standard deviations)."""
    rng = np.random.default_rng(2026)
    reps, hits = 1000, dict.fromkeys(inf.COV_TYPES, 0)
    beta = np.array([1.0, -0.5])
    config = Config(inference_matrices=True)
    for _ in range(reps):
        state = None
        for n in (150, 150):
            X = rng.normal(size=(n, 2))
            state, _ = update(state, X, X @ beta + 0.3 + rng.standard_normal(n), None, config)
        for cov_type in inf.COV_TYPES:
            se = np.sqrt(inf.covariance(state, cov_type)[0, 0])
            hits[cov_type] += abs(state.coef[0] - beta[0]) <= 1.959963984540054 * se
    band = 3.3 * np.sqrt(0.95 * 0.05 / reps)
    for cov_type, h in hits.items():
        assert abs(h / reps - 0.95) <= band, (cov_type, h / reps)
