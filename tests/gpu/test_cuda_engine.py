"""The CUDA engine on a device: differential against the reference and native_cpu, transactions,
validation messages, residency and allocation after warm-up."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import make_problem
from renewable_huber.core import Config, State, update
from renewable_huber.errors import EngineNotAvailableError
from renewable_huber.golden import RTOL


def stream(engine_update, batches, config):
    state, diags = None, []
    for X, y, w in batches:
        state, diag = engine_update(state, X, y, w, config)
        diags.append(diag)
    return state, diags


def assert_close(a, b, rtol):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert np.all(np.abs(a - b) <= rtol * np.maximum(1.0, np.abs(b))), np.max(np.abs(a - b))


def batches_of(seed, dtype, n=400, p=5, count=3, weights=True):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        X, y, _ = make_problem(rng, n, p, dtype=dtype)
        w = rng.choice([0.0, 0.5, 1.0, 2.0], size=n).astype(dtype) if weights else None
        out.append((X, y, w))
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("alpha", [0.0, 0.02])
def test_differential_against_the_reference(engine, dtype, alpha):
    config = Config(alpha=alpha)
    batches = batches_of(7, dtype)
    got, got_diag = stream(engine.update, batches, config)
    want, want_diag = stream(update, batches, config)
    rtol = RTOL[np.dtype(dtype).name]
    assert_close(got.coef, want.coef, rtol)
    assert_close(got.information, want.information, rtol)
    assert_close(got.scale, want.scale, rtol)
    assert got.dtype == np.dtype(dtype)
    for g, w in zip(got_diag, want_diag, strict=True):
        assert g.converged == w.converged
        assert_close(g.objective, w.objective, rtol)
        assert_close(g.bandwidth, w.bandwidth, rtol)


def test_differential_against_native_cpu(engine):
    native_cpu = pytest.importorskip("_renewable_huber_native_cpu")
    from renewable_huber.backends import NativeCpuEngine

    cpu = NativeCpuEngine(native_cpu)
    config = Config(ridge=1e-3)
    batches = batches_of(11, np.float64, n=2000, p=12)
    got, _ = stream(engine.update, batches, config)
    want, _ = stream(cpu.update, batches, config)
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
        native.make_engine(device=native.device_count())
