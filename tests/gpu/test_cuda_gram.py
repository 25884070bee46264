"""The CUDA engine's Gram and Newton-matrix facts: the Gram is one SYRK
over rows scaled by sqrt(w c) with the intercept's column written as sqrt(w c), as on the CPU, so
a column equal to the intercept's is exactly singular whatever the weights; ‖Ĥ‖₁ is reduced over
several blocks and still gives the CPU engine's rcond."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import make_problem, native_cpu_engine, stream_updates
from rhuber.core import Config, update
from rhuber.lab.golden import RTOL


def assert_close(a, b, rtol):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert np.all(np.abs(a - b) <= rtol * np.maximum(1.0, np.abs(b))), np.max(np.abs(a - b))


def constant_column_batches(dtype, count=2, n=500, p=4):
    """A column of ones beside the intercept, and fractional weights: sqrt(w) * 1 is the
    intercept's staged column to the bit, so the Gram is exactly singular on every engine that
    forms it by SYRK over the staged rows; sum(w) against sum(sqrt(w)^2) would not be."""
    rng = np.random.default_rng(4)
    batches = []
    for _ in range(count):
        X, y, _ = make_problem(rng, n, p, dtype=dtype)
        X = np.column_stack([X, np.ones(n, dtype=dtype)])
        w = rng.uniform(0.1, 3.0, size=n).astype(dtype)
        batches.append((X, y, w))
    return batches


@pytest.mark.without_gpu
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cpu_engines_find_a_constant_column_beside_the_intercept_singular(dtype):
    """The premise of the CUDA test below, checked where no GPU is needed: the reference and
    native_cpu take the svd rung (rcond 0) on every batch and agree."""
    batches = constant_column_batches(dtype)
    want, want_diags = stream_updates(update, batches, Config())
    got, got_diags = stream_updates(native_cpu_engine().update, batches, Config())
    assert [d.solver for d in want_diags] == [d.solver for d in got_diags] == ["svd", "svd"]
    assert all(d.rcond == 0.0 for d in got_diags)
    assert_close(got.coef, want.coef, RTOL[np.dtype(dtype).name])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_constant_column_beside_the_intercept_takes_the_cpu_rung(engine, dtype):
    batches = constant_column_batches(dtype)
    cpu, cpu_diags = stream_updates(native_cpu_engine().update, batches, Config())
    got, diags = stream_updates(engine.update, batches, Config())
    assert [d.solver for d in diags] == [d.solver for d in cpu_diags] == ["svd", "svd"]
    assert all(d.rcond == 0.0 for d in diags)
    rtol = RTOL[np.dtype(dtype).name]
    assert_close(got.coef, cpu.coef, rtol)
    assert_close(got.information, cpu.information, rtol)
    # The information's intercept row and corner come from the same SYRK as the constant
    # column's: the two rows (and columns) are equal to the bit.
    information = np.asarray(got.information)
    np.testing.assert_array_equal(information[-1], information[-2])
    np.testing.assert_array_equal(information[:, -1], information[:, -2])


def test_the_one_norm_over_several_blocks_gives_the_cpu_rcond(engine):
    """d = 101: four column tiles of 32, the last one partial, so ‖Ĥ‖₁ is reduced over several
    blocks. Only the last four columns are correlated, so the largest column sums of Ĥ lie in
    the last, partial tile: a reduction that missed a block or a tile's edge would miss them."""
    rng = np.random.default_rng(8)
    n, p = 3000, 100
    X = rng.normal(size=(n, p))
    X[:, -4:] = rng.normal(size=(n, 1)) + 0.3 * rng.normal(size=(n, 4))
    y = X @ rng.normal(size=p) + rng.standard_t(3, size=n)
    _, diag = engine.update(None, X, y, None, Config())
    _, want = native_cpu_engine().update(None, X, y, None, Config())
    assert diag.solver == want.solver == "cholesky"
    assert diag.rcond == pytest.approx(want.rcond, rel=1e-6)
