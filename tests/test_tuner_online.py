"""Opt-in online learning: batches of a profiled estimator become
measurements in the local store by the collector's rules, and the local models are retrained in
the background. Every test writes under a temporary cache directory, never ~/.cache."""

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import rhuber as rh
from helpers import NATIVE_CPU, corpus_subset, other_machine, require_module
from rhuber.datasets import make_contaminated_stream
from rhuber.engines.plans import Plan
from rhuber.engines.workload import Workload
from rhuber.profiling import _hooks
from rhuber.tuner import hardware, learn_online, local, models, online
from rhuber.tuner.store import Store

DATA = Path(__file__).resolve().parents[1] / "python" / "rhuber" / "tuner" / "data"
FAST_PARAMS = {"throughput": {"n_estimators": 20}, "plan": {"n_estimators": 8},
               "bottleneck": {"solver": "sag"}}
#: What one finished (workload, plan) takes at most: the warm-up batch, then 3 rounds of 3.
BATCHES = online.QUALITY.warmup + online.QUALITY.runs * (1 + online.QUALITY.max_remeasure)


@pytest.fixture(scope="module")
def base():
    return corpus_subset()


@pytest.fixture(scope="module")
def machine(base):
    return other_machine(base[1], "online test CPU")


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch, base, machine):
    """A temporary cache directory, this test's machine, a small corpus and small models; online
    learning off and forgotten before and after."""
    monkeypatch.setenv(hardware.CACHE_DIR_VARIABLE, str(tmp_path))
    monkeypatch.setattr(online, "_machine", lambda: machine)
    monkeypatch.setattr(local, "corpus", lambda: base)
    monkeypatch.setattr(local, "LOCAL_PARAMS", FAST_PARAMS)
    online.learn_online(False, retrain_after=online.RETRAIN_AFTER)
    online.reset()
    yield tmp_path
    online.learn_online(False, retrain_after=online.RETRAIN_AFTER)
    online.reset()


def _stored(machine):
    if not local.store_path().exists():
        return {}
    with Store(local.store_path()) as store:
        return {(m.workload_id, m.plan_id): m for m in store.measurements(machine.hardware_id)}


def test_off_by_default_records_and_writes_nothing(isolated, machine):
    assert not online.enabled() and learn_online is online.learn_online
    w, plan = Workload(rows=100, features=3), Plan("numpy")
    for _ in range(BATCHES):
        online.record_batch(w, plan, 0.01, None)
    online.wait()
    assert online.status()["pending"] == 0 and online.status()["measurements"] == 0
    assert not local.store_path().exists() and not list(isolated.iterdir())


def test_profiled_batches_become_a_measurement_and_retrain_the_local_models(machine,
                                                                            monkeypatch):
    require_module(*NATIVE_CPU)
    online.learn_online(True, retrain_after=2)
    # The estimator's own calls are kept out (it calls record_batch when online.enabled()):
    # this test makes them itself, as the estimator does, one per committed batch.
    monkeypatch.setattr(online, "enabled", lambda: False)
    plans = {}
    for rows, alpha in ((3000, 0.0), (2000, 0.01)):
        est = rh.RenewableHuberRegressor(backend="native_cpu", alpha=alpha, profile=True)
        stream = make_contaminated_stream(rows * BATCHES, 6, batch_size=rows, seed=rows)
        for X, y in stream:
            start = time.perf_counter()
            est.partial_fit(X, y)
            seconds = time.perf_counter() - start
            est.predict(X[:10])  # between batches: not part of any batch's fractions
            plan = Plan("native_cpu", l1_solver=est.l1_solver).resolved(machine.cores)
            workload = Workload(rows=rows, features=6, penalized=alpha > 0)
            online.record_batch(workload, plan, seconds, est.profile_)
        plans[workload.id] = plan.id
        assert _hooks.ACTIVE is None
    assert online.wait(timeout=60)
    stored = _stored(machine)
    assert set(stored) == set(plans.items())
    for (workload_id, _), m in stored.items():
        rows = Workload.from_id(workload_id).rows
        assert m.status in ("ok", "unstable") and m.rows_per_run == rows
        assert len(m.runs_s) in (3, 6, 9) and m.remeasured == len(m.runs_s) // 3 - 1
        assert m.median_s == pytest.approx(float(np.median(m.runs_s)), rel=0.5)
        assert m.rows_per_s == pytest.approx(rows / m.median_s)
        assert (m.status == "ok") == (m.cv < online.QUALITY.max_cv)
        f = m.brick_fractions
        assert f is not None and "predict" not in f and {"residual", "huber", "score"} <= set(f)
        assert all(0.0 <= v <= 1.0 for v in f.values()) and m.brick_calls > 0
        assert sum(f.values()) == pytest.approx(1.0, abs=1e-4) or f["unattributed"] == 0.0
    # Two new measurements reached retrain_after=2: the local models were trained in the
    # background on the corpus plus the local store, with this machine's fingerprint.
    status = online.status()
    assert status["measurements"] == 2 and status["trainings"] == 1 and status["errors"] == 0
    directory = local.models_dir(machine.hardware_id)
    loaded = models.load(directory)
    assert "(2 from the local store" in (directory / local.DATA_CARD).read_text()
    if any(m.status == "ok" for m in stored.values()):  # only good rows train the throughput
        assert machine.hardware_id in json.loads(loaded["throughput"].metadata["hardware_ids"])
    assert loaded["throughput"].n_trees == 20
    assert not list(directory.parent.glob(".*-*"))
    # A finished (workload, plan) is measured once per process: more batches change nothing.
    online.record_batch(Workload(rows=3000, features=6), Plan.from_id(plans[
        Workload(rows=3000, features=6).id]), 1.0, None)
    assert online.status()["pending"] == 0


def test_the_estimator_feeds_it_when_profiled(machine):
    require_module(*NATIVE_CPU)
    online.learn_online(True, retrain_after=1000)
    est = rh.RenewableHuberRegressor(backend="native_cpu", profile=True)
    for X, y in make_contaminated_stream(400 * BATCHES, 5, batch_size=400, seed=1):
        est.partial_fit(X, y)
    rh.RenewableHuberRegressor(backend="native_cpu").partial_fit(X, y)  # not profiled: no call
    assert online.wait(timeout=30)
    stored = _stored(machine)
    assert [k[0] for k in stored] == [Workload(rows=400, features=5).id]
    assert online.status()["trainings"] == 0


def test_collector_rules_decide_ok_unstable_and_rounds(machine):
    online.learn_online(True, retrain_after=1000)
    steady, noisy = Workload(rows=100, features=2), Workload(rows=200, features=2)
    plan = Plan("numpy")
    for s in (9.0, 0.010, 0.011, 0.010):  # the warm-up (dropped), then 3 steady timings
        online.record_batch(steady, plan, s, None)
    for s in [5.0] + [0.01, 0.03, 0.09] * 3:  # CV stays high: 2 more rounds, then unstable
        online.record_batch(noisy, plan, s, None)
    online.wait()
    stored = _stored(machine)
    ok, bad = stored[(steady.id, plan.id)], stored[(noisy.id, plan.id)]
    assert ok.status == "ok" and ok.runs_s == [0.010, 0.011, 0.010] and ok.remeasured == 0
    assert ok.median_s == 0.010 and ok.brick_fractions is None
    assert bad.status == "unstable" and len(bad.runs_s) == 9 and bad.remeasured == 2
    assert bad.cv >= online.QUALITY.max_cv


def test_writes_from_many_threads(machine):
    online.learn_online(True, retrain_after=1000)
    plan = Plan("numpy")

    def feed(k):
        for rows in range(100 + 10 * k, 105 + 10 * k):
            for _ in range(1 + online.QUALITY.runs):
                online.record_batch(Workload(rows=rows, features=3), plan, 0.01, None)

    threads = [threading.Thread(target=feed, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    online.wait()
    assert len(_stored(machine)) == 20 and online.status()["measurements"] == 20


def test_errors_warn_and_never_reach_the_fit(machine, monkeypatch):
    online.learn_online(True, retrain_after=1)

    class Broken:
        def report(self):
            raise RuntimeError("profile gone")

    with pytest.warns(RuntimeWarning, match="profile gone"):
        online.record_batch(Workload(rows=100, features=2), Plan("numpy"), 0.01, Broken())

    def no_store():
        raise OSError("read-only cache")

    monkeypatch.setattr(local, "open_store", no_store)
    with pytest.warns(RuntimeWarning, match="read-only cache"):
        for _ in range(1 + online.QUALITY.runs):
            online.record_batch(Workload(rows=300, features=2), Plan("numpy"), 0.01, None)
        online.wait()
    assert online.status()["errors"] == 1 and online.status()["trainings"] == 0


def test_turning_it_off_drops_pending_timings(machine):
    online.learn_online(True)
    w = Workload(rows=100, features=2)
    online.record_batch(w, Plan("numpy"), 0.01, None)
    online.record_batch(w, Plan("numpy"), 0.01, None)
    assert online.status()["pending"] == 1
    online.learn_online(False)
    assert online.status()["pending"] == 0 and not online.enabled()
    with pytest.raises(ValueError, match="retrain_after"):
        online.learn_online(True, retrain_after=0)
