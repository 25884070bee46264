"""Contract v2's equilibrated ladder on badly scaled data, checked against values nobody here
computed: the NIST StRD certified least-squares fit of the Longley data, and statsmodels' RLM."""

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from statsmodels.datasets import longley

from helpers import NATIVE_CPU, require_module
from rhuber import IllConditionedWarning, RenewableHuberRegressor
from rhuber.cli import main

# NIST StRD, Longley (https://www.itl.nist.gov/div898/strd/lls/data/Longley.shtml): certified
# least-squares values, intercept first, then GNPDEFL, GNP, UNEMP, ARMED, POP, YEAR.
LONGLEY_CERTIFIED = np.array([
    -3482258.63459582, 15.0618722713733, -0.358191792925910e-01, -2.02022980381683,
    -1.03322686717359, -0.511041056535807e-01, 1829.15146461355,
])
COLUMN_UNITS = np.array([1e-3, 1.0, 1e2, 1e4, 1e6, 1e6])


@pytest.fixture(params=["numpy", "native_cpu"])
def backend(request):
    if request.param == "native_cpu":
        require_module(*NATIVE_CPU)
    return request.param


@pytest.fixture(scope="module")
def longley_data():
    data = longley.load_pandas()
    return data.exog.to_numpy(dtype=np.float64), data.endog.to_numpy(dtype=np.float64)


def correct_digits(estimate, reference):
    return -np.log10(np.max(np.abs(estimate - reference) / np.abs(reference)))


def test_longley_least_squares_meets_the_nist_certified_values(backend, longley_data):
    X, y = longley_data
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllConditionedWarning)  # cond 1e9 after equilibration
        model = RenewableHuberRegressor(tau=1e9, backend=backend).fit(X, y)
    estimate = np.r_[model.intercept_, model.coef_]
    assert correct_digits(estimate, LONGLEY_CERTIFIED) >= 9
    diag = model.diagnostics_[-1]
    assert diag["solver"] == "cholesky" and 1e-10 < diag["rcond"] < 1e-6


def test_longley_huber_matches_statsmodels_rlm_at_a_fixed_scale(backend, longley_data):
    X, y = longley_data
    design = sm.add_constant(X)
    rlm = sm.RLM(y, design, M=sm.robust.norms.HuberT(t=1.345)).fit(
        scale_est="mad", update_scale=False, conv="coefs", tol=1e-13, maxiter=1000)
    model = RenewableHuberRegressor(tau=1.345 * rlm.scale, tol=1e-12, backend=backend).fit(X, y)
    estimate = np.r_[model.intercept_, model.coef_]
    assert np.max(np.abs(estimate - rlm.params) / np.abs(rlm.params)) <= 1e-7


def test_columns_in_units_a_million_apart_get_the_right_coefficients(backend):
    rng = np.random.default_rng(11)
    Z = rng.normal(size=(3000, 6))
    y = Z @ np.ones(6) + 0.01 * rng.standard_normal(3000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllConditionedWarning)
        model = RenewableHuberRegressor(tau=1e9, batch_size=1000, backend=backend).fit(
            Z * COLUMN_UNITS, y)
    np.testing.assert_allclose(model.coef_ * COLUMN_UNITS, np.ones(6), rtol=1e-3)
    assert all(d["solver"] == "cholesky" and d["rcond"] > 1e-3 for d in model.diagnostics_)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(exponents=st.lists(st.floats(-4, 6), min_size=4, max_size=4),
       seed=st.integers(0, 2**16))
def test_rescaling_columns_rescales_the_coefficients_only(backend, exponents, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(400, 4))
    y = X @ np.array([1.0, -2.0, 0.5, 3.0]) + 1.0 + rng.standard_t(3, size=400)
    factors = 10.0 ** np.asarray(exponents)
    plain = RenewableHuberRegressor(batch_size=200, backend=backend).fit(X, y)
    scaled = RenewableHuberRegressor(batch_size=200, backend=backend).fit(X * factors, y)
    np.testing.assert_allclose(scaled.coef_ * factors, plain.coef_, rtol=1e-6)
    np.testing.assert_allclose(scaled.intercept_, plain.intercept_, rtol=1e-6)
    np.testing.assert_allclose(scaled.scale_, plain.scale_, rtol=1e-6)


def duplicated_column_batches(rng, batches=2, n=200):
    for _ in range(batches):
        Z = rng.normal(size=(n, 3))
        yield np.column_stack([Z, Z[:, 0]]), Z @ np.array([1.0, 2.0, -1.0]) + rng.normal(size=n)


def test_a_duplicated_column_warns_once_per_batch_and_names_the_cause(backend):
    model = RenewableHuberRegressor(backend=backend)
    for k, (X, y) in enumerate(duplicated_column_batches(np.random.default_rng(3)), start=1):
        with pytest.warns(IllConditionedWarning) as record:
            model.partial_fit(X, y)
        ill = [w for w in record if w.category is IllConditionedWarning]
        assert len(ill) == 1
        message = str(ill[0].message)
        assert f"batch {k}" in message and "collinear or constant columns" in message.lower()
        assert model.diagnostics_[-1]["solver"] == "svd" and model.diagnostics_[-1]["rcond"] == 0


def test_lost_digits_are_estimated_from_rcond(backend):
    # Two columns equal up to 1e-6 of noise: cond of the equilibrated matrix about 1e12.
    rng = np.random.default_rng(5)
    Z = rng.normal(size=(500, 2))
    X = np.column_stack([Z[:, 0], Z[:, 0] + 1e-6 * Z[:, 1]])
    y = X @ np.array([1.0, 1.0]) + 0.1 * rng.normal(size=500)
    with pytest.warns(IllConditionedWarning, match=r"about 1[0-5] of the 15 significant digits"):
        model = RenewableHuberRegressor(backend=backend).fit(X, y)
    assert model.diagnostics_[-1]["solver"] in ("cholesky", "lu")
    assert 0 < model.diagnostics_[-1]["rcond"] < 1e-10


def test_float32_warns_at_its_own_threshold(backend):
    rng = np.random.default_rng(6)
    Z = rng.normal(size=(500, 2))
    X = np.column_stack([Z[:, 0], Z[:, 0] + 3e-3 * Z[:, 1]]).astype(np.float32)
    y = (X @ np.array([1.0, 1.0], dtype=np.float32)).astype(np.float32)
    with pytest.warns(IllConditionedWarning, match="float32"):
        RenewableHuberRegressor(backend=backend).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllConditionedWarning)  # 1e-5 is fine in float64
        model = RenewableHuberRegressor(backend=backend).fit(X.astype(np.float64), y)
    assert model.diagnostics_[-1]["rcond"] < 1e-4


def test_well_conditioned_and_penalized_batches_do_not_warn(backend):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 3))
    y = X @ np.array([1.0, 0.0, -1.0]) + rng.normal(size=300)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllConditionedWarning)
        assert RenewableHuberRegressor(backend=backend).fit(X, y).diagnostics_[-1]["rcond"] > 0.1
        l1 = RenewableHuberRegressor(alpha=0.01, backend=backend).fit(X, y)
    assert l1.diagnostics_[-1]["rcond"] is None  # LAMM solves no Newton system


def test_cli_reports_rcond_per_batch_and_the_warning_once_per_run(capsys, tmp_path):
    rng = np.random.default_rng(8)
    frames = []
    for X, y in duplicated_column_batches(rng, batches=4, n=100):
        frame = pd.DataFrame(X, columns=["a", "b", "c", "a_again"])
        frame["y"] = y
        frames.append(frame)
    path = tmp_path / "train.csv"
    pd.concat(frames).to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllConditionedWarning)  # none escapes to the user
        status = main(["fit", str(path), "--target", "y", "--batch-size", "100",
                       "-o", str(tmp_path / "model.npz")])
    out, err = capsys.readouterr()
    assert status == 0, err
    header = next(line for line in out.splitlines() if line.lstrip().startswith("batch"))
    assert "rcond" in header
    lines = [line for line in out.splitlines() if "ill-conditioned" in line]
    assert len(lines) == 1 and lines[0].startswith("warning: 4 of 4 batches")
    assert "IllConditionedWarning" not in err


def test_a_first_batch_fit_exactly_warns_that_its_scale_is_rounding():
    from rhuber import InterpolatedBatchWarning

    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(12, 3)), rng.normal(size=12)
    with pytest.warns(InterpolatedBatchWarning, match="batch 1 has 4 rows of positive weight "
                                                      "for 4 coefficients"):
        est = RenewableHuberRegressor().partial_fit(X[:4], y[:4])
    assert est.scale_ < 1e-12  # the contract's scale, kept: what the warning is about
    with pytest.warns(InterpolatedBatchWarning, match="3 rows of positive weight"):
        RenewableHuberRegressor().partial_fit(X[:5], y[:5], sample_weight=[1, 0, 2, 0, 1])
    with pytest.warns(InterpolatedBatchWarning, match="for 3 coefficients"):
        RenewableHuberRegressor(fit_intercept=False, batch_size=3).fit(X[:9], y[:9])
    with warnings.catch_warnings():
        warnings.simplefilter("error", InterpolatedBatchWarning)
        RenewableHuberRegressor(tau=1.0).partial_fit(X[:4], y[:4])  # tau fixed: no scale
        later = RenewableHuberRegressor().partial_fit(X[:8], y[:8])
        later.partial_fit(X[8:10], y[8:10])  # a later small batch: the scale is a running one
