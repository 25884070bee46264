"""The ctypes binding of librh_cuda (native/include/rh_cuda.h): the CUDA engine.

    engine = Engine(device=0)                 # its own stream
    state = engine.new_state("float64", d)    # resident on the device
    diag = engine.update(state, state, X, y, w, config)
    scalars = state.read(coef_out, information_out, gram_out, score_gram_out)

Arrays arrive as descriptors (data address, rows, cols, row stride, dtype code, device type,
device id, stream), built by rhuber.engines.cuda from NumPy arrays or claimed DLPack capsules,
which that layer keeps alive (and releases) around the call; the codes they carry are this
module's CONSTANTS (rh_cuda.h's, checked against native/contracts/rh_cuda_contract.json by
tests/test_cuda_abi.py). ctypes releases the GIL while the library runs. A failed call raises
the exception its status maps to, with the library's message.
"""

from __future__ import annotations

import ctypes
from ctypes import (
    POINTER,
    c_char_p,
    c_double,
    c_int,
    c_int32,
    c_int64,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EngineNotAvailableError, NumericalError

CONSTANTS = {
    "RH_CUDA_ABI_VERSION_MAJOR": 5, "RH_CUDA_ABI_VERSION_MINOR": 0,
    "RH_CUDA_OK": 0, "RH_CUDA_ERROR_INVALID_ARGUMENT": 1, "RH_CUDA_ERROR_NUMERICAL": 2,
    "RH_CUDA_ERROR_NO_DEVICE": 3, "RH_CUDA_ERROR_OUT_OF_MEMORY": 4,
    "RH_CUDA_ERROR_UNSUPPORTED": 5, "RH_CUDA_ERROR_CUDA": 6, "RH_CUDA_ERROR_INTERNAL": 7,
    "RH_CUDA_FLOAT32": 1, "RH_CUDA_FLOAT64": 2, "RH_CUDA_DEVICE_CPU": 1, "RH_CUDA_DEVICE_CUDA": 2,
    "RH_CUDA_STREAM_NONE": 0, "RH_CUDA_STREAM_LEGACY": 1, "RH_CUDA_STREAM_PER_THREAD": 2,
    "RH_CUDA_SOLVER_CHOLESKY": 0, "RH_CUDA_SOLVER_LU": 1, "RH_CUDA_SOLVER_SVD": 2,
    "RH_CUDA_SOLVER_LAMM": 3, "RH_CUDA_SOLVER_QR": 4, "RH_CUDA_PROFILE_OFF": 0,
    "RH_CUDA_PROFILE_PER_BATCH": 1,
    "RH_CUDA_PROFILE_DEFERRED": 2, "RH_CUDA_PROFILE_FORMAT_REPORT": 0,
    "RH_CUDA_PROFILE_FORMAT_TRACE": 1, "RH_CUDA_CURVATURE_INDICATOR": 0,
    "RH_CUDA_CURVATURE_SMOOTHED": 1, "RH_CUDA_FACTORIZATION_CHOLESKY": 0,
    "RH_CUDA_FACTORIZATION_QR": 1,
}
ABI_VERSION = CONSTANTS["RH_CUDA_ABI_VERSION_MAJOR"] << 16 | CONSTANTS["RH_CUDA_ABI_VERSION_MINOR"]
LIBRARY = f"librh_cuda.so.{CONSTANTS['RH_CUDA_ABI_VERSION_MAJOR']}"
# What of contracts v3 and v4 the engine implements (rhuber.core.types.CONTRACT_FEATURES).
CONTRACT_FEATURES = ("lambda_schedule", "smoothed_curvature", "inference_sums",
                     "inference_matrices", "forgetting", "drift_test", "qr")
SOLVERS = ("cholesky", "lu", "svd", "lamm", "qr")  # RH_CUDA_SOLVER_* by value
FACTORIZATIONS = ("cholesky", "qr")  # RH_CUDA_FACTORIZATION_* by value
_DTYPES = {"float32": CONSTANTS["RH_CUDA_FLOAT32"], "float64": CONSTANTS["RH_CUDA_FLOAT64"]}


class Array(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("rows", c_int64), ("cols", c_int64),
                ("row_stride", c_int64), ("dtype", c_int32), ("device_type", c_int32),
                ("device_id", c_int32), ("reserved", c_int32), ("stream", c_uint64)]


class EngineOptions(ctypes.Structure):
    _fields_ = [("device", c_int32), ("borrow_stream", c_int32), ("stream", c_uint64)]


class Config(ctypes.Structure):
    _fields_ = [("fit_intercept", c_int32), ("has_tau", c_int32), ("has_tol", c_int32),
                ("reserved", c_int32), ("epsilon", c_double), ("tau", c_double),
                ("alpha", c_double), ("ridge", c_double), ("tol", c_double),
                ("max_iter", c_int64), ("has_lambda_scale", c_int32), ("curvature", c_int32),
                ("inference_matrices", c_int32), ("reserved2", c_int32),
                ("lambda_scale", c_double), ("bandwidth_scale", c_double),
                ("has_half_life", c_int32), ("factorization", c_int32),
                ("half_life", c_double)]


class StateInfo(ctypes.Structure):
    _fields_ = [("dtype", c_int32), ("has_factor", c_int32), ("dim", c_int64),
                ("n_samples_seen", c_int64), ("effective_weight", c_double),
                ("batch_count", c_int64), ("previous_lambda", c_double), ("scale", c_double),
                ("score_sq_sum", c_double), ("curvature_sum", c_double),
                ("curvature_sq_sum", c_double), ("inference_weight", c_double),
                ("inference_batches", c_int64), ("has_matrices", c_int32),
                ("reserved2", c_int32)]


class Diagnostics(ctypes.Structure):
    _fields_ = [("converged", c_int32), ("solver", c_int32), ("n_iter", c_int64),
                ("objective", c_double), ("lambda", c_double), ("bandwidth", c_double),
                ("line_search_halvings", c_int64), ("rcond", c_double),
                ("drift_statistic", c_double), ("drift_df", c_double),
                ("drift_pvalue", c_double), ("stationarity_step", c_double)]


class EngineStats(ctypes.Structure):
    _fields_ = [("updates", c_int64), ("device_allocations", c_int64),
                ("device_bytes", c_int64), ("pinned_bytes", c_int64)]


STRUCTS = {"rh_cuda_array": Array, "rh_cuda_engine_options": EngineOptions,
           "rh_cuda_config": Config, "rh_cuda_state_info": StateInfo,
           "rh_cuda_diagnostics": Diagnostics, "rh_cuda_engine_stats": EngineStats}

_P = c_void_p
_A = POINTER(Array)
_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "rh_cuda_abi_version": (c_uint32, []),
    "rh_cuda_last_error": (c_char_p, []),
    "rh_cuda_status_name": (c_char_p, [c_int]),
    "rh_cuda_device_count": (c_int, [POINTER(c_int32)]),
    "rh_cuda_engine_create": (c_int, [POINTER(EngineOptions), POINTER(_P)]),
    "rh_cuda_engine_free": (c_int, [_P]),
    "rh_cuda_engine_stream": (c_int, [_P, POINTER(c_uint64)]),
    "rh_cuda_engine_stats_get": (c_int, [_P, POINTER(EngineStats)]),
    "rh_cuda_engine_set_profiling": (c_int, [_P, c_int32]),
    "rh_cuda_engine_profile_json": (c_int, [_P, c_int32, _P, c_uint64, POINTER(c_uint64)]),
    "rh_cuda_state_create": (c_int, [_P, c_int32, c_int64, POINTER(_P)]),
    "rh_cuda_state_free": (c_int, [_P]),
    "rh_cuda_state_load": (c_int, [_P, POINTER(StateInfo), _A, _A, _A, _A]),
    "rh_cuda_state_read": (c_int, [_P, POINTER(StateInfo), _A, _A, _A, _A]),
    "rh_cuda_state_load_factor": (c_int, [_P, POINTER(StateInfo), _A, _A, _A, _A, _A, _A]),
    "rh_cuda_state_read_factor": (c_int, [_P, POINTER(StateInfo), _A, _A, _A, _A, _A, _A]),
    "rh_cuda_update": (c_int, [_P, _P, _A, _A, _A, POINTER(Config), _P, POINTER(Diagnostics)]),
    "rh_cuda_predict": (c_int, [_P, _P, _A, _A]),
}

LIB: Any = None  # the loaded CDLL (open_library); None until rhuber._native.load("cuda")
LIBRARY_PATH: Path | None = None


def open_library(path: Path) -> ctypes.CDLL:
    """Load librh_cuda at ``path`` and declare its calls (OSError when it cannot load, ImportError
    for another ABI major, or an older minor that lacks calls this binding makes)."""
    dll = ctypes.CDLL(str(path))
    dll.rh_cuda_abi_version.restype = c_uint32
    dll.rh_cuda_abi_version.argtypes = []
    version = dll.rh_cuda_abi_version()
    major, minor = version >> 16, version & 0xFFFF
    if major != CONSTANTS["RH_CUDA_ABI_VERSION_MAJOR"] or minor < CONSTANTS[
            "RH_CUDA_ABI_VERSION_MINOR"]:
        raise ImportError(f"{path} speaks the CUDA C ABI {major}.{minor}; this rhuber binds "
                          f"{CONSTANTS['RH_CUDA_ABI_VERSION_MAJOR']}."
                          f"{CONSTANTS['RH_CUDA_ABI_VERSION_MINOR']} or a later minor")
    for name, (restype, argtypes) in _SIGNATURES.items():
        function = getattr(dll, name)
        function.restype = restype
        function.argtypes = argtypes
    return dll


def bind(dll: ctypes.CDLL, path: Path) -> None:
    """Make ``dll`` the library this module's classes call (rhuber._native.load, once)."""
    # The module is the binding: its globals name the one library loaded in this process.
    global LIB, LIBRARY_PATH
    LIB, LIBRARY_PATH = dll, path


def error(status: int, message: str) -> Exception:
    """The exception of a status code."""
    c = CONSTANTS
    if status in (c["RH_CUDA_ERROR_INVALID_ARGUMENT"], c["RH_CUDA_ERROR_UNSUPPORTED"]):
        return ValueError(message)
    if status == c["RH_CUDA_ERROR_NUMERICAL"]:
        return NumericalError(message)
    if status == c["RH_CUDA_ERROR_NO_DEVICE"]:
        return EngineNotAvailableError(message)
    if status == c["RH_CUDA_ERROR_OUT_OF_MEMORY"]:
        return MemoryError(message)
    return RuntimeError(message)


def check(status: int) -> None:
    """Raise the exception of a failed call, with the message the library left on this thread."""
    if status != CONSTANTS["RH_CUDA_OK"]:
        raise error(status, LIB.rh_cuda_last_error().decode(errors="replace"))


def abi_version() -> int:
    """The ABI version of the loaded librh_cuda."""
    return int(LIB.rh_cuda_abi_version())


def device_count() -> int:
    """CUDA devices visible to the engine; EngineNotAvailableError when there are none."""
    count = c_int32()
    check(LIB.rh_cuda_device_count(ctypes.byref(count)))
    return count.value


def to_array(descriptor: tuple | None) -> Any:
    """An rh_cuda_array from a descriptor tuple (None: a NULL pointer)."""
    if descriptor is None:
        return None
    data, rows, cols, stride, dtype, device_type, device_id, stream = descriptor
    return ctypes.byref(Array(data, rows, cols, stride, dtype, device_type, device_id, 0,
                              stream))


def host_array(a: np.ndarray | None, *, writable: bool = False) -> Any:
    """An rh_cuda_array over a C-contiguous host array of float32/float64 (None: NULL). Arrays the
    engine only reads may be read-only; those it writes must be writable."""
    if a is None:
        return None
    if not a.flags.c_contiguous or a.dtype.name not in _DTYPES:
        raise ValueError("state arrays must be C-contiguous float32 or float64")
    if writable and not a.flags.writeable:
        raise ValueError("an output array must be writable")
    rows = a.shape[0] if a.ndim >= 1 else 1
    cols = a.shape[1] if a.ndim == 2 else 1
    return ctypes.byref(Array(a.ctypes.data, rows, cols, cols, _DTYPES[a.dtype.name],
                              CONSTANTS["RH_CUDA_DEVICE_CPU"], 0, 0,
                              CONSTANTS["RH_CUDA_STREAM_NONE"]))


def config_struct(config: dict) -> Config:
    """The rh_cuda_config of a config dict (rhuber.core.Config.native_dict); l1_solver is not
    part of the ABI (the engine solves L1 batches with LAMM)."""
    curvatures = ("indicator", "smoothed")
    if config["curvature"] not in curvatures:
        raise ValueError(f"config['curvature'] must be one of {curvatures}, "
                         f"got {config['curvature']!r}")
    factorization = config.get("factorization", "cholesky")
    if factorization not in FACTORIZATIONS:
        raise ValueError(f"config['factorization'] must be one of {FACTORIZATIONS}, "
                         f"got {factorization!r}")

    def optional(key: str) -> tuple[int, float]:
        value = config.get(key)
        return (0, 0.0) if value is None else (1, float(value))

    has_tau, tau = optional("tau")
    has_tol, tol = optional("tol")
    has_lambda_scale, lambda_scale = optional("lambda_scale")
    has_half_life, half_life = optional("half_life")
    return Config(fit_intercept=int(bool(config["fit_intercept"])), has_tau=has_tau,
                  has_tol=has_tol, epsilon=float(config["epsilon"]), tau=tau,
                  alpha=float(config["alpha"]), ridge=float(config["ridge"]), tol=tol,
                  max_iter=int(config["max_iter"]), has_lambda_scale=has_lambda_scale,
                  curvature=curvatures.index(config["curvature"]),
                  inference_matrices=int(bool(config["inference_matrices"])),
                  lambda_scale=lambda_scale, bandwidth_scale=float(config["bandwidth_scale"]),
                  has_half_life=has_half_life, half_life=half_life,
                  factorization=FACTORIZATIONS.index(factorization))


class State:
    """A renewable state resident on the engine's device (rh_cuda_state_t)."""

    def __init__(self, handle: c_void_p) -> None:
        self._handle = handle
        self._free = LIB.rh_cuda_state_free

    def __del__(self) -> None:
        if getattr(self, "_handle", None):
            self._free(self._handle)

    def load(self, scalars: dict, coef: np.ndarray, information: np.ndarray,
             gram: np.ndarray | None, score_gram: np.ndarray | None,
             factor: np.ndarray | None = None, vector: np.ndarray | None = None) -> None:
        """Replace the state with host arrays (read-only ones too) and scalars; gram and
        score_gram None when the state keeps no inference matrices, factor (R̃) and vector (z̃)
        None when it holds no square-root information."""
        if (gram is None) != (score_gram is None):
            raise ValueError("gram and score_gram come together: pass both or neither")
        if (factor is None) != (vector is None):
            raise ValueError("factor and vector (R̃ and z̃) come together: pass both or neither")
        if scalars["dtype"] not in _DTYPES:
            raise ValueError(f"dtype must be 'float32' or 'float64', got {scalars['dtype']!r}")
        info = StateInfo(
            dtype=_DTYPES[scalars["dtype"]], dim=coef.shape[0] if coef.ndim == 1 else 0,
            n_samples_seen=int(scalars["n_samples_seen"]),
            effective_weight=float(scalars["effective_weight"]),
            batch_count=int(scalars["batch_count"]),
            previous_lambda=float(scalars["previous_lambda"]), scale=float(scalars["scale"]),
            score_sq_sum=float(scalars["score_sq_sum"]),
            curvature_sum=float(scalars["curvature_sum"]),
            curvature_sq_sum=float(scalars["curvature_sq_sum"]),
            inference_weight=float(scalars["inference_weight"]),
            inference_batches=int(scalars["inference_batches"]),
            has_matrices=int(gram is not None), has_factor=int(factor is not None))
        check(LIB.rh_cuda_state_load_factor(self._handle, ctypes.byref(info), host_array(coef),
                                            host_array(information), host_array(gram),
                                            host_array(score_gram), host_array(factor),
                                            host_array(vector)))

    def read(self, coef_out: np.ndarray, information_out: np.ndarray, gram_out: np.ndarray,
             score_gram_out: np.ndarray, factor_out: np.ndarray | None = None,
             vector_out: np.ndarray | None = None) -> dict:
        """Write coef, information and (when the state keeps them) the inference matrices and
        R̃, z̃ into host arrays; return the scalars, has_matrices and has_factor among them."""
        info = StateInfo()
        check(LIB.rh_cuda_state_read_factor(
            self._handle, ctypes.byref(info),
            *(host_array(a, writable=True) for a in
              (coef_out, information_out, gram_out, score_gram_out, factor_out, vector_out))))
        names = ("n_samples_seen", "effective_weight", "batch_count", "previous_lambda", "scale",
                 "score_sq_sum", "curvature_sum", "curvature_sq_sum", "inference_weight",
                 "inference_batches")
        out = {name: getattr(info, name) for name in names}
        out["has_matrices"] = bool(info.has_matrices)
        out["has_factor"] = bool(info.has_factor)
        return out


class Engine:
    """One CUDA engine bound to one device (rh_cuda_engine_t). stream: 0 for the engine's own
    stream, else a cudaStream_t value to borrow."""

    def __init__(self, device: int = 0, stream: int = 0) -> None:
        options = EngineOptions(device=int(device), borrow_stream=int(stream != 0),
                                stream=int(stream))
        handle = c_void_p()
        check(LIB.rh_cuda_engine_create(ctypes.byref(options), ctypes.byref(handle)))
        self._handle = handle
        self._free = LIB.rh_cuda_engine_free

    def __del__(self) -> None:
        if getattr(self, "_handle", None):
            self._free(self._handle)

    @property
    def stream(self) -> int:
        value = c_uint64()
        check(LIB.rh_cuda_engine_stream(self._handle, ctypes.byref(value)))
        return value.value

    def stats(self) -> dict[str, int]:
        s = EngineStats()
        check(LIB.rh_cuda_engine_stats_get(self._handle, ctypes.byref(s)))
        return {name: getattr(s, name) for name, _ in EngineStats._fields_}

    def set_profiling(self, mode: int) -> None:
        """RH_CUDA_PROFILE_*: 0 off, 1 per_batch, 2 deferred (CUDA events on the stream)."""
        check(LIB.rh_cuda_engine_set_profiling(self._handle, int(mode)))

    def profile_json(self, format: int = 0) -> str:
        """The engine's profile as JSON: 0 the bricks report, 1 the Chrome trace. The size first,
        then the text; an update on another thread may grow it in between: then ask again."""
        needed = c_uint64()
        check(LIB.rh_cuda_engine_profile_json(self._handle, format, None, 0,
                                              ctypes.byref(needed)))
        while True:
            capacity = needed.value
            buffer = ctypes.create_string_buffer(capacity)
            status = LIB.rh_cuda_engine_profile_json(self._handle, format, buffer, capacity,
                                                     ctypes.byref(needed))
            if status == CONSTANTS["RH_CUDA_OK"]:
                return buffer.value.decode()
            if needed.value <= capacity:
                check(status)

    def new_state(self, dtype: str, dim: int) -> State:
        if dtype not in _DTYPES:
            raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
        handle = c_void_p()
        check(LIB.rh_cuda_state_create(self._handle, _DTYPES[dtype], int(dim),
                                       ctypes.byref(handle)))
        return State(handle)

    def update(self, previous: State, following: State, X: tuple, y: tuple, w: tuple | None,
               config: dict) -> dict:
        """One batch transition; X, y and w are descriptors, config a Config.native_dict."""
        c = config_struct(config)
        d = Diagnostics()
        check(LIB.rh_cuda_update(self._handle, previous._handle, to_array(X), to_array(y),
                                 to_array(w), ctypes.byref(c), following._handle,
                                 ctypes.byref(d)))
        return {"converged": bool(d.converged), "n_iter": d.n_iter, "objective": d.objective,
                "lambda": getattr(d, "lambda"), "bandwidth": d.bandwidth,
                "solver": SOLVERS[d.solver] if 0 <= d.solver < len(SOLVERS) else "lamm",
                "line_search_halvings": d.line_search_halvings, "rcond": d.rcond,
                "drift_statistic": d.drift_statistic, "drift_df": d.drift_df,
                "drift_pvalue": d.drift_pvalue, "stationarity_step": d.stationarity_step}

    def predict(self, state: State, X: tuple, out: tuple) -> None:
        check(LIB.rh_cuda_predict(self._handle, state._handle, to_array(X), to_array(out)))
