"""Injected faults in the engines: allocation failure in the native workspace, and failing rungs
of the linear-solver ladder (native hooks: native/cpu/fault_injection.hpp; NumPy: LAPACK
patched). Each ends in the next rung with a correct estimate, or a clear error with the state
unchanged (docs/reliability.md)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.linalg
from scipy.linalg import lapack

from helpers import NATIVE_CPU, make_problem, require_module, state_dicts_equal
from rhuber import RenewableHuberRegressor
from rhuber.core import Config
from rhuber.engines import make_engine
from rhuber.errors import IllConditionedWarning, NumericalError


@pytest.fixture
def native():
    module = require_module(*NATIVE_CPU)
    module._clear_faults()
    yield module
    assert module._clear_faults() == 0, "a test left an injected fault armed"


def _batch(seed: int, n: int, p: int, dtype=np.float64):
    return make_problem(np.random.default_rng(seed), n, p, dtype=dtype)[:2]


def _engine_update(engine, state, X, y):
    return engine.update(state, X, y, None, Config())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("grows", ["rows", "features"])
def test_allocation_failure_at_every_point_is_a_memory_error_and_the_engine_recovers(
        native, dtype, grows):
    """The engine has run a (200, 3) batch; the next batch is taller (the same stream) or wider
    (a new stream on the same engine), so the workspace grows: the k-th allocation point of that
    growth throws, for every k. Each time the update raises MemoryError and leaves the input
    state alone, and the same update afterwards equals, bit for bit, the one of an engine that
    never failed (the workspace does not trust half-sized buffers)."""
    X0, y0 = _batch(0, 200, 3, dtype)
    X1, y1 = _batch(1, 20_000, 3 if grows == "rows" else 6, dtype)
    reference = make_engine("native_cpu", threads=2)
    state0, _ = _engine_update(reference, None, X0, y0)
    start = state0 if grows == "rows" else None
    expected, _ = _engine_update(reference, start, X1, y1)

    injected = 0
    for k in range(50):
        engine = make_engine("native_cpu", threads=2)
        state, _ = _engine_update(engine, None, X0, y0)
        before = state.coef.copy(), state.information.copy()
        start = state if grows == "rows" else None
        native._fail_allocations(after=k, count=1)
        try:
            _engine_update(engine, start, X1, y1)
        except MemoryError:
            injected += 1
        else:
            native._clear_faults()
            break
        assert np.array_equal(state.coef, before[0])
        assert np.array_equal(state.information, before[1])
        assert native._clear_faults() == 0  # the one fault was spent
        again, _ = _engine_update(engine, start, X1, y1)  # sizes the workspace afresh
        np.testing.assert_array_equal(again.coef, expected.coef)
        np.testing.assert_array_equal(again.information, expected.information)
    # Rows: the row and block buffers, and the drift test's float64 solver (sized at the stream's
    # first later batch); features (a first batch: no drift test): also the d-sized ones (twice)
    # and the solver's.
    assert injected == (3 if grows == "rows" else 5)


def test_allocation_failure_in_partial_fit_leaves_the_estimator_unchanged(native):
    model = RenewableHuberRegressor(backend="native_cpu", n_jobs=2).fit(*_batch(0, 100, 4))
    before = model.state_dict()
    X, y = _batch(1, 5000, 4)
    native._fail_allocations(after=0, count=1)
    with pytest.raises(MemoryError):
        model.partial_fit(X, y)
    assert state_dicts_equal(model.state_dict(), before)
    model.partial_fit(X, y)  # and the stream goes on
    alone = RenewableHuberRegressor(backend="native_cpu", n_jobs=2).fit(*_batch(0, 100, 4))
    alone.partial_fit(X, y)
    np.testing.assert_array_equal(model.coef_, alone.coef_)


def _fit(backend: str, X, y, **params):
    return RenewableHuberRegressor(backend=backend, **params).fit(X, y)


def test_native_failing_cholesky_falls_to_lu_then_svd_with_the_same_estimate(native):
    X, y = _batch(2, 500, 5)
    normal = _fit("native_cpu", X, y, n_jobs=2)
    assert normal.diagnostics_[-1]["solver"] == "cholesky"

    native._fail_rung("cholesky", 10_000)
    lu = _fit("native_cpu", X, y, n_jobs=2)
    assert lu.diagnostics_[-1]["solver"] == "lu"
    np.testing.assert_allclose(lu.coef_, normal.coef_, rtol=1e-10, atol=1e-12)

    native._fail_rung("lu", 10_000)
    with pytest.warns(IllConditionedWarning, match="svd"):
        svd = _fit("native_cpu", X, y, n_jobs=2)
    assert svd.diagnostics_[-1]["solver"] == "svd"
    np.testing.assert_allclose(svd.coef_, normal.coef_, rtol=1e-8, atol=1e-10)
    assert native._clear_faults() > 0  # armed for more attempts than the fits made


def test_native_every_rung_failing_is_a_numerical_error_and_the_state_is_unchanged(native):
    model = _fit("native_cpu", *_batch(3, 300, 4), n_jobs=2)
    before = model.state_dict()
    for rung in ("cholesky", "lu", "svd"):
        native._fail_rung(rung, 1)
    with pytest.raises(NumericalError, match="minimum-norm \\(SVD\\) solve"):
        model.partial_fit(*_batch(4, 300, 4))
    assert state_dicts_equal(model.state_dict(), before)
    assert native._clear_faults() == 0


def test_fault_hooks_refuse_an_unknown_rung(native):
    with pytest.raises(ValueError, match="rung must be 'cholesky', 'lu' or 'svd'"):
        native._fail_rung("qr", 1)


def _failing_lapack(monkeypatch, failing: set[str]):
    """Make scipy's LAPACK routines named in ``failing`` report a singular factorization, as
    potrf does for a matrix that is not positive definite."""
    real = lapack.get_lapack_funcs

    def get_lapack_funcs(names, arrays=(), **kwargs):
        funcs = real(names, arrays, **kwargs)

        def failing_version(f):
            def call(a, *args, **kw):
                out = f(a, *args, **kw)
                return (*out[:-1], 1)  # info = 1: singular at the first pivot
            return call

        return tuple(failing_version(f) if n in failing else f
                     for n, f in zip(names, funcs, strict=True))

    monkeypatch.setattr(lapack, "get_lapack_funcs", get_lapack_funcs)


def test_numpy_failing_cholesky_falls_to_lu_then_svd_with_the_same_estimate(monkeypatch):
    X, y = _batch(2, 500, 5)
    normal = _fit("numpy", X, y)
    _failing_lapack(monkeypatch, {"potrf"})
    lu = _fit("numpy", X, y)
    assert lu.diagnostics_[-1]["solver"] == "lu"
    np.testing.assert_allclose(lu.coef_, normal.coef_, rtol=1e-10, atol=1e-12)
    _failing_lapack(monkeypatch, {"potrf", "getrf"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IllConditionedWarning)
        svd = _fit("numpy", X, y)
    assert svd.diagnostics_[-1]["solver"] == "svd"
    np.testing.assert_allclose(svd.coef_, normal.coef_, rtol=1e-8, atol=1e-10)


def test_numpy_every_rung_failing_is_a_numerical_error_and_the_state_is_unchanged(monkeypatch):
    model = _fit("numpy", *_batch(3, 300, 4))
    before = model.state_dict()
    _failing_lapack(monkeypatch, {"potrf", "getrf"})

    def no_convergence(*args, **kwargs):
        raise np.linalg.LinAlgError("SVD did not converge")

    monkeypatch.setattr(scipy.linalg, "lstsq", no_convergence)
    with pytest.raises(NumericalError, match="minimum-norm \\(SVD\\) solve"):
        model.partial_fit(*_batch(4, 300, 4))
    assert state_dicts_equal(model.state_dict(), before)
