"""factorization="qr" (contract v4, square-root information) on the CUDA engine: the stacked rows
reduced by cuSOLVER's geqrf on the device, the d x d work on the triangle shared with native_cpu
(native/cpu/square_root_triangle.cpp). Differential against the NumPy reference and native_cpu at
the contract's tolerances, NIST Filip's digits, the square-root state through the C ABI (load,
read, conversion between the modes, checkpoint format 4) and the refusals. The golden qr cases
(filip_least_squares_qr, polynomial_huber_qr) run in test_cuda_golden.py, which no longer xfails
them once the engine declares "qr"."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from helpers import (
    FILIP_DIGITS,
    batches_of,
    log_relative_error,
    make_problem,
    native_cpu_engine,
    nist_filip,
    stream_updates,
)
from rhuber import IllConditionedWarning, RenewableHuberRegressor
from rhuber.core import Config, update
from rhuber.lab.golden import RTOL


def assert_close(a, b, rtol, what=""):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, what
    scale = np.maximum(1.0, np.abs(b))
    assert np.all(np.abs(a - b) <= rtol * scale), (what, float(np.max(np.abs(a - b) / scale)))


def assert_states_agree(got, want, rtol):
    assert got.factorization == want.factorization
    assert got.dtype == want.dtype
    assert_close(got.coef, want.coef, rtol, "coef")
    assert_close(got.scale, want.scale, rtol, "scale")
    # J~ = R~^T R~, and R~, z~ themselves: relative to their largest entry (R~ carries sqrt(N)).
    for name in ("information", "information_factor", "information_vector"):
        a, b = getattr(got, name), getattr(want, name)
        if b is None:
            assert a is None, name
            continue
        size = max(1.0, float(np.max(np.abs(b))))
        assert_close(np.asarray(a) / size, np.asarray(b) / size, rtol, name)
    assert got.n_samples_seen == want.n_samples_seen
    assert got.batch_count == want.batch_count


def test_the_engine_declares_the_qr_mode(engine):
    assert "qr" in engine.contract_features


CASES = {
    "huber": {},
    "fixed_tau": {"tau": 1.0},
    "ridge": {"ridge": 3.0},
    "smoothed_curvature": {"curvature": "smoothed"},
    "l1": {"alpha": 0.02},
    "lambda_schedule": {"lambda_scale": 0.5},
    "forgetting": {"half_life": 500.0},
    "inference_matrices": {"inference_matrices": True},
    "no_intercept": {"fit_intercept": False},
}


def check_against_the_reference(engine_update, dtype, case):
    config = Config(factorization="qr", **CASES[case])
    batches = batches_of(7, dtype)
    got, got_diag = stream_updates(engine_update, batches, config)
    want, want_diag = stream_updates(update, batches, config)
    rtol = RTOL[np.dtype(dtype).name]
    assert_states_agree(got, want, rtol)
    if config.inference_matrices:
        assert_close(got.gram, want.gram, rtol, "gram")
        assert_close(got.score_gram, want.score_gram, rtol, "score_gram")
    assert_close(got.score_sq_sum, want.score_sq_sum, rtol, "score_sq_sum")
    assert_close(got.curvature_sum, want.curvature_sum, rtol, "curvature_sum")
    for g, w in zip(got_diag, want_diag, strict=True):
        assert g.converged == w.converged
        assert g.solver == w.solver
        assert_close(g.objective, w.objective, rtol, "objective")
        assert_close(g.bandwidth, w.bandwidth, rtol, "bandwidth")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", CASES)
def test_differential_against_the_reference_in_qr_mode(engine, dtype, case):
    check_against_the_reference(engine.update, dtype, case)


@pytest.mark.without_gpu
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_differential_tolerances_hold_for_native_cpu(dtype):
    """The premise of the differential test: the CPU engine, whose QR is LAPACK's tpqrt and
    whose triangle work the CUDA engine shares, meets the reference at these tolerances."""
    cpu = native_cpu_engine()
    for case in CASES:
        check_against_the_reference(cpu.update, dtype, case)


def test_differential_against_native_cpu_in_qr_mode(engine):
    cpu = native_cpu_engine()
    config = Config(factorization="qr", ridge=1e-3)
    batches = batches_of(11, np.float64, n=2000, p=12)
    got, got_diag = stream_updates(engine.update, batches, config)
    want, want_diag = stream_updates(cpu.update, batches, config)
    assert_states_agree(got, want, 1e-7)
    assert [d.solver for d in got_diag] == [d.solver for d in want_diag]


def test_the_modes_agree_on_well_conditioned_data(engine):
    batches = batches_of(13, np.float64, weights=False)
    qr, _ = stream_updates(engine.update, batches, Config(factorization="qr"))
    cholesky, _ = stream_updates(engine.update, batches, Config())
    assert_close(qr.coef, cholesky.coef, 1e-9, "coef")
    size = float(np.max(np.abs(cholesky.information)))
    assert_close(qr.information / size, cholesky.information / size, 1e-9, "information")


def test_the_state_is_a_square_root_of_its_information(engine):
    config = Config(factorization="qr")
    state, diag = stream_updates(engine.update, batches_of(3, np.float64), config)
    R = state.information_factor
    assert np.array_equal(R, np.triu(R)) and np.all(np.diag(R) >= 0)
    assert_close(R.T @ R / np.max(np.abs(state.information)),
                 state.information / np.max(np.abs(state.information)), 1e-12, "R^T R")
    assert diag[-1].solver == "qr" and 0.0 < diag[-1].rcond <= 1.0


@pytest.fixture(scope="module")
def filip():
    return nist_filip()


@pytest.mark.parametrize("batch", [82, 20, 7])
def test_filip_keeps_about_seven_digits_at_once_and_streamed(engine, filip, batch):
    X, y, certified = filip
    model = RenewableHuberRegressor(tau=1e9, factorization="qr", backend="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IllConditionedWarning)  # rcond 1e-20, honestly
        for start in range(0, len(y), batch):
            model.partial_fit(X[start:start + batch], y[start:start + batch])
    digits = log_relative_error(np.r_[model.intercept_, model.coef_], certified)
    assert digits >= FILIP_DIGITS[batch], digits
    assert model.diagnostics_[-1]["solver"] == "qr"


def test_a_duplicated_column_takes_the_svd_rung_like_the_reference(engine):
    rng = np.random.default_rng(4)
    data = []
    for _ in range(2):
        X, y, _ = make_problem(rng, 120, 3)
        data.append((np.column_stack([X, X[:, 1]]), y, None))
    config = Config(factorization="qr")
    got, got_diag = stream_updates(engine.update, data, config)
    want, want_diag = stream_updates(update, data, config)
    assert got_diag[-1].solver == want_diag[-1].solver == "svd" and got_diag[-1].rcond == 0.0
    probe = np.column_stack([rng.standard_normal((20, 4)), np.ones(20)])
    probe[:, 3] = probe[:, 1]
    assert_close(probe @ got.coef, probe @ want.coef, 1e-7, "predictions")


def test_a_stream_switches_modes_between_batches_on_the_device(engine):
    batches = batches_of(17, np.float64)
    cholesky, _ = stream_updates(update, batches[:2], Config())
    got, _ = engine.update(cholesky, *batches[2], Config(factorization="qr"))
    want, _ = update(cholesky, *batches[2], Config(factorization="qr"))
    assert_states_agree(got, want, 1e-7)
    back, _ = engine.update(got, *batches[0], Config())
    want_back, _ = update(want, *batches[0], Config())
    assert back.information_factor is None
    assert_states_agree(back, want_back, 1e-7)


def test_a_qr_checkpoint_continues_on_the_device(engine, tmp_path):
    batches = batches_of(19, np.float64, weights=False)
    model = RenewableHuberRegressor(factorization="qr", backend="cuda")
    for X, y, _ in batches[:2]:
        model.partial_fit(X, y)
    model.save_checkpoint(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as raw:
        assert int(raw["format_version"]) == 4 and str(raw["factorization"]) == "qr"
    loaded = RenewableHuberRegressor.load_checkpoint(tmp_path / "m.npz", backend="cuda")
    reference = RenewableHuberRegressor.load_checkpoint(tmp_path / "m.npz", backend="numpy")
    X, y, _ = batches[2]
    model.partial_fit(X, y)
    loaded.partial_fit(X, y)
    reference.partial_fit(X, y)
    assert np.array_equal(model.coef_, loaded.coef_)
    assert_close(loaded.coef_, reference.coef_, 1e-7, "coef")


def test_a_bad_factor_is_refused_by_name_and_the_state_kept(engine):
    batches = batches_of(23, np.float64)
    state, _ = update(None, *batches[0], Config(factorization="qr"))
    R = np.array(state.information_factor)
    R[1, 0] = 1.0
    bad = state.replace(information_factor=R)
    with pytest.raises(ValueError, match="not upper triangular"):
        engine.update(bad, *batches[1], Config(factorization="qr"))
    negative = np.array(state.information_factor)
    negative[0, 0] = -1.0
    with pytest.raises(ValueError, match="negative diagonal"):
        engine.update(state.replace(information_factor=negative), *batches[1],
                      Config(factorization="qr"))
    got, _ = engine.update(state, *batches[1], Config(factorization="qr"))
    want, _ = update(state, *batches[1], Config(factorization="qr"))
    assert_states_agree(got, want, 1e-7)


def test_a_singular_cholesky_history_is_refused_in_qr_mode(engine):
    rng = np.random.default_rng(2)
    X, y, _ = make_problem(rng, 50, 3)
    X[:, 2] = 0.0
    state, _ = update(None, X, y, None, Config())
    with pytest.raises(ValueError, match="not positive definite"):
        engine.update(state, X, y, None, Config(factorization="qr"))


def test_warm_qr_batches_allocate_nothing(engine):
    config = Config(factorization="qr")
    state = None
    batches = batches_of(29, np.float64, count=4)
    state, _ = engine.update(state, *batches[0], config)
    before = engine.stats()["device_allocations"]
    for batch in batches[1:]:
        state, _ = engine.update(state, *batch, config)
    assert engine.stats()["device_allocations"] == before
