"""fit_stream: the renewable stream over a Dask collection, in order, restartable."""

from __future__ import annotations

import os
from numbers import Integral
from pathlib import Path
from typing import Any

import numpy as np

from ..checkpoint import read_checkpoint, write_checkpoint
from ..errors import CheckpointError
from ..estimator import RenewableHuberRegressor
from ._chain import run, take_over
from ._partitions import batches


def fit_stream(est: RenewableHuberRegressor, X: Any, y: Any, sample_weight: Any = None, *,
               checkpoint: str | os.PathLike | None = None, every: int = 1,
               resume: bool = False) -> RenewableHuberRegressor:
    """Feed the partitions of a Dask collection to ``est.partial_fit`` in order, on the workers.

    Each partition's update runs as a task on the worker holding that partition, taking the
    estimator from the task before it: no partition is gathered to the client, only the small
    estimator moves (and returns to the client at each checkpoint and at the end). The result
    equals ``partial_fit`` called on the same partitions in order, bit for bit, on the same
    backend. The tasks run on the current Dask scheduler: a ``distributed.Client`` when one is
    active, else Dask's local one.

    Parameters
    ----------
    est : RenewableHuberRegressor
        Fitted or not: the stream continues from its state, like partial_fit. It is updated in
        place only when every partition has been fed (on an error it is left as it was; a
        checkpoint keeps the progress).
    X : dask.array.Array or dask.dataframe.DataFrame
        One batch per partition (row chunk); a DataFrame's string column names become
        ``feature_names_in_``.
    y : dask.array.Array or dask.dataframe.Series
        Of X's kind: arrays are rechunked to X's row chunks; a Series joins X by index.
    sample_weight : same kind as y, optional
    checkpoint : path, optional
        Write an atomic checkpoint (format 2, with the optional ``partitions_consumed``) after
        every ``every`` partitions and after the last one.
    every : int, default=1
        Partitions between checkpoints; each checkpoint costs a round trip of the estimator to
        the client, during which the workers wait.
    resume : bool, default=False
        Continue from ``checkpoint``: its state replaces ``est``'s (``est``'s parameters are
        kept) and the stream goes on after its last consumed partition. Give the same
        collection, with the same partitions, as the interrupted run. Without a checkpoint file
        yet, the stream starts at its first partition.

    Returns
    -------
    est : RenewableHuberRegressor
    """
    if not isinstance(est, RenewableHuberRegressor):
        raise TypeError(f"est must be a RenewableHuberRegressor, got {type(est).__name__}")
    if isinstance(every, bool) or not isinstance(every, Integral) or every < 1:
        raise ValueError(f"every must be an integer >= 1, got {every!r}")
    if resume and checkpoint is None:
        raise ValueError("resume=True continues from a checkpoint: give checkpoint=<path>")
    work = batches(X, y, sample_weight)
    start, current = 0, est
    if resume and Path(checkpoint).exists():
        start, current = _resumed(est, checkpoint, len(work))
    step = every if checkpoint is not None else max(1, len(work))
    for begin in range(start, len(work), step):
        stop = min(begin + step, len(work))
        current = run(current, work, begin, stop)
        if checkpoint is not None:
            write_checkpoint(checkpoint, {**current.state_dict(),
                                          "partitions_consumed": np.int64(stop)})
    if current is not est:
        take_over(est, current)
    return est


def _resumed(est: RenewableHuberRegressor, path: str | os.PathLike,
             n_partitions: int) -> tuple[int, RenewableHuberRegressor]:
    """The partitions a checkpoint has consumed, and an estimator with its state and est's
    parameters."""
    consumed = read_checkpoint(path).get("partitions_consumed")
    if consumed is None:
        raise CheckpointError(f"{path} has no 'partitions_consumed': it was not written by "
                              "fit_stream, so where to resume is unknown")
    if consumed > n_partitions:
        raise ValueError(f"{path} consumed {consumed} partitions, but the collection has only "
                         f"{n_partitions}: resume needs the collection of the interrupted run")
    return consumed, type(est).load_checkpoint(path, **est.get_params())

