"""partial_fit's fast path for plain later batches: it must be invisible — the same results, the
same errors, and parameters still validated when they change."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import InvalidParameterError

import rhuber
from helpers import make_problem, state_dicts_equal
from rhuber import RenewableHuberRegressor
from rhuber import estimator as estimator_module
from rhuber.engines import ReferenceEngine


@pytest.fixture(params=["numpy", "auto"])
def stream(request):
    X, y, _ = make_problem(np.random.default_rng(0), 600, 4)
    est = RenewableHuberRegressor(backend=request.param).partial_fit(X[:300], y[:300])
    return est, X[300:], y[300:]


def test_plain_and_general_batches_give_identical_states(stream):
    est, X, y = stream
    general = RenewableHuberRegressor(backend=est.backend)
    general.load_state_dict(est.state_dict())
    plain = RenewableHuberRegressor(backend=est.backend)
    plain.load_state_dict(est.state_dict())
    assert plain._plain_batch(X, y, None)
    assert not general._plain_batch(X, list(y), None)
    plain.partial_fit(X, y)
    general.partial_fit(X, list(y))  # validate_data's path
    assert state_dicts_equal(plain.state_dict(), general.state_dict())
    plain.partial_fit(X, y)
    assert len(plain.diagnostics_) == 2 and plain.n_iter_ == plain.diagnostics_[-1]["n_iter"]


def _bad_batches(X, y):
    nan, inf = X.copy(), y.copy()
    nan[3, 1] = np.nan
    inf[7] = np.inf
    return {
        "NaN in X": (nan, y),
        "inf in y": (X, inf),
        "wrong width": (X[:, :3].copy(), y),
        "no rows": (X[:0].copy(), y[:0].copy()),
        "y rows differ": (X, y[:-1].copy()),
        "2-D y": (X, np.stack([y, y], axis=1)),
    }


@pytest.mark.parametrize("case", ["NaN in X", "inf in y", "wrong width", "no rows",
                                  "y rows differ", "2-D y"])
def test_bad_batches_keep_validate_data_s_error_and_the_state(stream, case):
    est, X, y = stream
    bad_X, bad_y = _bad_batches(X, y)[case]
    with pytest.raises(ValueError) as expected:  # the general path's error
        est._validate_batch(np.asfortranarray(bad_X), bad_y, None, reset=False)
    before, history = est.state_dict(), list(est.diagnostics_)
    with pytest.raises(ValueError) as raised:
        est.partial_fit(bad_X, bad_y)
    assert str(raised.value) == str(expected.value)
    assert state_dicts_equal(est.state_dict(), before) and est.diagnostics_ == history


def test_unchecked_values_are_refused_by_the_engine_with_validate_data_s_error(stream):
    """A plain batch's values are scanned by the engine, not before it; a NaN still gets
    the general path's message, which names the row and the column (and the engine's own error
    is not what the user sees)."""
    est, X, y = stream
    bad = X.copy()
    bad[-1, -1] = np.inf
    assert est._plain_batch(bad, y, None)  # the fast path takes it ...
    row = bad.shape[0] - 1
    with pytest.raises(ValueError, match=rf"X must hold finite .*: row {row}, column 3 is inf\.") \
            as raised:
        est.partial_fit(bad, y)  # ... and the error is the general path's
    assert raised.value.__suppress_context__


def test_huge_finite_values_take_the_fast_path(stream):
    est, X, y = stream
    huge = np.full_like(X, 1e308)  # finite, but their sum is not: validate_data accepts them
    assert est._plain_batch(huge, y, None)


def test_a_batch_of_another_dtype_or_with_names_takes_the_general_path(stream):
    est, X, y = stream
    assert not est._plain_batch(X.astype(np.float32), y, None)
    assert not est._plain_batch(X, y.astype(np.float32), None)
    assert not est._plain_batch(X.tolist(), y, None)
    est.partial_fit(X.astype(np.float32), y)  # converted to the stream's float64, as before
    assert est.coef_.dtype == np.float64


def test_changed_parameters_are_validated_before_the_batch(stream):
    est, X, y = stream
    before = est.state_dict()
    est.set_params(alpha=-1.0)
    with pytest.raises(InvalidParameterError, match="alpha"):
        est.partial_fit(X, y)
    assert state_dicts_equal(est.state_dict(), before)
    est.set_params(alpha=0.0)
    est.partial_fit(X, y)
    est.epsilon = "1.5"  # set directly, not through set_params: still caught
    with pytest.raises(InvalidParameterError, match="epsilon"):
        est.partial_fit(X, y)


def test_an_invalid_parameter_is_refused_on_every_batch_with_validation_s_message(stream):
    """The remembered parameters are the last valid ones: an invalid value is checked again,
    and gives scikit-learn's own message, on every partial_fit until it is fixed."""
    est, X, y = stream
    est.set_params(max_iter=0)
    with pytest.raises(InvalidParameterError) as expected:
        est._validate_params()
    for _ in range(2):
        with pytest.raises(InvalidParameterError) as raised:
            est.partial_fit(X, y)
        assert str(raised.value) == str(expected.value)
    est.set_params(max_iter=500)
    est.partial_fit(X, y)


@pytest.mark.parametrize(("name", "value"), [("max_iter", 500.0), ("fit_intercept", 1)])
def test_an_equal_value_of_another_type_is_validated_again(stream, name, value):
    est, X, y = stream
    assert getattr(est, name) == value
    setattr(est, name, value)  # equal to the validated value, but not valid
    with pytest.raises(InvalidParameterError, match=name):
        est.partial_fit(X, y)


@pytest.mark.parametrize(("changes", "check"), [
    ({"alpha": 0.05}, lambda est: est.diagnostics_[-1]["lambda"] == 0.05),
    ({"tau": 0.7}, lambda est: est.diagnostics_[-1]["bandwidth"] == 0.7),
    ({"max_iter": 1}, lambda est: est.diagnostics_[-1]["n_iter"] <= 1),
])
def test_a_parameter_set_between_batches_takes_effect(stream, changes, check):
    """What an update is configured with is remembered between batches: a change must still
    reach the engine, with the result of an estimator made with it."""
    est, X, y = stream
    fresh = RenewableHuberRegressor(backend=est.backend, **changes)
    fresh.load_state_dict(est.state_dict())
    est.partial_fit(X, y)  # a batch with the old parameters: what is remembered is in use
    est.load_state_dict(fresh.state_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # max_iter=1
        est.set_params(**changes).partial_fit(X, y)
        fresh.partial_fit(X, y)
    assert check(est)
    assert state_dicts_equal(est.state_dict(), fresh.state_dict())


def test_plan_report_is_there_only_after_a_batch_and_survives_pickling(stream):
    est, X, y = stream
    assert not hasattr(RenewableHuberRegressor(), "plan_")
    report = est.plan_
    assert report == est._session.report() and "plan_" not in vars(est)
    est.load_state_dict(est.state_dict())  # a new stream: its plan is decided by its next batch
    assert not hasattr(est, "plan_")
    est.partial_fit(X, y)
    assert pickle.loads(pickle.dumps(est)).plan_ == est.plan_


# ----------------------------------------------------------------- a stream's first batch


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_plain_first_batch_skips_validate_data_and_gives_the_general_result(dtype,
                                                                               monkeypatch):
    X, y, _ = make_problem(np.random.default_rng(1), 300, 4)
    X, y = X.astype(dtype), y.astype(dtype)
    general = RenewableHuberRegressor(backend="numpy").partial_fit(X.tolist(), y.tolist())

    def refuse(*args, **kwargs):
        raise AssertionError("validate_data ran on a plain batch")

    monkeypatch.setattr(estimator_module, "validate_data", refuse)
    plain = RenewableHuberRegressor(backend="numpy")
    assert plain._plain_batch(X, y, None)
    plain.partial_fit(X, y)
    assert plain.n_features_in_ == 4 and "feature_names_in_" not in vars(plain)
    assert plain.coef_.dtype == dtype
    if dtype == np.float64:  # the lists convert to float64 only
        assert state_dicts_equal(plain.state_dict(), general.state_dict())
    refit = RenewableHuberRegressor(backend="numpy").fit(X, y)  # fit's first batch too
    np.testing.assert_array_equal(refit.coef_, plain.coef_)


@pytest.mark.parametrize("case", ["NaN in X", "inf in y", "no rows", "y rows differ", "2-D y"])
@pytest.mark.parametrize("method", ["partial_fit", "fit"])
def test_a_bad_first_batch_keeps_validate_data_s_error_and_no_state(case, method):
    X, y, _ = make_problem(np.random.default_rng(2), 300, 4)
    bad_X, bad_y = _bad_batches(X, y)[case]
    with pytest.raises(ValueError) as expected:  # the general path's error
        RenewableHuberRegressor(backend="numpy")._validate_batch(
            np.asfortranarray(bad_X), bad_y, None, reset=True)
    est = RenewableHuberRegressor(backend="numpy")
    with pytest.raises(ValueError) as raised:
        getattr(est, method)(bad_X, bad_y)
    assert str(raised.value) == str(expected.value)
    assert not hasattr(est, "coef_") and not hasattr(est, "n_features_in_")


def test_a_fresh_estimator_does_not_validate_parameters_validated_before(monkeypatch):
    """scikit-learn's parameter validation runs when parameters change, not for every fresh
    estimator: values (and types) that passed once are remembered for the class."""
    X, y, _ = make_problem(np.random.default_rng(3), 200, 3)
    RenewableHuberRegressor(backend="numpy", epsilon=1.5).partial_fit(X, y)
    calls = []
    real = BaseEstimator._validate_params
    monkeypatch.setattr(BaseEstimator, "_validate_params",
                        lambda self: calls.append(1) or real(self))
    RenewableHuberRegressor(backend="numpy", epsilon=1.5).partial_fit(X, y)
    RenewableHuberRegressor(backend="numpy", epsilon=1.5).fit(X, y)
    assert calls == []
    RenewableHuberRegressor(backend="numpy", epsilon=1.25).partial_fit(X, y)  # new values
    assert calls == [1]
    with pytest.raises(InvalidParameterError, match="epsilon"):  # an invalid one, every time
        RenewableHuberRegressor(backend="numpy", epsilon=-1.0).partial_fit(X, y)
    with pytest.raises(InvalidParameterError, match="max_iter"):  # equal, of another type
        RenewableHuberRegressor(backend="numpy", epsilon=1.5, max_iter=500.0).partial_fit(X, y)


def test_a_batched_fit_checks_all_of_x_before_its_first_batch(monkeypatch):
    """fit with batch_size validates the whole of X first (validate_data), so a bad row in a
    later batch stops it before any batch runs, as before."""
    X, y, _ = make_problem(np.random.default_rng(4), 300, 4)
    X[250, 2] = np.nan
    calls = []
    real = ReferenceEngine.update
    monkeypatch.setattr(ReferenceEngine, "update",
                        lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    with pytest.raises(ValueError, match=r"row 250, column 2 is nan"):
        RenewableHuberRegressor(backend="numpy", batch_size=100).fit(X, y)
    assert calls == []


def test_a_traced_stream_s_bad_first_batch_is_refused_before_the_engine():
    X, y, _ = make_problem(np.random.default_rng(5), 200, 3)
    X[7, 1] = np.inf
    with rhuber.trace() as recorded, pytest.raises(ValueError, match=r"row 7, column 1"):
        RenewableHuberRegressor(backend="numpy").partial_fit(X, y)
    assert len(recorded.batches) == 0
