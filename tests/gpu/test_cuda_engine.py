"""The CUDA engine on a device: differential against the reference and native_cpu, transactions,
validation messages, residency and allocation after warm-up."""

from __future__ import annotations

import math

import numpy as np
import pytest

from helpers import batches_of, native_cpu_engine, stream_updates
from rhuber.core import Config, State, update
from rhuber.engines.cuda import CudaEngine
from rhuber.errors import EngineNotAvailableError
from rhuber.lab.golden import RTOL


def assert_close(a, b, rtol):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert np.all(np.abs(a - b) <= rtol * np.maximum(1.0, np.abs(b))), np.max(np.abs(a - b))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("alpha", [0.0, 0.02])
def test_differential_against_the_reference(engine, dtype, alpha):
    config = Config(alpha=alpha)
    batches = batches_of(7, dtype)
    got, got_diag = stream_updates(engine.update, batches, config)
    want, want_diag = stream_updates(update, batches, config)
    rtol = RTOL[np.dtype(dtype).name]
    assert_close(got.coef, want.coef, rtol)
    assert_close(got.information, want.information, rtol)
    assert_close(got.scale, want.scale, rtol)
    assert got.dtype == np.dtype(dtype)
    for g, w in zip(got_diag, want_diag, strict=True):
        assert g.converged == w.converged
        assert_close(g.objective, w.objective, rtol)
        assert_close(g.bandwidth, w.bandwidth, rtol)
        # LAMM's distance from the minimizer (NaN for Newton), which the estimator warns on: at
        # a converged batch a few tol · max(1, |beta|) whichever path rounding took, so compared
        # on that scale (an error in its formula shows as orders of magnitude), not on itself.
        assert math.isnan(g.stationarity_step) == math.isnan(w.stationarity_step) == (alpha == 0)
        if alpha > 0:
            assert abs(g.stationarity_step - w.stationarity_step) <= 10 * config.resolved_tol(
                dtype) * max(1.0, float(np.max(np.abs(want.coef))))


def test_differential_against_native_cpu(engine):
    cpu = native_cpu_engine()
    config = Config(ridge=1e-3)
    batches = batches_of(11, np.float64, n=2000, p=12)
    got, _ = stream_updates(engine.update, batches, config)
    want, _ = stream_updates(cpu.update, batches, config)
    assert_close(got.coef, want.coef, 1e-7)
    assert_close(got.information, want.information, 1e-7)


def test_a_foreign_state_continues_like_the_reference(engine):
    batches = batches_of(3, np.float64)
    config = Config()
    first, _ = update(None, *batches[0], config)
    got, _ = engine.update(first, *batches[1], config)
    want, _ = update(first, *batches[1], config)
    assert_close(got.coef, want.coef, 1e-7)


def test_an_asymmetric_information_matrix_takes_lu(engine):
    batches = batches_of(5, np.float64, weights=False)
    config = Config()
    state, _ = update(None, *batches[0], config)
    information = np.array(state.information)
    information[0, 1] += 1e-6  # a portable checkpoint may hold a slightly asymmetric matrix
    state = State(**{**state.__dict__, "information": information})
    got, diag = engine.update(state, *batches[1], config)
    want, want_diag = update(state, *batches[1], config)
    assert diag.solver == want_diag.solver == "lu"
    assert_close(got.coef, want.coef, 1e-7)


# Contract v2's badly scaled design: column units 1e-3 to 1e6 make cond(H) about 1e18, so without
# the equilibration the ladder falls to SVD, whose cut-off zeroes the 1e-3 column's coefficient.
COLUMN_UNITS = np.array([1e-3, 1.0, 1e2, 1e4, 1e6, 1e6])


def test_badly_scaled_columns_take_cholesky_and_get_the_right_coefficients(engine):
    rng = np.random.default_rng(11)
    batches, designs, responses = [], [], []
    for _ in range(3):
        Z = rng.standard_normal((1000, 6))
        y = Z @ np.ones(6) + 1e-6 * rng.standard_normal(1000)
        batches.append((Z * COLUMN_UNITS, y, None))
        designs.append(Z)
        responses.append(y)
    state, diags = stream_updates(engine.update, batches, Config(tau=1e9))  # least squares
    unscaled = state.coef[:6] * COLUMN_UNITS
    np.testing.assert_allclose(unscaled, np.ones(6), rtol=1e-6)
    # The same fit on the unscaled columns, by QR: nothing shared with the ladder.
    Z = np.column_stack([np.vstack(designs), np.ones(3000)])
    least_squares = np.linalg.lstsq(Z, np.concatenate(responses), rcond=None)[0]
    np.testing.assert_allclose(unscaled, least_squares[:6], rtol=1e-6)
    assert abs(state.coef[6] - least_squares[6]) <= 1e-6
    for diag in diags:
        assert diag.solver == "cholesky"
        assert 1e-3 < diag.rcond <= 1  # of the equilibrated matrix: the units are gone


def test_diagnostics_carry_rcond(engine, monkeypatch):
    """The module's diagnostics dict has "rcond", a float (NaN for LAMM, None once in Python);
    it is the rung's estimate on the equilibrated matrix, as the reference computes it."""
    raw = []
    native_engine = engine._engine

    class Recording:
        def __getattr__(self, name):
            return getattr(native_engine, name)

        def update(self, *args):
            raw.append(native_engine.update(*args))
            return raw[-1]

    monkeypatch.setattr(engine, "_engine", Recording())
    X, y, w = batches_of(17, np.float64, count=1)[0]
    # A zero column makes an exact zero pivot for Cholesky and LU alike: the SVD rung, surely.
    singular = np.column_stack([X, np.zeros(len(y))])
    cases = [(X, Config(), "cholesky"), (singular, Config(), "svd"),
             (X, Config(alpha=0.05), "lamm")]
    for k, (design, config, solver) in enumerate(cases):
        _, diag = engine.update(None, design, y, w, config)
        _, want = update(None, design, y, w, config)
        assert type(raw[k]["rcond"]) is float
        assert diag.solver == want.solver == solver
        if solver == "lamm":
            assert math.isnan(raw[k]["rcond"]) and diag.rcond is None and want.rcond is None
        elif solver == "svd":
            assert diag.rcond == want.rcond == 0.0
        else:
            assert diag.rcond == raw[k]["rcond"]
            assert diag.rcond == pytest.approx(want.rcond, rel=1e-6)


def test_warm_batches_allocate_nothing(engine):
    batches = batches_of(9, np.float64, count=6)
    state, _ = engine.update(None, *batches[0], Config())
    state, _ = engine.update(state, *batches[1], Config())
    before = engine.stats()
    for X, y, w in batches[2:]:
        state, _ = engine.update(state, X, y, w, Config())
    after = engine.stats()
    assert after["device_allocations"] == before["device_allocations"]
    assert after["updates"] == before["updates"] + 4


def test_validation_errors_match_the_cpu_and_leave_the_state(engine):
    batches = batches_of(13, np.float64, weights=False)
    state, _ = engine.update(None, *batches[0], Config())
    X, y, _ = batches[1]
    X = X.copy()
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        engine.update(state, X, y, None, Config())
    again, _ = engine.update(state, *batches[1][:2], None, Config())
    want, _ = update(state, *batches[1][:2], None, Config())
    assert_close(again.coef, want.coef, 1e-7)


def test_a_missing_device_ordinal_says_so(native):
    with pytest.raises(EngineNotAvailableError, match="no CUDA device"):
        CudaEngine(native, device=native.device_count())
