"""The CUDA engine on what a static review of it checked: read-only states used again, device
pointers checked, the validation order, prediction without features, reads during updates, a
borrowed stream 0 and profiling switched off on another device."""

from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest

from helpers import make_problem
from rhuber.core import Config, State, update
from rhuber.engines.cuda import AbiCodes, CudaEngine


def host_as_cuda(native, a: np.ndarray) -> tuple:
    """A host array's descriptor that claims the array is on cuda:0 (the caller's mistake)."""
    codes = AbiCodes.from_constants(native.CONSTANTS)
    descriptor = codes.host_descriptor(a)
    return (*descriptor[:5], codes.device_cuda, *descriptor[6:])


def test_a_returned_state_is_used_again(native, engine):
    """Returned states have read-only arrays; loading one into another engine (and predicting
    from it there) must not raise TypeError."""
    rng = np.random.default_rng(1)
    X, y, _ = make_problem(rng, 300, 4)
    state, _ = engine.update(None, X, y, None, Config())
    assert not state.coef.flags.writeable and not state.information.flags.writeable
    other = CudaEngine(native, device=0)
    got, _ = other.update(state, X, y, None, Config())
    want, _ = update(state, X, y, None, Config())
    np.testing.assert_allclose(got.coef, want.coef, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(other.predict(state, X), engine.predict(state, X), rtol=1e-12)


def test_a_host_pointer_described_as_cuda_memory_is_refused(native):
    engine = native.Engine(device=0)
    state = engine.new_state("float64", 3)
    X, y = np.ones((8, 3)), np.ones(8)
    config = Config(fit_intercept=False).native_dict(np.dtype(np.float64))
    with pytest.raises(ValueError, match=r"X is described as CUDA memory on cuda:0, but its "
                       r"address .* is not CUDA memory"):
        engine.update(state, state, host_as_cuda(native, X), host_as_cuda(native, y), None,
                      config)
    assert engine.stats()["updates"] == 0  # and the context is still usable:
    rng = np.random.default_rng(2)
    X, y, _ = make_problem(rng, 200, 3)
    CudaEngine(native, device=0).update(None, X, y, None, Config())


def test_parameters_are_checked_before_the_arrays(native):
    """docs/numerics.md, "Validation order": parameters first, then X, y, w."""
    engine = native.Engine(device=0)
    state = engine.new_state("float64", 3)
    X = np.ones((8, 3))
    y32 = np.ones(8, dtype=np.float32)
    config = {**Config(fit_intercept=False).native_dict(np.dtype(np.float64)), "epsilon": -1.0}
    codes = AbiCodes.from_constants(native.CONSTANTS)
    y_descriptor = codes.host_descriptor(y32)  # float32: a bad y, reported second
    x_descriptor = codes.host_descriptor(X)
    with pytest.raises(ValueError, match="epsilon"):
        engine.update(state, state, x_descriptor, y_descriptor, None, config)


def test_an_intercept_only_state_predicts_its_intercept(engine):
    state = State(coef=np.array([2.5]), information=np.eye(1), n_samples_seen=10,
                  effective_weight=10.0, batch_count=1, scale=1.0)
    np.testing.assert_array_equal(engine.predict(state, np.empty((5, 0))), np.full(5, 2.5))


def test_reading_a_state_while_it_is_updated_is_never_torn(native):
    """rh_cuda_state_read holds the engine's lock: each read is one whole state."""
    engine = native.Engine(device=0)
    n, p = 2000, 20
    handle = engine.new_state("float64", p + 1)
    config = Config().native_dict(np.dtype(np.float64))
    rng = np.random.default_rng(3)
    batches = [make_problem(rng, n, p)[:2] for _ in range(20)]
    codes = AbiCodes.from_constants(native.CONSTANTS)
    descriptors = [(codes.host_descriptor(X), codes.host_descriptor(y)) for X, y in batches]
    done = threading.Event()

    def run():
        try:
            for x, y in descriptors:
                engine.update(handle, handle, x, y, None, config)
        finally:
            done.set()

    worker = threading.Thread(target=run)
    worker.start()
    coef, information = np.empty(p + 1), np.empty((p + 1, p + 1))
    gram, score_gram = np.empty((p + 1, p + 1)), np.empty((p + 1, p + 1))
    reads = 0
    while not done.is_set():
        scalars = handle.read(coef, information, gram, score_gram)
        assert scalars["n_samples_seen"] == n * scalars["batch_count"]
        assert np.all(np.isfinite(coef)) and np.all(np.isfinite(information))
        reads += 1
    worker.join()
    assert reads > 0


def test_a_borrowed_stream_0_is_reported_as_the_legacy_stream(native):
    """DLPack forbids stream 0 for CUDA; the legacy default stream is 1."""
    lib = ctypes.CDLL(str(native.LIBRARY_PATH))  # the library the binding loaded

    class Options(ctypes.Structure):
        _fields_ = [("device", ctypes.c_int32), ("borrow_stream", ctypes.c_int32),
                    ("stream", ctypes.c_uint64)]

    ok = native.CONSTANTS["RH_CUDA_OK"]
    handle = ctypes.c_void_p()
    assert lib.rh_cuda_engine_create(ctypes.byref(Options(0, 1, 0)), ctypes.byref(handle)) == ok
    try:
        stream = ctypes.c_uint64(12345)
        assert lib.rh_cuda_engine_stream(handle, ctypes.byref(stream)) == ok
        assert stream.value == native.CONSTANTS["RH_CUDA_STREAM_LEGACY"]
    finally:
        lib.rh_cuda_engine_free(handle)


def test_profiling_switched_off_on_another_device_keeps_the_profile(native):
    if native.device_count() < 2:
        pytest.skip("needs two CUDA devices: the engine's must not be the current one")
    engine = CudaEngine(native, device=1)
    engine._engine.set_profiling(native.CONSTANTS["RH_CUDA_PROFILE_PER_BATCH"])
    rng = np.random.default_rng(4)
    X, y, _ = make_problem(rng, 500, 5)
    engine.update(None, X, y, None, Config())
    # Switching off flushes the events of cuda:1 while cuda:0 is current.
    engine._engine.set_profiling(native.CONSTANTS["RH_CUDA_PROFILE_OFF"])
    assert engine.profile_report()["bricks"]
