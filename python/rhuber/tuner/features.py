"""Features: what the tuner's models see of a (workload, plan, hardware, profile).

Every feature is finite and in [0, 1] by the transform documented next to its name in
:data:`SCHEMA` (and in docs/tuner.md). Sizes are log-scaled and normalized by the
collection grid's range (rows 256 … 262,144, features 2 … 512) and clipped, so a workload
outside the grid maps to the nearest edge rather than out of range. Each plan one-hot group
(backend, gram, l1_solver) sums to exactly 1; an engine default (``None``) is its own choice.

Changing a name, its order or its transform changes what a trained model means: bump
``SCHEMA_VERSION`` and the pinned hash in tests/test_tuner_features.py together.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..engines.plans import BACKENDS, GRAM_STRATEGIES, L1_SOLVERS, Plan
from ..engines.workload import Workload
from .hardware import Hardware
from .probes import roofline_bound

SCHEMA_VERSION = 3

#: The profiler's bricks (shared/spec/bricks-and-tuner.md), in feature order.
BRICKS = ("validate", "stage", "residual", "huber", "score", "gram", "solve", "line_search",
          "prox", "info_update", "transfer", "predict")

#: The collection grid's range, the reference for the log-size transforms.
ROWS_RANGE = (256, 262_144)
FEATURES_RANGE = (2, 512)
#: The row chunk a native_cpu plan with ``chunk_kib=None`` uses, and the chunk range scaled.
DEFAULT_CHUNK_KIB = 256
CHUNK_KIB_RANGE = (16, 16_384)
#: SIMD level → ordinal in [0, 1] (x86 and ARM share a scale: asimd ≈ SSE4.2-class width,
#: SVE ≈ AVX2-class; "none" and unknown are 0).
SIMD_ORDINAL = {"none": 0.0, "sse2": 0.2, "sse4_2": 0.4, "avx": 0.6, "avx2": 0.8,
                "avx512f": 1.0, "asimd": 0.4, "sve": 0.8}

_GB = 1e9


def _log_unit(x: float, lo: float, hi: float) -> float:
    """``(log x − log lo) / (log hi − log lo)`` clipped to [0, 1]; 0 for x ≤ 0 or unknown."""
    if x is None or not x > 0:
        return 0.0
    return float(min(1.0, max(0.0, math.log(x / lo) / math.log(hi / lo))))


def _log2_ratio(x: float, reference: float | None) -> float:
    """log2(x / reference) mapped from [-12, 12] onto [0, 1] and clipped; 0 for an unknown
    reference (0.5: x equals the reference)."""
    if not reference or not x > 0:
        return 0.0
    return float(min(1.0, max(0.0, (math.log2(x / reference) + 12.0) / 24.0)))


def _batch_bytes(w: Workload) -> float:
    """Bytes one batch reads: X and y, ``n · (p + 1) · itemsize`` (as the roofline counts)."""
    return float(w.rows * (w.features + 1) * w.itemsize)


_BYTES_RANGE = (ROWS_RANGE[0] * (FEATURES_RANGE[0] + 1) * 4,
                ROWS_RANGE[1] * (FEATURES_RANGE[1] + 1) * 8)
# Gram flops per byte read, d(d+1) / ((p+1)·itemsize): its range over the grid, with intercept.
_AI_RANGE = ((FEATURES_RANGE[0] + 1) * (FEATURES_RANGE[0] + 2) / ((FEATURES_RANGE[0] + 1) * 8),
             (FEATURES_RANGE[1] + 1) * (FEATURES_RANGE[1] + 2) / ((FEATURES_RANGE[1] + 1) * 4))

#: (name, transform) in feature order. The transform text is the documentation.
SCHEMA: tuple[tuple[str, str], ...] = (
    # workload
    ("rows_log", "log(n / 256) / log(262144 / 256), clipped"),
    ("features_log", "log(p / 2) / log(512 / 2), clipped"),
    ("dtype_float32", "1 if float32 else 0"),
    ("penalized", "1 if the L1 penalty is on else 0"),
    ("l1_sparse", "1 if the penalty is in the sparse regime (the first batch's screen keeps at "
                  "most half the features) else 0"),
    ("intercept", "1 if an intercept is fitted else 0"),
    ("input_on_device", "1 if the input already lives on the GPU else 0"),
    # derived from the workload (and the measured limits)
    ("batch_bytes_log", "log of n·(p+1)·itemsize over the grid's range [3 KiB, 1.07 GB], clipped"),
    ("arithmetic_intensity", "log of Gram flops per byte d(d+1)/((p+1)·itemsize) over the "
                             "grid's range [0.375, 128.5], clipped"),
    ("batch_over_l2_log", "log2(batch bytes / L2 bytes per core) over [-12, 12], as (x + 12) / 24, "
                          "clipped; 0 unknown"),
    ("batch_over_l3_log", "log2(batch bytes / L3 bytes) over [-12, 12], as (x + 12) / 24, "
                          "clipped; 0 unknown or none"),
    ("batch_fits_l2", "1 if the batch's bytes fit in L2 (per core) else 0"),
    ("batch_fits_l3", "1 if the batch's bytes fit in L3 else 0"),
    ("solve_share", "d / (3n + d): the d³/3 factorization against the n·d² Gram"),
    # hardware
    ("cores_log", "log2(logical cores) / log2(256), clipped"),
    ("smt", "1 − physical / logical cores (0 without SMT, 0.5 with 2-way SMT)"),
    ("simd_level", "none 0, sse2 0.2, sse4_2 0.4, avx 0.6, avx2 0.8, avx512f 1 "
                   "(asimd 0.4, sve 0.8)"),
    ("work_per_core_log", "log of the batch's Gram flops n·d² per logical core over [1e3, 1e12], "
                          "clipped"),
    ("gpu_present", "1 if a GPU is visible else 0"),
    ("gpu_sms_log", "log2(1 + SMs) / log2(1 + 256), clipped; 0 without a GPU"),
    ("gpu_bandwidth_log", "log of the GPU's theoretical bandwidth over [1 GB/s, 10 TB/s]; "
                          "0 without a GPU"),
    ("gpu_l2_log", "log of GPU L2 bytes over [1 MiB, 1 GiB], clipped; 0 without a GPU"),
    # plan one-hots: each group sums to 1
    *((f"backend_{b}", f"1 if backend is {b!r} else 0") for b in BACKENDS),
    ("gram_default", "1 if gram is None (the engine's default) else 0"),
    *((f"gram_{g}", f"1 if gram is {g!r} else 0") for g in GRAM_STRATEGIES),
    *((f"l1_{s}", f"1 if l1_solver is {s!r} else 0") for s in L1_SOLVERS),
    # plan scalars
    ("threads_fraction", "threads / logical cores, clipped to [0, 1]; None (all cores) is 1"),
    ("threads_work_log", "log of the batch's elements n·d per thread of the plan over "
                         "[64, 2^26], clipped"),
    ("chunk_log", "log of chunk KiB over [16, 16384], clipped; None is the engine's 256"),
    ("chunks_per_batch_log", "log2(ceil(n·d·itemsize / chunk bytes)) / 16, clipped"),
    # profile
    ("profile_present", "1 if brick fractions were given else 0"),
    *((f"brick_{b}", f"fraction of the batch's time in {b!r}; 0 without a profile")
      for b in BRICKS),
)

NAMES: tuple[str, ...] = tuple(name for name, _ in SCHEMA)


def batch_roofline(workload: Workload, hardware: Hardware) -> dict[str, Any]:
    """:func:`.probes.roofline_bound` of one batch of ``workload`` on ``hardware``'s measured
    bandwidth and GEMM peaks."""
    limits = {"memory_bandwidth_bytes_per_s": hardware.memory_bandwidth_bytes_per_s,
              "peak_flops_per_s": {"float64": hardware.peak_flops_float64,
                                   "float32": hardware.peak_flops_float32}}
    return roofline_bound(workload.rows, workload.features, workload.rows,
                          np.dtype(workload.dtype), limits, fit_intercept=workload.intercept)


def names_digest(names: tuple[str, ...] = NAMES) -> str:
    """A short hash of the names in order: a trained model records it; a mismatch means the
    features are not the ones it learned from."""
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]


def _check_fractions(fractions: Mapping[str, float]) -> dict[str, float]:
    unknown = set(fractions) - set(BRICKS)
    if unknown:
        raise ValueError(f"unknown bricks {sorted(unknown)} in profile_fractions; expected "
                         f"names from {BRICKS}")
    out = {}
    for name, value in fractions.items():
        v = float(value)
        if not (math.isfinite(v) and 0.0 <= v <= 1.0):
            raise ValueError(f"profile_fractions[{name!r}] is {value!r}; a fraction of the "
                             "batch's time must be finite and in [0, 1]")
        out[name] = v
    total = sum(out.values())
    if total > 1.0 + 1e-6:
        raise ValueError(f"profile_fractions sum to {total:.6g}; fractions of one batch's time "
                         "must sum to at most 1")
    return out


class FeatureExtractor:
    """Turns (workload, plan, hardware, optional brick fractions) into the feature vector.

    The hardware must carry its measured bandwidth and GEMM peak (``fingerprint(measure=True)``):
    the roofline features need them, and a silent fill would teach a model a machine that does
    not exist.
    """

    schema_version = SCHEMA_VERSION
    names = NAMES

    def __len__(self) -> int:
        return len(self.names)

    def extract(self, workload: Workload, plan: Plan, hardware: Hardware,
                profile_fractions: Mapping[str, float] | None = None) -> np.ndarray:
        """The features as a float64 vector in the order of :attr:`names`."""
        values = self._values(workload, plan, hardware, profile_fractions)
        return np.fromiter((values[n] for n in self.names), dtype=np.float64, count=len(values))

    def extract_dict(self, workload: Workload, plan: Plan, hardware: Hardware,
                     profile_fractions: Mapping[str, float] | None = None) -> dict[str, float]:
        """The features by name, in the order of :attr:`names`."""
        values = self._values(workload, plan, hardware, profile_fractions)
        return {n: values[n] for n in self.names}

    def _values(self, w: Workload, plan: Plan, hw: Hardware,
                fractions: Mapping[str, float] | None) -> dict[str, float]:
        checked = None if fractions is None else _check_fractions(fractions)
        batch_bytes = _batch_bytes(w)
        d = w.dim
        intensity = d * (d + 1) / ((w.features + 1) * w.itemsize)
        chunk_kib = plan.chunk_kib if plan.chunk_kib is not None else DEFAULT_CHUNK_KIB
        chunks = math.ceil(w.rows * d * w.itemsize / (chunk_kib * 1024))
        cores = max(1, hw.logical_cores)
        threads = cores if plan.threads is None else plan.threads
        v: dict[str, float] = {
            "rows_log": _log_unit(w.rows, *ROWS_RANGE),
            "features_log": _log_unit(w.features, *FEATURES_RANGE),
            "dtype_float32": float(w.dtype == "float32"),
            "penalized": float(w.penalized),
            "l1_sparse": float(w.sparse),
            "intercept": float(w.intercept),
            "input_on_device": float(w.location == "device"),
            "batch_bytes_log": _log_unit(batch_bytes, *_BYTES_RANGE),
            "arithmetic_intensity": _log_unit(intensity, *_AI_RANGE),
            "batch_over_l2_log": _log2_ratio(batch_bytes, hw.l2_bytes),
            "batch_over_l3_log": _log2_ratio(batch_bytes, hw.l3_bytes),
            "batch_fits_l2": float(hw.l2_bytes is not None and batch_bytes <= hw.l2_bytes),
            "batch_fits_l3": float(hw.l3_bytes is not None and batch_bytes <= hw.l3_bytes),
            "solve_share": d / (3.0 * w.rows + d),
            "cores_log": _log_unit(cores, 1, 256),
            "smt": 1.0 - min(hw.physical_cores, cores) / cores,
            "simd_level": SIMD_ORDINAL.get(hw.simd, 0.0),
            "work_per_core_log": _log_unit(w.rows * d * d / cores, 1e3, 1e12),
            "gpu_present": float(hw.has_gpu),
            "gpu_sms_log": _log_unit(1 + (hw.gpu_sms or 0), 1, 257),
            "gpu_bandwidth_log": _log_unit(hw.gpu_bandwidth_bytes_per_s or 0, _GB, 1e4 * _GB),
            "gpu_l2_log": _log_unit(hw.gpu_l2_bytes or 0, 1 << 20, 1 << 30),
            "gram_default": float(plan.gram is None),
            "threads_fraction": min(1.0, max(0.0, threads / cores)),
            "threads_work_log": _log_unit(w.rows * d / max(1, threads), 64, 1 << 26),
            "chunk_log": _log_unit(chunk_kib, *CHUNK_KIB_RANGE),
            "chunks_per_batch_log": min(1.0, math.log2(max(1, chunks)) / 16),
            "profile_present": float(checked is not None),
        }
        v.update({f"backend_{b}": float(plan.backend == b) for b in BACKENDS})
        v.update({f"gram_{g}": float(plan.gram == g) for g in GRAM_STRATEGIES})
        v.update({f"l1_{s}": float(plan.l1_solver == s) for s in L1_SOLVERS})
        v.update({f"brick_{b}": (checked or {}).get(b, 0.0) for b in BRICKS})
        self._check_plan(plan, v)
        return v

    @staticmethod
    def _check_plan(plan: Plan, v: dict[str, Any]) -> None:
        groups = {"backend": (plan.backend, BACKENDS), "gram": (plan.gram, GRAM_STRATEGIES),
                  "l1": (plan.l1_solver, L1_SOLVERS)}
        for group, (value, choices) in groups.items():
            total = sum(v[f"{group}_{c}"] for c in choices)
            if total + (v["gram_default"] if group == "gram" else 0.0) != 1.0:
                raise ValueError(f"plan {group} {value!r} is not one of {choices}"
                                 + (" or None" if group == "gram" else ""))
