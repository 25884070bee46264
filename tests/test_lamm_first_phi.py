"""LAMM's first φ (method.md, contract v4): the mean diagonal of X̃ᵀdiag(w)X̃ + J̃, so that a solve
starts on the batch's scale instead of doubling φ up to it from 1."""

import numpy as np
import pytest

from helpers import NATIVE_CPU, make_problem, require_module
from rhuber import RenewableHuberRegressor
from rhuber.core.problem import BatchProblem
from rhuber.core.types import Config, State
from rhuber.core.update import update


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_first_phi_is_the_mean_diagonal_of_the_curvature(dtype):
    rng = np.random.default_rng(11)
    X, y, _ = make_problem(rng, 500, 4, dtype=dtype)
    w = rng.uniform(0.5, 3.0, size=500).astype(dtype)
    config = Config(alpha=0.05)
    state, _ = update(None, X, y, w, config)  # J̃ of the second batch is not zero
    X2, y2, _ = make_problem(rng, 300, 4, dtype=dtype)
    w2 = rng.uniform(0.5, 3.0, size=300).astype(dtype)
    problem = BatchProblem.build(state, X2, y2, w2, config, np)

    design = np.column_stack([X2.astype(np.float64), np.ones(300)])
    curvature = design.T @ (w2.astype(np.float64)[:, None] * design)
    expected = np.mean(np.diag(curvature) + np.diag(state.information.astype(np.float64)))
    assert problem.first_phi() == pytest.approx(expected, rel=1e-13)


def test_the_first_phi_is_one_where_the_diagonal_overflows():
    X = np.full((4, 2), 1e200)
    y = np.arange(4.0)
    problem = BatchProblem.build(State.empty(3), X, y, np.ones(4), Config(alpha=0.1), np)
    assert problem.first_phi() == 1.0


@pytest.mark.parametrize("backend", ["numpy", "native_cpu"])
def test_a_large_batch_needs_no_doublings_from_one(backend):
    if backend == "native_cpu":
        require_module(*NATIVE_CPU)
    rng = np.random.default_rng(12)
    est = RenewableHuberRegressor(backend=backend, alpha=0.02)
    for _ in range(3):
        X, y, _ = make_problem(rng, 20_000, 6)
        est.partial_fit(X, y)
        # From φ = 1 a batch of 20,000 rows doubles φ about log2(20,000) = 14 times per solve.
        assert est.diagnostics_[-1]["line_search_halvings"] <= 2
        assert est.diagnostics_[-1]["converged"]
