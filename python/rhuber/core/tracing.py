"""The reference engine's side of solver tracing (docs/tracing.md): each iteration of a solve
appends a record, a dict with the keys the native engines' records have, to a list the caller
passes (``update(..., trace=[])``). Nothing here runs when that list is None.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .xp import f64, to_host


def tensor_stats(a: Any, xp: Any) -> dict[str, Any]:
    """Count, NaN and infinity counts, then min, max, mean, population std and L2 norm of the
    finite entries (NaN where there are none), all in float64."""
    a64 = f64(a, xp)
    nan = int(xp.sum(xp.isnan(a64)))
    inf = int(xp.sum(xp.isinf(a64)))
    finite = a64[xp.isfinite(a64)]
    stats = {"count": int(a64.size), "min": math.nan, "max": math.nan, "mean": math.nan,
             "std": math.nan, "nan": nan, "inf": inf, "l2": 0.0}
    if finite.size:
        stats.update(min=float(xp.min(finite)), max=float(xp.max(finite)),
                     mean=float(xp.mean(finite)), std=float(xp.std(finite)),
                     l2=math.sqrt(float(finite @ finite)))
    return stats


def open_record(trace: list, phase: str, iteration: int, problem: Any, beta: Any, r: Any,
                tau: float) -> dict[str, Any]:
    """The record of an iteration that has just computed the residual ``r`` at ``beta``: the
    point's objective and per-row statistics; the solver fills in the rest."""
    xp = problem.xp
    w = problem.w
    score = w * xp.clip(r, -tau, tau)
    record = {
        "phase": phase,
        "iteration": iteration,
        "solver": "lamm",
        "rcond": math.nan,
        "objective": problem.objective_at(beta, r, tau),
        "coef_norm": norm2(beta, xp),
        "step_norm": 0.0,
        "step_scale": 0.0,
        "halvings": 0,
        "search_exhausted": False,
        "rows": int(r.shape[0]),
        "quadratic_rows": int(xp.sum((w > 0) & (xp.abs(r) <= tau))),
        "residual": tensor_stats(r, xp),
        "score": tensor_stats(score, xp),
        "hessian_diagonal": None,
    }
    trace.append(record)
    return record


def hessian_diagonal_stats(H: Any) -> dict[str, Any]:
    return tensor_stats(np.diagonal(to_host(H)), np)


def norm2(v: Any, xp: Any) -> float:
    v64 = f64(v, xp)
    return math.sqrt(float(v64 @ v64))
