"""predict on the native library's row kernel and the engines' threads (engines.predict;
docs/native.md, "Predictions"): the same numbers as X coef + intercept to rounding, in the
model's dtype, the same bits on one thread and on several, and NumPy's matmul wherever the
library is not loaded or the input is not one it takes."""

import numpy as np
import pytest

from helpers import NATIVE_CPU, require_module
from rhuber import RenewableHuberRegressor
from rhuber.engines import predict as predicting

BIG = (4096, 40)  # rows x (features + 1) past predicting.POOL_ENTRIES: the library's path
assert BIG[0] * (BIG[1] + 1) >= predicting.POOL_ENTRIES


def fitted(dtype, shape=BIG, backend="native_cpu"):
    rng = np.random.default_rng(0)
    X = rng.standard_normal(shape).astype(dtype)
    y = (X @ np.linspace(-1, 1, shape[1]) + 3.0 + rng.standard_t(3, shape[0])).astype(dtype)
    return RenewableHuberRegressor(backend=backend).fit(X, y), X


def counting(monkeypatch, cpu):
    calls = []
    native = cpu.predict

    def counted(*args, **kwargs):
        calls.append(1)
        return native(*args, **kwargs)

    monkeypatch.setattr(cpu, "predict", counted)
    return calls


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_predict_takes_the_library_and_matches_the_product(dtype, monkeypatch):
    cpu = require_module(*NATIVE_CPU)
    model, X = fitted(dtype)
    calls = counting(monkeypatch, cpu)
    got = model.predict(X)
    assert calls, "a large C-contiguous batch of the model's dtype goes to the library"
    expected = X.astype(np.float64) @ model.coef_.astype(np.float64) + float(model.intercept_)
    assert got.dtype == np.dtype(dtype) and got.shape == (X.shape[0],)
    tolerance = 1e-12 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(got, expected, rtol=tolerance,
                               atol=tolerance * np.abs(expected).max())


def test_one_thread_and_several_give_the_same_bits():
    cpu = require_module(*NATIVE_CPU)
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40_000, 30))  # past the library's 2^20 entries for its threads
    coef = rng.standard_normal(30)
    one = cpu.predict(X, coef, 0.25, 1)
    assert np.array_equal(one, cpu.predict(X, coef, 0.25, 2))
    assert np.array_equal(one, cpu.predict(X, coef, 0.25, None))
    np.testing.assert_allclose(one, X @ coef + 0.25, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", ["fortran", "other dtype", "small", "list"])
def test_inputs_the_library_does_not_take_go_to_numpy(case, monkeypatch):
    cpu = require_module(*NATIVE_CPU)
    model, X = fitted("float32")
    calls = counting(monkeypatch, cpu)
    X_in = {"fortran": np.asfortranarray(X), "other dtype": X.astype(np.float64),
            "small": X[:10], "list": X[:3].tolist()}[case]
    got = model.predict(X_in)
    assert not calls
    reference = np.asarray(X_in, dtype=np.float64) @ model.coef_.astype(np.float64)
    np.testing.assert_allclose(got, reference + float(model.intercept_), rtol=2e-5, atol=1e-4)


def test_without_the_library_loaded_predict_is_numpys_product(monkeypatch):
    """A process that never loaded the library (a NumPy-backend model): predict does not load
    it, and gives NumPy's own product, to the bit."""
    cpu = require_module(*NATIVE_CPU)
    model, X = fitted("float64", backend="numpy")
    monkeypatch.setattr(cpu, "LIB", None)  # as in a process that never loaded it
    assert cpu.predict(X, model.coef_, model.intercept_, None) is None
    np.testing.assert_array_equal(model.predict(X), X @ model.coef_ + model.intercept_)


def test_the_call_refuses_what_it_cannot_compute():
    cpu = require_module(*NATIVE_CPU)
    X = np.ones((4, 3))
    out = np.empty(4)
    with pytest.raises(ValueError, match="dtype must be"):
        cpu.check(cpu.LIB.rh_cpu_predict(X.ctypes.data, 9, 4, 3, X.ctypes.data, 0.0, 1,
                                         out.ctypes.data))
    with pytest.raises(ValueError, match="cols >= 1"):
        cpu.check(cpu.LIB.rh_cpu_predict(X.ctypes.data, 2, 4, 0, X.ctypes.data, 0.0, 1,
                                         out.ctypes.data))
    with pytest.raises(ValueError, match="threads must be >= 0"):
        cpu.check(cpu.LIB.rh_cpu_predict(X.ctypes.data, 2, 4, 3, X.ctypes.data, 0.0, -1,
                                         out.ctypes.data))
    with pytest.raises(ValueError, match="x"):
        cpu.check(cpu.LIB.rh_cpu_predict(None, 2, 4, 3, X.ctypes.data, 0.0, 1,
                                         out.ctypes.data))
    assert cpu.LIB.rh_cpu_predict(None, 2, 0, 3, None, 0.0, 1, None) == 0  # no rows: nothing
