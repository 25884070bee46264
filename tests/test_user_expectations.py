"""What a user meets first, as the seed system's users expect it: table-like inputs keep their
names, checkpoints convert dtype and refuse contradictions, parameters refuse booleans and a
device for a host engine, rows of weight 0 are exactly absent, and bad values are named by row
and column on every engine."""

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from helpers import NATIVE_CPU, make_problem, require_module
from rhuber import CheckpointError, RenewableHuberRegressor
from rhuber.engines import make_engine

rng = np.random.default_rng(4)
X0, y0, _ = make_problem(rng, 80, 3)
NAMES = ["age", "income", "rooms"]


@pytest.fixture(params=["numpy", "native_cpu"])
def backend(request):
    if request.param == "native_cpu":
        require_module(*NATIVE_CPU)
    return request.param


class Table:
    """A minimal table-like object: values through to_numpy(), names through columns."""

    def __init__(self, values, columns=None):
        self._values = np.asarray(values)
        if columns is not None:
            self.columns = columns

    def to_numpy(self):
        return self._values


# ------------------------------------------------------------ table-like inputs


def test_a_table_like_object_is_accepted_with_its_names(backend, tmp_path):
    model = RenewableHuberRegressor(backend=backend).fit(Table(X0, NAMES), Table(y0))
    reference = RenewableHuberRegressor(backend=backend).fit(X0, y0)
    np.testing.assert_array_equal(model.coef_, reference.coef_)
    assert list(model.feature_names_in_) == NAMES
    model.partial_fit(Table(X0, NAMES), y0)
    np.testing.assert_array_equal(model.predict(Table(X0, NAMES)),
                                  X0 @ model.coef_ + model.intercept_)
    with pytest.raises(ValueError, match=r"feature names should match.*'size'.*'rooms'"):
        model.predict(Table(X0, ["age", "income", "size"]))
    model.save_checkpoint(tmp_path / "m.npz")
    loaded = RenewableHuberRegressor.load_checkpoint(tmp_path / "m.npz")
    assert list(loaded.feature_names_in_) == NAMES


def test_a_table_like_object_without_names_is_an_array(backend):
    model = RenewableHuberRegressor(backend=backend).fit(Table(X0), y0)
    assert not hasattr(model, "feature_names_in_")


def test_a_polars_frame_keeps_its_names(backend, tmp_path):
    pl = pytest.importorskip("polars", reason="Polars comes with the [io] and [test] extras")
    frame = pl.DataFrame({name: X0[:, j] for j, name in enumerate(NAMES)})
    model = RenewableHuberRegressor(backend=backend)
    model.partial_fit(frame, pl.Series(y0), sample_weight=pl.Series(np.ones(len(y0))))
    model.partial_fit(frame, pl.Series(y0))
    assert list(model.feature_names_in_) == NAMES
    np.testing.assert_allclose(model.predict(frame), X0 @ model.coef_ + model.intercept_)
    model.save_checkpoint(tmp_path / "m.npz")
    loaded = RenewableHuberRegressor.load_checkpoint(tmp_path / "m.npz")
    assert list(loaded.feature_names_in_) == NAMES


# ----------------------------------------------------------------- checkpoints


def test_load_checkpoint_converts_the_state_to_another_dtype(backend, tmp_path):
    model = RenewableHuberRegressor(backend=backend).fit(X0, y0)
    model.save_checkpoint(tmp_path / "m.npz")
    single = RenewableHuberRegressor.load_checkpoint(tmp_path / "m.npz", dtype="float32")
    assert single.coef_.dtype == np.float32 and single.information_.dtype == np.float32
    np.testing.assert_allclose(single.coef_, model.coef_, rtol=1e-6)
    single.partial_fit(X0.astype(np.float32), y0.astype(np.float32))
    assert single.coef_.dtype == np.float32 and single.n_batches_ == 2
    with pytest.raises(ValueError, match="dtype must be 'float32' or 'float64', got 'int8'"):
        RenewableHuberRegressor.load_checkpoint(tmp_path / "m.npz", dtype="int8")


def _rewritten(path, model, **params):
    state = model.state_dict()
    state["params"] = np.str_(json.dumps({**json.loads(str(state["params"])), **params}))
    np.savez(path, **state)
    return path


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_a_checkpoint_whose_parameters_contradict_its_state_is_refused(tmp_path,
                                                                        fit_intercept):
    model = RenewableHuberRegressor(backend="numpy", fit_intercept=fit_intercept).fit(X0, y0)
    path = _rewritten(tmp_path / "m.npz", model, fit_intercept=not fit_intercept)
    with pytest.raises(CheckpointError,
                       match=rf"contradicts itself.*fit_intercept={not fit_intercept}"):
        RenewableHuberRegressor.load_checkpoint(path)


def test_a_checkpoint_with_a_parameter_the_estimator_lacks_is_refused(tmp_path):
    model = RenewableHuberRegressor(backend="numpy").fit(X0, y0)
    path = _rewritten(tmp_path / "m.npz", model, shrinkage=0.5)
    with pytest.raises(CheckpointError, match="parameters name 'shrinkage'"):
        RenewableHuberRegressor.load_checkpoint(path)


def test_a_seed_checkpoint_that_contradicts_itself_or_names_unknown_parameters_is_refused():
    from rhuber.seed_checkpoint import convert

    fixture = np.load(Path(__file__).parent / "fixtures" / "seed" / "v2_weighted_f64.npz")
    raw = {k: fixture[k] for k in fixture.files}
    meta = json.loads(str(raw["metadata"]))
    meta["config"]["fit_intercept"] = not meta["fit_intercept"]
    raw["metadata"] = np.str_(json.dumps(meta))
    with pytest.raises(CheckpointError, match=r"contradicts itself.*config says fit_intercept"):
        convert(raw, source="seed.npz")
    meta["config"]["fit_intercept"] = meta["fit_intercept"]
    meta["config"]["shrinkage"] = 0.5
    raw["metadata"] = np.str_(json.dumps(meta))
    with pytest.raises(CheckpointError, match=r"config names 'shrinkage'"):
        convert(raw, source="seed.npz")


# ------------------------------------------------------------------ parameters


@pytest.mark.parametrize("name", ["max_iter", "tol", "tau", "epsilon", "alpha", "ridge",
                                  "batch_size", "n_jobs", "device", "lambda_scale"])
def test_a_boolean_for_a_number_is_an_invalid_parameter(name):
    with pytest.raises(InvalidParameterError, match=rf"'{name}' parameter .* not the boolean"):
        RenewableHuberRegressor(backend="numpy", **{name: True}).fit(X0, y0)


def test_a_boolean_set_between_batches_is_refused_and_the_state_kept():
    model = RenewableHuberRegressor(backend="numpy").partial_fit(X0, y0)
    model.set_params(max_iter=True)
    with pytest.raises(InvalidParameterError, match="max_iter"):
        model.partial_fit(X0, y0)
    assert model.n_batches_ == 1


@pytest.mark.parametrize("host", ["numpy", "native_cpu"])
def test_a_host_engine_given_a_device_is_refused_naming_both(host):
    if host == "native_cpu":
        require_module(*NATIVE_CPU)
    with pytest.raises(ValueError, match=rf"device=0 names a CUDA device, but "
                                         rf"backend='{host}'"):
        RenewableHuberRegressor(backend=host, device=0).fit(X0, y0)


# -------------------------------------------------------------- weights of zero


def test_rows_of_weight_zero_give_exactly_what_removing_them_gives(backend):
    """scikit-learn's check_sample_weight_equivalence data (rank-deficient, 15 x 30) with a
    small ridge, where the Newton system multiplies rounding by 1/ridge in the directions no
    row determines: the predictions at the rows of weight 0 show any difference."""
    data = np.random.RandomState(42)
    X = data.rand(15, 30)
    y = data.randint(0, 3, size=15).astype(float)
    w = data.randint(0, 5, size=15).astype(float)
    keep = w > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rank-deficient: an IllConditionedWarning
        weighted = RenewableHuberRegressor(backend=backend, ridge=1e-8).fit(X, y, w)
        removed = RenewableHuberRegressor(backend=backend, ridge=1e-8).fit(X[keep], y[keep],
                                                                           w[keep])
        np.testing.assert_array_equal(weighted.predict(X), removed.predict(X))
        np.testing.assert_array_equal(weighted.information_, removed.information_)
        assert weighted.scale_ == removed.scale_
        assert weighted.n_samples_seen_ == 15 and removed.n_samples_seen_ == int(keep.sum())
        weighted.partial_fit(X, y, w)
        removed.partial_fit(X[keep], y[keep], w[keep])
    np.testing.assert_array_equal(weighted.coef_, removed.coef_)


@pytest.mark.parametrize("ridge", [1e-8, 1e-6])
def test_a_ridge_keeps_weights_equivalent_to_repeated_and_removed_rows(backend, ridge):
    """scikit-learn's check (rows shuffled, weights 0 to 4 against removed and repeated rows):
    the ridge must not multiply rounding by 1/ridge in the directions no row determines."""
    from sklearn.utils.estimator_checks import check_sample_weight_equivalence_on_dense_data

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rank-deficient: an IllConditionedWarning
        check_sample_weight_equivalence_on_dense_data(
            "RenewableHuberRegressor", RenewableHuberRegressor(backend=backend, ridge=ridge))


@pytest.mark.parametrize("ridge", [1e-10, 1e-8, 1e-6])
def test_prox_newton_with_a_ridge_keeps_weights_equivalent_on_rank_deficient_data(ridge):
    """The L1 model's coordinate descent never inverts H's small eigenvalues (each coordinate
    moves by its own diagonal, which a duplicated or combined column keeps positive), so a
    ridge cannot put rounding at 1/ridge into the directions no row determines, as it did in
    the Newton solve: weights of 0 to 3 give what removed and repeated rows in another order
    give, up to rounding, predicting outside the data's span too."""
    require_module(*NATIVE_CPU)
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(40, 3))
    X = np.column_stack([Z[:, 0], Z[:, 0], Z[:, 1], Z[:, 1] + Z[:, 2], Z[:, 2]])  # rank 3 of 5
    y = X @ np.array([1.0, 1.0, -0.5, 0.0, 0.3]) + 0.1 * rng.normal(size=40)
    w = rng.integers(0, 4, size=40).astype(float)
    repeated = np.repeat(np.flatnonzero(w), w[w > 0].astype(int))
    order = rng.permutation(repeated)
    outside = rng.normal(size=(5, 5))
    for alpha in (1e-15, 1e-3):
        params = dict(backend="native_cpu", alpha=alpha, l1_solver="prox_newton", ridge=ridge,
                      tau=1.345)
        weighted = RenewableHuberRegressor(**params).fit(X, y, sample_weight=w)
        rows = RenewableHuberRegressor(**params).fit(X[order], y[order])
        np.testing.assert_allclose(weighted.coef_, rows.coef_, rtol=0, atol=1e-12)
        np.testing.assert_allclose(weighted.predict(outside), rows.predict(outside),
                                   rtol=0, atol=1e-12)


def test_a_ridge_still_damps_a_regular_newton_matrix(backend):
    """Full-rank data: the ridge is added (the first steps differ), the minimizer is not moved.
    The second batch starts both streams at the same point, so their Newton matrices differ by
    the ridge alone."""
    plain = RenewableHuberRegressor(backend=backend, trace=True)
    damped = RenewableHuberRegressor(backend=backend, ridge=50.0, trace=True)
    for estimator in (plain, damped):
        estimator.partial_fit(X0, y0).partial_fit(X0[::-1], y0[::-1])
    np.testing.assert_allclose(damped.coef_, plain.coef_, rtol=1e-7, atol=1e-9)
    first = [b.iterations[0] for b in (plain.trace_.batches[1], damped.trace_.batches[1])]
    assert first[1].hessian_diagonal.max == pytest.approx(first[0].hessian_diagonal.max + 50.0)


def test_a_batch_with_zero_and_negative_weights_names_the_negative_entry(backend):
    w = np.ones(len(y0))
    w[2], w[5] = 0.0, -2.0
    with pytest.raises(ValueError, match=r"^sample_weight must be >= 0, but entry 5 is -2$"):
        RenewableHuberRegressor(backend=backend).partial_fit(X0, y0).partial_fit(X0, y0, w)


# ------------------------------------------------------------- located errors


def test_nan_in_a_dataframe_is_named_by_row_and_column(backend):
    pd = pytest.importorskip("pandas", reason="pandas comes with the [io] and [test] extras")
    X = X0.copy()
    X[6, 1] = np.nan
    with pytest.raises(ValueError, match=r"row 6, column 'income' \(index 1\) is nan") as raised:
        RenewableHuberRegressor(backend=backend).fit(pd.DataFrame(X, columns=NAMES), y0)
    assert "HistGradientBoosting" not in str(raised.value)


def test_a_string_in_x_is_named_by_row_and_column(backend):
    X = X0.astype(object)
    X[4, 2] = "n/a"
    with pytest.raises(ValueError, match=r"row 4, column 2 is 'n/a', not a number"):
        RenewableHuberRegressor(backend=backend).fit(X, y0)


def test_nan_in_a_later_plain_batch_is_named_by_row_and_column(backend):
    model = RenewableHuberRegressor(backend=backend).partial_fit(X0, y0)
    X = X0.copy()
    X[9, 0] = np.inf
    with pytest.raises(ValueError, match=r"row 9, column 0 is inf"):
        model.partial_fit(X, y0)
    y = y0.copy()
    y[3] = np.nan
    with pytest.raises(ValueError, match=r"y must hold .*: row 3 is nan"):
        model.partial_fit(X0, y)


def test_engines_word_bad_values_alike(backend):
    """Straight to the engine (no estimator): the reference speaks as the native engines."""
    engine = make_engine(backend)
    from rhuber.core import Config

    w = np.ones(len(y0))
    w[7] = -2.0
    with pytest.raises(ValueError, match=r"^sample_weight must be >= 0, but entry 7 is -2$"):
        engine.update(None, X0, y0, w, Config())
    X = X0.copy()
    X[5, 2] = np.nan
    with pytest.raises(ValueError, match=r"^X contains a non-finite value at row 5, column 2$"):
        engine.update(None, X, y0, None, Config())


# --------------------------------------------------------- checkpoint messages


def test_a_file_that_is_no_archive_is_not_a_checkpoint(tmp_path):
    path = tmp_path / "notes.npz"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(CheckpointError, match="is not a checkpoint") as raised:
        RenewableHuberRegressor.load_checkpoint(path)
    assert "allow_pickle" not in str(raised.value)


def test_saving_into_a_missing_directory_names_the_directory(tmp_path):
    model = RenewableHuberRegressor(backend="numpy").fit(X0, y0)
    target = tmp_path / "missing" / "model.npz"
    with pytest.raises(FileNotFoundError) as raised:
        model.save_checkpoint(target)
    assert f"the directory {target.parent} does not exist" in str(raised.value)
    assert ".tmp" not in str(raised.value)


# ----------------------------------------------- parameters changed mid-stream


def test_parameters_changed_mid_stream_are_recorded_per_batch_and_summarized():
    model = RenewableHuberRegressor(backend="numpy")
    for k in range(5):
        model.partial_fit(X0[16 * k:16 * (k + 1)], y0[16 * k:16 * (k + 1)])
    model.set_params(epsilon=5.0, curvature="smoothed")
    model.partial_fit(X0, y0)
    assert [d["epsilon"] for d in model.diagnostics_] == [1.345] * 5 + [5.0]
    assert [d["curvature"] for d in model.diagnostics_] == ["indicator"] * 5 + ["smoothed"]
    header = dict(model.summary().header)
    assert header["Epsilon"] == "differs by batch: 1.345 (batches 1-5), 5 (batch 6)"
    assert header["Curvature"] == ("differs by batch: indicator (batches 1-5), smoothed "
                                   "(batch 6)")
    assert dict(RenewableHuberRegressor(backend="numpy").fit(X0, y0).summary().header)[
        "Epsilon"] == "1.345"


def test_batches_before_a_load_are_summarized_with_the_checkpoint_s_parameters(tmp_path):
    RenewableHuberRegressor(backend="numpy", epsilon=2.0).fit(X0, y0).save_checkpoint(
        tmp_path / "m.npz")
    model = RenewableHuberRegressor.load_checkpoint(tmp_path / "m.npz")
    assert dict(model.summary().header)["Epsilon"] == "2"
    model.set_params(epsilon=3.0).partial_fit(X0, y0)
    assert dict(model.summary().header)["Epsilon"] == ("differs by batch: 2 (batch 1), "
                                                       "3 (batch 2)")


# ---------------------------------------------------------------- small things


def test_read_batches_frames_keep_the_file_s_names(tmp_path):
    pd = pytest.importorskip("pandas", reason="pandas comes with the [io] and [test] extras")
    from rhuber.io import read_batches

    frame = pd.DataFrame(X0, columns=NAMES).assign(price=y0)
    frame.to_csv(tmp_path / "sales.csv", index=False)
    model = RenewableHuberRegressor(backend="numpy")
    for X, y, _ in read_batches(tmp_path / "sales.csv", target="price",
                                batch_size=30).frames():
        model.partial_fit(X, y)
    assert list(model.feature_names_in_) == NAMES and model.n_batches_ == 3


def test_conf_int_of_a_model_fitted_on_a_dataframe_is_labelled():
    pd = pytest.importorskip("pandas", reason="pandas comes with the [io] and [test] extras")
    model = RenewableHuberRegressor(backend="numpy").fit(pd.DataFrame(X0, columns=NAMES), y0)
    intervals = model.conf_int()
    assert list(intervals.index) == [*NAMES, "intercept"] and list(intervals.columns) == [0, 1]
    np.testing.assert_allclose(intervals.to_numpy(),
                               RenewableHuberRegressor(backend="numpy").fit(X0, y0).conf_int(),
                               rtol=1e-12)


def test_the_summary_keeps_one_notation_and_counts_one_batch_in_the_singular():
    X = X0 * 1e3  # coefficients and errors around 1e-3
    text = str(RenewableHuberRegressor(backend="numpy").fit(X, y0).summary())
    numbers = [line.split()[1:3] + line.split()[5:] for line in text.splitlines()
               if line.split() and line.split()[0] in ("x0", "x1", "x2")]
    assert numbers and all("e" in value for row in numbers for value in row)
    assert "the 1 batch (weight" in text and "all 1 batches" not in text
