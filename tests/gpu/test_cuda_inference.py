"""Contract v3 on the CUDA engine beyond the golden corpus: the inference sums and matrices over a
stream, their coverage rules, states with matrices moved between engines, and the schedules
through the estimator, each against the reference engine at the contract's tolerance."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import make_problem
from rhuber import RenewableHuberRegressor
from rhuber.core import Config, update
from rhuber.lab.golden import RTOL

FIELDS = ("score_sq_sum", "curvature_sum", "curvature_sq_sum", "inference_weight")


def batches(seed: int, count: int, n: int = 600, p: int = 4):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        X, y, _ = make_problem(rng, n, p)
        out.append((X, y, rng.integers(0, 3, size=n).astype(np.float64)))
    return out


def assert_same_inference(got, want, rtol=RTOL["float64"]):
    assert got.inference_batches == want.inference_batches
    for key in FIELDS:
        assert abs(getattr(got, key) - getattr(want, key)) <= rtol * max(1, abs(getattr(want, key)))
    for key in ("gram", "score_gram"):
        a, b = getattr(got, key), getattr(want, key)
        assert (a is None) == (b is None), key
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * np.abs(b).max())


@pytest.mark.parametrize("curvature", ["indicator", "smoothed"])
def test_sums_and_matrices_over_a_stream_match_the_reference(engine, curvature):
    config = Config(inference_matrices=True, curvature=curvature, bandwidth_scale=20.0)
    got = want = None
    for X, y, w in batches(1, 3):
        got, diag = engine.update(got, X, y, w, config)
        want, want_diag = update(want, X, y, w, config)
        assert abs(diag.bandwidth - want_diag.bandwidth) <= 1e-7 * want_diag.bandwidth
        np.testing.assert_allclose(got.information, want.information, rtol=1e-7,
                                   atol=1e-7 * np.abs(want.information).max())
    assert_same_inference(got, want)


def test_matrices_asked_for_midway_are_not_kept(engine):
    data = batches(2, 2)
    got = want = None
    for (X, y, w), matrices in zip(data, (False, True), strict=True):
        config = Config(inference_matrices=matrices)
        got, _ = engine.update(got, X, y, w, config)
        want, _ = update(want, X, y, w, config)
    assert got.gram is None and want.gram is None
    assert_same_inference(got, want)


def test_a_state_with_matrices_moves_between_engines(native, engine):
    from rhuber.engines.cuda import CudaEngine

    (X1, y1, w1), (X2, y2, w2) = batches(3, 2)
    config = Config(inference_matrices=True)
    reference_state, _ = update(None, X1, y1, w1, config)  # uploaded, matrices included
    got, _ = engine.update(reference_state, X2, y2, w2, config)
    want, _ = update(reference_state, X2, y2, w2, config)
    assert_same_inference(got, want)
    other, _ = CudaEngine(native, device=0).update(got, X2, y2, w2, config)
    again, _ = update(want, X2, y2, w2, config)
    assert_same_inference(other, again)


def test_the_schedules_and_inference_through_the_estimator(engine):
    (X1, y1, w1), (X2, y2, w2) = batches(4, 2, n=2000, p=6)
    fitted = {}
    for backend in ("numpy", "cuda"):
        est = RenewableHuberRegressor(backend=backend, curvature="smoothed",
                                      inference_matrices=True)
        est.partial_fit(X1, y1, sample_weight=w1).partial_fit(X2, y2, sample_weight=w2)
        fitted[backend] = est
    for cov_type in ("H1", "H2", "H3", "HC0"):
        np.testing.assert_allclose(fitted["cuda"].bse(cov_type), fitted["numpy"].bse(cov_type),
                                   rtol=1e-6)
    scheduled = {b: RenewableHuberRegressor(backend=b, lambda_scale=0.5).fit(X1, y1)
                 for b in ("numpy", "cuda")}
    np.testing.assert_allclose(scheduled["cuda"].coef_, scheduled["numpy"].coef_, rtol=1e-6,
                               atol=1e-7)
