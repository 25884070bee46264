"""The CUDA engine against the golden corpus at the contract's tolerances (method.md), host-fed,
and on the estimator's public path."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import golden_corpus
from rhuber import RenewableHuberRegressor
from rhuber.lab.golden import (
    RUNG_CHECKED,
    case_batches,
    compare_batch,
    missing_features,
    replay_case,
)

CORPUS = golden_corpus()


@pytest.mark.parametrize("case", CORPUS["cases"], ids=lambda c: c["name"])
@pytest.mark.parametrize("feed", ["host", "cupy"])
def test_cuda_meets_golden(case, feed, engine):
    missing = missing_features(case, engine)
    if missing:
        pytest.xfail(f"the cuda engine does not implement {', '.join(missing)} "
                     "(contract v3/v4) yet")
    if feed == "cupy":
        records = replay_case(case, engine.update, to_device=pytest.importorskip("cupy").asarray)
    else:
        records = replay_case(case, engine.update)
    for k, (got, want) in enumerate(zip(records, case["batches"], strict=True)):
        problems = compare_batch(got, want, case["dtype"],
                                 check_rung=case["name"] in RUNG_CHECKED)
        assert not problems, f"batch {k + 1}: {problems}"


def test_estimator_runs_on_cuda_and_predicts(engine):
    case = CORPUS["cases"][0]
    (X1, y1, w1), (X2, y2, w2) = case_batches(case)
    est = RenewableHuberRegressor(backend="cuda")
    est.partial_fit(X1, y1, sample_weight=w1).partial_fit(X2, y2, sample_weight=w2)
    assert est.backend_ == "cuda"
    want = case["batches"][1]["predictions"]
    probe = np.asarray(case["probe"])
    assert np.allclose(est.predict(probe), want, rtol=1e-7, atol=1e-7)
    assert np.allclose(engine.predict(est._state, probe), want, rtol=1e-7, atol=1e-7)
