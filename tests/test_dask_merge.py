"""RenewableHuberRegressor.merge: the information-weighted combination of independent streams
(docs/scale-out.md), each state field's rule, and the refusals that leave the state untouched."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from helpers import make_problem, state_dicts_equal
from rhuber import IllConditionedWarning, RenewableHuberRegressor
from rhuber.checkpoint import validate_payload
from rhuber.datasets import make_contaminated_stream
from rhuber.errors import CheckpointError


def stream(seed, batches=2, n=300, p=4, **params):
    rng = np.random.default_rng(seed)
    est = RenewableHuberRegressor(backend="numpy", **params)
    for _ in range(batches):
        X, y, _ = make_problem(rng, n, p)
        w = rng.integers(1, 3, size=n).astype(float)
        est.partial_fit(X, y, w)
    return est


def test_every_state_field_follows_its_rule():
    parts = [stream(seed) for seed in (1, 2, 3)]
    before = [p.state_dict() for p in parts]
    merged = stream(1).merge(parts[1], parts[2])
    J = sum((p.information_ for p in parts[1:]), parts[0].information_.copy())
    beta = lambda p: np.append(p.coef_, p.intercept_)  # noqa: E731 — the intercept is last
    rhs = sum(p.information_ @ beta(p) for p in parts)
    np.testing.assert_allclose(beta(merged), np.linalg.solve(J, rhs), rtol=1e-12, atol=1e-12)
    assert np.array_equal(merged.information_, J)
    assert merged.n_samples_seen_ == sum(p.n_samples_seen_ for p in parts)
    assert merged.n_batches_ == sum(p.n_batches_ for p in parts)
    assert merged.effective_weight_ == sum(p.effective_weight_ for p in parts)
    weights = [p.effective_weight_ for p in parts]
    assert merged.scale_ == pytest.approx(np.average([p.scale_ for p in parts], weights=weights),
                                          rel=1e-15)
    assert merged.previous_lambda_ == 0.0
    assert len(merged.diagnostics_) == sum(len(p.diagnostics_) for p in parts)
    # The others are read, never changed.
    assert all(state_dicts_equal(p.state_dict(), b, ignore=()) for p, b in zip(
        parts[1:], before[1:], strict=True))


def test_merged_stream_continues_and_approaches_the_stream_of_all_data():
    batches = list(make_contaminated_stream(16_000, 3, batch_size=4_000, seed=7))
    whole = RenewableHuberRegressor(backend="numpy")
    for X, y in batches:
        whole.partial_fit(X, y)
    a, b = RenewableHuberRegressor(backend="numpy"), RenewableHuberRegressor(backend="numpy")
    for X, y in batches[:2]:
        a.partial_fit(X, y)
    for X, y in batches[2:]:
        b.partial_fit(X, y)
    a.merge(b)
    # Far closer (1.6e-5) than the statistical error (0.023 here; docs/scale-out.md).
    assert np.abs(a.coef_ - whole.coef_).max() < 1e-3
    X, y = batches[0]
    a.partial_fit(X, y)  # a merged state is a state like any other
    assert a.n_batches_ == 5


@pytest.mark.parametrize("change, message", [
    (dict(dtype=np.float32), "dtype"),
    (dict(fit_intercept=False), "fit_intercept"),
    (dict(p=5), "n_features_in_"),
    (dict(epsilon=2.0), "epsilon"),
    (dict(tau=3.0), "tau"),
])
def test_another_model_is_refused_and_nothing_changes(change, message):
    mine = stream(1)
    before = mine.state_dict()
    rng = np.random.default_rng(2)
    X, y, _ = make_problem(rng, 200, change.pop("p", 4), dtype=change.pop("dtype", np.float64))
    other = RenewableHuberRegressor(backend="numpy", **change).partial_fit(X, y)
    with pytest.raises(ValueError, match=message):
        mine.merge(other)
    assert state_dicts_equal(mine.state_dict(), before, ignore=())


def test_feature_names_must_agree():
    rng = np.random.default_rng(3)
    X, y, _ = make_problem(rng, 200, 2)
    named = RenewableHuberRegressor(backend="numpy").partial_fit(
        pd.DataFrame(X, columns=["a", "b"]), y)
    renamed = RenewableHuberRegressor(backend="numpy").partial_fit(
        pd.DataFrame(X, columns=["a", "c"]), y)
    unnamed = RenewableHuberRegressor(backend="numpy").partial_fit(X, y)
    for other in (renamed, unnamed):
        with pytest.raises(ValueError, match="feature_names_in_"):
            named.merge(other)
    same = RenewableHuberRegressor(backend="numpy").partial_fit(
        pd.DataFrame(X, columns=["a", "b"]), y)
    assert list(named.merge(same).feature_names_in_) == ["a", "b"]


def test_l1_penalized_streams_are_refused_clearly():
    penalized = stream(1, alpha=0.01)
    with pytest.raises(ValueError, match=r"L1-penalized.*alpha=0\.01"):
        stream(2).merge(penalized)
    with pytest.raises(ValueError, match="L1-penalized"):
        penalized.merge(stream(2))


def test_unfitted_or_foreign_streams_are_refused():
    with pytest.raises(NotFittedError):
        RenewableHuberRegressor().merge(stream(1))
    with pytest.raises(NotFittedError):
        stream(1).merge(RenewableHuberRegressor())
    with pytest.raises(TypeError, match="at least one"):
        stream(1).merge()
    with pytest.raises(TypeError, match="dict"):
        stream(1).merge(stream(2).state_dict())


def test_singular_combined_information_warns_and_stays_finite():
    rng = np.random.default_rng(4)
    parts = []
    for _ in range(2):
        X, y, _ = make_problem(rng, 200, 2)
        X = np.column_stack([X, X[:, 0]])  # a duplicated column: Σ J_k is singular
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IllConditionedWarning)
            parts.append(RenewableHuberRegressor(backend="numpy").partial_fit(X, y))
    with pytest.warns(IllConditionedWarning, match="merge: .*solver 'svd'"):
        parts[0].merge(parts[1])
    assert np.all(np.isfinite(parts[0].coef_))
    # The minimum-norm answer splits the duplicated column's weight evenly.
    assert parts[0].coef_[0] == pytest.approx(parts[0].coef_[2], rel=1e-6)


def test_checkpoint_partitions_consumed_is_validated():
    state = stream(1).state_dict()  # two batches
    assert validate_payload({**state, "partitions_consumed": np.int64(2)})[
        "partitions_consumed"] == 2
    for bad in (np.int64(-1), np.int64(3), np.float64(1.0), np.array([1])):
        with pytest.raises(CheckpointError, match="partitions_consumed"):
            validate_payload({**state, "partitions_consumed": bad})
