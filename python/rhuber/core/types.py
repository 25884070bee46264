"""State, configuration and diagnostics of one renewable Huber update (shared/spec/method.md)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

#: 1 / Φ⁻¹(3/4): makes the MAD a consistent estimate of a Gaussian standard deviation.
MAD_K = 1.482602218505602

SUPPORTED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def default_tol(dtype: np.dtype) -> float:
    return 1e-5 if np.dtype(dtype) == np.float32 else 1e-8


def _check_real(name: str, value: Any, *, low: float, strict: bool, allow_none: bool = False):
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    if not math.isfinite(value) or (value <= low if strict else value < low):
        relation = ">" if strict else ">="
        raise ValueError(f"{name} must be a finite number {relation} {low}, got {value!r}")


#: Solvers of L1-penalized batches, the contract's first.
L1_SOLVERS = ("lamm", "prox_newton")


@dataclass(frozen=True)
class Config:
    """Parameters of one batch update; validated when an update starts."""

    fit_intercept: bool = True
    epsilon: float = 1.345
    tau: float | None = None
    alpha: float = 0.0
    ridge: float = 0.0
    max_iter: int = 500
    tol: float | None = None
    #: The solver of L1-penalized batches: "lamm" (the contract's) or "prox_newton", the opt-in
    #: variant method.md allows, on the native CPU engine only (docs/method.md).
    l1_solver: str = "lamm"

    def validate(self) -> None:
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise TypeError(f"fit_intercept must be a bool, got {self.fit_intercept!r}")
        _check_real("epsilon", self.epsilon, low=0.0, strict=True)
        _check_real("tau", self.tau, low=0.0, strict=True, allow_none=True)
        _check_real("alpha", self.alpha, low=0.0, strict=False)
        _check_real("ridge", self.ridge, low=0.0, strict=False)
        _check_real("tol", self.tol, low=0.0, strict=True, allow_none=True)
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, numbers.Integral):
            raise TypeError(f"max_iter must be an integer, got {self.max_iter!r}")
        if self.max_iter < 1:
            raise ValueError(f"max_iter must be >= 1, got {self.max_iter}")
        if self.l1_solver not in L1_SOLVERS:
            raise ValueError(f"l1_solver must be one of {L1_SOLVERS}, got {self.l1_solver!r}")

    def resolved_tol(self, dtype: np.dtype) -> float:
        return default_tol(dtype) if self.tol is None else float(self.tol)

    def native_dict(self, dtype: np.dtype) -> dict:
        """The config as the native bindings take it, the tolerance resolved for ``dtype``."""
        return {
            "fit_intercept": bool(self.fit_intercept),
            "epsilon": float(self.epsilon),
            "tau": None if self.tau is None else float(self.tau),
            "alpha": float(self.alpha),
            "ridge": float(self.ridge),
            "max_iter": int(self.max_iter),
            "tol": self.resolved_tol(np.dtype(dtype)),
            "l1_solver": self.l1_solver,
        }


@dataclass(frozen=True)
class State:
    """Everything the stream remembers between batches. The empty state is all zeros."""

    coef: Any  # (d,) in the computation dtype; numpy or cupy
    information: Any  # (d, d) in the computation dtype, never symmetrized
    n_samples_seen: int = 0
    effective_weight: float = 0.0
    batch_count: int = 0
    previous_lambda: float = 0.0
    scale: float = 0.0

    @classmethod
    def empty(cls, d: int, dtype: Any = np.float64, xp: Any = np) -> State:
        return cls(coef=xp.zeros(d, dtype=dtype), information=xp.zeros((d, d), dtype=dtype))

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.coef.dtype)

    @property
    def n_coef(self) -> int:
        return int(self.coef.shape[0])

    def replace(self, **changes: Any) -> State:
        return replace(self, **changes)


@dataclass(frozen=True)
class Diagnostics:
    """What one batch solve did. ``lambda_`` is reported under the key ``lambda``."""

    converged: bool
    n_iter: int
    objective: float
    lambda_: float
    bandwidth: float
    solver: str
    line_search_halvings: int
    # The 1-norm reciprocal condition estimate of the equilibrated Newton matrix for the last
    # step's rung (0 for svd); None when the batch solved no Newton system (alpha > 0).
    rcond: float | None = None
    extra: dict = field(default_factory=dict, compare=False)

    def as_dict(self) -> dict:
        return {
            "converged": bool(self.converged),
            "n_iter": int(self.n_iter),
            "objective": float(self.objective),
            "lambda": float(self.lambda_),
            "bandwidth": float(self.bandwidth),
            "solver": str(self.solver),
            "line_search_halvings": int(self.line_search_halvings),
            "rcond": None if self.rcond is None else float(self.rcond),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Diagnostics:
        return cls(
            converged=bool(d["converged"]),
            n_iter=int(d["n_iter"]),
            objective=float(d["objective"]),
            lambda_=float(d["lambda"]),
            bandwidth=float(d["bandwidth"]),
            solver=str(d["solver"]),
            line_search_halvings=int(d["line_search_halvings"]),
            rcond=_optional_rcond(d["rcond"]),
        )


def _optional_rcond(value: Any) -> float | None:
    """The engines' NaN ("no Newton system was solved") as None."""
    if value is None or math.isnan(value):
        return None
    return float(value)
