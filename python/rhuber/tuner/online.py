"""Opt-in online learning (docs/tuner.md, "Calibration and online learning").

With ``learn_online(True)``, every batch a profiled estimator (``profile=True``) commits is timed
into this machine's local store, and the local models are retrained from time to time::

    from rhuber.tuner import learn_online
    learn_online(True)
    est = RenewableHuberRegressor(profile=True)   # each partial_fit now feeds the tuner

- The estimator calls :func:`record_batch` once per committed batch with the batch's workload,
  the plan it ran and its wall time. Timings accumulate in memory per (workload, plan): the first
  ``QUALITY.warmup`` batches are dropped (the collector's warm-up; it also drops the first batch
  of a stream, which starts from no estimate), then rounds of ``QUALITY.runs`` (3) timings are
  judged by the collector's rules (:func:`quality.reject_outliers`,
  :func:`quality.coefficient_of_variation`): CV under 15 % is ``ok``, else another round, at
  most twice, then ``unstable``. A finished (workload, plan) becomes one Measurement — one batch
  is one run, so ``rows_per_run`` is the batch's rows — with the brick fractions of those
  batches from the estimator's profile, computed as :func:`quality.brick_fractions` does (each
  brick's time over the batches' wall time, ``unattributed`` the rest; ``predict`` left out,
  since predictions are not part of a batch). Each (workload, plan) is measured once per process
  (:func:`reset` forgets).
- A daemon worker thread writes the measurement to the local store (``local.store_path()``)
  with this machine's fingerprint, and after :data:`RETRAIN_AFTER` new measurements since the
  last training it retrains the local models (``local.train``: atomic, as calibrate's), one
  training at a time. So ``record_batch`` costs the user's fit a dictionary update (and, while a
  pair is being measured, reading the profile's brick table: ~0.1 ms); the fingerprint, the
  writes and the training happen in the worker. Batches committed while it trains are not
  timed (the training takes a core). Errors there become ``RuntimeWarning``s (and log records
  of this module's logger), never exceptions in the user's fit.
- Off by default: with it off, :func:`record_batch` returns at once and nothing is written.
  Measurements still in memory when the process exits are lost; :func:`wait` blocks until the
  worker has written (and trained) everything submitted so far.
"""

from __future__ import annotations

import logging
import os
import queue
import statistics
import threading
import time
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any

from .._version import __version__
from . import local
from .hardware import fingerprint
from .quality import (
    Quality,
    coefficient_of_variation,
    git_revision,
    reject_outliers,
    rounded_fractions,
)
from .store import Measurement

#: Retrain the local models after this many new online measurements since the last training.
RETRAIN_AFTER = 20
#: The collector's rules (collect.Quality defaults): warm-up, rounds of 3, CV < 15 %, ...
QUALITY = Quality()
#: Bricks that are not part of a batch's update.
EXCLUDED_BRICKS = frozenset({"predict"})

_LOG = logging.getLogger(__name__)


@dataclass
class _Timings:
    """One (workload, plan)'s timings so far."""

    workload: Any
    plan: Any
    warm: int = 0
    runs: list[float] = field(default_factory=list)
    remeasured: int = 0
    brick_ns: dict[str, int] = field(default_factory=dict)
    brick_calls: int = 0
    profiled_s: float = 0.0  # wall time of the batches whose brick times are known


class _State:
    """This process's online learning: one instance, :data:`_STATE`."""

    def __init__(self) -> None:
        self.enabled = False
        self.retrain_after = RETRAIN_AFTER
        self.lock = threading.RLock()  # the timings below
        self.store_lock = threading.Lock()  # writes to the local store
        self.pending: dict[tuple[str, str], _Timings] = {}
        self.finished: set[tuple[str, str]] = set()
        self.snapshots: weakref.WeakKeyDictionary[Any, tuple[int, dict[str, tuple[int, int]]]] = (
            weakref.WeakKeyDictionary())
        self.queue: queue.Queue[Any] = queue.Queue()
        self.worker: threading.Thread | None = None
        self.training = threading.Event()  # set while the worker trains: batches are not timed
        self.hardware: Any = None
        self.counts = {"measurements": 0, "since_training": 0, "trainings": 0, "errors": 0}


_STATE = _State()


def learn_online(enabled: bool = True, *, retrain_after: int | None = None) -> None:
    """Turn online learning from profiled batches on or off (off by default).

    ``retrain_after``: retrain the local models after this many new measurements (default
    :data:`RETRAIN_AFTER`). Turning it off drops the timings not yet measured to the end.
    """
    if retrain_after is not None:
        if int(retrain_after) < 1:
            raise ValueError(f"retrain_after must be >= 1, got {retrain_after}")
        _STATE.retrain_after = int(retrain_after)
    with _STATE.lock:
        _STATE.enabled = bool(enabled)
        if not _STATE.enabled:
            _STATE.pending.clear()


def enabled() -> bool:
    return _STATE.enabled


def record_batch(workload: Any, plan: Any, seconds: float, profile: Any) -> None:
    """Called by the estimator after each committed batch when ``profile=True`` and online
    learning is on: ``workload`` (a Workload, rows = the batch's), the ``plan`` that ran,
    the batch's wall ``seconds`` and the estimator's ``profile_`` (a Profile, or None)."""
    if not _STATE.enabled:
        return
    try:
        item = _record(workload, plan, float(seconds), profile)
        if item is not None:
            _submit(item)
    except Exception as exc:  # learning must never break the user's fit
        _warn(f"online learning skipped a batch: {type(exc).__name__}: {exc}")


def _record(workload: Any, plan: Any, seconds: float, profile: Any) -> dict[str, Any] | None:
    key = (workload.id, plan.id)
    state = _STATE
    with state.lock:
        if not state.enabled or key in state.finished or state.training.is_set():
            return None
        bricks = _brick_delta(profile)
        t = state.pending.setdefault(key, _Timings(workload, plan))
        if t.warm < QUALITY.warmup:
            t.warm += 1
            return None
        if not seconds > 0:
            return None
        t.runs.append(seconds)
        if bricks is not None:
            for brick, (ns, calls) in bricks.items():
                t.brick_ns[brick] = t.brick_ns.get(brick, 0) + ns
                t.brick_calls += calls
            t.profiled_s += seconds
        if len(t.runs) % QUALITY.runs:
            return None
        kept, rejected = reject_outliers(t.runs, QUALITY.outlier_sigma)
        cv = coefficient_of_variation(kept)
        if cv >= QUALITY.max_cv and t.remeasured < QUALITY.max_remeasure:
            t.remeasured += 1
            return None
        del state.pending[key]
        state.finished.add(key)
    median = statistics.median(kept)
    fractions = calls = None
    if t.profiled_s > 0 and t.brick_ns:
        wall_ns = t.profiled_s * 1e9
        shares = {b: ns / wall_ns for b, ns in t.brick_ns.items() if ns > 0}
        shares["unattributed"] = max(0.0, 1.0 - sum(shares.values()))
        fractions, calls = rounded_fractions(shares), t.brick_calls
    return {"workload": t.workload, "plan": t.plan,
            "status": "ok" if cv < QUALITY.max_cv else "unstable",
            "rows_per_run": int(t.workload.rows), "runs_s": list(t.runs),
            "rejected_runs": rejected, "remeasured": t.remeasured, "median_s": median, "cv": cv,
            "rows_per_s": t.workload.rows / median, "brick_fractions": fractions,
            "brick_calls": calls}


def _brick_delta(profile: Any) -> dict[str, tuple[int, int]] | None:
    """Each brick's (ns, calls) in the batch just committed: the profile's totals less those at
    the previous call, when the profile has exactly one more batch than then (otherwise a batch
    went unseen, or the profile restarted: None, and this call starts a new reference)."""
    if profile is None:
        return None
    report = profile.report()
    batches = int(report.metadata.get("batches", -1))
    totals = {row.brick: (int(row.total_ns), int(row.calls)) for row in report}
    previous = _STATE.snapshots.get(profile)
    _STATE.snapshots[profile] = (batches, totals)
    if previous is None:
        if batches != 1:
            return None
        before: dict[str, tuple[int, int]] = {}
    elif batches == previous[0] + 1:
        before = previous[1]
    else:
        return None
    delta = {}
    for brick, (ns, calls) in totals.items():
        if brick in EXCLUDED_BRICKS:
            continue
        ns0, calls0 = before.get(brick, (0, 0))
        if ns - ns0 > 0:
            delta[brick] = (ns - ns0, calls - calls0)
    return delta


# ---------------------------------------------------------------------- the worker


def _warn(message: str) -> None:
    _LOG.warning(message)
    warnings.warn(message, RuntimeWarning, stacklevel=2)


def _submit(item: dict[str, Any]) -> None:
    state = _STATE
    with state.lock:
        state.queue.put(item)
        if state.worker is None or not state.worker.is_alive():
            state.worker = threading.Thread(target=_work, args=(state.queue,),
                                            name="rhuber-online", daemon=True)
            state.worker.start()


def _work(items: queue.Queue[Any]) -> None:
    while True:
        item = items.get()
        try:
            _write(item)
        except Exception as exc:
            _STATE.counts["errors"] += 1
            _warn(f"online learning could not store a measurement of {item['workload'].id} "
                  f"{item['plan'].id}: {type(exc).__name__}: {exc}")
        finally:
            items.task_done()


def _machine() -> Any:
    """This machine's measured fingerprint, once per process (in the worker: the probes may
    take seconds the first time on a machine)."""
    if _STATE.hardware is None:
        _STATE.hardware = fingerprint(measure=True)
    return _STATE.hardware


def _write(item: dict[str, Any]) -> None:
    hw = _machine()
    fields = {k: v for k, v in item.items() if k not in ("workload", "plan")}
    m = Measurement(hardware_id=hw.hardware_id, workload_id=item["workload"].id,
                    plan_id=item["plan"].resolved(hw.cores).id, library_version=__version__,
                    git_revision=git_revision(),
                    measured_at=time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
                    **fields)
    counts = _STATE.counts
    with _STATE.store_lock, local.open_store() as store:  # a connection per write: any thread
        store.add_hardware(hw.hardware_id, hw.as_dict())
        store.record(m)
    counts["measurements"] += 1
    counts["since_training"] += 1
    if counts["since_training"] >= _STATE.retrain_after:
        counts["since_training"] = 0
        _train(hw)


def _train(hw: Any) -> None:
    _STATE.training.set()
    try:
        result = local.train(hw)
    except Exception as exc:
        _STATE.counts["errors"] += 1
        _warn(f"online learning could not retrain the local models of {hw.hardware_id}: "
              f"{type(exc).__name__}: {exc}")
        return
    finally:
        _STATE.training.clear()
    _STATE.counts["trainings"] += 1
    _LOG.info("online learning retrained %s from %d measurements (%d local) in %.1f s",
              result.path, result.measurements, result.local, result.seconds)


def wait(timeout: float | None = None) -> bool:
    """Block until the worker has written (and trained) everything submitted so far; False if
    ``timeout`` seconds passed first."""
    if timeout is None:
        _STATE.queue.join()
        return True
    end = time.monotonic() + timeout
    while _STATE.queue.unfinished_tasks:
        if time.monotonic() >= end:
            return False
        time.sleep(0.01)
    return True


def status() -> dict[str, Any]:
    """What online learning has done in this process: measurements written, trainings, errors,
    (workload, plan) pairs still gathering timings, and the retraining threshold."""
    state = _STATE
    with state.lock:
        return {"enabled": state.enabled, **state.counts, "pending": len(state.pending),
                "finished": len(state.finished), "retrain_after": state.retrain_after}


def reset() -> None:
    """Wait for the worker, then forget this process's timings, measured pairs and counts (the
    local store and models stay)."""
    wait()
    state = _STATE
    with state.lock:
        state.pending.clear()
        state.finished.clear()
        state.snapshots.clear()
        for key in state.counts:
            state.counts[key] = 0


def _after_fork() -> None:
    """A forked child has no worker: its queue, locks and worker start afresh."""
    state = _STATE
    state.lock = threading.RLock()
    state.store_lock = threading.Lock()
    state.queue = queue.Queue()
    state.worker = None
    state.training = threading.Event()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
