"""factorization="qr" (contract v4, square-root information) on the CUDA engine: the engine does
not implement the mode yet (its CONTRACT_FEATURES lacks "qr"), so the estimator refuses it there
by name instead of returning the Cholesky mode's numbers; native_cpu and the reference run it."""

from __future__ import annotations

import numpy as np
import pytest

from rhuber import RenewableHuberRegressor
from rhuber.engines import make_engine


def test_cuda_refuses_the_qr_mode_by_name():
    engine = make_engine("cuda")
    assert "qr" not in engine.contract_features
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=50)
    model = RenewableHuberRegressor(factorization="qr", backend="cuda")
    with pytest.raises(ValueError, match="qr"):
        model.partial_fit(X, y)
    assert not hasattr(model, "coef_")
