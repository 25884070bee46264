"""Every engine against the golden corpus and against each other, through the public API."""

import dataclasses

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from helpers import NATIVE_CPU, golden_corpus, make_problem, require_module
from rhuber import RenewableHuberRegressor, _native
from rhuber.engines import make_engine
from rhuber.errors import EngineNotAvailableError
from rhuber.lab.golden import (
    RUNG_CHECKED,
    case_config,
    compare_batch,
    missing_features,
    replay_case,
)

CORPUS = golden_corpus()


@pytest.fixture
def native_cpu():
    require_module(*NATIVE_CPU)
    return make_engine("native_cpu")


@pytest.mark.parametrize("l1_solver", ["lamm", "prox_newton"])
@pytest.mark.parametrize("case", CORPUS["cases"], ids=lambda c: c["name"])
def test_native_cpu_meets_golden(native_cpu, case, l1_solver):
    # prox_newton, the opt-in L1 solver, must meet the contract on the corpus (method.md).
    missing = missing_features(case, native_cpu)
    if missing:
        pytest.xfail(f"native_cpu does not implement {', '.join(missing)} (contract v3/v4) yet")
    config = dataclasses.replace(case_config(case), l1_solver=l1_solver)
    records = replay_case(case, native_cpu.update, config)
    for k, (got, want) in enumerate(zip(records, case["batches"], strict=True)):
        problems = compare_batch(got, want, case["dtype"], check_rung=case["name"] in RUNG_CHECKED)
        assert not problems, f"batch {k + 1}: {problems}"


def test_auto_prefers_native_cpu_when_installed():
    require_module(*NATIVE_CPU)
    rng = np.random.default_rng(0)
    X, y, _ = make_problem(rng, 300, 4)
    assert RenewableHuberRegressor().fit(X, y).backend_ == "native_cpu"


@pytest.mark.parametrize("first,second", [("numpy", "native_cpu"), ("native_cpu", "numpy")])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_checkpoint_continues_on_the_other_engine(tmp_path, first, second, dtype):
    require_module(*NATIVE_CPU)
    rng = np.random.default_rng(11)
    batches = [make_problem(rng, 400, 5, dtype=dtype)[:2] for _ in range(3)]
    a = RenewableHuberRegressor(backend=first, alpha=0.01)
    a.partial_fit(*batches[0]).partial_fit(*batches[1])
    a.save_checkpoint(tmp_path / "m.npz")
    b = RenewableHuberRegressor.load_checkpoint(tmp_path / "m.npz", backend=second)
    a.partial_fit(*batches[2])
    b.partial_fit(*batches[2])
    assert b.backend_ == second and b.coef_.dtype == np.dtype(dtype)
    rtol = 1e-7 if dtype == np.float64 else 2e-3
    for key in ("coef", "information", "scale", "effective_weight"):
        x, ref = np.asarray(b.state_dict()[key], float), np.asarray(a.state_dict()[key], float)
        assert np.all(np.abs(x - ref) <= rtol * np.maximum(1, np.abs(ref))), key
    assert b.n_samples_seen_ == a.n_samples_seen_ == 1200


def test_native_error_leaves_the_estimator_state():
    require_module(*NATIVE_CPU)
    rng = np.random.default_rng(2)
    X, y, _ = make_problem(rng, 100, 3)
    m = RenewableHuberRegressor(backend="native_cpu").partial_fit(X, y)
    before = m.state_dict()
    with pytest.raises(ValueError, match="sample_weight"):
        m.partial_fit(X, y, -np.ones(100))
    after = m.state_dict()
    assert all(np.array_equal(before[k], after[k]) for k in before)


def _native_estimators():
    try:
        _native.load(NATIVE_CPU[0])
    except EngineNotAvailableError:
        return []  # test_auto_prefers_native_cpu_when_installed reports the missing engine
    # A plan reaches the engine through the estimator's own parameters: the same checks hold.
    return [RenewableHuberRegressor(backend="native_cpu"),
            RenewableHuberRegressor(plan="native_cpu/t1/gram=full/chunk=64k/l1=lamm")]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks(_native_estimators())
def test_sklearn_compatible_on_native_cpu(estimator, check):
    check(estimator)
