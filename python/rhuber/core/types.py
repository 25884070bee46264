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

#: The curvature of the information update (contract v3): the indicator 1{|r| ≤ τ}, or the
#: paper's smoothed c_h (method.md, "The paper's schedules").
CURVATURES = ("indicator", "smoothed")

#: The seed system's default bandwidth_scale (renewable-huber 0.7.1, UpdateConfig::default).
DEFAULT_BANDWIDTH_SCALE = 1.0


#: How the history's information is held and each Newton step solved (contract v4): the
#: information matrix J̃ and the equilibrated ladder, or the square-root information (R̃, z̃)
#: and Householder QR of stacked rows (core/sqrt_info.py).
FACTORIZATIONS = ("cholesky", "qr")

#: Every contract-v3/v4 feature, as an engine declares what it implements
#: (``CONTRACT_FEATURES``): "inference_sums" is the scalar sums every batch accumulates and
#: "drift_test" the drift diagnostics of every batch; the others follow Config.features
#: ("qr": factorization="qr").
CONTRACT_FEATURES = ("lambda_schedule", "smoothed_curvature", "inference_sums",
                     "inference_matrices", "forgetting", "drift_test", "qr")


def log_features(p: int) -> float:
    """q = log(max(p, 2)), p the feature count without the intercept (both schedules use it)."""
    return math.log(max(int(p), 2))


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
    #: Contract v3. The λ schedule λ_b = lambda_scale · τ_b · √(q / N_b) instead of alpha.
    lambda_scale: float | None = None
    #: Contract v3. "indicator" or "smoothed" (c_h with bandwidth h_b) in the information update.
    curvature: str = "indicator"
    #: Contract v3. h_b = min(bandwidth_scale · s / (√N_b · q), τ_b) when curvature="smoothed".
    bandwidth_scale: float = DEFAULT_BANDWIDTH_SCALE
    #: Contract v3. Accumulate the d × d inference matrices G and K (the scalars always are).
    inference_matrices: bool = False
    #: Contract v4. Forgetting: before a batch of weight Σw the history is discounted by
    #: γ = 2^(−Σw / half_life) (a weight: rows, for unit weights). None: off.
    half_life: float | None = None
    #: Contract v4. "cholesky" (the information matrix J̃) or "qr" (the square-root
    #: information R̃, z̃ and Householder QR of stacked rows: docs/numerics.md).
    factorization: str = "cholesky"

    @property
    def penalized(self) -> bool:
        """Whether batches may carry an L1 term (alpha > 0, or a positive λ schedule)."""
        return self.alpha > 0 or bool(self.lambda_scale)

    def features(self) -> tuple[str, ...]:
        """The contract-v3 features this config needs of an engine (CONTRACT_FEATURES)."""
        wanted = []
        if self.lambda_scale is not None:
            wanted.append("lambda_schedule")
        if self.curvature == "smoothed":
            wanted.append("smoothed_curvature")
        if self.inference_matrices:
            wanted.append("inference_matrices")
        if self.half_life is not None:
            wanted.append("forgetting")
        if self.factorization == "qr":
            wanted.append("qr")
        return tuple(wanted)

    def batch_lambda(self, tau: float, n_total: float, p: int) -> float:
        """The batch's λ: alpha, or lambda_scale · τ · √(q / N_b) under the schedule."""
        if self.lambda_scale is None:
            return float(self.alpha)
        return float(self.lambda_scale) * float(tau) * math.sqrt(log_features(p) / n_total)

    def batch_bandwidth(self, tau: float, scale: float, n_total: float, p: int) -> float:
        """h_b = min(bandwidth_scale · s / (√N_b · q), τ_b): s = the batch's scale when τ is
        adaptive (scale-equivariant), 1 when tau is fixed (the seed's absolute units). In
        float64; the caller rounds it to the computation dtype."""
        unit = 1.0 if self.tau is not None else float(scale)
        h = float(self.bandwidth_scale) * unit / (math.sqrt(n_total) * log_features(p))
        return min(h, float(tau))

    def validate(self) -> None:
        """Raise TypeError or ValueError naming a parameter that is not valid. A Config is
        frozen, so one that passed is remembered as valid: every engine validates every batch's
        config, and an estimator hands them the same one while its parameters stay."""
        if self.__dict__.get("_valid"):
            return
        self._check()
        object.__setattr__(self, "_valid", True)

    def _check(self) -> None:
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
        _check_real("lambda_scale", self.lambda_scale, low=0.0, strict=False, allow_none=True)
        if self.lambda_scale is not None and self.alpha > 0:
            raise ValueError(
                f"alpha={self.alpha!r} and lambda_scale={self.lambda_scale!r} are both set: "
                "lambda_scale replaces alpha by the schedule λ_b = lambda_scale · τ_b · "
                "√(log(max(p, 2)) / N_b); set one of them (alpha=0 with the schedule)")
        if self.curvature not in CURVATURES:
            raise ValueError(f"curvature must be one of {CURVATURES}, got {self.curvature!r}")
        _check_real("bandwidth_scale", self.bandwidth_scale, low=0.0, strict=True)
        if not isinstance(self.inference_matrices, (bool, np.bool_)):
            raise TypeError(
                f"inference_matrices must be a bool, got {self.inference_matrices!r}")
        _check_real("half_life", self.half_life, low=0.0, strict=True, allow_none=True)
        if not isinstance(self.factorization, str) or self.factorization not in FACTORIZATIONS:
            raise ValueError(
                f"factorization must be one of {FACTORIZATIONS}, got {self.factorization!r}")

    def discount(self, batch_weight: float) -> float | None:
        """γ_b = 2^(−Σw_b / half_life) in float64, or None without forgetting."""
        if self.half_life is None:
            return None
        return 2.0 ** (-float(batch_weight) / float(self.half_life))

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
            "lambda_scale": None if self.lambda_scale is None else float(self.lambda_scale),
            "curvature": self.curvature,
            "bandwidth_scale": float(self.bandwidth_scale),
            "inference_matrices": bool(self.inference_matrices),
            "half_life": None if self.half_life is None else float(self.half_life),
            "factorization": self.factorization,
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
    # Contract v3, inference (method.md): sums over the batches they cover, each taken at that
    # batch's final β_b (float64). Zero / None by default, so a native engine that does not
    # return them yet still makes a State; inference_batches says how many batches they cover
    # (fewer than batch_count after loading a format-2 checkpoint).
    score_sq_sum: float = 0.0  # S_ψ² = Σ w ψ(r)²
    curvature_sum: float = 0.0  # S_c = Σ w c
    curvature_sq_sum: float = 0.0  # Σ w c² (var(c) for the smoothed curvature)
    inference_weight: float = 0.0  # Σ w
    inference_batches: int = 0
    gram: Any = None  # G = Σ X̃ᵀ diag(w) X̃, (d, d) in the computation dtype, or None
    score_gram: Any = None  # K = Σ X̃ᵀ diag(w ψ²) X̃, likewise
    # Contract v4, factorization="qr": the square-root information R̃ (d × d, upper triangular,
    # diagonal ≥ 0) and z̃ (d), the history being ½‖R̃β − z̃‖² (core/sqrt_info.py). None in the
    # Cholesky mode. A qr state's ``information`` is R̃ᵀR̃, formed for reading only.
    information_factor: Any = None
    information_vector: Any = None

    @classmethod
    def empty(cls, d: int, dtype: Any = np.float64, xp: Any = np,
              inference_matrices: bool = False) -> State:
        matrices = {}
        if inference_matrices:
            matrices = {"gram": xp.zeros((d, d), dtype=dtype),
                        "score_gram": xp.zeros((d, d), dtype=dtype)}
        return cls(coef=xp.zeros(d, dtype=dtype), information=xp.zeros((d, d), dtype=dtype),
                   **matrices)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.coef.dtype)

    @property
    def factorization(self) -> str:
        """"qr" when the state holds square-root information, else "cholesky"."""
        return "cholesky" if self.information_factor is None else "qr"

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
    # Contract v4, the drift test: T, its degrees of freedom and P(χ²_df > T); NaN for the
    # first batch, penalized batches and a batch with no residual inside τ at β̃.
    drift_statistic: float = math.nan
    drift_df: float = math.nan
    drift_pvalue: float = math.nan
    # A penalized batch solved by LAMM: how far its last iterate is from the minimizer, in
    # coefficient units (max_j |φ s_j| / J̃_jj: s the last accepted step, J̃ the new state's
    # information; docs/numerics.md, "LAMM's step rule"); NaN otherwise.
    stationarity_step: float = math.nan
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
            "drift_statistic": float(self.drift_statistic),
            "drift_df": float(self.drift_df),
            "drift_pvalue": float(self.drift_pvalue),
            "stationarity_step": float(self.stationarity_step),
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
            drift_statistic=float(d.get("drift_statistic", math.nan)),
            drift_df=float(d.get("drift_df", math.nan)),
            drift_pvalue=float(d.get("drift_pvalue", math.nan)),
            stationarity_step=float(d.get("stationarity_step", math.nan)),
        )


def _optional_rcond(value: Any) -> float | None:
    """The engines' NaN ("no Newton system was solved") as None."""
    if value is None or math.isnan(value):
        return None
    return float(value)
