"""Engines behind the estimator, and how a backend name becomes one.

Every engine has the same call: ``update(state | None, X, y, w, config) -> (state, diagnostics)``,
pure and transactional. The reference engine is always there; native engines come from their own
distributions and are imported lazily.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .. import _native
from ..core import Config, Diagnostics, State, update
from ..core.types import CONTRACT_FEATURES
from ..core.validation import validate_batch
from ..errors import EngineNotAvailableError, NumericalError
from ..profiling import _hooks as _prof
from .cuda import CudaEngine

BACKENDS = ("auto", "numpy", "native_cpu", "cuda")


class Engine(Protocol):
    name: str

    def update(
        self, state: State | None, X: Any, y: Any, w: Any, config: Config
    ) -> tuple[State, Diagnostics]: ...


class ReferenceEngine:
    """The NumPy reference (core/update.py)."""

    name = "numpy"
    contract_features = frozenset(CONTRACT_FEATURES)

    def update(self, state, X, y, w, config, trace=None):
        return update(state, X, y, w, config, trace)


def native_state(state: State, dtype: np.dtype) -> dict[str, Any]:
    """A host state as the native CPU binding takes it: C-contiguous arrays of ``dtype``."""
    return {
        "coef": np.require(state.coef, dtype=dtype, requirements="CA"),
        "information": np.require(state.information, dtype=dtype, requirements="CA"),
        "n_samples_seen": int(state.n_samples_seen),
        "effective_weight": float(state.effective_weight),
        "batch_count": int(state.batch_count),
        "previous_lambda": float(state.previous_lambda),
        "scale": float(state.scale),
        "score_sq_sum": float(state.score_sq_sum),
        "curvature_sum": float(state.curvature_sum),
        "curvature_sq_sum": float(state.curvature_sq_sum),
        "inference_weight": float(state.inference_weight),
        "inference_batches": int(state.inference_batches),
        "gram": None if state.gram is None else np.require(state.gram, dtype=dtype,
                                                           requirements="CA"),
        "score_gram": None if state.score_gram is None else np.require(
            state.score_gram, dtype=dtype, requirements="CA"),
        # factorization="qr": the square-root information (None in the Cholesky mode).
        "information_factor": None if state.information_factor is None else np.require(
            state.information_factor, dtype=dtype, requirements="CA"),
        "information_vector": None if state.information_vector is None else np.require(
            state.information_vector, dtype=dtype, requirements="CA"),
    }


def require_features(engine: Any, config: Config) -> None:
    """A clear error when ``config`` asks for a contract-v3 feature ``engine`` lacks (an engine
    that ignored it would return another model's numbers, silently)."""
    have = getattr(engine, "contract_features", frozenset())
    missing = [f for f in config.features() if f not in have]
    if missing:
        raise ValueError(
            f"the {engine.name} engine does not implement {', '.join(missing)} (contract v3/v4, "
            "docs/method-v3.md, docs/drift.md) yet; use backend='numpy' for this configuration")


class NativeCpuEngine:
    """The C++ engine of rhuber-native-cpu.

    C-contiguous arrays of the computation dtype reach C++ without a copy; any other layout or
    dtype is converted here, once, because the binding refuses to convert anything itself.
    """

    name = "native_cpu"

    def __init__(self, module: Any, threads: int = 0, gram: str = "incremental",
                 chunk_bytes: int = 0):
        # threads 0: all cores; chunk_bytes 0: the engine's 256 KiB (docs/tuner.md, "Plans").
        self._engine = module.Engine(threads=threads, gram=gram, chunk_bytes=chunk_bytes)
        # What of contract v3 the module implements (all of it: the schedules and the inference
        # sums are formed in the engine's information pass).
        self.contract_features = frozenset(module.CONTRACT_FEATURES)
        self._numerical_error = module.NumericalError
        self._attached: Any = None  # the native profiler attached to the engine, if any

    def update(self, state, X, y, w, config, trace=None):
        # trace: None, or a list receiving one dict per solver iteration (docs/tracing.md).
        config.validate()
        # The C++ engine scans the values (finiteness, weights) itself; here only shapes, dtypes.
        X, y, w = validate_batch(X, y, w, state, config.fit_intercept, check_values=False)
        # Aligned as well as C-contiguous: OpenBLAS kernels fault on an array at an address
        # that is not a multiple of its item size (what unpickling inline data can give).
        X, y, w = (np.require(a, requirements="CA") for a in (X, y, w))
        d = X.shape[1] + int(config.fit_intercept)
        if state is None or state.batch_count == 0:
            state = State.empty(d, X.dtype)
        active = _prof.ACTIVE
        profiler = None if active is None else active.native
        if profiler is not self._attached:
            # The active profile's C++ profiler times this engine's bricks (docs/profiling.md).
            self._engine.set_profiler(profiler)
            self._attached = profiler
        try:
            out, diag = self._engine.update(native_state(state, X.dtype), X, y, w,
                                            config.native_dict(X.dtype), trace)
        except self._numerical_error as exc:
            raise NumericalError(str(exc)) from exc
        return State(**out), Diagnostics.from_dict(diag)


def native_cpu_available() -> bool:
    try:
        _native.load("native_cpu")
    except EngineNotAvailableError:
        return False
    return True


def make_engine(backend: str, device: int | None = None, *, threads: int | None = None,
                gram: str | None = None, chunk_kib: int | None = None) -> Engine:
    """The engine for ``backend``; "auto" prefers native_cpu and falls back to the reference.

    ``threads``, ``gram`` and ``chunk_kib`` configure native_cpu (None: the engine's default:
    all cores, incremental, 256 KiB; see rhuber.engines.plans.Plan); the numpy and cuda
    engines have no such knobs and ignore them.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "auto":
        backend = "native_cpu" if native_cpu_available() else "numpy"
    if backend == "numpy":
        return ReferenceEngine()
    if backend == "native_cpu":
        return NativeCpuEngine(_native.load("native_cpu"), threads=threads or 0,
                               gram=gram or "incremental",
                               chunk_bytes=0 if chunk_kib is None else int(chunk_kib) * 1024)
    return CudaEngine(_native.load("cuda"), device=0 if device is None else int(device))
