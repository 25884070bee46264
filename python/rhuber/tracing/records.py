"""What a trace holds: per batch, per solver iteration, the quantities of docs/tracing.md.

Both engines that trace (numpy, native_cpu) hand over one dict per iteration with the same keys;
these classes give them names, and turn them back into plain JSON-ready dicts.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any


def _optional(value: Any) -> float | None:
    """NaN (the engines' "not there") as None."""
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


@dataclass(frozen=True)
class TensorStats:
    """A tensor summarized without keeping it: its entry count, how many are NaN or infinite,
    and min, max, mean, population standard deviation and L2 norm of its finite entries (None
    when none is finite)."""

    count: int
    nan: int
    inf: int
    min: float | None
    max: float | None
    mean: float | None
    std: float | None
    l2: float

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TensorStats:
        return cls(count=int(d["count"]), nan=int(d["nan"]), inf=int(d["inf"]),
                   min=_optional(d["min"]), max=_optional(d["max"]),
                   mean=_optional(d["mean"]), std=_optional(d["std"]), l2=float(d["l2"]))

    @property
    def non_finite(self) -> int:
        return self.nan + self.inf


@dataclass(frozen=True)
class IterationRecord:
    """One iteration of one solve: its starting point's objective and per-row statistics, then
    what the step did.

    ``phase`` is "pilot" (the first batch's solve at the pilot bandwidth) or "main";
    ``iteration`` counts from 1 within it. ``solver`` is the ladder rung of a Newton step
    ("cholesky", "lu", "svd") or "lamm" / "prox_newton"; ``rcond`` the rung's reciprocal
    condition estimate (None without a Newton system). ``step_norm`` is ‖s‖₂ of the direction,
    ``step_scale`` the fraction t of it taken (0: every trial refused, ``search_exhausted``);
    ``halvings`` counts Armijo halvings, or doublings of LAMM's φ. ``quadratic_rows`` are the
    rows of positive weight with |r| ≤ τ, those that carry curvature.
    """

    phase: str
    iteration: int
    solver: str
    rcond: float | None
    objective: float
    coef_norm: float
    step_norm: float
    step_scale: float
    halvings: int
    search_exhausted: bool
    rows: int
    quadratic_rows: int
    residual: TensorStats
    score: TensorStats
    hessian_diagonal: TensorStats | None

    @property
    def quadratic_fraction(self) -> float:
        return self.quadratic_rows / self.rows if self.rows else 0.0

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> IterationRecord:
        hd = d.get("hessian_diagonal")
        return cls(
            phase=str(d["phase"]), iteration=int(d["iteration"]), solver=str(d["solver"]),
            rcond=_optional(d["rcond"]), objective=float(d["objective"]),
            coef_norm=float(d["coef_norm"]), step_norm=float(d["step_norm"]),
            step_scale=float(d["step_scale"]), halvings=int(d["halvings"]),
            search_exhausted=bool(d["search_exhausted"]), rows=int(d["rows"]),
            quadratic_rows=int(d["quadratic_rows"]),
            residual=TensorStats.from_dict(d["residual"]),
            score=TensorStats.from_dict(d["score"]),
            hessian_diagonal=None if hd is None else TensorStats.from_dict(hd),
        )

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["quadratic_fraction"] = self.quadratic_fraction
        return out


@dataclass
class BatchTrace:
    """Every iteration of one batch update, with the batch's outcome.

    ``stream`` numbers the estimators a trace has seen (0, 1, ...), ``batch`` the batches of
    that stream from 1. ``n_coef`` is d (features + intercept). ``error`` is the message of an
    update that raised (its iterations up to the failure are kept), else None.
    """

    stream: int
    batch: int
    engine: str
    dtype: str
    rows: int
    n_coef: int
    converged: bool | None
    n_iter: int | None
    error: str | None = None
    iterations: list[IterationRecord] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "iterations"}
        out["iterations"] = [it.as_dict() for it in self.iterations]
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BatchTrace:
        known = {f.name for f in fields(cls)} - {"iterations"}
        return cls(**{k: d[k] for k in known if k in d},
                   iterations=[IterationRecord.from_dict(it) for it in d["iterations"]])
