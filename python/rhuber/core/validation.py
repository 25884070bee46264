"""Input checks of one batch (method.md, "Validation"): a clear error naming the input, or arrays
ready for the solver. Nothing here touches the state."""

from __future__ import annotations

from typing import Any

import numpy as np

from .types import SUPPORTED_DTYPES, State
from .xp import namespace


def computation_dtype(X: Any, state: State | None) -> np.dtype:
    """The state's dtype after the first batch; otherwise X's if float32/64, else float64."""
    if state is not None and state.batch_count > 0:
        return state.dtype
    dt = np.dtype(X.dtype)
    return dt if dt in SUPPORTED_DTYPES else np.dtype(np.float64)


def _as_real_array(name: str, a: Any, xp: Any) -> Any:
    try:
        arr = xp.asarray(a)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array, could not convert it: {exc}") from exc
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    return arr


def _first(mask: Any, xp: Any) -> int:
    """The flat index of the first True of ``mask`` (one is known to exist)."""
    return int(xp.argmax(mask.reshape(-1)))


def _require_finite(name: str, a: Any, xp: Any) -> None:
    """The native engines' wording: the first non-finite value's row and column (X) or index."""
    finite = xp.isfinite(a)
    if bool(xp.all(finite)):
        return
    k = _first(~finite, xp)
    if a.ndim == 2:
        raise ValueError(f"{name} contains a non-finite value at row {k // a.shape[1]}, "
                         f"column {k % a.shape[1]}")
    raise ValueError(f"{name} contains a non-finite value at index {k}")


def _check_weight_values(w: Any, xp: Any) -> None:
    _require_finite("sample_weight", w, xp)
    negative = w < 0
    if bool(xp.any(negative)):
        k = _first(negative, xp)
        raise ValueError(f"sample_weight must be >= 0, but entry {k} is {float(w[k]):g}")
    if not float(xp.sum(w.astype(xp.float64))) > 0:
        raise ValueError("sample_weight sums to 0; at least one weight must be positive")


def validate_batch(
    X: Any, y: Any, sample_weight: Any, state: State | None, fit_intercept: bool,
    *, check_values: bool = True,
) -> tuple[Any, Any, Any]:
    """Return (X, y, w) converted to the computation dtype, or raise ValueError / TypeError.

    ``check_values=False`` checks shapes and dtypes only, for an engine that scans the values
    (finiteness, weight signs and sum) itself in one pass, so they are not read twice.
    """
    xp = namespace(X, y, sample_weight)
    X = _as_real_array("X", X, xp)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features), got {X.ndim}-D")
    n, p = X.shape
    if n < 1:
        raise ValueError("X has 0 samples; a batch needs at least 1")
    dtype = computation_dtype(X, state)
    X = X.astype(dtype, copy=False)
    if check_values:
        _require_finite("X", X, xp)

    y = _as_real_array("y", y, xp)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(
            f"y must be 1-D (n_samples,) or a column (n_samples, 1), got shape {y.shape}"
        )
    if y.shape[0] != n:
        raise ValueError(f"y has {y.shape[0]} samples, but X has {n}")
    y = y.astype(dtype, copy=False)
    if check_values:
        _require_finite("y", y, xp)

    if sample_weight is None:
        w = xp.ones(n, dtype=dtype)
    else:
        w = _as_real_array("sample_weight", sample_weight, xp)
        if w.shape != (n,):
            raise ValueError(f"sample_weight must have shape ({n},), got {tuple(w.shape)}")
        w = w.astype(dtype, copy=False)
        if check_values:
            _check_weight_values(w, xp)

    if state is not None and state.batch_count > 0:
        d = p + int(fit_intercept)
        if d != state.n_coef:
            expected = state.n_coef - int(fit_intercept)
            raise ValueError(f"X has {p} features, but the state was fitted with {expected}")
    return X, y, w
