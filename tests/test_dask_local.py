"""rhuber.dask without a cluster (Dask's local scheduler): the same results, the
checkpoint and resume rules, and a clear error for every bad input, the estimator untouched."""

import numpy as np
import pandas as pd
import pytest

from helpers import NATIVE_CPU, require_module, state_dicts_equal
from rhuber import CheckpointError, RenewableHuberRegressor

da = pytest.importorskip("dask.array", reason="the [dask] extra is not installed")
dd = pytest.importorskip("dask.dataframe", reason="the [dask] extra is not installed")
dask = pytest.importorskip("dask", reason="the [dask] extra is not installed")

from rhuber.dask import fit_parallel, fit_stream  # noqa: E402


@pytest.fixture(autouse=True)
def local_scheduler():
    with dask.config.set(scheduler="threads"):
        yield


def data(n=2_000, p=3, chunk=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ np.arange(1.0, p + 1) + rng.standard_t(3, size=n)
    return X, y, da.from_array(X, chunks=(chunk, p)), da.from_array(y, chunks=(chunk,))


def sequential(X, y, chunk, **params):
    est = RenewableHuberRegressor(backend="numpy", **params)
    for start in range(0, len(X), chunk):
        est.partial_fit(X[start:start + chunk], y[start:start + chunk])
    return est


def test_threaded_scheduler_gives_the_same_stream_and_leaves_est_alone_until_done():
    X, y, Xd, yd = data()
    est = RenewableHuberRegressor(backend="numpy")
    assert fit_stream(est, Xd, yd) is est
    assert state_dicts_equal(est.state_dict(), sequential(X, y, 400).state_dict(), ignore=())
    # A fitted estimator continues its stream, like partial_fit.
    fit_stream(est, Xd, yd)
    twice = sequential(np.vstack([X, X]), np.concatenate([y, y]), 400)
    assert state_dicts_equal(est.state_dict(), twice.state_dict(), ignore=())


def test_rechunks_columns_and_y_to_the_rows_of_X():
    X, y, _, _ = data()
    Xd = da.from_array(X, chunks=(400, 2))  # two column chunks
    yd = da.from_array(y[:, None], chunks=(500, 1))  # a column, other row chunks
    est = fit_stream(RenewableHuberRegressor(backend="numpy"), Xd, yd)
    assert state_dicts_equal(est.state_dict(), sequential(X, y, 400).state_dict(), ignore=())


def test_checkpoint_every_k_and_resume_after_the_last_one(tmp_path):
    X, y, Xd, yd = data()
    path = tmp_path / "ckpt.npz"
    fit_stream(RenewableHuberRegressor(backend="numpy"), Xd[:1_200], yd[:1_200],
               checkpoint=path, every=2)  # 3 partitions: checkpoints after 2 and 3
    from rhuber.checkpoint import read_checkpoint

    assert read_checkpoint(path)["partitions_consumed"] == 3
    # Resuming on the whole collection continues after partition 3, with est's parameters.
    est = RenewableHuberRegressor(backend="numpy")
    fit_stream(est, Xd, yd, checkpoint=path, every=2, resume=True)
    assert state_dicts_equal(est.state_dict(), sequential(X, y, 400).state_dict(), ignore=())
    assert read_checkpoint(path)["partitions_consumed"] == 5
    # Resuming a finished stream changes nothing; without a file it starts from scratch.
    again = fit_stream(RenewableHuberRegressor(backend="numpy"), Xd, yd, checkpoint=path,
                       resume=True)
    assert state_dicts_equal(again.state_dict(), est.state_dict(), ignore=("params",))
    fresh = fit_stream(RenewableHuberRegressor(backend="numpy"), Xd, yd,
                       checkpoint=tmp_path / "new.npz", resume=True)
    assert state_dicts_equal(fresh.state_dict(), est.state_dict(), ignore=())


def test_resume_refuses_foreign_or_too_short_checkpoints(tmp_path):
    X, y, Xd, yd = data()
    plain = tmp_path / "plain.npz"
    sequential(X, y, 400).save_checkpoint(plain)
    with pytest.raises(CheckpointError, match="partitions_consumed"):
        fit_stream(RenewableHuberRegressor(backend="numpy"), Xd, yd, checkpoint=plain,
                   resume=True)
    path = tmp_path / "ckpt.npz"
    fit_stream(RenewableHuberRegressor(backend="numpy"), Xd, yd, checkpoint=path)
    with pytest.raises(ValueError, match=r"consumed 5 partitions.*only 2"):
        fit_stream(RenewableHuberRegressor(backend="numpy"), Xd[:800], yd[:800],
                   checkpoint=path, resume=True)


def test_a_failing_partition_leaves_the_estimator_as_it_was():
    X, y, Xd, _ = data()
    est = sequential(X, y, 400)
    before = est.state_dict()
    bad = da.from_array(np.where(np.arange(len(y)) == 1_500, np.nan, y), chunks=(400,))
    with pytest.raises(ValueError, match=r"NaN|infinity"):
        fit_stream(est, Xd, bad)
    assert state_dicts_equal(est.state_dict(), before, ignore=())


@pytest.mark.parametrize("call, error, message", [
    (lambda X, y: fit_stream(RenewableHuberRegressor(), X.compute(), y), TypeError,
     "Dask array or DataFrame"),
    (lambda X, y: fit_stream(RenewableHuberRegressor(), X, y.compute()), TypeError,
     "y must be one too"),
    (lambda X, y: fit_stream(RenewableHuberRegressor(), X, y[:100]), ValueError,
     "X has 2000 rows but y has 100"),
    (lambda X, y: fit_stream(RenewableHuberRegressor(), X[:, 0], y), ValueError, "2-D"),
    (lambda X, y: fit_stream(RenewableHuberRegressor(), X, y, every=0), ValueError, "every"),
    (lambda X, y: fit_stream(RenewableHuberRegressor(), X, y, resume=True), ValueError,
     "checkpoint"),
    (lambda X, y: fit_stream("model", X, y), TypeError, "RenewableHuberRegressor"),
    (lambda X, y: fit_parallel(RenewableHuberRegressor(alpha=0.1), X, y), ValueError,
     "alpha=0"),
    (lambda X, y: fit_parallel(RenewableHuberRegressor(lambda_scale=0.5), X, y), ValueError,
     r"lambda_scale=None, got lambda_scale=0\.5"),
    (lambda X, y: fit_parallel(RenewableHuberRegressor(), X, y, n_groups=0), ValueError,
     "n_groups"),
    (lambda X, y: fit_parallel(RenewableHuberRegressor(backend="numpy", alpha=0.1).partial_fit(
        X[:200].compute(), y[:200].compute()).set_params(alpha=0.0), X, y), ValueError,
     "L1-penalized"),
])
def test_bad_input_gets_a_clear_error(call, error, message):
    _, _, Xd, yd = data()
    with pytest.raises(error, match=message):
        call(Xd, yd)


def test_dataframe_needs_series_targets_and_a_free_column_name():
    df = pd.DataFrame({"a": np.arange(10.0), "b": np.ones(10)})
    ddf = dd.from_pandas(df, npartitions=2)
    with pytest.raises(TypeError, match="Dask Series"):
        fit_stream(RenewableHuberRegressor(), ddf, da.ones(10, chunks=5))
    clash = ddf.rename(columns={"b": "__rhuber_y__"})
    with pytest.raises(ValueError, match="reserved"):
        fit_stream(RenewableHuberRegressor(), clash, ddf["a"])


def test_parallel_with_one_group_is_the_stream_and_a_fitted_est_joins_the_combine():
    X, y, Xd, yd = data()
    one = fit_parallel(RenewableHuberRegressor(backend="numpy"), Xd, yd, n_groups=1)
    assert state_dicts_equal(one.state_dict(), sequential(X, y, 400).state_dict(), ignore=())
    est = sequential(X, y, 400)
    fit_parallel(est, Xd, yd, n_groups=2)  # est's state first, then two groups
    assert est.n_batches_ == 10 and est.n_samples_seen_ == 4_000


def test_native_cpu_takes_unaligned_arrays():
    """Arrays unpickled from a message (how Dask hands a worker its data) may start at an
    address that is not a multiple of 8; OpenBLAS then faulted (SIGSEGV) in the native engine.
    """
    require_module(*NATIVE_CPU)
    X, y, _, _ = data(n=300)

    def unaligned(a):
        raw = np.zeros(a.nbytes + 1, dtype=np.uint8)
        out = np.frombuffer(raw[1:].data, dtype=a.dtype).reshape(a.shape)
        out[...] = a
        assert not out.flags.aligned
        return out

    est = RenewableHuberRegressor(backend="native_cpu").partial_fit(unaligned(X), unaligned(y))
    ref = RenewableHuberRegressor(backend="native_cpu").partial_fit(X, y)
    assert state_dicts_equal(est.state_dict(), ref.state_dict(), ignore=())


def test_dataframe_with_sample_weight_aligns_by_index():
    rng = np.random.default_rng(5)
    df = pd.DataFrame(rng.normal(size=(900, 2)), columns=["a", "b"])
    y = pd.Series(df["a"] - 2 * df["b"] + rng.standard_t(3, size=900))
    w = pd.Series(rng.integers(0, 4, size=900).astype(float))
    ddf = dd.from_pandas(df, npartitions=3)
    # y and the weights partitioned otherwise: they join X's partitions by index.
    est = fit_stream(RenewableHuberRegressor(backend="numpy"), ddf,
                     dd.from_pandas(y, npartitions=2), dd.from_pandas(w, npartitions=5))
    ref = RenewableHuberRegressor(backend="numpy")
    for part in ddf.partitions:
        index = part.compute().index
        ref.partial_fit(df.loc[index], y.loc[index], w.loc[index])
    assert list(est.feature_names_in_) == ["a", "b"]
    assert state_dicts_equal(est.state_dict(), ref.state_dict(), ignore=())
