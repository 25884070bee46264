"""rhuber.dask on a real LocalCluster (2 worker processes, 1 thread each): the in-order
stream equals partial_fit bit for bit, restarts after a killed worker, feeds DataFrames and lazily
read Parquet files; the parallel combine stays within its documented bound (docs/scale-out.md);
dask_ml's Incremental drives the estimator too.

One cluster serves the module (starting one costs seconds); the functions the workers run are
defined here, importable by them because spawned workers inherit this process's sys.path.
"""

import itertools
import json
import os
import signal
import warnings

import numpy as np
import pandas as pd
import pytest

from helpers import NATIVE_CPU, require_module, state_dicts_equal
from rhuber import RenewableHuberRegressor
from rhuber.datasets import make_contaminated_stream

da = pytest.importorskip("dask.array", reason="the [dask] extra is not installed")
dd = pytest.importorskip("dask.dataframe", reason="the [dask] extra is not installed")
distributed = pytest.importorskip("distributed", reason="the [dask] extra is not installed")

from rhuber.dask import fit_parallel, fit_stream  # noqa: E402

#: docs/scale-out.md, "How far the combine is": with groups of at least 2,000 rows, the combined
#: slopes are within this fraction of the sequential stream's own error (against the generating
#: coefficients) of the sequential slopes, and their own error is at most ERROR_RATIO times it.
DISTANCE_FRACTION = 0.1
ERROR_RATIO = 1.1


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0")  # any free port
    with cluster, distributed.Client(cluster) as c:
        yield c


def backend_or_skip(backend):
    if backend == "native_cpu":
        require_module(*NATIVE_CPU)
    return backend


def sequential(est, parts):
    """partial_fit on ``parts`` (X, y, w) in order: what fit_stream must equal."""
    for X, y, w in parts:
        est.partial_fit(X, y, w)
    return est


def dask_arrays(n=6_000, p=5, chunks=(700, 1_300, 1_000, 1_500, 800, 700), seed=0, name=None):
    """Dask arrays of one stream and its numpy partitions; ``name`` gives the arrays their own
    key names (by default dask names them by their content, so equal data shares keys)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + 0.5 + rng.standard_t(3, size=n)
    w = rng.integers(0, 3, size=n).astype(float) + rng.random(n)
    bounds = np.cumsum((0, *chunks))
    parts = [(X[a:b], y[a:b], w[a:b]) for a, b in itertools.pairwise(bounds)]
    names = {a: (f"{a}-{name}" if name else None) for a in "Xyw"}
    return (da.from_array(X, chunks=(chunks, p), name=names["X"]),
            da.from_array(y, chunks=(chunks,), name=names["y"]),
            da.from_array(w, chunks=(chunks,), name=names["w"]), parts)


@pytest.mark.parametrize("backend", ["numpy", "native_cpu"])
def test_in_order_equals_partial_fit_bit_for_bit(client, backend):
    X, y, w, parts = dask_arrays()
    params = dict(backend=backend_or_skip(backend), n_jobs=1)
    est = fit_stream(RenewableHuberRegressor(**params), X, y, w)
    ref = sequential(RenewableHuberRegressor(**params), parts)
    assert state_dicts_equal(est.state_dict(), ref.state_dict(), ignore=())
    # Through JSON: the drift test's NaN of the first batch compares equal to itself there.
    assert json.dumps(est.diagnostics_) == json.dumps(ref.diagnostics_)
    assert est.backend_ == backend


def _kill_once(block, marker, target, block_info=None):
    """Kill this worker's process (SIGKILL: no cleanup, as a crash) the first time block
    ``target`` is computed; afterwards return the block."""
    if block_info[0]["chunk-location"][0] == target and not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return block


def test_resume_after_killed_worker_equals_uninterrupted_run(client, tmp_path):
    X, y, _, parts = dask_arrays()
    marker = str(tmp_path / "killed")
    X = X.map_blocks(_kill_once, marker=marker, target=5, dtype=X.dtype, name="kill-once")
    # The resumed run gets arrays with their own key names, as it would in the new process that
    # usually runs it: here the failed run's exception is still alive, and with it its futures
    # and the scheduler's record of every task that died with the worker (with retries off,
    # that can include chunks of X and y that partition 5 never needed), under the old names.
    X_again, y_again, _, _ = dask_arrays(name="resumed")
    checkpoint = tmp_path / "stream.npz"
    scheduler = client.cluster.scheduler
    allowed, scheduler.allowed_failures = scheduler.allowed_failures, 0  # fail, do not retry
    try:
        with pytest.raises(distributed.KilledWorker):
            fit_stream(RenewableHuberRegressor(backend="numpy"), X, y, checkpoint=checkpoint,
                       every=2)
    finally:
        scheduler.allowed_failures = allowed
    assert (tmp_path / "killed").exists()
    # Checkpoints after partitions 2 and 4; partition 5 (in the third run of two) killed it.
    interrupted = RenewableHuberRegressor.load_checkpoint(checkpoint)
    assert interrupted.n_batches_ == 4

    resumed = fit_stream(RenewableHuberRegressor(backend="numpy"), X_again, y_again,
                         checkpoint=checkpoint, every=2, resume=True)
    uninterrupted = sequential(RenewableHuberRegressor(backend="numpy"),
                               [(X_, y_, None) for X_, y_, _ in parts])
    assert state_dicts_equal(resumed.state_dict(), uninterrupted.state_dict(), ignore=())
    final = RenewableHuberRegressor.load_checkpoint(checkpoint)
    assert state_dicts_equal(final.state_dict(), uninterrupted.state_dict())
    client.wait_for_workers(2, timeout=30)  # the nanny restarts the killed worker


def frame(n=3_000, p=4, seed=1):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(rng.normal(size=(n, p)), columns=[f"x{j}" for j in range(p)])
    df["target"] = df.to_numpy() @ np.arange(1.0, p + 1) + rng.standard_t(3, size=n)
    return df


def test_dataframe_sets_feature_names_and_equals_partial_fit(client):
    df = frame()
    ddf = dd.from_pandas(df, npartitions=4)
    features = [c for c in df.columns if c != "target"]
    est = fit_stream(RenewableHuberRegressor(backend="numpy"), ddf[features], ddf["target"])
    parts = [(p[features], p["target"], None) for p in ddf.partitions]
    parts = [(X.compute(), y.compute(), None) for X, y, _ in parts]
    ref = sequential(RenewableHuberRegressor(backend="numpy"), parts)
    assert list(est.feature_names_in_) == features
    assert state_dicts_equal(est.state_dict(), ref.state_dict(), ignore=())
    assert np.array_equal(est.predict(df[features]), ref.predict(df[features]))


def test_parquet_files_are_read_on_the_workers(client, tmp_path):
    df = frame(seed=2)
    files = []
    for k, rows in enumerate(np.array_split(np.arange(len(df)), 3)):
        files.append(tmp_path / f"part-{k}.parquet")
        df.iloc[rows].to_parquet(files[-1], index=False)
    lazy = dd.read_parquet(tmp_path)  # reads nothing yet
    features = [c for c in df.columns if c != "target"]
    with distributed.get_task_stream(client) as stream:
        est = fit_stream(RenewableHuberRegressor(backend="numpy"), lazy[features],
                         lazy["target"])
    reads = [t for t in stream.data if "parquet" in t["key"][0 if isinstance(t["key"], tuple)
                                                              else slice(None)].lower()]
    assert reads, "no Parquet read ran on a worker"
    parts = [(f[features], f["target"], None) for f in map(pd.read_parquet, files)]
    ref = sequential(RenewableHuberRegressor(backend="numpy"), parts)
    assert list(est.feature_names_in_) == features
    assert state_dicts_equal(est.state_dict(), ref.state_dict(), ignore=())


def test_parallel_combine_within_documented_bound(client):
    stream = make_contaminated_stream(16_000, 8, batch_size=1_000, seed=0)
    Xn, yn = stream.materialize()
    X, y = da.from_array(Xn, chunks=(1_000, 8)), da.from_array(yn, chunks=(1_000,))
    parts = list(zip(np.split(Xn, 16), np.split(yn, 16), [None] * 16, strict=True))
    seq = sequential(RenewableHuberRegressor(backend="numpy"), parts)
    seq_error = np.linalg.norm(seq.coef_ - stream.coef) / np.linalg.norm(stream.coef)
    for k in (2, 4, 8):
        par = fit_parallel(RenewableHuberRegressor(backend="numpy"), X, y, n_groups=k)
        # The very combination of the groups' own streams, merged on the client.
        size = 16 // k
        groups = [sequential(RenewableHuberRegressor(backend="numpy"),
                             parts[g * size:(g + 1) * size]) for g in range(k)]
        merged = groups[0].merge(*groups[1:])
        assert state_dicts_equal(par.state_dict(), merged.state_dict(), ignore=())
        assert (par.n_samples_seen_, par.n_batches_) == (16_000, 16)
        distance = np.linalg.norm(par.coef_ - seq.coef_) / np.linalg.norm(seq.coef_)
        error = np.linalg.norm(par.coef_ - stream.coef) / np.linalg.norm(stream.coef)
        assert distance <= DISTANCE_FRACTION * seq_error, (k, distance, seq_error)
        assert error <= ERROR_RATIO * seq_error, (k, error, seq_error)


def test_dask_ml_incremental_drives_the_stream_in_order(client):
    wrappers = pytest.importorskip("dask_ml.wrappers", reason="dask-ml ([dask] extra) missing")
    X, y, _, parts = dask_arrays(seed=3)
    inc = wrappers.Incremental(RenewableHuberRegressor(backend="numpy"), shuffle_blocks=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning from the wrapper either
        inc.fit(X, y)
    ref = sequential(RenewableHuberRegressor(backend="numpy"),
                     [(X_, y_, None) for X_, y_, _ in parts])
    assert state_dicts_equal(inc.estimator_.state_dict(), ref.state_dict(), ignore=())
    assert np.array_equal(inc.predict(X).compute(), ref.predict(X.compute()))
