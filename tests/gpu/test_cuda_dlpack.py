"""Device tensors from CuPy and PyTorch, produced on a non-default stream, read in place by the
engine: the host-fed path's answer (to 1e-12: cuBLAS may pick kernels by pointer alignment,
which differs between our staging buffers and the producer's), and every refusal of the RFC."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import make_problem
from renewable_huber.core import Config
from renewable_huber.cuda import DLPackError


def host_batches(dtype=np.float64):
    rng = np.random.default_rng(21)
    return [make_problem(rng, 3000, 6, dtype=dtype)[:2] for _ in range(2)]


def run(engine, batches):
    state = None
    for X, y in batches:
        state, _ = engine.update(state, X, y, None, Config())
    return state


def test_cupy_on_a_side_stream_matches_the_host_path(engine, native):
    cp = pytest.importorskip("cupy")
    want = run(native.make_engine(device=0), host_batches())
    side = cp.cuda.Stream(non_blocking=True)
    with side:
        device = [(cp.asarray(X), cp.asarray(y)) for X, y in host_batches()]
    got = run(engine, device)
    np.testing.assert_allclose(got.coef, want.coef, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got.information, want.information, rtol=1e-12, atol=1e-14)


def test_torch_on_a_side_stream_matches_the_host_path(engine, native):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA here")
    want = run(native.make_engine(device=0), host_batches())
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        device = [(torch.from_numpy(X).cuda(), torch.from_numpy(y).cuda())
                  for X, y in host_batches()]
    got = run(engine, device)
    np.testing.assert_allclose(got.coef, want.coef, rtol=1e-12, atol=1e-14)
    # The tensors are the caller's still: the deleter released our reference, not their memory.
    assert float(device[0][0].sum()) == pytest.approx(float(host_batches()[0][0].sum()))


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
