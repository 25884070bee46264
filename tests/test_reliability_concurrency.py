"""Concurrent use: predictions from many threads next to an update, updates racing on one
estimator, and streams running side by side (docs/reliability.md). Each test has a bounded
count of operations; every result is compared with the same work done on one thread."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from sklearn.base import clone

from helpers import NATIVE_CPU, make_problem, require_module, state_dicts_equal
from rhuber import RenewableHuberRegressor
from rhuber import estimator as estimator_module

ENGINES = ["numpy", "native_cpu"]
PREDICT_THREADS = 8
BATCHES_PER_UPDATER = 25


def _estimator(backend: str, **params) -> RenewableHuberRegressor:
    if backend == "native_cpu":
        require_module(*NATIVE_CPU)
        params.setdefault("n_jobs", 2)
    return RenewableHuberRegressor(backend=backend, **params)


def _batches(seed: int, count: int, p: int = 6) -> list[tuple[np.ndarray, np.ndarray]]:
    # Distinct row counts: a batch is known by how many samples it adds (RecordingRegressor).
    rng = np.random.default_rng(seed)
    return [make_problem(rng, 40 + 7 * i, p)[:2] for i in range(count)]


def _run_threads(targets) -> None:
    """Start every target at once (a barrier), join them, and re-raise the first error."""
    barrier = threading.Barrier(len(targets))
    errors: list[BaseException] = []

    def wrap(target):
        def run():
            barrier.wait()
            try:
                target()
            except BaseException as exc:
                errors.append(exc)
        return run

    threads = [threading.Thread(target=wrap(t)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]


@pytest.mark.parametrize("backend", ENGINES)
def test_predict_from_8_threads_while_a_clone_is_updated(backend):
    rng = np.random.default_rng(1)
    model = _estimator(backend).fit(*make_problem(rng, 400, 6)[:2])
    before = model.state_dict()
    X_new = rng.normal(size=(300, 6))
    expected = model.predict(X_new)
    batches = _batches(2, 20)
    updating = clone(model)
    stop = threading.Event()
    calls = [0] * PREDICT_THREADS

    def predictor(k):
        def run():
            while not stop.is_set() or calls[k] < 20:
                assert np.array_equal(model.predict(X_new), expected)
                calls[k] += 1
        return run

    def updater():
        try:
            for X, y in batches:
                updating.partial_fit(X, y)
        finally:
            stop.set()

    _run_threads([updater, *(predictor(k) for k in range(PREDICT_THREADS))])
    assert state_dicts_equal(model.state_dict(), before)  # predicting changed nothing
    sequential = clone(model)
    for X, y in batches:
        sequential.partial_fit(X, y)
    assert state_dicts_equal(updating.state_dict(), sequential.state_dict())
    assert min(calls) >= 20


class RecordingRegressor(RenewableHuberRegressor):
    """Records n_samples_seen at each commit, which happens under the update lock: the order in
    which racing batches really went in."""

    def _commit(self, state, *args, **kwargs):
        super()._commit(state, *args, **kwargs)
        self.__dict__.setdefault("_order", []).append(int(state.n_samples_seen))


def _fitted_view(est: RenewableHuberRegressor, X: np.ndarray) -> tuple:
    """What a reader sees of a fitted stream: its attributes and a prediction, in one tuple."""
    return (est.coef_.tobytes(), float(est.intercept_), est.scale_, est.n_samples_seen_,
            est.n_batches_, est.effective_weight_, est.information_.tobytes(), est.n_iter_,
            len(est.diagnostics_), est.predict(X).tobytes())


@pytest.mark.parametrize("backend", ENGINES)
def test_a_reader_never_mixes_two_batches(backend, monkeypatch):
    """The writer is held in the middle of publishing a batch (at its host copy of the
    information matrix, after the coefficients'): a reader in another thread must see the
    previous batch whole, attributes and predictions alike, and after the update the new one."""
    first, second = _batches(5, 2)
    model = _estimator(backend).partial_fit(*first)
    before = _fitted_view(model, second[0])
    held, release = threading.Event(), threading.Event()
    writer_ident: list[int] = []
    real = estimator_module.to_host

    def to_host(a):
        if threading.get_ident() in writer_ident and np.ndim(a) == 2 and not held.is_set():
            held.set()  # the coefficients are converted already: hold the writer here
            assert release.wait(60), "the reader never released the writer"
        return real(a)

    monkeypatch.setattr(estimator_module, "to_host", to_host)

    def write():
        writer_ident.append(threading.get_ident())
        model.partial_fit(*second)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert held.wait(60), "the writer never reached its publication"
        during = _fitted_view(model, second[0])
    finally:
        release.set()
        writer.join(timeout=120)
    after = _fitted_view(model, second[0])
    assert model.n_batches_ == 2 and after != before
    assert during == before, "a reader saw part of the next batch"


@pytest.mark.parametrize("backend", ENGINES)
def test_two_threads_partial_fit_one_estimator_take_turns(backend):
    """The update lock serializes them: every batch lands, whole, exactly once; replaying the
    order they went in on one thread gives the same state bit for bit."""
    if backend == "native_cpu":
        require_module(*NATIVE_CPU)
    model = RecordingRegressor(backend=backend, **({"n_jobs": 2} if backend != "numpy" else {}))
    mine, theirs = _batches(3, BATCHES_PER_UPDATER), _batches(4, BATCHES_PER_UPDATER)
    # The two streams' row counts must differ too: offset the second's by one row.
    theirs = [(X[1:], y[1:]) for X, y in theirs]

    def feeder(batches):
        def run():
            for X, y in batches:
                model.partial_fit(X, y)
        return run

    _run_threads([feeder(mine), feeder(theirs)])
    total = 2 * BATCHES_PER_UPDATER
    assert model.n_batches_ == total and len(model.diagnostics_) == total
    assert model.n_samples_seen_ == sum(len(y) for _, y in mine + theirs)
    by_rows = {len(y): (X, y) for X, y in mine + theirs}
    order = np.diff([0, *model._order])
    assert sorted(order) == sorted(by_rows)  # each batch exactly once
    replay = RenewableHuberRegressor(**model.get_params())
    for rows in order:
        replay.partial_fit(*by_rows[rows])
    assert state_dicts_equal(model.state_dict(), replay.state_dict())
    np.testing.assert_array_equal(model.coef_, replay.coef_)


@pytest.mark.parametrize("backend", ENGINES)
def test_streams_side_by_side_equal_streams_one_after_another(backend):
    """One estimator per thread (native engines release the GIL): no shared state leaks."""
    streams = [_batches(10 + k, 12, p=4 + k) for k in range(4)]
    models = [_estimator(backend) for _ in streams]

    def feeder(model, batches):
        def run():
            for X, y in batches:
                model.partial_fit(X, y)
        return run

    _run_threads([feeder(m, b) for m, b in zip(models, streams, strict=True)])
    for model, batches in zip(models, streams, strict=True):
        alone = clone(model)
        for X, y in batches:
            alone.partial_fit(X, y)
        assert state_dicts_equal(model.state_dict(), alone.state_dict())


def test_the_update_lock_survives_pickle_clone_and_is_not_shared():
    import pickle

    model = _estimator("numpy").fit(*make_problem(np.random.default_rng(5), 100, 3)[:2])
    copy = pickle.loads(pickle.dumps(model))
    assert "_update_lock" not in copy.__dict__  # made again on first use
    copy.partial_fit(*make_problem(np.random.default_rng(6), 50, 3)[:2])
    assert copy.__dict__["_update_lock"] is not model.__dict__["_update_lock"]
    assert "_update_lock" not in clone(model).__dict__


def test_pickling_leaves_the_live_estimator_whole():
    """__getstate__ drops the engine and the lock from the pickle, not from the estimator: a
    thread that holds the lock while another pickles the estimator keeps excluding others."""
    import pickle

    model = _estimator("numpy").fit(*make_problem(np.random.default_rng(5), 100, 3)[:2])
    lock, engine = model.__dict__["_update_lock"], model.__dict__["_engine_cache"]
    pickle.dumps(model)
    assert model.__dict__["_update_lock"] is lock
    assert model.__dict__["_engine_cache"] is engine
