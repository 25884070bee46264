"""Each anomaly rule of docs/tracing.md on a constructed stream of iteration records that
triggers it and one that does not, and on real streams where data can provoke it."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

from helpers import NATIVE_CPU, make_problem, require_module
from rhuber import RenewableHuberRegressor, trace
from rhuber.tracing import RULES, BatchTrace, IterationRecord, TensorStats
from rhuber.tracing.anomalies import (
    EXPLODING_GROWTH,
    find_anomalies,
)

FINE = TensorStats(count=100, nan=0, inf=0, min=-1.0, max=1.0, mean=0.0, std=0.5, l2=5.0)


def record(iteration: int, **changes) -> IterationRecord:
    """A healthy Newton iteration of a d = 3 batch: Q and the step shrink as k grows."""
    base = IterationRecord(
        phase="main", iteration=iteration, solver="cholesky", rcond=0.5,
        objective=100.0 / iteration, coef_norm=2.0, step_norm=1.0 / 10**iteration,
        step_scale=1.0, halvings=0, search_exhausted=False, rows=100, quadratic_rows=80,
        residual=FINE, score=FINE, hessian_diagonal=replace(FINE, count=3, min=1.0))
    return replace(base, **changes)


def batch(*records: IterationRecord, converged: bool = True) -> BatchTrace:
    return BatchTrace(stream=0, batch=1, engine="numpy", dtype="float64", rows=100, n_coef=3,
                      converged=converged, n_iter=len(records), iterations=list(records))


def rules(b: BatchTrace) -> dict[str, int | None]:
    return {a.rule: a.iteration for a in find_anomalies(b)}


HEALTHY = batch(record(1), record(2), record(3))


def test_a_healthy_stream_has_no_anomaly():
    assert find_anomalies(HEALTHY) == []


# Rule -> a stream where it first holds at iteration 2.
TRIGGERS = {
    "non_finite": batch(record(1), record(2, residual=replace(FINE, nan=2)), record(3)),
    "objective_increase": batch(record(1), record(2, objective=101.0)),
    "exploding_step": batch(record(1), record(2, step_norm=EXPLODING_GROWTH * 0.2)),
    "vanishing_curvature": batch(record(1), record(2, quadratic_rows=2)),
    "exhausted_line_search": batch(record(1), record(2, search_exhausted=True, halvings=30,
                                                     step_scale=0.0)),
    "fallback_rung": batch(record(1), record(2, solver="lu", rcond=1e-14)),
}

# Rule -> a stream close to triggering it that must not.
NEAR_MISSES = {
    "non_finite": batch(record(1), record(2, residual=replace(FINE, max=1e300))),
    # A rise within rounding (√eps · |Q|), and a new solve (pilot → main) starting higher.
    "objective_increase": batch(record(1), record(2, objective=50.0 + 1e-7),
                                record(1, phase="pilot", objective=1e6)),
    # Growth, but negligible against ‖β‖; and a big step with no growth.
    "exploding_step": batch(record(1, step_norm=1e-12), record(2, step_norm=1e-8),
                            record(3, step_norm=1e-8)),
    "vanishing_curvature": batch(record(1, quadratic_rows=3)),
    "exhausted_line_search": batch(record(1, halvings=29, step_scale=0.5 ** 29)),
    "fallback_rung": batch(record(1, solver="cholesky", rcond=1e-12), record(2, solver="lamm")),
}


@pytest.mark.parametrize("rule", [r for r in RULES if r != "not_converged"])
def test_iteration_rule_fires_where_it_first_holds(rule):
    assert rules(TRIGGERS[rule]) == {rule: 2}
    assert rule not in rules(NEAR_MISSES[rule])


def test_not_converged_is_a_batch_rule():
    assert rules(batch(record(1), record(2), converged=False)) == {"not_converged": 2}
    assert "not_converged" not in rules(HEALTHY)


def test_anomaly_text_names_where_and_how_often():
    b = batch(record(1, quadratic_rows=1), record(2, quadratic_rows=2))
    (anomaly,) = find_anomalies(b)
    assert anomaly.count == 2
    assert str(anomaly).startswith("stream 0 batch 1 main iteration 1: vanishing_curvature")


# Real streams that provoke the rules the data can reach.


@pytest.fixture(params=["numpy", "native_cpu"])
def backend(request):
    if request.param == "native_cpu":
        require_module(*NATIVE_CPU)
    return request.param


def traced_rules(backend, X, y, **params) -> set[str]:
    with trace() as tr, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        RenewableHuberRegressor(backend=backend, **params).fit(X, y)
    return {a.rule for a in tr.anomalies()}


def test_real_streams_plain_data_is_clean(backend):
    X, y, _ = make_problem(np.random.default_rng(0), 600, 3)
    assert traced_rules(backend, X, y, batch_size=300) == set()


def test_real_streams_vanishing_curvature(backend):
    # A bandwidth far below every residual: no row carries curvature.
    X, y, _ = make_problem(np.random.default_rng(1), 300, 3)
    assert "vanishing_curvature" in traced_rules(backend, X, y, tau=1e-9, ridge=1.0)


def test_real_streams_fallback_rung(backend):
    # A duplicated column without ridge: the Newton matrix is singular, the SVD rung solves.
    X, y, _ = make_problem(np.random.default_rng(2), 300, 2)
    assert "fallback_rung" in traced_rules(backend, np.c_[X, X[:, :1]], y)


def test_real_streams_not_converged(backend):
    X, y, _ = make_problem(np.random.default_rng(3), 300, 3)
    assert "not_converged" in traced_rules(backend, X, y, max_iter=1, tau=1.0)
