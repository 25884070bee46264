"""backend="auto" never leaves a penalized batch unconverged because it chose LAMM.

LAMM (the contract's L1 solver) is first-order: its rate follows the design's conditioning, and
raw columns of very different scales and far from centred (real data that nobody standardized)
can need many times max_iter. Where auto's plan ran LAMM and the batch did not converge, the
batch is solved again with proximal Newton on the same plan from the same state, and the stream
keeps proximal Newton (``plan_.reason``). A solver the user set is never changed.

On such columns LAMM can also meet the contract's step rule far from the minimizer (its step is
set for the largest columns, so it turns negligible first): ``diagnostics_``'s
``stationarity_step`` says how far, and a batch that stopped that short is treated as one that
did not converge — auto solves it again, a solver the user set warns.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from rhuber import RenewableHuberRegressor, dispatch
from rhuber.core.types import default_tol
from rhuber.core.update import stationarity_step
from rhuber.dispatch import workload
from rhuber.engines import native_cpu_available
from rhuber.engines.plans import machine_cores
from rhuber.tuner import reasons, rules

pytestmark = pytest.mark.skipif(not native_cpu_available(),
                                reason="the native_cpu engine is not built (make native)")

ROWS, FEATURES = 40_000, 10  # 3.2 MB of float64: above the shipped rule's proximal Newton cut


def ill_scaled_batch(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Columns with scales 1 … 316 and means twice their scales."""
    rng = np.random.default_rng(seed)
    scales = np.logspace(0, 2.5, FEATURES)
    X = rng.standard_normal((ROWS, FEATURES)) * scales + 2 * scales
    y = X @ (np.linspace(-1, 1, FEATURES) / scales) + rng.standard_t(3, ROWS)
    return X, y


def fit(est: RenewableHuberRegressor, batches: list) -> tuple[RenewableHuberRegressor, list]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for X, y in batches:
            est.partial_fit(X, y)
    return est, [w for w in caught if issubclass(w.category, ConvergenceWarning)]


SETTINGS = dict(alpha=0.01, max_iter=60)


@pytest.fixture(autouse=True)
def _no_stall_remembered():
    """Each test starts as a fresh process would: no stream has stalled in it yet."""
    dispatch._LAMM_STALLED.clear()
    yield
    dispatch._LAMM_STALLED.clear()


def test_the_rule_runs_lamm_at_this_size():
    # The premise of the tests below: a rule that ran proximal Newton here would never stall.
    est = RenewableHuberRegressor(**SETTINGS)
    X, y = ill_scaled_batch(0)
    plan = rules.current_rule().plan(workload(est, X, y), machine_cores())
    assert plan.l1_solver == "lamm", plan.id


def test_a_stalled_lamm_batch_is_solved_again_with_proximal_newton():
    batches = [ill_scaled_batch(0), ill_scaled_batch(1)]
    auto, caught = fit(RenewableHuberRegressor(**SETTINGS), batches[:1])
    assert caught == []
    report = auto.plan_
    assert report.reason == reasons.LAMM_STALLED
    assert report.plan.endswith("l1=prox_newton"), report.plan
    assert "did not converge within" in report.detail
    assert auto.diagnostics_[-1]["converged"]
    # The same numbers as the plan pinned from the stream's start, batch after batch.
    pinned, _ = fit(RenewableHuberRegressor(**SETTINGS, plan=report.plan), batches[:1])
    np.testing.assert_array_equal(auto.coef_, pinned.coef_)
    np.testing.assert_array_equal(auto.information_, pinned.information_)
    auto, caught = fit(auto, batches[1:])
    pinned, _ = fit(pinned, batches[1:])
    assert caught == [] and auto.plan_.plan == report.plan
    np.testing.assert_array_equal(auto.coef_, pinned.coef_)
    assert auto.diagnostics_[-1]["converged"]


@pytest.mark.parametrize(("settings", "reason"), [
    (dict(backend="native_cpu"), reasons.USER_BACKEND),
    (dict(plan="native_cpu/t1/l1=lamm"), reasons.PINNED),
])
def test_lamm_as_the_user_set_it_is_kept_and_warns(settings, reason):
    est, caught = fit(RenewableHuberRegressor(**SETTINGS, **settings), [ill_scaled_batch(0)])
    assert len(caught) == 1
    assert "l1_solver='prox_newton'" in str(caught[0].message)  # what to do about it
    assert not est.diagnostics_[-1]["converged"]
    assert est.plan_.reason == reason
    assert "prox_newton" not in str(est.plan_.plan)


def test_a_converging_lamm_batch_keeps_the_rules_plan():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((ROWS, FEATURES))
    y = X @ np.linspace(-1, 1, FEATURES) + rng.standard_t(3, ROWS)
    est, caught = fit(RenewableHuberRegressor(alpha=0.01), [(X, y)])
    assert caught == [] and est.diagnostics_[-1]["converged"]
    assert est.plan_.reason == reasons.RULE_FIRST
    assert est.plan_.plan.endswith("l1=lamm")


def test_proximal_newton_out_of_iterations_warns_without_naming_itself():
    _, caught = fit(RenewableHuberRegressor(alpha=0.01, max_iter=2, backend="native_cpu",
                                            l1_solver="prox_newton"), [ill_scaled_batch(0)])
    assert len(caught) == 1 and "prox_newton" not in str(caught[0].message)


def test_later_streams_of_the_same_columns_start_on_proximal_newton():
    fit(RenewableHuberRegressor(**SETTINGS), [ill_scaled_batch(0)])
    later, caught = fit(RenewableHuberRegressor(**SETTINGS), [ill_scaled_batch(1)])
    assert caught == [] and later.diagnostics_[-1]["converged"]
    assert later.plan_.reason == reasons.LAMM_STALLED
    assert "an earlier stream" in later.plan_.detail
    # Other columns, and a solver the user set, are left alone.
    X, y = ill_scaled_batch(1)
    other, caught = fit(RenewableHuberRegressor(**SETTINGS), [(X[:, 1:], y)])
    assert other.plan_.detail != later.plan_.detail
    user, caught = fit(RenewableHuberRegressor(**SETTINGS, backend="native_cpu"), [(X, y)])
    assert len(caught) == 1 and user.plan_.reason == reasons.USER_BACKEND


# tol = 1e-4 on the ill-scaled batch: LAMM meets its step rule in a few iterations, far from the
# minimizer (its stationarity step ~0.4 against tol * max(1, |beta|) ~ 1e-4).
SHORT = dict(alpha=0.01, tol=1e-4)


def test_lamm_stopping_short_is_solved_again_with_proximal_newton():
    auto, caught = fit(RenewableHuberRegressor(**SHORT), [ill_scaled_batch(0)])
    assert caught == []
    report = auto.plan_
    assert report.reason == reasons.LAMM_STALLED
    assert report.plan.endswith("l1=prox_newton"), report.plan
    assert "stopped short of the minimizer" in report.detail
    last = auto.diagnostics_[-1]
    assert last["converged"] and last["solver"] == "prox_newton"
    assert np.isnan(last["stationarity_step"])  # not LAMM's
    pinned, _ = fit(RenewableHuberRegressor(**SHORT, plan=report.plan), [ill_scaled_batch(0)])
    np.testing.assert_array_equal(auto.coef_, pinned.coef_)


@pytest.mark.parametrize("backend", ["native_cpu", "numpy"])
def test_lamm_stopping_short_as_the_user_set_it_warns(backend):
    est, caught = fit(RenewableHuberRegressor(**SHORT, backend=backend), [ill_scaled_batch(0)])
    last = est.diagnostics_[-1]
    assert last["converged"] and last["solver"] == "lamm"  # the contract's step rule was met
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "did not reach the minimizer" in message and "l1_solver='prox_newton'" in message
    size = max(np.abs(est.coef_).max(), abs(est.intercept_))
    assert last["stationarity_step"] > 100 * SHORT["tol"] * max(1.0, size)
    # And the estimate really is that far from the minimizer (proximal Newton's answer).
    far = np.abs(est.coef_ - fit(RenewableHuberRegressor(
        alpha=0.01, backend="native_cpu", l1_solver="prox_newton"), [ill_scaled_batch(0)])[0]
        .coef_).max()
    assert far > 100 * SHORT["tol"] * max(1.0, size)


def test_a_prox_newton_batch_that_lamm_finished_short_does_not_advise_prox_newton():
    # A column non-zero only on the 50 rows of the largest residuals has no curvature in the
    # Newton model at the start: proximal Newton hands the batch to LAMM, which stops short.
    X, y = ill_scaled_batch(0)
    residual = y - X @ (np.linspace(-1, 1, FEATURES) / np.logspace(0, 2.5, FEATURES))
    outside = np.argsort(-np.abs(residual))[:50]
    column = np.zeros(ROWS)
    column[outside] = np.sign(residual[outside])
    est, caught = fit(RenewableHuberRegressor(**SHORT, backend="native_cpu",
                                              l1_solver="prox_newton"),
                      [(np.column_stack([X, column]), y)])
    last = est.diagnostics_[-1]
    assert last["converged"] and last["solver"] == "lamm"  # LAMM finished it
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "did not reach the minimizer" in message and "proximal Newton's model" in message
    assert "l1_solver='prox_newton'" not in message


def test_the_engines_report_the_same_stationarity_step():
    X, y = ill_scaled_batch(0)
    steps = [fit(RenewableHuberRegressor(**SHORT, backend=backend), [(X, y)])[0]
             .diagnostics_[-1]["stationarity_step"] for backend in ("numpy", "native_cpu")]
    np.testing.assert_allclose(steps[1], steps[0], rtol=1e-9)


def test_the_stationarity_step_pairs_each_slope_with_the_intercept():
    # The reference's form, as the C++ test Lamm.StationarityStepPairsEachSlopeWithTheIntercept
    # checks the engines': J = [[4, 1.9], [1.9, 1]], G = (0.2, -0.1) give 0.05 and 0.1 alone,
    # (1, -2) as a pair; a column collinear with the intercept counts alone.
    mapping = np.array([0.2, -0.1])
    coupled = np.array([[4.0, 1.9], [1.9, 1.0]])
    assert stationarity_step(mapping, coupled, intercept=True) == pytest.approx(2.0, rel=1e-12)
    assert stationarity_step(mapping, coupled, intercept=False) == 0.1
    assert stationarity_step(mapping, np.array([[4.0, 2.0], [2.0, 1.0]]), intercept=True) == 0.1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_converged_lamm_batch_on_standardized_columns_is_within_tol(dtype):
    rng = np.random.default_rng(4)
    X = rng.standard_normal((4_000, FEATURES)).astype(dtype)
    y = (X @ np.linspace(-1, 1, FEATURES) + rng.standard_t(3, 4_000)).astype(dtype)
    est, caught = fit(RenewableHuberRegressor(alpha=0.01, backend="native_cpu"), [(X, y)] * 2)
    assert caught == []
    tol = default_tol(dtype)
    size = max(np.abs(est.coef_).max(), abs(est.intercept_))
    for record in est.diagnostics_:
        assert record["converged"]
        assert 0 < record["stationarity_step"] <= 2 * tol * max(1.0, size)
    # Newton (alpha = 0) reports none.
    newton, _ = fit(RenewableHuberRegressor(backend="native_cpu"), [(X, y)])
    assert np.isnan(newton.diagnostics_[-1]["stationarity_step"])


def test_auto_gives_lamm_a_trial_of_iterations_not_all_of_max_iter():
    # Raw columns stall LAMM for every iteration it is given: auto gives it
    # LAMM_TRIAL_ITERATIONS a solve (the pilot's and the main one) before proximal Newton.
    auto, caught = fit(RenewableHuberRegressor(alpha=0.01), [ill_scaled_batch(0)])
    assert caught == [] and auto.plan_.reason == reasons.LAMM_STALLED
    trial = 2 * dispatch.LAMM_TRIAL_ITERATIONS
    assert f"within {trial} LAMM iterations" in auto.plan_.detail, auto.plan_.detail
    # A solver the user set runs all of max_iter.
    user, caught = fit(RenewableHuberRegressor(alpha=0.01, backend="native_cpu"),
                       [ill_scaled_batch(0)])
    assert len(caught) == 1 and user.diagnostics_[-1]["n_iter"] == 2 * user.max_iter > trial
