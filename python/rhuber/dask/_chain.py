"""A renewable stream as a chain of Dask tasks: one ``partial_fit`` per partition, each task
taking the estimator left by the one before, so it runs where its partition is (the scheduler
places a task beside its largest input, the partition) and only the estimator moves."""

from __future__ import annotations

import uuid
from typing import Any

import dask

from ..estimator import RenewableHuberRegressor
from ._partitions import Batches, split


def advance(est: RenewableHuberRegressor, X: Any, y: Any, w: Any,
            columns: Any) -> tuple[RenewableHuberRegressor, dict]:
    """One batch on a worker: a new estimator one partition further, and its diagnostics.

    The task is pure, so a retried task (after a lost worker) sees its input unchanged: the
    update runs on a shallow copy (partial_fit replaces arrays, it never writes into them). The
    copy carries no diagnostics history, so what travels between tasks stays the size of the
    state however long the stream; the caller reassembles the history from the records.
    """
    X, y, w = split(X, y, w, columns)
    moved = object.__new__(type(est))
    moved.__dict__.update(est.__dict__)
    moved.__dict__.pop("_update_lock", None)  # a lock belongs to one estimator
    if moved.__sklearn_is_fitted__():
        moved.diagnostics_ = []
    moved.partial_fit(X, y, w)
    return moved, moved.diagnostics_[-1]


def chain(est: RenewableHuberRegressor, batches: Batches, start: int, stop: int):
    """Delayed (estimator after partitions [start, stop), list of their diagnostics)."""
    token = uuid.uuid4().hex[:8]
    current, records = est, []
    for j in range(start, stop):
        X, y, w = batches.parts[j]
        current, record = dask.delayed(advance, nout=2)(
            current, X, y, w, batches.columns,
            dask_key_name=f"rhuber-partial-fit-{j}-{token}")
        records.append(record)
    return current, records


def run(est: RenewableHuberRegressor, batches: Batches, start: int,
        stop: int) -> RenewableHuberRegressor:
    """Compute partitions [start, stop) on the current scheduler (a distributed Client when one
    is active); the returned estimator's diagnostics_ is est's followed by theirs."""
    final, records = chain(est, batches, start, stop)
    result, records = dask.compute(final, records)
    result.diagnostics_ = [*getattr(est, "diagnostics_", []), *records]
    # The workers' warnings stay in their logs: say it again here, where the user is.
    result._warn_about(records, first_batch=result.n_batches_ - len(records) + 1)
    return result


def take_over(est: RenewableHuberRegressor, result: RenewableHuberRegressor) -> None:
    """``est`` becomes ``result``: fit_stream updates the estimator it was given, as
    partial_fit does (its lock, if it has one, stays its own)."""
    lock = est.__dict__.get("_update_lock")
    est.__dict__.clear()
    est.__dict__.update(result.__dict__)
    if lock is not None:
        est.__dict__["_update_lock"] = lock
