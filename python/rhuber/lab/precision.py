"""The precision trace: the same stream in float32 and float64, batch by batch, and how far the
float32 coefficients land from the float64 ones against the contract's float32 tolerance."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..estimator import RenewableHuberRegressor

#: method.md's cross-engine tolerance for float32: |a − b| ≤ rtol · max(1, |b|) on the
#: coefficients, b the float64 value.
FLOAT32_RTOL = 2e-3


@dataclass(frozen=True)
class PrecisionBatch:
    """One batch: the float32 coefficients (intercept last) against the float64 ones."""

    batch: int
    rows: int
    coef_mse: float  # mean of (b32 − b64)²
    max_abs_error: float
    cosine_similarity: float  # b32·b64 / (‖b32‖ ‖b64‖); 1 when both are zero
    snr_db: float  # 10 log10(‖b64‖² / ‖b32 − b64‖²); inf when equal
    max_scaled_error: float  # max |b32 − b64| / max(1, |b64|), the contract's measure
    within_tolerance: bool  # max_scaled_error ≤ FLOAT32_RTOL

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PrecisionReport:
    batches: list[PrecisionBatch]
    rtol: float = FLOAT32_RTOL

    @property
    def within_tolerance(self) -> bool:
        return all(b.within_tolerance for b in self.batches)

    @property
    def verdict(self) -> str:
        bad = [b.batch for b in self.batches if not b.within_tolerance]
        if not bad:
            worst = max((b.max_scaled_error for b in self.batches), default=0.0)
            return (f"float32 is within the contract's tolerance ({self.rtol:g}) on every "
                    f"batch; worst scaled error {worst:.3g}")
        return (f"float32 exceeds the contract's tolerance ({self.rtol:g}) on "
                f"{len(bad)} of {len(self.batches)} batches (first: batch {bad[0]}); "
                "keep float64 for this data")

    def as_dict(self) -> dict:
        return {"rtol": self.rtol, "within_tolerance": self.within_tolerance,
                "verdict": self.verdict, "batches": [b.as_dict() for b in self.batches]}

    def report(self) -> str:
        lines = [f"{'batch':>5} {'rows':>8} {'coef MSE':>10} {'max abs':>10} {'cosine':>12} "
                 f"{'SNR dB':>8} {'scaled':>9} {'ok':>3}"]
        for b in self.batches:
            lines.append(
                f"{b.batch:>5} {b.rows:>8} {b.coef_mse:>10.3g} {b.max_abs_error:>10.3g} "
                f"{b.cosine_similarity:>12.9f} {b.snr_db:>8.1f} {b.max_scaled_error:>9.3g} "
                f"{'yes' if b.within_tolerance else 'NO':>3}")
        lines.append(f"verdict: {self.verdict}")
        return "\n".join(lines)


def compare_coefficients(batch: int, rows: int, b32: np.ndarray, b64: np.ndarray,
                         rtol: float = FLOAT32_RTOL) -> PrecisionBatch:
    a = np.asarray(b32, dtype=np.float64)
    b = np.asarray(b64, dtype=np.float64)
    error = a - b
    noise = float(error @ error)
    signal = float(b @ b)
    norms = math.sqrt(float(a @ a) * signal)
    cosine = float(a @ b) / norms if norms > 0 else (1.0 if noise == 0 else 0.0)
    if noise == 0:
        snr = math.inf
    elif signal == 0:
        snr = -math.inf
    else:
        snr = 10 * math.log10(signal / noise)
    scaled = float(np.max(np.abs(error) / np.maximum(1.0, np.abs(b)))) if b.size else 0.0
    return PrecisionBatch(
        batch=batch, rows=rows, coef_mse=noise / max(b.size, 1),
        max_abs_error=float(np.max(np.abs(error))) if b.size else 0.0,
        cosine_similarity=cosine, snr_db=snr, max_scaled_error=scaled,
        within_tolerance=bool(scaled <= rtol))


def precision_report(X: Any, y: Any, *, batch_size: int | None = None,
                     sample_weight: Any = None, **params: Any) -> PrecisionReport:
    """Stream (X, y) through two estimators, one in float32 and one in float64, with the same
    ``params`` (RenewableHuberRegressor's; ``batch_size`` None: one batch), and compare their
    coefficients, intercept included, after every batch.

    X and y are converted to each dtype first (a float64 X loses its digits below float32's in
    the float32 run: that is part of what float32 costs).
    """

    X64 = np.asarray(X, dtype=np.float64)
    y64 = np.asarray(y, dtype=np.float64)
    if X64.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features), got {X64.ndim}-D")
    if y64.shape[:1] != X64.shape[:1]:
        raise ValueError(f"y has {y64.shape[0] if y64.ndim else 0} samples, but X has "
                         f"{X64.shape[0]}")
    if batch_size is not None and (isinstance(batch_size, bool) or int(batch_size) < 1):
        raise ValueError(f"batch_size must be a positive integer or None, got {batch_size!r}")
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    step = X64.shape[0] if batch_size is None else int(batch_size)
    single = RenewableHuberRegressor(**params)
    double = RenewableHuberRegressor(**params)
    batches = []
    for k, start in enumerate(range(0, X64.shape[0], step), start=1):
        rows = slice(start, start + step)
        wk = None if w is None else w[rows]
        single.partial_fit(X64[rows].astype(np.float32), y64[rows].astype(np.float32),
                           None if wk is None else wk.astype(np.float32))
        double.partial_fit(X64[rows], y64[rows], wk)
        batches.append(compare_coefficients(k, len(y64[rows]), _coefficients(single),
                                            _coefficients(double)))
    return PrecisionReport(batches)


def _coefficients(estimator: Any) -> np.ndarray:
    """coef_ with the intercept appended (when fitted), in float64."""
    coef = np.asarray(estimator.coef_, dtype=np.float64)
    return np.append(coef, float(estimator.intercept_)) if estimator.fit_intercept else coef
