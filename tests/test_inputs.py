"""Inputs a user hands the estimator: NumPy, pandas, PyTorch CPU tensors, float32."""

import importlib.util

import numpy as np
import pandas as pd
import pytest

from helpers import make_problem
from rhuber import RenewableHuberRegressor

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(
    not HAS_TORCH, reason="PyTorch is an optional extra, not installed here; `make test-extras` "
    "installs it and runs these tests")


def test_float32_stays_float32():
    rng = np.random.default_rng(0)
    X, y, _ = make_problem(rng, 200, 3, dtype=np.float32)
    m = RenewableHuberRegressor(backend="numpy").fit(X, y)
    assert m.coef_.dtype == np.float32 and m.information_.dtype == np.float32
    assert m.predict(X).dtype == np.float32
    m.partial_fit(X.astype(np.float64), y)  # later host batches take the state's dtype
    assert m.coef_.dtype == np.float32


def test_integer_input_is_computed_in_float64():
    rng = np.random.default_rng(1)
    X = rng.integers(-5, 5, size=(100, 2))
    y = X @ [1, 2] + rng.integers(-1, 2, size=100)
    m = RenewableHuberRegressor(backend="numpy").fit(X, y)
    assert m.coef_.dtype == np.float64


def test_dataframe_feature_names_recorded_and_validated():
    rng = np.random.default_rng(2)
    X, y, _ = make_problem(rng, 100, 3)
    df = pd.DataFrame(X, columns=["x0", "x1", "x2"])
    m = RenewableHuberRegressor(backend="numpy").partial_fit(df, pd.Series(y))
    assert list(m.feature_names_in_) == ["x0", "x1", "x2"]
    with pytest.raises(ValueError, match="feature names"):
        m.partial_fit(df[["x1", "x0", "x2"]], y)
    np.testing.assert_allclose(m.predict(df), m.predict(X))


@needs_torch
def test_torch_cpu_tensors_are_detached_values():
    import torch

    rng = np.random.default_rng(3)
    X, y, _ = make_problem(rng, 100, 3)
    Xt = torch.tensor(X, requires_grad=True)
    yt = torch.tensor(y)
    m = RenewableHuberRegressor(backend="numpy").fit(Xt, yt)
    ref = RenewableHuberRegressor(backend="numpy").fit(X, y)
    np.testing.assert_array_equal(m.coef_, ref.coef_)
    assert Xt.grad is None and isinstance(m.coef_, np.ndarray)
    m32 = RenewableHuberRegressor(backend="numpy").fit(Xt.detach().float(), yt.float())
    assert m32.coef_.dtype == np.float32


def test_device_tensor_is_refused_not_copied():
    from rhuber.adapters import as_host_input

    class FakeDevice:
        type = "cuda"

        def __str__(self):
            return "cuda:0"

    class FakeTensor:  # quacks like a torch tensor on a GPU
        device = FakeDevice()

        def detach(self):
            raise AssertionError("must not be touched")

    FakeTensor.__module__ = "torch"
    with pytest.raises(ValueError, match="device cuda:0"):
        as_host_input(FakeTensor(), "X")


class _FakeCudaArray:
    """Quacks like a CuPy array on a GPU: exports DLPack from device type 2 (CUDA)."""

    shape = (4, 3)

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        raise AssertionError("must not be exported here")


def test_device_prediction_is_refused_not_copied():
    rng = np.random.default_rng(4)
    X, y, _ = make_problem(rng, 50, 3)
    m = RenewableHuberRegressor(backend="numpy").fit(X, y)
    with pytest.raises(ValueError, match="device-resident prediction"):
        m.predict(_FakeCudaArray())


def test_device_batch_feature_count_is_checked_before_the_engine():
    m = RenewableHuberRegressor(backend="cuda")
    m.n_features_in_ = 5
    with pytest.raises(ValueError, match="X has 3 features, but"):
        m._validate_device_batch(_FakeCudaArray(), None, None, reset=False)
