"""Device tensors from CuPy and PyTorch, produced on a non-default stream and exported while it
still has work queued, read in place by the engine: the host-fed path's answer (to 1e-12: cuBLAS
may pick kernels by pointer alignment, which differs between our staging buffers and the
producer's), and every refusal of the RFC."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import make_problem
from rhuber.core import Config
from rhuber.engines.cuda import CudaEngine
from rhuber.engines.dlpack import DLPackError


def host_batches(dtype=np.float64):
    rng = np.random.default_rng(21)
    return [make_problem(rng, 3000, 6, dtype=dtype)[:2] for _ in range(2)]


def run(engine, batches):
    state = None
    for X, y in batches:
        state, _ = engine.update(state, X, y, None, Config())
    return state


# Long enough (tens of milliseconds on any current GPU) that the host reaches the update while
# the side stream is still busy: fp64 matrix products, one cuBLAS call each.
BUSY_SIZE, BUSY_ROUNDS = 4096, 12


def test_cupy_on_a_side_stream_matches_the_host_path(engine, native):
    """The tensors are overwritten in place on a busy side stream and exported inside its
    context: only a wait of the engine's stream on that stream's work gives the right fit (a
    missing wait reads the zeros, or the half-copied data, and the fit differs)."""
    cp = pytest.importorskip("cupy")
    batches = host_batches()
    want = run(CudaEngine(native, device=0), batches)
    side = cp.cuda.Stream(non_blocking=True)
    state, pending = None, []
    with side:
        real = [(cp.asarray(X), cp.asarray(y)) for X, y in batches]
        busy = cp.ones((BUSY_SIZE, BUSY_SIZE))
        product = cp.matmul(busy, busy)  # cuBLAS set up before the timed work
        side.synchronize()
        for X_real, y_real in real:
            X, y = cp.zeros_like(X_real), cp.zeros_like(y_real)  # the stale values
            for _ in range(BUSY_ROUNDS):
                cp.matmul(busy, busy, out=product)
            X[...] = X_real
            y[...] = y_real
            ready = side.record()
            pending.append(not ready.done)
            state, _ = engine.update(state, X, y, None, Config())
    assert all(pending), "the side stream finished before the update: raise BUSY_ROUNDS"
    np.testing.assert_allclose(state.coef, want.coef, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(state.information, want.information, rtol=1e-12, atol=1e-14)


def test_torch_on_a_side_stream_matches_the_host_path(engine, native):
    """As for CuPy: overwritten in place behind long work on a side stream, exported inside the
    stream's context."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA here")
    batches = host_batches()
    want = run(CudaEngine(native, device=0), batches)
    side = torch.cuda.Stream()
    state, pending, device = None, [], []
    with torch.cuda.stream(side):
        real = [(torch.from_numpy(X).cuda(), torch.from_numpy(y).cuda()) for X, y in batches]
        busy = torch.ones((BUSY_SIZE, BUSY_SIZE), device="cuda", dtype=torch.float64)
        product = torch.matmul(busy, busy)  # cuBLAS set up before the timed work
        side.synchronize()
        for X_real, y_real in real:
            X, y = torch.zeros_like(X_real), torch.zeros_like(y_real)  # the stale values
            for _ in range(BUSY_ROUNDS):
                torch.matmul(busy, busy, out=product)
            X.copy_(X_real)
            y.copy_(y_real)
            ready = side.record_event()
            pending.append(not ready.query())
            state, _ = engine.update(state, X, y, None, Config())
            device.append(X)
    assert all(pending), "the side stream finished before the update: raise BUSY_ROUNDS"
    np.testing.assert_allclose(state.coef, want.coef, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(state.information, want.information, rtol=1e-12, atol=1e-14)
    # The tensors are the caller's still: the deleter released our reference, not their memory.
    torch.cuda.synchronize()
    assert float(device[0].sum()) == pytest.approx(float(batches[0][0].sum()))


def test_torch_refusals(engine):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA here")
    X = torch.randn(50, 3, device="cuda", dtype=torch.float64)
    y = torch.randn(50, device="cuda", dtype=torch.float64)
    with pytest.raises(DLPackError, match="not C-contiguous"):
        engine.update(None, torch.randn(3, 50, device="cuda", dtype=torch.float64).T, y, None,
                      Config())
    with pytest.raises(DLPackError, match="has dtype float16"):
        engine.update(None, X.half(), y, None, Config())
    state, _ = engine.update(None, X, y, None, Config())
    with pytest.raises(DLPackError, match="never cast"):
        engine.update(state, X.float(), y.float(), None, Config())
    with pytest.raises(ValueError, match="same device"):
        engine.update(state, X, y.cpu().numpy(), None, Config())
    with pytest.raises(ValueError, match="device-resident prediction"):
        engine.predict(state, X)
