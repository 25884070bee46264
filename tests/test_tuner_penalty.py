"""auto sees a penalized stream whichever way the penalty is set (alpha, or the λ schedule of
lambda_scale), and plans it as one."""

import numpy as np
import pytest

from helpers import NATIVE_CPU, make_problem, require_module
from rhuber import RenewableHuberRegressor, dispatch


@pytest.mark.parametrize("settings, penalized", [
    ({}, False),
    ({"alpha": 0.01}, True),
    ({"lambda_scale": 0.5}, True),
    ({"lambda_scale": 0.0}, False),  # a zero schedule gives λ = 0 on every batch
])
def test_the_workload_of_a_batch_knows_its_penalty(settings, penalized):
    X = np.zeros((64, 3))
    assert dispatch.workload(RenewableHuberRegressor(**settings), X).penalized is penalized


def test_a_lambda_scale_stream_is_planned_as_a_penalized_one():
    require_module(*NATIVE_CPU)
    X, y, _ = make_problem(np.random.default_rng(5), 2048, 6)
    by_alpha = RenewableHuberRegressor(alpha=0.01).partial_fit(X, y)
    RenewableHuberRegressor().partial_fit(X, y)  # an unpenalized stream of the same shape first
    by_schedule = RenewableHuberRegressor(lambda_scale=0.5).partial_fit(X, y)
    assert by_schedule.plan_.plan == by_alpha.plan_.plan


def test_a_user_set_l1_solver_is_obeyed_on_a_lambda_scale_stream():
    require_module(*NATIVE_CPU)
    X, y, _ = make_problem(np.random.default_rng(6), 2048, 6)
    est = RenewableHuberRegressor(lambda_scale=0.5, l1_solver="prox_newton").partial_fit(X, y)
    assert est.plan_.plan.endswith("l1=prox_newton")
    assert est.diagnostics_[-1]["solver"] == "prox_newton"
