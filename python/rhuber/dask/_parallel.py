"""fit_parallel: independent renewable streams over groups of partitions, combined."""

from __future__ import annotations

import itertools
import os
from numbers import Integral
from typing import Any

import dask
import numpy as np
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from ..estimator import RenewableHuberRegressor
from ._chain import chain, take_over
from ._partitions import batches


def fit_parallel(est: RenewableHuberRegressor, X: Any, y: Any, sample_weight: Any = None, *,
                 n_groups: int | None = None) -> RenewableHuberRegressor:
    """One renewable stream per group of consecutive partitions, all at once, combined by
    information weighting: β = (Σ_k J_k)⁻¹ Σ_k J_k β_k (docs/scale-out.md).

    The partitions are cut into ``n_groups`` runs of consecutive partitions (sizes differing by
    at most one); each run streams through a fresh clone of ``est`` on the workers, as in
    :func:`fit_stream`, and the runs' states are combined by
    :meth:`RenewableHuberRegressor.merge`, with ``est``'s own state first when it is fitted.
    Only the K small states come to the client. The result approximates the in-order stream:
    docs/scale-out.md measures how closely.

    Parameters
    ----------
    est : RenewableHuberRegressor
        With ``alpha=0`` and no ``lambda_scale``: L1-penalized streams do not combine (a
        ValueError says so). Updated in place when every group has finished; on an error it
        is left as it was.
    X, y, sample_weight
        As in :func:`fit_stream`.
    n_groups : int, optional
        Number of independent streams; default: the worker threads of the active
        ``distributed.Client``, else the CPU count; at most the number of partitions.

    Returns
    -------
    est : RenewableHuberRegressor
    """
    if not isinstance(est, RenewableHuberRegressor):
        raise TypeError(f"est must be a RenewableHuberRegressor, got {type(est).__name__}")
    if est.alpha > 0:
        raise ValueError(
            f"fit_parallel needs alpha=0, got alpha={est.alpha!r}: the information-weighted "
            "combination is defined for unpenalized streams only (docs/scale-out.md); stream "
            "L1-penalized fits in order with fit_stream")
    if est.half_life is not None:
        raise ValueError(
            f"fit_parallel needs half_life=None, got half_life={est.half_life!r}: forgetting "
            "discounts the history in the stream's order, and a merge of independent streams "
            "has no order (docs/drift.md); stream it in order with fit_stream")
    if (est.lambda_scale or 0) > 0:
        raise ValueError(
            f"fit_parallel needs lambda_scale=None, got lambda_scale={est.lambda_scale!r}: the "
            "schedule L1-penalizes every batch, and the information-weighted combination is "
            "defined for unpenalized streams only (docs/scale-out.md); stream L1-penalized fits "
            "in order with fit_stream")
    if _is_fitted(est) and est.previous_lambda_ > 0:
        raise ValueError(
            f"fit_parallel combines with est's own state, and its last batch was L1-penalized "
            f"(alpha={est.previous_lambda_:g}): penalized states do not combine "
            "(docs/scale-out.md); continue this stream in order with fit_stream")
    if n_groups is not None and (isinstance(n_groups, bool) or not isinstance(n_groups, Integral)
                                 or n_groups < 1):
        raise ValueError(f"n_groups must be an integer >= 1 or None, got {n_groups!r}")
    work = batches(X, y, sample_weight)
    k = min(n_groups or _worker_threads(), len(work))
    sizes = [len(work) // k + (g < len(work) % k) for g in range(k)]
    cuts = np.cumsum([0, *sizes]).tolist()
    chains = [chain(clone(est), work, a, b) for a, b in itertools.pairwise(cuts)]
    streams = []
    for stream, records in dask.compute(chains)[0]:
        stream.diagnostics_ = list(records)
        stream._warn_about(records)
        streams.append(stream)
    if _is_fitted(est):
        est.merge(*streams)
        return est
    if len(streams) > 1:
        streams[0].merge(*streams[1:])
    take_over(est, streams[0])
    return est


def _worker_threads() -> int:
    """Threads of the active distributed cluster, else this machine's CPUs."""
    try:
        from distributed import default_client

        return max(1, sum(default_client().nthreads().values()))
    except (ImportError, ValueError):
        return os.cpu_count() or 1


def _is_fitted(est: RenewableHuberRegressor) -> bool:
    try:
        check_is_fitted(est)
    except NotFittedError:
        return False
    return True
