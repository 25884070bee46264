"""Per-brick timing of the CUDA engine on CUDA events (docs/cuda.md, "Profiling"): the engine's
own profiler follows rhuber.profile(), its report counts every brick of the shared table
that an update runs, with device-measured durations and the spec's elements, bytes and flops."""

from __future__ import annotations

import json

import numpy as np
import pytest

import rhuber
from helpers import make_problem
from rhuber.core import Config
from rhuber.errors import EngineNotAvailableError

UPDATE_BRICKS = {"validate", "stage", "residual", "huber", "score", "gram", "solve",
                 "line_search", "info_update", "transfer"}


def batches(seed, n=2000, p=8, count=3, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [make_problem(rng, n, p, dtype=dtype)[:2] for _ in range(count)]


def bricks_of(report):
    return {b["name"]: b for b in report["bricks"] if b["count"] > 0}


def run(engine, data, config):
    state = None
    for X, y in data:
        state, _ = engine.update(state, X, y, None, config)
    return state


def have_profiler() -> bool:
    try:
        rhuber.profile()
    except EngineNotAvailableError:
        return False
    return True


def test_the_report_needs_a_profile_first(engine):
    with pytest.raises(ValueError, match="never switched on"):
        engine.profile_report()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_update_brick_is_timed_on_the_device(engine, dtype):
    if not have_profiler():
        pytest.skip("rhuber.profile() needs rhuber-native-cpu")
    data = batches(0, dtype=dtype)
    config = Config()
    with rhuber.profile():
        state = run(engine, data, config)
        engine.predict(state, data[0][0])
    report = engine.profile_report()
    assert report["metadata"]["clock"] == "cuda_event"
    assert report["metadata"]["sync_mode"] == "per_batch"
    assert report["metadata"]["batches"] == len(data)
    assert report["metadata"]["extra"]["engine"] == "cuda"
    seen = bricks_of(report)
    assert UPDATE_BRICKS | {"predict"} <= set(seen), sorted(seen)
    assert "prox" not in seen  # alpha = 0: no LAMM step
    for name, b in seen.items():
        assert b["total_ns"] > 0, name
        assert b["min_ns"] <= b["max_ns"], name
    n, p = data[0][0].shape
    d = state.n_coef
    assert seen["validate"]["count"] == len(data) + 1  # each update and the prediction
    assert seen["predict"]["count"] == 1
    assert seen["predict"]["flops"] == 2 * n * p
    # Each evaluation runs one residual pass of 2 n d flops over the batch's rows.
    assert seen["residual"]["flops"] == seen["residual"]["count"] * 2 * n * d
    assert seen["gram"]["flops"] >= seen["gram"]["count"] * n * d * d
    itemsize = np.dtype(dtype).itemsize
    # Host batches are staged: X, y and the weights go up once per batch.
    assert seen["stage"]["bytes"] >= len(data) * n * (p + 2) * itemsize
    json.dumps(report)  # plain JSON all the way down


def test_a_penalized_batch_times_prox(engine):
    if not have_profiler():
        pytest.skip("rhuber.profile() needs rhuber-native-cpu")
    with rhuber.profile():
        run(engine, batches(1, count=2), Config(alpha=0.05))
    assert bricks_of(engine.profile_report())["prox"]["count"] > 0


def test_profiling_follows_the_active_profile(engine):
    if not have_profiler():
        pytest.skip("rhuber.profile() needs rhuber-native-cpu")
    data = batches(2, count=2)
    with rhuber.profile():
        run(engine, data[:1], Config())
    first = engine.profile_report()
    run(engine, data, Config())  # outside: nothing more is recorded, the report stays readable
    assert engine.profile_report()["metadata"]["batches"] == first["metadata"]["batches"] == 1
    with rhuber.profile():
        run(engine, data, Config())
    assert engine.profile_report()["metadata"]["batches"] == 2  # a new profile, a new report


def test_deferred_mode_and_the_trace_through_the_module(native):
    from rhuber.engines.cuda import CudaEngine

    engine = CudaEngine(native, 0)
    engine._engine.set_profiling(native.CONSTANTS["RH_CUDA_PROFILE_DEFERRED"])
    run(engine, batches(3, count=2), Config())
    report = engine.profile_report()
    assert report["metadata"]["sync_mode"] == "deferred"
    assert "gram" in bricks_of(report)
    trace = json.loads(engine.profile_trace())
    names = {e.get("name") for e in trace["traceEvents"]}
    assert {"residual", "gram", "solve"} <= names
    with pytest.raises(ValueError, match="profiling mode"):
        engine._engine.set_profiling(7)
    with pytest.raises(ValueError, match="format"):
        engine._engine.profile_json(5)


def test_profiling_changes_no_number(native):
    from rhuber.engines.cuda import CudaEngine

    data = batches(4)
    plain = run(CudaEngine(native, 0), data, Config())
    profiled_engine = CudaEngine(native, 0)
    profiled_engine._engine.set_profiling(native.CONSTANTS["RH_CUDA_PROFILE_PER_BATCH"])
    profiled = run(profiled_engine, data, Config())
    np.testing.assert_array_equal(plain.coef, profiled.coef)
    np.testing.assert_array_equal(plain.information, profiled.information)


def test_the_abi_size_query_and_a_small_buffer(native):
    """rh_cuda_engine_profile_json through ctypes on a live engine: a size query, a too-small
    buffer (needed size, buffer untouched), then the text."""
    import ctypes

    # The library the binding loaded (rhuber_native_cuda/, not beside the binding); its soname
    # carries the ABI major.
    assert native.LIBRARY_PATH.name == f"librh_cuda.so.{native.abi_version() >> 16}"
    lib = ctypes.CDLL(str(native.LIBRARY_PATH))
    lib.rh_cuda_last_error.restype = ctypes.c_char_p

    class Options(ctypes.Structure):
        _fields_ = [("device", ctypes.c_int32), ("borrow_stream", ctypes.c_int32),
                    ("stream", ctypes.c_uint64)]

    c = native.CONSTANTS
    ok, invalid = c["RH_CUDA_OK"], c["RH_CUDA_ERROR_INVALID_ARGUMENT"]
    report = ctypes.c_int32(c["RH_CUDA_PROFILE_FORMAT_REPORT"])
    handle = ctypes.c_void_p()
    assert lib.rh_cuda_engine_create(ctypes.byref(Options()), ctypes.byref(handle)) == ok
    try:
        needed = ctypes.c_uint64(0)
        assert lib.rh_cuda_engine_profile_json(handle, report, None, ctypes.c_uint64(0),
                                               ctypes.byref(needed)) == invalid
        assert b"never switched on" in lib.rh_cuda_last_error()
        assert lib.rh_cuda_engine_set_profiling(
            handle, ctypes.c_int32(c["RH_CUDA_PROFILE_PER_BATCH"])) == ok
        assert lib.rh_cuda_engine_profile_json(handle, report, None, ctypes.c_uint64(0),
                                               ctypes.byref(needed)) == ok
        size = needed.value
        assert size > 2
        small = ctypes.create_string_buffer(b"x" * 3, 4)
        assert lib.rh_cuda_engine_profile_json(handle, report, small, ctypes.c_uint64(4),
                                               ctypes.byref(needed)) == invalid
        assert needed.value == size and small.raw == b"xxx\0"
        assert b"needs" in lib.rh_cuda_last_error()
        buffer = ctypes.create_string_buffer(size)
        assert lib.rh_cuda_engine_profile_json(handle, report, buffer, ctypes.c_uint64(size),
                                               ctypes.byref(needed)) == ok
        assert json.loads(buffer.value)["schema_version"] >= 1
    finally:
        assert lib.rh_cuda_engine_free(handle) == ok
