"""Huber loss pieces, weighted medians and the cancellation-free objective difference.

Every formula here is fixed by docs/numerics.md so that all engines compute the same numbers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .types import MAD_K
from .xp import f64, namespace


def rho(r64: Any, tau: float, xp: Any) -> Any:
    """ρ(r) = r²/2 inside [−τ, τ], τ|r| − τ²/2 outside (float64 in, float64 out)."""
    a = xp.abs(r64)
    return xp.where(a <= tau, 0.5 * r64 * r64, tau * a - 0.5 * tau * tau)


def smoothed_curvature(r: Any, tau: float, h: float, xp: Any) -> Any:
    """The paper's c_h(r) (method.md, contract v3): 1 inside [−τ+h, τ−h], 0 beyond τ+h, linear
    in between, written as clip(½ + (τ − |r|) / (2h), 0, 1) in r's dtype."""
    t = xp.asarray(tau, dtype=r.dtype)
    two_h = xp.asarray(2 * h, dtype=r.dtype)
    return xp.clip(r.dtype.type(0.5) + (t - xp.abs(r)) / two_h, 0, 1).astype(r.dtype, copy=False)


def huber_difference(r: Any, a: Any, tau: float, xp: Any) -> Any:
    """h(r, a) = ρ(r − a) − ρ(r) per row, without cancellation when both lie in one piece."""
    r64, a64 = f64(r, xp), f64(a, xp)
    rn = r64 - a64
    in_old, in_new = xp.abs(r64) <= tau, xp.abs(rn) <= tau
    both_in = in_old & in_new
    both_out_same_side = ~in_old & ~in_new & ((r64 > 0) == (rn > 0))
    direct = rho(rn, tau, xp) - rho(r64, tau, xp)
    linear = -tau * xp.sign(r64) * a64
    quadratic = a64 * (0.5 * a64 - r64)
    return xp.where(both_in, quadratic, xp.where(both_out_same_side, linear, direct))


def weighted_median(v: Any, w: Any) -> float:
    """The lower weighted median: first value in stable sorted order whose cumulative weight
    reaches half of the (sequential) total."""
    xp = namespace(v)
    order = xp.argsort(v, kind="stable") if xp is np else xp.argsort(v)
    cw = xp.cumsum(f64(w[order], xp))
    k = int(xp.searchsorted(cw, 0.5 * cw[-1], side="left"))
    return float(v[order[min(k, v.shape[0] - 1)]])


def weighted_mad(v: Any, w: Any) -> float:
    xp = namespace(v)
    m = weighted_median(v, w)
    return weighted_median(xp.abs(f64(v, xp) - m), w)


def weighted_std(v: Any, w: Any) -> float:
    xp = namespace(v)
    v64, w64 = f64(v, xp), f64(w, xp)
    total = float(xp.sum(w64))
    mean = float(xp.sum(w64 * v64)) / total
    return math.sqrt(float(xp.sum(w64 * (v64 - mean) ** 2)) / total)


def robust_scale(v: Any, w: Any) -> float:
    """MAD_K · wMAD(v), or NaN when that is not a finite positive number (callers fall back)."""
    s = MAD_K * weighted_mad(v, w)
    return s if math.isfinite(s) and s > 0 else math.nan
