"""The binding's contract (the C ABI through ctypes): zero-copy inputs, the GIL released, one dtype,
errors mapped to Python exceptions, and the caller's state never touched."""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest
from native_cpu_support import Engine, batch, empty_state, native

from rhuber.core import Config
from rhuber.engines import NativeCpuEngine

F64 = np.float64
F32 = np.float32


def run(engine, state, X, y, w, config=None):
    return engine.update(state, X, y, w, config or Config())


def test_module_metadata():
    import rhuber

    assert native.__version__ == rhuber.__version__
    info = native.blas_info()
    assert "OpenBLAS" in info["provider"]
    assert isinstance(info["threads"], int)
    assert native.Engine(threads=3).threads == 3
    assert native.Engine().threads >= 1
    native.Engine()
    assert native.blas_info()["threads"] == 1  # an engine runs BLAS single-threaded


def test_inputs_reach_cpp_without_a_copy(monkeypatch):
    """The batch struct carries the caller's own addresses for C-contiguous arrays of the
    computation dtype; any other layout is converted once, in Python, and the copy is passed."""
    seen = []
    original = native.Batch

    def spy(**fields):
        seen.append(fields)
        return original(**fields)

    monkeypatch.setattr(native, "Batch", spy)
    engine = NativeCpuEngine(native, threads=1)
    for dtype in (F64, F32):
        X, y, w = batch(0, 50, 3, dtype)
        engine.update(None, X, y, w, Config())
        assert seen[-1]["X"] == X.ctypes.data
        assert seen[-1]["y"] == y.ctypes.data and seen[-1]["sample_weight"] == w.ctypes.data
    F = np.asfortranarray(X)
    engine.update(None, F, y, w, Config())
    assert seen[-1]["X"] != F.ctypes.data


@pytest.mark.parametrize("dtype", [F32, F64])
def test_the_computation_dtype_is_the_input_dtype(dtype):
    X, y, w = batch(2, 80, 3, dtype)
    state, diag = run(Engine(), empty_state(4, dtype), X, y, w)
    assert state["coef"].dtype == dtype and state["coef"].shape == (4,)
    assert state["information"].dtype == dtype and state["information"].shape == (4, 4)
    assert state["information"].flags.c_contiguous
    assert isinstance(state["n_samples_seen"], int) and state["n_samples_seen"] == 80
    assert isinstance(state["batch_count"], int) and state["batch_count"] == 1
    for key in ("effective_weight", "previous_lambda", "scale"):
        assert isinstance(state[key], float)
    assert set(diag) == {
        "converged",
        "n_iter",
        "objective",
        "lambda",
        "bandwidth",
        "solver",
        "line_search_halvings",
        "rcond",
        "drift_statistic",
        "drift_df",
        "drift_pvalue",
        "stationarity_step",
    }
    assert diag["converged"] is True and diag["solver"] == "cholesky"
    assert math.isnan(diag["stationarity_step"])  # a Newton batch
    assert isinstance(diag["rcond"], float) and 0 < diag["rcond"] <= 1


def test_a_batch_and_a_state_of_different_dtypes_are_refused_by_the_abi():
    """The C side checks what Python would otherwise have to: one dtype for the batch and both
    states; a refused call writes nothing."""
    X, y, w = batch(3, 40, 2)
    engine = native.Engine(threads=1)
    coef, information = np.zeros(3, F32), np.zeros((3, 3), F32)
    previous = native.state_struct(np.dtype(F32), 3, coef, information, None, None)
    out = [np.full(3, 7.0), np.full((3, 3), 7.0)]
    following = native.state_struct(np.dtype(F64), 3, *out, None, None)
    config = native.Config(fit_intercept=1, epsilon=1.345, has_tol=1, tol=1e-8, max_iter=50,
                           bandwidth_scale=1.0)
    data = native.Batch(dtype=native.FLOAT64, rows=40, cols=2, X=X.ctypes.data,
                        y=y.ctypes.data, sample_weight=w.ctypes.data)
    with pytest.raises(ValueError, match="dtype must be the batch's"):
        engine.update(previous, data, config, following)
    assert (out[0] == 7.0).all() and following.batch_count == 0


def test_input_errors_are_value_errors_in_the_callers_terms():
    X, y, w = batch(4, 40, 2)
    engine = Engine()
    bad_y = y.copy()
    bad_y[5] = np.nan
    with pytest.raises(ValueError, match="y contains a non-finite value at index 5"):
        run(engine, empty_state(3, F64), X, bad_y, w)
    with pytest.raises(ValueError, match="alpha must be a finite number >= 0"):
        run(engine.engine, None, X, y, w, Config(alpha=-1.0))
    with pytest.raises(ValueError, match="X has 2 features"):
        state, _ = run(engine, empty_state(3, F64), X, y, w)
        run(engine, {**state, "coef": np.zeros(4), "information": np.zeros((4, 4))}, X, y, w)
    with pytest.raises(ValueError, match="sample_weight sums to 0"):
        run(engine, empty_state(3, F64), X, y, np.zeros_like(w))


def test_error_classes_subclass_the_builtin_ones():
    from rhuber.errors import ModelFormatError, NumericalError

    assert isinstance(native.error(native.INVALID_ARGUMENT, ""), ValueError)
    assert isinstance(native.error(native.NUMERICAL, ""), NumericalError)
    assert isinstance(native.error(native.MODEL_FORMAT, ""), ModelFormatError)
    assert issubclass(ModelFormatError, ValueError)


def test_the_callers_state_is_never_modified():
    X, y, w = batch(5, 60, 3)
    engine = Engine()
    state, _ = run(engine, empty_state(4, F64), X, y, w)
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in state.items()}

    X2, y2, w2 = batch(6, 60, 3)
    bad_w = w2.copy()
    bad_w[0] = -1.0
    with pytest.raises(ValueError):
        run(engine, state, X2, y2, bad_w)
    after, _ = run(engine, state, X2, y2, w2)

    for key, value in before.items():
        np.testing.assert_array_equal(state[key], value)
    assert after["coef"] is not state["coef"]
    assert not np.shares_memory(after["information"], state["information"])
    after["coef"][0] = 123.0  # outputs are the caller's own, writeable arrays
    np.testing.assert_array_equal(state["coef"], before["coef"])


def test_updates_release_the_gil():
    X, y, w = batch(7, 60_000, 30)
    engines = [Engine(threads=1), Engine(threads=1)]
    run(engines[0], empty_state(31, F64), X[:1000], y[:1000], w[:1000])  # warm up
    barrier = threading.Barrier(2)
    spans = [None, None]

    def work(i):
        barrier.wait()
        start = time.perf_counter()
        run(engines[i], empty_state(31, F64), X, y, w)
        spans[i] = (start, time.perf_counter())

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (a0, a1), (b0, b1) = spans
    # Holding the GIL would serialize the calls: one would start only after the other ended.
    assert a0 < b1 and b0 < a1, spans


# --------------------------------------------------------------- contract v3: the inference sums

INFERENCE_SCALARS = ("score_sq_sum", "curvature_sum", "curvature_sq_sum", "inference_weight")


def test_the_state_carries_the_inference_sums_and_matrices_only_when_asked():
    X, y, w = batch(20, 300, 3)
    engine = Engine()
    plain, _ = run(engine, empty_state(4, F64), X, y, w)
    assert all(isinstance(plain[k], float) and plain[k] > 0 for k in INFERENCE_SCALARS)
    assert plain["inference_batches"] == 1
    assert plain["gram"] is None and plain["score_gram"] is None
    asked, _ = run(engine, empty_state(4, F64), X, y, w, Config(inference_matrices=True))
    for key in ("gram", "score_gram"):
        assert asked[key].shape == (4, 4) and asked[key].dtype == F64
        np.testing.assert_array_equal(asked[key], asked[key].T)  # one triangle, mirrored
    # G of a batch with an intercept: its corner is the weight total.
    assert asked["gram"][3, 3] == asked["inference_weight"] == 300.0


def test_a_state_without_the_inference_keys_is_a_state_without_sums():
    """A dict written before contract v3 (a format-2 state) still updates; its sums start here."""
    X, y, w = batch(21, 200, 3)
    engine = Engine()
    first, _ = run(engine, empty_state(4, F64), X, y, w)
    old = {k: v for k, v in first.items()
           if k not in (*INFERENCE_SCALARS, "inference_batches", "gram", "score_gram")}
    following, _ = run(engine, old, X, y, w, Config(inference_matrices=True))
    assert following["inference_batches"] == 1 and following["batch_count"] == 2
    assert following["gram"] is not None  # the sums cover no batch yet: the matrices start


def test_inference_matrices_of_another_dtype_are_converted_not_refused():
    """The state's arrays cross as they are when they have the batch's dtype; a float32 matrix
    in a float64 stream is converted once in Python (as the reference engine would read it)."""
    X, y, w = batch(22, 100, 3)
    engine = Engine()
    state, _ = run(engine, empty_state(4, F64), X, y, w, Config(inference_matrices=True))
    mixed = {**state, "score_gram": state["score_gram"].astype(F32)}
    out, _ = run(engine, mixed, X, y, w, Config(inference_matrices=True))
    assert out["score_gram"].dtype == F64


def test_the_schedules_reach_the_engine():
    X, y, w = batch(23, 400, 5)
    engine = Engine()
    _, diag = run(engine, empty_state(6, F64), X, y, w, Config(lambda_scale=0.5))
    assert diag["lambda"] > 0 and diag["solver"] == "lamm"
    _, indicator = run(engine, empty_state(6, F64), X, y, w)
    _, smoothed = run(engine, empty_state(6, F64), X, y, w, Config(curvature="smoothed"))
    assert smoothed["bandwidth"] < indicator["bandwidth"]  # h_b, not tau
    with pytest.raises(ValueError, match="curvature"):
        run(engine.engine, None, X, y, w, Config(curvature="cubic"))
