"""Inference for unpenalized renewable streams (method.md, contract v3, "Inference").

Two halves, both pure functions:

- :func:`accumulate` — a batch's contribution to the inference sums of the state, taken at the
  batch's final β_b with the curvature c of its information update: S_ψ² = Σ w ψ², S_c = Σ w c,
  Σ w c², Σ w, and (with ``inference_matrices``) G = Σ X̃ᵀdiag(w)X̃ and K = Σ X̃ᵀdiag(wψ²)X̃.
- :func:`covariance` — Huber's (1981) covariance estimates as statsmodels' RLM computes them
  (H1, H2, H3), and the HC0 sandwich, from a State; inverses go through the equilibrated ladder.

The estimator's ``cov_params`` / ``bse`` / ``conf_int`` / ``summary`` are thin wrappers
(docs/inference.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
import scipy.stats

from ..errors import NumericalError
from . import sqrt_info
from .ladder import solve_matrix
from .problem import weighted_gram
from .types import State
from .xp import f64, to_host

#: The covariance types, in statsmodels' words (RLM's H1, H2, H3; the sandwich HC0).
COV_TYPES = ("H1", "H2", "H3", "HC0")
#: The covariance types that need the d × d matrices (``inference_matrices=True``).
NEEDS_MATRICES = {"H1": "G = Σ X̃ᵀdiag(w)X̃", "H3": "G = Σ X̃ᵀdiag(w)X̃",
                  "HC0": "K = Σ X̃ᵀdiag(wψ²)X̃"}


class InferenceError(ValueError):
    """Inference is not available for this state (penalized, uncovered, singular, ...)."""


def accumulate(state: State, Xt: Any, w: Any, r: Any, tau: float, c: Any,
               inference_matrices: bool, xp: Any) -> dict[str, Any]:
    """The inference fields of the state after a batch: ``state``'s plus this batch's sums.

    ``Xt`` is the batch design (intercept last), ``w`` its weights, ``r`` the residuals at the
    final β_b, ``c`` the curvature of the information update (not multiplied by w). Scalars are
    float64 sums; G and K are in the computation dtype, like the information, formed as one
    triangle and mirrored. Matrices start at zero when the sums cover no batch yet (a new
    stream, or the first batch after a format-2 checkpoint) and are then kept only while every
    batch asks for them: a stream that turns ``inference_matrices`` on midway has none (their
    coverage would differ from the scalars').
    """
    psi = xp.clip(r, -tau, tau)
    w64, psi64, c64 = f64(w, xp), f64(psi, xp), f64(c, xp)
    wc = w64 * c64
    fields: dict[str, Any] = {
        "score_sq_sum": float(state.score_sq_sum) + float(xp.sum(w64 * psi64 * psi64)),
        "curvature_sum": float(state.curvature_sum) + float(xp.sum(wc)),
        "curvature_sq_sum": float(state.curvature_sq_sum) + float(xp.sum(wc * c64)),
        "inference_weight": float(state.inference_weight) + float(xp.sum(w64)),
        "inference_batches": int(state.inference_batches) + 1,
        "gram": None,
        "score_gram": None,
    }
    if inference_matrices and (state.gram is not None or state.inference_batches == 0):
        d = Xt.shape[1]
        previous_gram = (xp.zeros((d, d), dtype=Xt.dtype) if state.gram is None
                         else state.gram)
        previous_score = (xp.zeros((d, d), dtype=Xt.dtype) if state.score_gram is None
                          else state.score_gram)
        fields["gram"] = previous_gram + weighted_gram(Xt, w, xp)
        fields["score_gram"] = previous_score + weighted_gram(Xt, w * psi * psi, xp)
    return fields


def merged_fields(states: list[State]) -> dict[str, Any]:
    """The inference fields of a combination of ``states``: sums of the parts (left to right),
    the matrices only when every part has them."""
    fields: dict[str, Any] = {
        "score_sq_sum": float(sum(s.score_sq_sum for s in states)),
        "curvature_sum": float(sum(s.curvature_sum for s in states)),
        "curvature_sq_sum": float(sum(s.curvature_sq_sum for s in states)),
        "inference_weight": float(sum(s.inference_weight for s in states)),
        "inference_batches": int(sum(s.inference_batches for s in states)),
        "gram": None,
        "score_gram": None,
    }
    for name in ("gram", "score_gram"):
        parts = [getattr(s, name) for s in states]
        if all(m is not None for m in parts):
            total = np.array(to_host(parts[0]), copy=True)
            for m in parts[1:]:
                total += to_host(m)
            fields[name] = total
    return fields


@dataclass(frozen=True)
class Coverage:
    """What the inference sums of a state cover."""

    inference_batches: int
    batch_count: int
    inference_weight: float
    effective_weight: float
    has_matrices: bool

    @property
    def complete(self) -> bool:
        return self.inference_batches == self.batch_count

    def describe(self) -> str:
        if self.complete:
            batches = "the 1 batch" if self.batch_count == 1 else f"all {self.batch_count} batches"
            return f"{batches} (weight {self.effective_weight:,.6g})"
        return (f"the last {self.inference_batches} of {self.batch_count} batches (weight "
                f"{self.inference_weight:,.6g} of {self.effective_weight:,.6g}): the earlier "
                "batches came from a checkpoint without inference sums (format 2); their "
                "per-weight averages stand for the whole stream")


def coverage(state: State) -> Coverage:
    return Coverage(int(state.inference_batches), int(state.batch_count),
                    float(state.inference_weight), float(state.effective_weight),
                    state.gram is not None and state.score_gram is not None)


def _inverse(matrix: np.ndarray, name: str) -> np.ndarray:
    """matrix⁻¹ by the equilibrated ladder, in float64; a singular matrix is an error."""
    d = matrix.shape[0]
    try:
        result = solve_matrix(matrix, np.eye(d))
    except NumericalError as exc:
        raise InferenceError(f"the {name} is not finite: {exc}") from exc
    if result.rung == "svd":
        raise InferenceError(
            f"the {name} is singular even after equilibration (the ladder fell to its SVD "
            "rung): the coefficients are not identified, so they have no standard errors. "
            "Collinear or constant columns are the usual cause (a constant column duplicates "
            "the intercept); remove or combine them.")
    return result.step


def _information_inverse(state: State) -> np.ndarray:
    """J⁻¹ in float64: by the ladder, or in the qr mode through R̃ (J⁻¹ = R̃⁻¹R̃⁻ᵀ, R̃'s
    columns equilibrated first), never forming R̃ᵀR̃."""
    if state.information_factor is None:
        return _inverse(np.asarray(to_host(state.information), dtype=np.float64),
                        "information matrix J")
    R = np.asarray(to_host(state.information_factor), dtype=np.float64)
    d = R.shape[0]
    factor = sqrt_info.factorize(R, np.zeros(d), sqrt_info.ModelRows(
        np.zeros((0, d)), np.zeros(0), np.zeros(d)))
    if not factor.full_rank:
        raise InferenceError(
            "the information factor R̃ is rank-deficient even after equilibration: the "
            "coefficients are not identified, so they have no standard errors. Collinear or "
            "constant columns are the usual cause (a constant column duplicates the "
            "intercept); remove or combine them.")
    inverse = scipy.linalg.solve_triangular(factor.R, np.eye(d), lower=False)
    s = factor.scales
    return s[:, None] * (inverse @ inverse.T) * s[None, :]


def covariance(state: State, cov_type: str = "H1") -> np.ndarray:
    """The d × d covariance of the coefficients (intercept last), float64.

    With N = Σ w, d the coefficient count, m = S_c / N, k = 1 + (d/N) · var(c) / m²,
    σ² = S_ψ² / (N − d), J the information:

    - H1 = k² σ² / m² · G⁻¹;  H2 = k σ² / m · J⁻¹;  H3 = σ² / k · J⁻¹ G J⁻¹;
    - HC0 = J⁻¹ K J⁻¹.

    When the sums cover only the last batches (a format-2 checkpoint was loaded), the averages
    of the covered weight stand for the stream: G and K are scaled by W / N (J covers it all).
    Raises InferenceError naming what is missing.
    """
    if cov_type not in COV_TYPES:
        raise ValueError(f"cov_type must be one of {COV_TYPES}, got {cov_type!r}")
    if state.previous_lambda > 0:
        raise InferenceError(
            f"the last batch was L1-penalized (lambda {state.previous_lambda:.3g}): these "
            "standard errors assume an unpenalized M-estimator, and after L1 selection they "
            "are not valid (post-selection inference). Fit with alpha=0 and lambda_scale=None "
            "for inference")
    if state.inference_batches == 0:
        raise InferenceError(
            "the inference sums cover no batch: the state came from a checkpoint without them "
            "(format 2) and no batch has been streamed since; stream more batches first")
    d = state.n_coef
    n = float(state.inference_weight)
    if not n > d:
        raise InferenceError(
            f"inference needs more weight than coefficients: the covered batches weigh {n:g} "
            f"for {d} coefficients (N − d must be positive)")
    if not state.curvature_sum > 0:
        raise InferenceError(
            "no residual of the covered batches lies in Huber's quadratic zone (S_c = 0): the "
            "scale is degenerate and the covariance is not defined")
    if cov_type in NEEDS_MATRICES and (state.gram is None or state.score_gram is None):
        raise InferenceError(
            f"cov_type={cov_type!r} needs the matrix {NEEDS_MATRICES[cov_type]}, accumulated "
            "only with inference_matrices=True (from the stream's first batch); set it and "
            "refit, or use cov_type='H2', which needs only the information")
    m = float(state.curvature_sum) / n
    var_c = max(float(state.curvature_sq_sum) / n - m * m, 0.0)
    k = 1.0 + (d / n) * var_c / (m * m)
    sigma2 = float(state.score_sq_sum) / (n - d)
    spread = float(state.effective_weight) / n  # 1 when the sums cover the whole stream

    def matrix(a: Any) -> np.ndarray:
        out = np.asarray(to_host(a), dtype=np.float64)
        return out * spread if spread != 1.0 else out

    if cov_type == "H1":
        return (k * k * sigma2 / (m * m)) * _inverse(matrix(state.gram), "Gram matrix G")
    J_inv = _information_inverse(state)
    if cov_type == "H2":
        return (k * sigma2 / m) * J_inv
    if cov_type == "H3":
        return (sigma2 / k) * (J_inv @ matrix(state.gram) @ J_inv)
    return J_inv @ matrix(state.score_gram) @ J_inv


def standard_errors(cov: np.ndarray) -> np.ndarray:
    return np.sqrt(np.clip(np.diagonal(cov), 0.0, None))


@dataclass(frozen=True)
class WaldTable:
    """coef, std err, z, P>|z| and the (1 − alpha) interval, one row per coefficient."""

    coef: np.ndarray
    bse: np.ndarray
    z: np.ndarray
    pvalues: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    alpha: float


def wald_table(coef: Any, cov: np.ndarray, alpha: float = 0.05) -> WaldTable:
    """Normal-reference Wald statistics, as statsmodels' RLM reports them (z, not t)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    coef = np.asarray(to_host(coef), dtype=np.float64)
    bse = standard_errors(cov)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = coef / bse
    pvalues = 2 * scipy.stats.norm.sf(np.abs(z))
    q = scipy.stats.norm.ppf(1 - alpha / 2)
    return WaldTable(coef, bse, z, pvalues, coef - q * bse, coef + q * bse, float(alpha))


def format_summary(table: WaldTable, names: list[str], header: list[tuple[str, str]]) -> str:
    """statsmodels' familiar layout: a header of (key, value) pairs, then the coefficient table."""
    lo, hi = f"[{table.alpha / 2:.3g}", f"{1 - table.alpha / 2:.3g}]"
    width = max(12, *(len(n) for n in names)) + 2
    rule = "=" * (width + 5 * 11 + 10)
    lines = ["Renewable Huber regression results", rule]
    key_width = max(len(k) for k, _ in header) + 1
    lines += [f"{k + ':':<{key_width}} {v}" for k, v in header]
    lines.append(rule)
    lines.append(f"{'':<{width}}{'coef':>11}{'std err':>11}{'z':>9}{'P>|z|':>9}"
                 f"{lo:>11}{hi:>11}")
    lines.append("-" * len(rule))
    numbers = [table.coef, table.bse, table.lower, table.upper]
    exponent = any(_tiny_or_huge(float(x)) for column in numbers for x in column)
    for j, name in enumerate(names):
        coef, bse, lower, upper = (_num(float(column[j]), exponent) for column in numbers)
        lines.append(f"{name:<{width}}{coef:>11}{bse:>11}"
                     f"{table.z[j]:>9.3f}{table.pvalues[j]:>9.3f}{lower:>11}{upper:>11}")
    lines.append(rule)
    return "\n".join(lines)


def _tiny_or_huge(x: float) -> bool:
    """A value that 4 decimals would show with too few digits (or too wide)."""
    return x != 0 and math.isfinite(x) and (abs(x) >= 1e6 or abs(x) < 1e-3)


def _num(x: float, exponent: bool) -> str:
    """statsmodels' style: 4 decimals; exponent form for the whole table when any of its
    coefficients, errors or bounds is tiny or huge, so that one notation holds throughout and
    none loses its digits (9.938e-04 beside 1.000e-03, not beside 0.0010)."""
    return f"{x:.3e}" if exponent else f"{x:.4f}"


@dataclass(frozen=True)
class Summary:
    """What ``RenewableHuberRegressor.summary()`` returns: print it, or take it as data."""

    names: tuple[str, ...]
    table: WaldTable
    cov_type: str
    header: tuple[tuple[str, str], ...]
    coverage: Coverage

    def as_text(self) -> str:
        return format_summary(self.table, list(self.names), list(self.header))

    def __str__(self) -> str:
        return self.as_text()

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the header, and one record per coefficient."""
        t = self.table
        lo, hi = f"{t.alpha / 2:.3g}", f"{1 - t.alpha / 2:.3g}"
        rows = [{"name": n, "coef": float(t.coef[j]), "std_err": float(t.bse[j]),
                 "z": float(t.z[j]), "p_value": float(t.pvalues[j]), lo: float(t.lower[j]),
                 hi: float(t.upper[j])} for j, n in enumerate(self.names)]
        c = self.coverage
        return {"cov_type": self.cov_type, "alpha": t.alpha,
                "header": dict(self.header), "coefficients": rows,
                "coverage": {"inference_batches": c.inference_batches,
                             "batch_count": c.batch_count,
                             "inference_weight": c.inference_weight,
                             "effective_weight": c.effective_weight,
                             "complete": c.complete}}

    def frame(self) -> Any:
        """The coefficient table as a pandas DataFrame (statsmodels' column names)."""
        import pandas as pd

        t = self.table
        return pd.DataFrame({"coef": t.coef, "std err": t.bse, "z": t.z, "P>|z|": t.pvalues,
                             f"[{t.alpha / 2:.3g}": t.lower, f"{1 - t.alpha / 2:.3g}]": t.upper},
                            index=list(self.names))


def default_cov_type(state: State) -> str:
    """statsmodels' default H1 when the matrices are there, else H2 (needs only J)."""
    return "H1" if state.gram is not None else "H2"
