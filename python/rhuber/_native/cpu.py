"""The ctypes binding of librhuber_cpu.so (native/include/rh_cpu.h): the CPU engine, its brick
profiler, the tuner's model reader and the engine's test hooks.

The structs mirror the header's field for field (tests/test_native_abi.py checks their sizes
against the C compiler's). Arrays cross by address: the caller passes C-contiguous arrays of the
computation dtype, and nothing here copies them. A failed call raises the exception its status
maps to (:func:`check`), with the library's own message.
"""

from __future__ import annotations

import ctypes
import json
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
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..errors import ModelFormatError, NumericalError
from .dl import open_lazily

ABI_VERSION_MAJOR = 3  # RH_CPU_ABI_VERSION_MAJOR of the header this binding mirrors

OK, INVALID_ARGUMENT, NUMERICAL, OUT_OF_MEMORY, MODEL_FORMAT, INTERNAL = range(6)
FLOAT32, FLOAT64 = 1, 2
GRAMS = ("incremental", "full")  # RH_CPU_GRAM_* by index
SOLVERS = ("cholesky", "lu", "svd", "lamm", "prox_newton", "qr")  # RH_CPU_SOLVER_* by index
L1_SOLVERS = ("lamm", "prox_newton")  # RH_CPU_L1_*
CURVATURES = ("indicator", "smoothed")  # RH_CPU_CURVATURE_*
FACTORIZATIONS = ("cholesky", "qr")  # RH_CPU_FACTORIZATION_*
PHASES = ("pilot", "main")  # RH_CPU_PHASE_*
EXPORT_REPORT, EXPORT_CHROME_TRACE, EXPORT_TABLE, EXPORT_BREAKDOWN, EXPORT_ROOFLINE, \
    EXPORT_GRAPH = range(6)

DTYPE_CODES = {np.dtype(np.float32): FLOAT32, np.dtype(np.float64): FLOAT64}


class EngineOptions(ctypes.Structure):
    _fields_ = [("threads", c_int64), ("chunk_bytes", c_int64), ("gram", c_int32),
                ("reserved", c_int32)]


class Config(ctypes.Structure):
    # New fields go at the end, as in rh_cpu_config.
    _fields_ = [("fit_intercept", c_int32), ("has_tau", c_int32), ("has_tol", c_int32),
                ("has_lambda_scale", c_int32), ("has_half_life", c_int32),
                ("l1_solver", c_int32), ("curvature", c_int32),
                ("inference_matrices", c_int32), ("epsilon", c_double), ("tau", c_double),
                ("alpha", c_double), ("ridge", c_double), ("tol", c_double),
                ("max_iter", c_int64), ("lambda_scale", c_double),
                ("bandwidth_scale", c_double), ("half_life", c_double),
                ("factorization", c_int32), ("reserved", c_int32)]


class State(ctypes.Structure):
    # New fields go at the end, as in rh_cpu_state.
    _fields_ = [("dtype", c_int32), ("has_matrices", c_int32), ("dim", c_int64),
                ("coef", c_void_p), ("information", c_void_p), ("gram", c_void_p),
                ("score_gram", c_void_p), ("n_samples_seen", c_int64),
                ("effective_weight", c_double), ("batch_count", c_int64),
                ("previous_lambda", c_double), ("scale", c_double),
                ("score_sq_sum", c_double), ("curvature_sum", c_double),
                ("curvature_sq_sum", c_double), ("inference_weight", c_double),
                ("inference_batches", c_int64), ("has_square_root", c_int32),
                ("reserved", c_int32), ("information_factor", c_void_p),
                ("information_vector", c_void_p)]


class Batch(ctypes.Structure):
    _fields_ = [("dtype", c_int32), ("reserved", c_int32), ("rows", c_int64),
                ("cols", c_int64), ("X", c_void_p), ("y", c_void_p),
                ("sample_weight", c_void_p)]


class Diagnostics(ctypes.Structure):
    _fields_ = [("converged", c_int32), ("solver", c_int32), ("n_iter", c_int64),
                ("objective", c_double), ("lambda_", c_double), ("bandwidth", c_double),
                ("line_search_halvings", c_int64), ("rcond", c_double),
                ("drift_statistic", c_double), ("drift_df", c_double),
                ("drift_pvalue", c_double), ("stationarity_step", c_double)]


class TensorStats(ctypes.Structure):
    _fields_ = [("count", c_int64), ("nan", c_int64), ("inf", c_int64), ("min", c_double),
                ("max", c_double), ("mean", c_double), ("std", c_double), ("l2", c_double)]


class Iteration(ctypes.Structure):
    _fields_ = [("phase", c_int32), ("solver", c_int32), ("iteration", c_int64),
                ("rcond", c_double), ("objective", c_double), ("coef_norm", c_double),
                ("step_norm", c_double), ("step_scale", c_double), ("halvings", c_int64),
                ("search_exhausted", c_int32), ("reserved", c_int32), ("rows", c_int64),
                ("quadratic_rows", c_int64), ("residual", TensorStats), ("score", TensorStats),
                ("hessian_diagonal", TensorStats)]


TRACE_FN = ctypes.CFUNCTYPE(None, c_void_p, POINTER(Iteration))

# name: (return type, argument types) of every call bound.
_P = c_void_p
_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "rh_cpu_abi_version": (c_uint32, []),
    "rh_cpu_version": (c_char_p, []),
    "rh_cpu_last_error": (c_char_p, []),
    "rh_cpu_status_name": (c_char_p, [c_int]),
    "rh_cpu_string_free": (None, [_P]),
    "rh_cpu_contract_features": (c_char_p, []),
    "rh_cpu_blas_provider": (c_char_p, []),
    "rh_cpu_blas_threads": (c_int64, []),
    "rh_cpu_engine_create": (c_int, [POINTER(EngineOptions), POINTER(_P)]),
    "rh_cpu_engine_free": (c_int, [_P]),
    "rh_cpu_engine_options_get": (c_int, [_P, POINTER(EngineOptions)]),
    "rh_cpu_engine_set_profiler": (c_int, [_P, _P]),
    "rh_cpu_update": (c_int, [_P, POINTER(State), POINTER(Batch), POINTER(Config), TRACE_FN,
                              _P, POINTER(State), POINTER(Diagnostics)]),
    "rh_cpu_bricks_table_json": (c_int, [POINTER(_P)]),
    "rh_cpu_profiler_create": (c_int, [c_char_p, c_uint64, c_int32, c_char_p, POINTER(_P)]),
    "rh_cpu_profiler_free": (c_int, [_P]),
    "rh_cpu_profiler_set_sync_mode": (c_int, [_P, c_char_p]),
    "rh_cpu_profiler_sync_mode": (c_int, [_P, POINTER(c_char_p)]),
    "rh_cpu_profiler_clock": (c_int, [_P, POINTER(_P)]),
    "rh_cpu_profiler_brick_id": (c_int, [_P, c_char_p, POINTER(c_int32)]),
    "rh_cpu_profiler_begin_batch": (c_int, [_P, c_uint64]),
    "rh_cpu_profiler_set_iteration": (c_int, [_P, c_int64]),
    "rh_cpu_profiler_end_batch": (c_int, [_P]),
    "rh_cpu_profiler_now_ns": (c_int, [_P, POINTER(c_int64)]),
    "rh_cpu_profiler_record": (c_int, [_P, c_int32, c_int64, c_int64, c_uint64, c_uint64,
                                       c_uint64, c_int64, c_int64, c_int32]),
    "rh_cpu_profiler_set_metadata": (c_int, [_P, c_char_p, c_char_p]),
    "rh_cpu_profiler_name_thread": (c_int, [_P, c_char_p]),
    "rh_cpu_profiler_flush": (c_int, [_P]),
    "rh_cpu_profiler_reset": (c_int, [_P]),
    "rh_cpu_profiler_export": (c_int, [_P, c_int32, c_char_p, c_double, c_double,
                                       POINTER(_P)]),
    "rh_cpu_model_load": (c_int, [c_char_p, POINTER(_P)]),
    "rh_cpu_model_from_bytes": (c_int, [c_char_p, c_uint64, POINTER(_P)]),
    "rh_cpu_model_free": (c_int, [_P]),
    "rh_cpu_model_info_json": (c_int, [_P, POINTER(_P)]),
    "rh_cpu_model_predict": (c_int, [_P, _P, c_int64, c_int64, _P]),
    "rh_cpu_fault_fail_allocations": (c_int, [c_int64, c_int64]),
    "rh_cpu_fault_fail_rung": (c_int, [c_int32, c_int64]),
    "rh_cpu_fault_clear": (c_int, [POINTER(c_int64)]),
    "rh_cpu_start_gradient": (c_int, [_P, c_int32, c_int64, c_int64, _P, c_int32, c_int32,
                                      c_double, c_double, c_int32, _P, POINTER(c_double)]),
    "rh_cpu_predict": (c_int, [_P, c_int32, c_int64, c_int64, _P, c_double, c_int32, _P]),
}


class Library:
    """librhuber_cpu.so with every call's signature declared (a ctypes.CDLL: the GIL is released
    while a call runs)."""

    def __init__(self, dll: ctypes.CDLL, path: Path) -> None:
        # The version first: a library of another major may lack calls this binding declares.
        dll.rh_cpu_abi_version.restype = c_uint32
        dll.rh_cpu_abi_version.argtypes = []
        abi = dll.rh_cpu_abi_version()
        if abi >> 16 != ABI_VERSION_MAJOR:
            raise ImportError(f"{path} speaks the C ABI {abi >> 16}.{abi & 0xFFFF}; this rhuber "
                              f"binds major version {ABI_VERSION_MAJOR}")
        for name, (restype, argtypes) in _SIGNATURES.items():
            function = getattr(dll, name)
            function.restype = restype
            function.argtypes = argtypes
        self.dll = dll
        self.path = path
        self.version = dll.rh_cpu_version().decode()


def open_library(path: Path) -> Library:
    """Load the library at ``path`` (OSError when it cannot load; ImportError for another ABI)."""
    return Library(open_lazily(path), path)


LIB: Any = None  # the loaded Library's CDLL (bind); None until rhuber._native.load


def bind(library: Library) -> None:
    """Make ``library`` the one this module's classes call (rhuber._native.load, once)."""
    # The module is the binding: its globals name the one library loaded in this process.
    global LIB, __version__, CONTRACT_FEATURES, BRICKS, LIBRARY_PATH  # noqa: PLW0603
    LIB = library.dll
    LIBRARY_PATH = library.path
    __version__ = library.version
    CONTRACT_FEATURES = tuple(LIB.rh_cpu_contract_features().decode().split(","))
    BRICKS = [tuple(pair) for pair in json.loads(_take_string(LIB.rh_cpu_bricks_table_json))]
    bricks.BRICKS = BRICKS


__version__ = ""
CONTRACT_FEATURES: tuple[str, ...] = ()
BRICKS: list[tuple[str, str]] = []
LIBRARY_PATH: Path | None = None


def error(status: int, message: str) -> Exception:
    """The exception of a status code: the built-in type callers catch for the reference engine
    (ValueError, MemoryError) or rhuber's own."""
    if status == INVALID_ARGUMENT:
        return ValueError(message)
    if status == NUMERICAL:
        return NumericalError(message)
    if status == OUT_OF_MEMORY:
        return MemoryError(message)
    if status == MODEL_FORMAT:
        return ModelFormatError(message)
    return RuntimeError(message)


def check(status: int) -> None:
    """Raise the exception of a failed call, with the message the library left on this thread."""
    if status != OK:
        raise error(status, LIB.rh_cpu_last_error().decode(errors="replace"))


def _take_string(call, *args) -> str:
    """The string a call allocates (its last argument), released after it is copied."""
    out = c_void_p()
    check(call(*args, ctypes.byref(out)))
    try:
        return ctypes.string_at(out.value).decode()
    finally:
        LIB.rh_cpu_string_free(out)


def blas_info() -> dict:
    return {"provider": LIB.rh_cpu_blas_provider().decode(), "threads": LIB.rh_cpu_blas_threads()}


# ---- The L1 penalty's regime screen. ----

def start_gradient(X: np.ndarray, y: np.ndarray, *, tau: float | None, mad_factor: float,
                   fit_intercept: bool) -> tuple[np.ndarray, float] | None:
    """The screen's start gradient over all rows of ``X`` and ``y`` (C-contiguous, float32 or
    float64 each), and the τ it used (rhuber.engines.regime.start_gradient); None where no
    library is loaded in this process."""
    if LIB is None:
        return None
    rows, cols = X.shape
    gradient = np.empty(cols)
    used = c_double()
    check(LIB.rh_cpu_start_gradient(X.ctypes.data, DTYPE_CODES[X.dtype], rows, cols,
                                    y.ctypes.data, DTYPE_CODES[y.dtype], tau is not None,
                                    0.0 if tau is None else tau, mad_factor, fit_intercept,
                                    gradient.ctypes.data, ctypes.byref(used)))
    return gradient, used.value


# ---- Predictions. ----

def predict(X: np.ndarray, coef: np.ndarray, intercept: float, threads: int | None
            ) -> np.ndarray | None:
    """X coef + intercept on the engine's threads (``threads``; None: all cores), in the dtype of
    ``X`` and ``coef`` (the same one, float32 or float64; ``X`` C-contiguous, 2-D); None where no
    library is loaded in this process (never loaded for this)."""
    if LIB is None:
        return None
    rows, cols = X.shape
    out = np.empty(rows, dtype=X.dtype)
    check(LIB.rh_cpu_predict(X.ctypes.data, DTYPE_CODES[X.dtype], rows, cols, coef.ctypes.data,
                             float(intercept), threads or 0, out.ctypes.data))
    return out


# ---- The engine. ----

def _stats(s: TensorStats) -> dict | None:
    if s.count == 0:
        return None
    return {"count": s.count, "min": s.min, "max": s.max, "mean": s.mean, "std": s.std,
            "nan": s.nan, "inf": s.inf, "l2": s.l2}


def iteration_dict(r: Iteration) -> dict:
    """A trace record as rhuber.tracing reads it (docs/tracing.md)."""
    return {"phase": PHASES[r.phase], "iteration": r.iteration, "solver": SOLVERS[r.solver],
            "rcond": r.rcond, "objective": r.objective, "coef_norm": r.coef_norm,
            "step_norm": r.step_norm, "step_scale": r.step_scale, "halvings": r.halvings,
            "search_exhausted": bool(r.search_exhausted), "rows": r.rows,
            "quadratic_rows": r.quadratic_rows, "residual": _stats(r.residual),
            "score": _stats(r.score), "hessian_diagonal": _stats(r.hessian_diagonal)}


def _collector(records: list) -> Any:
    def append(_user: Any, record: Any) -> None:
        records.append(iteration_dict(record.contents))
    return TRACE_FN(append)


_NO_TRACE = TRACE_FN()


class Engine:
    """One CPU engine (rh_cpu_engine_t): a thread pool and workspaces reused across batches.
    Updates on one engine run one at a time."""

    def __init__(self, threads: int = 0, gram: str = "incremental", chunk_bytes: int = 0):
        if gram not in GRAMS:
            raise ValueError(f"gram must be one of {GRAMS}, got {gram!r}")
        options = EngineOptions(threads=int(threads), chunk_bytes=int(chunk_bytes),
                                gram=GRAMS.index(gram))
        handle = c_void_p()
        check(LIB.rh_cpu_engine_create(ctypes.byref(options), ctypes.byref(handle)))
        self._handle = handle
        self._free = LIB.rh_cpu_engine_free
        self._profiler: Profiler | None = None
        resolved = EngineOptions()
        check(LIB.rh_cpu_engine_options_get(handle, ctypes.byref(resolved)))
        self.threads = resolved.threads
        self.gram = GRAMS[resolved.gram]
        self.chunk_bytes = resolved.chunk_bytes

    def __del__(self) -> None:
        if getattr(self, "_handle", None):
            self._free(self._handle)

    @property
    def profiler(self) -> Profiler | None:
        return self._profiler

    def set_profiler(self, profiler: Profiler | None) -> None:
        """Time every later update's bricks on ``profiler`` (None: stop)."""
        check(LIB.rh_cpu_engine_set_profiler(self._handle,
                                             None if profiler is None else profiler._handle))
        self._profiler = profiler

    def update(self, previous: State, batch: Batch, config: Config, following: State,
               trace: list | None = None) -> Diagnostics:
        """One batch transition into ``following`` (whose arrays the caller allocated); trace:
        None, or a list receiving one dict per solver iteration, also when the update raises."""
        diagnostics = Diagnostics()
        callback = _NO_TRACE if trace is None else _collector(trace)
        check(LIB.rh_cpu_update(self._handle, ctypes.byref(previous), ctypes.byref(batch),
                                ctypes.byref(config), callback, None, ctypes.byref(following),
                                ctypes.byref(diagnostics)))
        return diagnostics


def state_struct(dtype: np.dtype, dim: int, coef: np.ndarray, information: np.ndarray,
                 gram: np.ndarray | None, score_gram: np.ndarray | None,
                 information_factor: np.ndarray | None = None,
                 information_vector: np.ndarray | None = None, **scalars: Any) -> State:
    """An rh_cpu_state over the given arrays (C-contiguous, of ``dtype``; the caller keeps them
    alive for as long as the struct is used)."""
    return State(dtype=DTYPE_CODES[dtype], has_matrices=int(gram is not None), dim=dim,
                 coef=coef.ctypes.data, information=information.ctypes.data,
                 gram=None if gram is None else gram.ctypes.data,
                 score_gram=None if score_gram is None else score_gram.ctypes.data,
                 has_square_root=int(information_factor is not None),
                 information_factor=None if information_factor is None
                 else information_factor.ctypes.data,
                 information_vector=None if information_vector is None
                 else information_vector.ctypes.data, **scalars)


def fail_allocations(after: int, count: int = 1) -> None:
    """Test hook: the next ``after`` workspace allocations pass, then ``count`` fail."""
    check(LIB.rh_cpu_fault_fail_allocations(int(after), int(count)))


def fail_rung(rung: str, count: int = 1) -> None:
    """Test hook: the next ``count`` attempts of a ladder rung fail."""
    if rung not in SOLVERS[:3]:
        raise ValueError(f"rung must be 'cholesky', 'lu' or 'svd', got {rung!r}")
    check(LIB.rh_cpu_fault_fail_rung(SOLVERS.index(rung), int(count)))


def clear_faults() -> int:
    """Disarm the test hooks; how many injected faults were still pending."""
    pending = c_int64()
    check(LIB.rh_cpu_fault_clear(ctypes.byref(pending)))
    return pending.value


# The names the tests and the reliability suite use.
_fail_allocations, _fail_rung, _clear_faults = fail_allocations, fail_rung, clear_faults


# ---- The brick profiler (docs/profiling.md). ----

class Graph:
    """The execution graph of a profile's traced events, read once from the library."""

    def __init__(self, data: dict) -> None:
        self._data = data
        self.size = data["size"]

    def to_dot(self) -> str:
        return self._data["dot"]

    def ascii(self) -> str:
        return self._data["ascii"]

    def critical_path(self) -> dict:
        return self._data["critical_path"]

    def nodes(self) -> list[dict]:
        return self._data["nodes"]

    def edges(self) -> list[tuple]:
        return [tuple(e) for e in self._data["edges"]]

    def rank_bricks(self) -> list[dict]:
        return self._data["rank_bricks"]


class Profiler:
    """A brick profiler on the engine's brick table (rh_cpu_profiler_t). Attach it to an Engine
    with set_profiler; record() adds scopes timed elsewhere (Python)."""

    def __init__(self, sync_mode: str = "immediate", trace_capacity: int = 1 << 16,
                 track_page_faults: bool = True, clock: str = "cpu"):
        handle = c_void_p()
        check(LIB.rh_cpu_profiler_create(str(sync_mode).encode(), int(trace_capacity),
                                         int(bool(track_page_faults)), str(clock).encode(),
                                         ctypes.byref(handle)))
        self._handle = handle
        self._free = LIB.rh_cpu_profiler_free

    def __del__(self) -> None:
        if getattr(self, "_handle", None):
            self._free(self._handle)

    def _name(self, call) -> str:
        out = c_char_p()
        check(call(self._handle, ctypes.byref(out)))
        return out.value.decode()

    @property
    def sync_mode(self) -> str:
        return self._name(LIB.rh_cpu_profiler_sync_mode)

    def set_sync_mode(self, mode: str) -> None:
        check(LIB.rh_cpu_profiler_set_sync_mode(self._handle, str(mode).encode()))

    @property
    def clock(self) -> str:
        return _take_string(LIB.rh_cpu_profiler_clock, self._handle)

    def brick_id(self, name: str) -> int:
        out = c_int32()
        check(LIB.rh_cpu_profiler_brick_id(self._handle, str(name).encode(), ctypes.byref(out)))
        return out.value

    def begin_batch(self, rows: int = 0) -> None:
        check(LIB.rh_cpu_profiler_begin_batch(self._handle, int(rows)))

    def set_iteration(self, index: int) -> None:
        check(LIB.rh_cpu_profiler_set_iteration(self._handle, int(index)))

    def end_batch(self) -> None:
        check(LIB.rh_cpu_profiler_end_batch(self._handle))

    def now_ns(self) -> int:
        out = c_int64()
        check(LIB.rh_cpu_profiler_now_ns(self._handle, ctypes.byref(out)))
        return out.value

    def record(self, brick: int, start_ns: int, duration_ns: int, elements: int = 0,
               bytes: int = 0, flops: int = 0, batch: int = -1, iteration: int = -1,
               depth: int = 0) -> None:
        """Count a scope timed by the caller: start_ns from time.perf_counter_ns()
        (CLOCK_MONOTONIC), on the calling thread."""
        check(LIB.rh_cpu_profiler_record(self._handle, brick, start_ns, duration_ns, elements,
                                          bytes, flops, batch, iteration, depth))

    def set_metadata(self, key: str, value: str) -> None:
        check(LIB.rh_cpu_profiler_set_metadata(self._handle, str(key).encode(),
                                                str(value).encode()))

    def name_thread(self, name: str) -> None:
        check(LIB.rh_cpu_profiler_name_thread(self._handle, str(name).encode()))

    def flush(self) -> None:
        check(LIB.rh_cpu_profiler_flush(self._handle))

    def reset(self) -> None:
        check(LIB.rh_cpu_profiler_reset(self._handle))

    def _export(self, what: int, text: str | None = None, gb_per_s: float = 0.0,
                gflop_per_s: float = 0.0) -> str:
        return _take_string(LIB.rh_cpu_profiler_export, self._handle, what,
                            None if text is None else text.encode(), gb_per_s, gflop_per_s)

    def report_json(self) -> str:
        """The versioned JSON report (native/bricks/schema/report.schema.json)."""
        return self._export(EXPORT_REPORT)

    def chrome_trace(self) -> str:
        return self._export(EXPORT_CHROME_TRACE)

    def table(self, title: str = "bricks") -> str:
        return self._export(EXPORT_TABLE, title)

    def breakdown(self) -> dict:
        return json.loads(self._export(EXPORT_BREAKDOWN))

    def graph(self) -> Graph:
        return Graph(json.loads(self._export(EXPORT_GRAPH)))

    def roofline(self, gb_per_s: float, gflop_per_s: float) -> list[dict]:
        return json.loads(self._export(EXPORT_ROOFLINE, None, float(gb_per_s),
                                       float(gflop_per_s)))


bricks = SimpleNamespace(Profiler=Profiler, Graph=Graph, BRICKS=BRICKS)


# ---- The tuner's models (docs/tuner.md, "C++ inference"). ----

class Model:
    """A tuner model (gbt_regressor, forest_classifier or logistic) loaded and validated from a
    safetensors file (rh_cpu_model_t)."""

    def __init__(self, handle: c_void_p) -> None:
        self._handle = handle
        self._free = LIB.rh_cpu_model_free
        info = json.loads(_take_string(LIB.rh_cpu_model_info_json, handle))
        self.kind: str = info["kind"]
        self.n_features: int = info["n_features"]
        self.n_outputs: int = info["n_outputs"]
        self.n_trees: int = info["n_trees"]
        self.feature_names: list[str] = info["feature_names"]
        self.metadata: dict[str, str] = info["metadata"]

    def __del__(self) -> None:
        if getattr(self, "_handle", None):
            self._free(self._handle)

    @classmethod
    def load(cls, path: str) -> Model:
        """Read and validate a model file; ModelFormatError (a ValueError) when it is corrupt."""
        handle = c_void_p()
        check(LIB.rh_cpu_model_load(str(path).encode(), ctypes.byref(handle)))
        return cls(handle)

    @classmethod
    def from_bytes(cls, data: bytes) -> Model:
        handle = c_void_p()
        check(LIB.rh_cpu_model_from_bytes(bytes(data), len(data), ctypes.byref(handle)))
        return cls(handle)

    @property
    def classes(self) -> list:
        """The metadata's 'classes' list, decoded from its JSON."""
        return json.loads(self.metadata["classes"]) if "classes" in self.metadata else []

    def predict(self, x: Any) -> np.ndarray:
        """x: one row (1-D) or rows (2-D) of float64 features -> an array of n_outputs per row:
        the regressor's prediction, or the classifiers' class probabilities."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        if x.ndim not in (1, 2):
            raise ValueError(f"x must be 1-D (one row) or 2-D (rows), not {x.ndim}-D")
        rows = x.reshape(1, -1) if x.ndim == 1 else x
        out = np.empty((rows.shape[0], self.n_outputs))
        check(LIB.rh_cpu_model_predict(self._handle, rows.ctypes.data, rows.shape[0],
                                       rows.shape[1], out.ctypes.data))
        return out[0] if x.ndim == 1 else out


tuner = SimpleNamespace(Model=Model, ModelFormatError=ModelFormatError)
