"""How factorization="qr" spends its QR factorizations (docs/numerics.md, "What it costs"): the
Newton steps find the pattern (inside rows, outside rows' signs) in Cholesky form, one QR step
finishes the main solve where the design allows it (the pilot solve stays in Cholesky form), a full
QR step whose pattern repeats has converged, and the information update reuses the last step's
factorization."""

import numpy as np
import pytest

from helpers import NATIVE_CPU, nist_filip, require_module
from rhuber.core import Config, sqrt_info, update
from rhuber.engines import make_engine


@pytest.fixture(params=["numpy", "native_cpu"])
def engine(request):
    if request.param == "native_cpu":
        require_module(*NATIVE_CPU)
    return make_engine(request.param)


def huber_stream(seed=5, batches=3, n=3000, p=8):
    """Well-conditioned rows with t3 noise and 5 % gross outliers."""
    rng = np.random.default_rng(seed)
    beta = rng.normal(size=p)
    out = []
    for _ in range(batches):
        X = rng.normal(size=(n, p))
        y = X @ beta + 1.0 + rng.standard_t(3, size=n)
        y[rng.random(n) < 0.05] += 30.0
        out.append((X, y))
    return out


def test_reference_factorizes_once_per_solve_and_not_again_for_the_update(monkeypatch):
    calls = []
    factorize = sqrt_info.factorize
    monkeypatch.setattr(sqrt_info, "factorize",
                        lambda *args, **kwargs: calls.append(1) or factorize(*args, **kwargs))
    state, config = None, Config(factorization="qr")
    for k, (X, y) in enumerate(huber_stream()):
        calls.clear()
        state, diag = update(state, X, y, None, config)
        assert diag.converged and diag.solver == "qr"
        assert len(calls) == 1, f"batch {k + 1}: {len(calls)} QR factorizations"


def test_steps_find_the_pattern_in_cholesky_form_and_one_qr_step_finishes(engine):
    state, config = None, Config(factorization="qr")
    for k, (X, y) in enumerate(huber_stream(seed=6)):
        trace = []
        state, diag = engine.update(state, X, y, None, config, trace=trace)
        assert {r["phase"] for r in trace} == ({"pilot", "main"} if k == 0 else {"main"})
        pilot = [r["solver"] for r in trace if r["phase"] == "pilot"]
        assert all(s == "cholesky" for s in pilot), (k, pilot)
        solvers = [r["solver"] for r in trace if r["phase"] == "main"]
        steps = [r["step_norm"] for r in trace if r["phase"] == "main"]
        qr = [i for i, s in enumerate(solvers) if s == "qr" and steps[i] > 0]
        assert len(qr) == 1, (k, solvers)
        assert solvers[0] == "cholesky" and all(s == "cholesky" for s in solvers[:qr[0]]), \
            (k, solvers)
        assert diag.converged and diag.solver == "qr"


def test_filip_in_small_batches_converges_once_its_pattern_repeats(engine):
    """NIST's Filip (least squares: every row inside): the normal equations are useless there,
    so every step is a QR step, and the second finds the pattern repeated after a full first
    step: converged, where refining further never met the tolerance (500 iterations)."""
    X, y, _ = nist_filip()
    config = Config(factorization="qr", tau=1e9)
    state = None
    for start in range(0, len(y), 20):
        trace = []
        state, diag = engine.update(state, X[start:start + 20], y[start:start + 20], None,
                                    config, trace=trace)
        assert all(r["solver"] in ("qr", "svd") for r in trace)
        if diag.solver == "qr":
            assert diag.converged and diag.n_iter <= 3, (start, diag.n_iter)
