"""Engines behind the estimator, and how a backend name becomes one.

Every engine has the same call: ``update(state | None, X, y, w, config) -> (state, diagnostics)``,
pure and transactional. The reference engine is always there; native engines come from their own
distributions and are imported lazily.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np

from .. import _native
from ..core import Config, Diagnostics, State, update
from ..core.types import CONTRACT_FEATURES
from ..core.validation import validate_batch
from ..errors import EngineNotAvailableError
from ..profiling import _hooks as _prof

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
    """The C++ engine of rhuber-native-cpu, through its C ABI (rhuber._native.cpu).

    The batch is checked here for shapes and dtypes only: the engine scans the values once, and
    its error names the first bad row. C-contiguous arrays of the computation dtype reach C++
    without a copy, the state's included; any other layout or dtype is converted here, once.
    The new state's arrays are allocated here and written by the engine.
    """

    name = "native_cpu"

    def __init__(self, module: Any, threads: int = 0, gram: str = "incremental",
                 chunk_bytes: int = 0):
        # threads 0: all cores; chunk_bytes 0: the engine's 256 KiB (docs/tuner.md, "Plans").
        self._native = module
        self._engine = module.Engine(threads=threads, gram=gram, chunk_bytes=chunk_bytes)
        # What of contracts v3 and v4 the library implements (all of it).
        self.contract_features = frozenset(module.CONTRACT_FEATURES)
        self._attached: Any = None  # the native profiler attached to the engine, if any
        self._configs: dict[tuple[Config, str], Any] = {}  # validated, as C structs
        self._last_config: tuple[Any, str, Any] = (None, "", None)  # (config, dtype, struct)
        # The last state returned and the struct the engine wrote it into: a stream that goes on
        # hands that state back, and the struct is then the next update's input as it is.
        self._last_state: tuple[Any, Any] = (None, None)
        self._ones = np.ones(0)  # the unit weights of the last batch length

    def _config(self, config: Config, dtype: np.dtype) -> Any:
        """The config as an rh_cpu_config, validated once per config and dtype."""
        last = self._last_config
        if config is last[0] and dtype.char == last[1]:
            return last[2]
        key = (config, dtype.char)
        struct = self._configs.get(key)
        if struct is None:
            config.validate()
            native = self._native
            struct = native.Config(
                fit_intercept=bool(config.fit_intercept), has_tau=config.tau is not None,
                has_tol=True, has_lambda_scale=config.lambda_scale is not None,
                has_half_life=config.half_life is not None,
                l1_solver=native.L1_SOLVERS.index(config.l1_solver),
                curvature=native.CURVATURES.index(config.curvature),
                inference_matrices=bool(config.inference_matrices),
                epsilon=float(config.epsilon), tau=float(config.tau or 0.0),
                alpha=float(config.alpha), ridge=float(config.ridge),
                tol=config.resolved_tol(dtype), max_iter=int(config.max_iter),
                lambda_scale=float(config.lambda_scale or 0.0),
                bandwidth_scale=float(config.bandwidth_scale),
                half_life=float(config.half_life or 0.0),
                factorization=native.FACTORIZATIONS.index(config.factorization))
            if len(self._configs) > 64:
                self._configs.clear()
            self._configs[key] = struct
        self._last_config = (config, dtype.char, struct)
        return struct

    def update(self, state, X, y, w, config, trace=None):
        # trace: None, or a list receiving one dict per solver iteration (docs/tracing.md).
        native = self._native
        batch = self._ready_batch(X, y, w, state, config.fit_intercept)
        if batch is None:
            X, y, w = validate_batch(X, y, w, state, config.fit_intercept, check_values=False)
            # Aligned as well as C-contiguous: OpenBLAS kernels fault on an array at an address
            # that is not a multiple of its item size (what unpickling inline data can give).
            X, y, w = (a if a.flags.carray else np.require(a, requirements="CA")
                       for a in (X, y, w))
        else:
            X, y, w = batch
        dtype = X.dtype
        cstruct = self._config(config, dtype)
        d = X.shape[1] + int(config.fit_intercept)
        if state is None or state.batch_count == 0:
            state = State.empty(d, dtype)
        active = _prof.ACTIVE
        profiler = None if active is None else active.native
        if profiler is not self._attached:
            # The active profile's C++ profiler times this engine's bricks (docs/profiling.md).
            self._engine.set_profiler(profiler)
            self._attached = profiler
        last_state, previous = self._last_state
        if state is not last_state or previous.dtype != native.DTYPE_CODES[dtype]:
            previous = self._state_struct(state, dtype, d)
        # The new state's arrays: views of one buffer the engine writes (one address to take).
        keeps = config.inference_matrices or state.gram is not None
        square_root = config.factorization == "qr"
        buffer = np.empty(d + (3 if keeps else 1) * d * d + (d * d + d if square_root else 0),
                          dtype)
        coef, information = buffer[:d], buffer[d:d + d * d].reshape(d, d)
        gram = score_gram = None
        base, item = buffer.ctypes.data, dtype.itemsize
        following = native.State(dtype=previous.dtype, dim=d, coef=base,
                                 information=base + d * item)
        if keeps:
            gram = buffer[d + d * d:d + 2 * d * d].reshape(d, d)
            score_gram = buffer[d + 2 * d * d:d + 3 * d * d].reshape(d, d)
            following.gram = base + (d + d * d) * item
            following.score_gram = base + (d + 2 * d * d) * item
        factor = vector = None
        if square_root:  # R̃ and z̃ after the rest
            start = d + (3 if keeps else 1) * d * d
            factor = buffer[start:start + d * d].reshape(d, d)
            vector = buffer[start + d * d:]
            following.information_factor = base + start * item
            following.information_vector = base + (start + d * d) * item
        batch = native.Batch(dtype=native.DTYPE_CODES[dtype], rows=X.shape[0], cols=X.shape[1],
                             X=X.ctypes.data, y=y.ctypes.data, sample_weight=w.ctypes.data)
        diag = self._engine.update(previous, batch, cstruct, following, trace)
        matrices = bool(following.has_matrices)
        new = State(
            coef=coef, information=information, n_samples_seen=following.n_samples_seen,
            effective_weight=following.effective_weight, batch_count=following.batch_count,
            previous_lambda=following.previous_lambda, scale=following.scale,
            score_sq_sum=following.score_sq_sum, curvature_sum=following.curvature_sum,
            curvature_sq_sum=following.curvature_sq_sum,
            inference_weight=following.inference_weight,
            inference_batches=following.inference_batches,
            gram=gram if matrices else None, score_gram=score_gram if matrices else None,
            information_factor=factor if following.has_square_root else None,
            information_vector=vector if following.has_square_root else None)
        self._last_state = (new, following)
        return new, Diagnostics(
            converged=bool(diag.converged), n_iter=diag.n_iter, objective=diag.objective,
            lambda_=diag.lambda_, bandwidth=diag.bandwidth, solver=native.SOLVERS[diag.solver],
            line_search_halvings=diag.line_search_halvings,
            rcond=None if math.isnan(diag.rcond) else diag.rcond,
            drift_statistic=diag.drift_statistic, drift_df=diag.drift_df,
            drift_pvalue=diag.drift_pvalue, stationarity_step=diag.stationarity_step)

    def _ready_batch(self, X: Any, y: Any, w: Any, state: State | None,
                     fit_intercept: bool) -> tuple[Any, Any, Any] | None:
        """(X, y, w) as they are when the batch is already what the engine reads: ndarrays,
        C-contiguous and aligned, of one float dtype (the state's), of matching lengths and
        width (a batch the estimator validated); None sends it through validate_batch. Unit
        weights are one cached array per length (the engine only reads them)."""
        if not (type(X) is np.ndarray and type(y) is np.ndarray and X.ndim == 2
                and y.ndim == 1 and X.dtype.char in "fd" and y.dtype == X.dtype
                and X.flags.carray and y.flags.carray and 0 < X.shape[0] == y.shape[0]):
            return None
        if state is not None and state.batch_count > 0 and (
                state.coef.dtype != X.dtype
                or state.coef.shape[0] != X.shape[1] + int(fit_intercept)):
            return None
        if w is None:
            ones = self._ones
            if ones.shape[0] != X.shape[0] or ones.dtype != X.dtype:
                ones = self._ones = np.ones(X.shape[0], X.dtype)
                ones.flags.writeable = False
            return X, y, ones
        if (type(w) is np.ndarray and w.ndim == 1 and w.dtype == X.dtype and w.flags.carray
                and w.shape[0] == X.shape[0]):
            return X, y, w
        return None

    def _state_struct(self, state: State, dtype: np.dtype, d: int) -> Any:
        """An rh_cpu_state over ``state``'s arrays (read in place when C-contiguous of dtype),
        their shapes checked: the engine reads d and d x d entries through the pointers."""
        names = ("coef", "information", "gram", "score_gram", "information_factor",
                 "information_vector")
        arrays = [_carray(getattr(state, name), dtype) for name in names]
        for first, second, what in ((2, 3, "the inference matrices"),
                                    (4, 5, "the square-root information")):
            if (arrays[first] is None) != (arrays[second] is None):
                raise ValueError(f"the state has {names[first]} but no {names[second]}, or the "
                                 f"reverse: {what} come as a pair")
        shapes = ((d,), (d, d), (d, d), (d, d), (d, d), (d,))
        for name, shape, a in zip(names, shapes, arrays, strict=True):
            if a is not None and a.shape != shape:
                raise ValueError(f"state.{name} has shape {a.shape}, expected {shape}")
        return self._native.state_struct(
            dtype, d, *arrays, n_samples_seen=int(state.n_samples_seen),
            effective_weight=float(state.effective_weight), batch_count=int(state.batch_count),
            previous_lambda=float(state.previous_lambda), scale=float(state.scale),
            score_sq_sum=float(state.score_sq_sum), curvature_sum=float(state.curvature_sum),
            curvature_sq_sum=float(state.curvature_sq_sum),
            inference_weight=float(state.inference_weight),
            inference_batches=int(state.inference_batches))


def _carray(a: Any, dtype: np.dtype) -> Any:
    """A state array as the engine reads it: itself when C-contiguous of ``dtype`` and aligned."""
    if a is None or (type(a) is np.ndarray and a.dtype == dtype and a.flags.carray):
        return a
    return np.require(a, dtype=dtype, requirements="CA")


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
    # Imported here, not with rhuber: every script pays for the modules `import rhuber` loads,
    # and the CUDA engine's binding (its dataclasses, ctypes structures) serves cuda only.
    from .cuda import CudaEngine

    return CudaEngine(_native.load("cuda"), device=0 if device is None else int(device))
