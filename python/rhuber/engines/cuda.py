"""The CUDA engine as the estimator sees it: ``update(state, X, y, w, config) -> (state, diag)``,
like every engine in rhuber.engines, over the ctypes binding of librh_cuda
(:mod:`rhuber._native.cuda`, rhuber-native-cuda).

Host (NumPy) batches are validated and converted here exactly as for the native CPU engine, then
staged to the device by the engine. Device tensors (CuPy, PyTorch CUDA, TensorFlow eager GPU) are
read in place through DLPack (see :mod:`.dlpack`) and are never converted.

The information matrix stays on the device between batches: the engine keeps one device state
per (dtype, dimension) and remembers which :class:`~rhuber.core.State` it holds. When
the next update is handed that same object, nothing is uploaded; any other state (a checkpoint,
another engine's) is uploaded first. Returned states have read-only arrays, so the object still
describes what the device holds.

Profiling (docs/cuda.md, "Profiling"): while a ``rhuber.profile()`` is active, the engine
times its bricks on CUDA events of its stream with its own C++ profiler (per_batch mode: one read
per batch). That profiler lives in librh_cuda, apart from the profile's, and the two are not
merged: read it with :meth:`CudaEngine.profile_report` (the bricks report as a dict) or
:meth:`CudaEngine.profile_trace` (Chrome trace JSON).
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..adapters import as_host_input
from ..core import Config, Diagnostics, State
from ..core.validation import validate_batch
from ..errors import EngineNotAvailableError
from ..profiling import _hooks as _prof
from . import dlpack


@dataclass(frozen=True)
class AbiCodes:
    """The codes of rh_cuda.h this wrapper passes, read from the module (``CONSTANTS``)."""

    dtypes: dict[str, int]
    device_cpu: int
    device_cuda: int
    profile_off: int
    profile_per_batch: int
    format_report: int
    format_trace: int

    @classmethod
    def from_constants(cls, c: dict[str, int]) -> AbiCodes:
        return cls(dtypes={"float32": c["RH_CUDA_FLOAT32"], "float64": c["RH_CUDA_FLOAT64"]},
                   device_cpu=c["RH_CUDA_DEVICE_CPU"], device_cuda=c["RH_CUDA_DEVICE_CUDA"],
                   profile_off=c["RH_CUDA_PROFILE_OFF"],
                   profile_per_batch=c["RH_CUDA_PROFILE_PER_BATCH"],
                   format_report=c["RH_CUDA_PROFILE_FORMAT_REPORT"],
                   format_trace=c["RH_CUDA_PROFILE_FORMAT_TRACE"])

    def host_descriptor(self, a: np.ndarray) -> tuple[int, int, int, int, int, int, int, int]:
        rows = a.shape[0]
        cols = 1 if a.ndim == 1 else a.shape[1]
        return (a.ctypes.data, rows, cols, cols, self.dtypes[a.dtype.name], self.device_cpu, 0,
                0)


class CudaEngine:
    """backend="cuda": one engine on one device, with its own stream.

    Parameters
    ----------
    native : module
        :mod:`rhuber._native.cuda` (``rhuber._native.load("cuda")``).
    device : int
        CUDA ordinal.
    """

    name = "cuda"

    def __init__(self, native: Any, device: int = 0):
        self._native = native
        self._abi = AbiCodes.from_constants(native.CONSTANTS)
        # What of contract v3 the module implements (rhuber.core.types.CONTRACT_FEATURES).
        self.contract_features = frozenset(native.CONTRACT_FEATURES)
        try:
            self._engine = native.Engine(device=int(device))
        except EngineNotAvailableError as exc:
            raise EngineNotAvailableError(
                f"backend='cuda' needs a CUDA GPU, and rhuber-native-cuda could not use "
                f"device {int(device)}: {exc}"
            ) from exc
        self.device = int(device)
        self._states: dict[tuple[str, int], Any] = {}
        self._resident: dict[tuple[str, int], State] = {}
        self._profiled_by: Any = None  # the profile recorder the engine's profiling follows
        self._profiling = False

    @property
    def stream(self) -> int:
        """The engine's stream (a cudaStream_t value): the stream DLPack exports are ordered on."""
        return int(self._engine.stream)

    def stats(self) -> dict[str, int]:
        """Update and allocation counters: warm batches of one shape allocate nothing."""
        return dict(self._engine.stats())

    def profile_report(self) -> dict[str, Any]:
        """The engine's bricks report (docs/bricks.md, schema of ``Profile.to_json``) of the
        latest profile: the updates and predictions made while a ``rhuber.profile()``
        was active, timed on CUDA events. Reading it synchronizes the engine's stream.
        ValueError if the engine was never profiled."""
        return json.loads(self._engine.profile_json(self._abi.format_report))

    def profile_trace(self) -> str:
        """The same profile as Chrome trace-event JSON (Perfetto, chrome://tracing)."""
        return self._engine.profile_json(self._abi.format_trace)

    def _sync_profiling(self) -> None:
        """Follow the active profile: on (a new engine profile) when one becomes active, off
        (the engine's profile kept for profile_report) when none is."""
        active = _prof.ACTIVE
        if active is self._profiled_by:
            return
        if self._profiling:
            self._engine.set_profiling(self._abi.profile_off)
            self._profiling = False
        if active is not None:
            self._engine.set_profiling(self._abi.profile_per_batch)
            self._profiling = True
        self._profiled_by = active

    def update(self, state: State | None, X: Any, y: Any, w: Any,
               config: Config) -> tuple[State, Diagnostics]:
        config.validate()
        self._sync_profiling()
        if any(dlpack.is_device_tensor(a) for a in (X, y, w)):
            return self._update_device(state, X, y, w, config)
        X, y, w = (as_host_input(a, n) for a, n in ((X, "X"), (y, "y"), (w, "sample_weight")))
        X, y, w = validate_batch(X, y, w, state, config.fit_intercept)
        X, y, w = (np.ascontiguousarray(a) for a in (X, y, w))
        previous, following = self._states_for(state, X.dtype.name, X.shape[1], config)
        diag = self._engine.update(previous, following, self._abi.host_descriptor(X),
                                   self._abi.host_descriptor(y), self._abi.host_descriptor(w),
                                   self._native_config(config, X.dtype))
        d = X.shape[1] + int(config.fit_intercept)
        return self._adopt(following, X.dtype.name, d), Diagnostics.from_dict(diag)

    def predict(self, state: State, X: Any) -> np.ndarray:
        """ŷ for host X. Device-resident prediction is refused rather than copied to the host."""
        if dlpack.is_device_tensor(X):
            raise ValueError(
                "device-resident prediction is not supported by the CUDA engine; pass a host "
                "array (the result would otherwise be copied to the host implicitly)"
            )
        X = np.ascontiguousarray(as_host_input(X, "X"), dtype=state.dtype)
        self._sync_profiling()
        d = state.n_coef
        handle = self._states_for(state, state.dtype.name, d, None, dim=d)[0]
        out = np.empty(X.shape[0], dtype=state.dtype)
        self._engine.predict(handle, self._abi.host_descriptor(X), self._abi.host_descriptor(out))
        return out

    # ----------------------------------------------------------------- plumbing

    def _update_device(self, state, X, y, w, config):
        if y is None:
            raise ValueError("y is required")
        dtype = state.dtype.name if state is not None and state.batch_count > 0 else None
        stream = self.stream
        with ExitStack() as held:
            claimed = {}
            for name, obj, ndims in (("X", X, (2,)), ("y", y, (1, 2)),
                                     ("sample_weight", w, (1,))):
                if obj is None:
                    continue
                if not dlpack.is_device_tensor(obj):
                    raise ValueError(
                        f"{name} is not a CUDA tensor but another input is; pass X, y and "
                        "sample_weight on the same device (nothing is moved implicitly)"
                    )
                capsule = dlpack.export(obj, name, stream=stream)
                tensor, info = dlpack.claim(capsule, name, device_id=self.device, ndims=ndims,
                                            dtype=dtype)
                held.callback(tensor.release)  # after the update returns: the work is done
                dtype = dtype or info.dtype
                claimed[name] = info
            x = claimed["X"]
            if "y" in claimed and len(claimed["y"].shape) == 2 and claimed["y"].shape[1] != 1:
                raise ValueError(f"y must be 1-D or a column (n, 1), got {claimed['y'].shape}")
            descriptors = {
                name: (info.data, info.shape[0], info.shape[1] if len(info.shape) == 2 else 1,
                       info.shape[1] if len(info.shape) == 2 else 1, self._abi.dtypes[info.dtype],
                       self._abi.device_cuda, info.device_id, stream)
                for name, info in claimed.items()
            }
            previous, following = self._states_for(state, x.dtype, x.shape[1], config)
            diag = self._engine.update(previous, following, descriptors["X"],
                                       descriptors["y"], descriptors.get("sample_weight"),
                                       self._native_config(config, np.dtype(x.dtype)))
        d = x.shape[1] + int(config.fit_intercept)
        return self._adopt(following, x.dtype, d), Diagnostics.from_dict(diag)

    def _states_for(self, state: State | None, dtype: str, features: int,
                    config: Config | None, *, dim: int | None = None) -> tuple[Any, Any]:
        """(previous, next) device states: the same handle, which the engine updates as a
        transaction; `previous` holds `state` (uploaded unless it is already resident)."""
        d = dim if dim is not None else features + int(config.fit_intercept)
        if state is not None and state.batch_count > 0:
            d = state.n_coef  # a mismatch with the batch is reported by the engine
        key = (dtype, d)
        handle = self._states.get(key)
        if handle is None:
            handle = self._states[key] = self._engine.new_state(dtype, d)
            self._resident[key] = None
        if state is None or state.batch_count == 0:
            state = State.empty(d, np.dtype(dtype))  # a new stream: forget the resident one
        if self._resident[key] is not state:
            # G and K when kept, R̃ and z̃ of a qr-mode state (the engine converts between the
            # modes as the configuration asks: rh::history_for_factorization).
            optional = [None if m is None else np.ascontiguousarray(m, dtype=dtype)
                        for m in (state.gram, state.score_gram, state.information_factor,
                                  state.information_vector)]
            handle.load(self._scalars(state, dtype),
                        np.ascontiguousarray(state.coef, dtype=dtype),
                        np.ascontiguousarray(state.information, dtype=dtype), *optional)
            self._resident[key] = state
        return handle, handle

    @staticmethod
    def _scalars(state: State, dtype: str) -> dict[str, Any]:
        return {"dtype": dtype, "n_samples_seen": int(state.n_samples_seen),
                "effective_weight": float(state.effective_weight),
                "batch_count": int(state.batch_count),
                "previous_lambda": float(state.previous_lambda), "scale": float(state.scale),
                "score_sq_sum": float(state.score_sq_sum),
                "curvature_sum": float(state.curvature_sum),
                "curvature_sq_sum": float(state.curvature_sq_sum),
                "inference_weight": float(state.inference_weight),
                "inference_batches": int(state.inference_batches)}

    def _adopt(self, handle: Any, dtype: str, d: int) -> State:
        coef = np.empty(d, dtype=dtype)
        information = np.empty((d, d), dtype=dtype)
        gram = np.empty((d, d), dtype=dtype)
        score_gram = np.empty((d, d), dtype=dtype)
        factor = np.empty((d, d), dtype=dtype)
        vector = np.empty(d, dtype=dtype)
        scalars = handle.read(coef, information, gram, score_gram, factor, vector)
        arrays = {"coef": coef, "information": information}
        if scalars.pop("has_matrices"):
            arrays.update(gram=gram, score_gram=score_gram)
        if scalars.pop("has_factor"):
            arrays.update(information_factor=factor, information_vector=vector)
        for a in arrays.values():
            a.flags.writeable = False
        state = State(**arrays, **scalars)
        self._resident[(dtype, d)] = state
        return state

    @staticmethod
    def _native_config(config: Config, dtype: np.dtype) -> dict[str, Any]:
        if config.penalized and config.l1_solver != "lamm":
            raise ValueError(
                f"l1_solver={config.l1_solver!r} is an opt-in variant of the native CPU engine "
                "(backend='native_cpu'); the CUDA engine solves L1 batches with the contract's "
                "LAMM (l1_solver='lamm')")
        return config.native_dict(dtype)
