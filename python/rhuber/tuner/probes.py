"""Probes of the machine's limits: memory bandwidth, GEMM peak, and the roofline bound they give.

Shared by the tuner's hardware fingerprint (:mod:`.hardware`) and the shape-sweep benchmark
(``scripts/benchmarks/rhbench/limits.py``), so both measure the machine the same way.

The bandwidth probe is a STREAM triad (``a = b + s·c``) over arrays far larger than the last
cache level, run single-threaded and on every core (NumPy releases the GIL in ufuncs, so a pool
of threads each working on its own slice saturates the memory system). The flops probe is a
square GEMM through NumPy's BLAS, limited to one thread and then given every core with
threadpoolctl.

The roofline bound of a stream is the least time any engine must spend on it: every row read
once from memory, ``n · (p + 1) · itemsize`` bytes (X and y), and the Gram matrix of every
batch, ``Σ_b n_b · d · (d + 1)`` flops with ``d = p + 1`` (a symmetric rank-k update counted
as multiply–add pairs), at the measured peak. The bound is the larger of the two times.
"""

from __future__ import annotations

import itertools
import math
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from ..engines.plans import usable_cores


def _triad(a: np.ndarray, b: np.ndarray, c: np.ndarray, s: float) -> None:
    # Two ufunc passes: a = s·c, then a = a + b. Their traffic is counted in triad_bandwidth.
    np.multiply(c, s, out=a)
    np.add(a, b, out=a)


def triad_bandwidth(n_elements: int, repeats: int, threads: int) -> dict[str, Any]:
    """Measure memory bandwidth with a NumPy STREAM triad.

    Parameters
    ----------
    n_elements : int
        Length of each of the three float64 arrays.
    repeats : int
        Number of timed triads; the best one is reported, as STREAM does.
    threads : int
        Number of threads, each running the triad on its own contiguous slice.

    Returns
    -------
    dict
        ``bytes_per_triad`` (five array passes: read c, write a; read a, read b, write a),
        ``best_s``, ``median_s`` and ``bandwidth_bytes_per_s`` (from the best time).
    """
    rng = np.random.default_rng(0)
    b = rng.standard_normal(n_elements)
    c = rng.standard_normal(n_elements)
    a = np.empty_like(b)
    bounds = np.linspace(0, n_elements, threads + 1).astype(int)
    slices = [slice(lo, hi) for lo, hi in itertools.pairwise(bounds)]
    times = []
    with ThreadPoolExecutor(max_workers=threads) as pool:
        _triad(a, b, c, 3.0)  # touch every page before timing
        for _ in range(repeats):
            start = time.perf_counter()
            list(pool.map(lambda sl: _triad(a[sl], b[sl], c[sl], 3.0), slices))
            times.append(time.perf_counter() - start)
    moved = 5 * n_elements * a.itemsize
    best = min(times)
    return {
        "threads": threads,
        "n_elements": n_elements,
        "array_bytes": n_elements * a.itemsize,
        "bytes_per_triad": moved,
        "repeats": repeats,
        "best_s": best,
        "median_s": float(np.median(times)),
        "bandwidth_bytes_per_s": moved / best,
    }


def gemm_flops(n: int, dtype: np.dtype, repeats: int, threads: int) -> dict[str, Any]:
    """Measure the GEMM rate of NumPy's BLAS on ``n × n`` matrices.

    Parameters
    ----------
    n : int
        Matrix order; ``2 n³`` flops per product.
    dtype : dtype
        float32 or float64.
    repeats : int
        Number of timed products; the best one is reported.
    threads : int
        BLAS thread limit (threadpoolctl).

    Returns
    -------
    dict
        ``best_s``, ``median_s`` and ``flops_per_s`` (from the best time).
    """
    rng = np.random.default_rng(1)
    A = rng.standard_normal((n, n)).astype(dtype)
    B = rng.standard_normal((n, n)).astype(dtype)
    C = np.empty((n, n), dtype=dtype)
    times = []
    with threadpool_limits(limits=threads, user_api="blas"):
        np.matmul(A, B, out=C)  # warm-up: thread pool start, page faults
        for _ in range(repeats):
            start = time.perf_counter()
            np.matmul(A, B, out=C)
            times.append(time.perf_counter() - start)
    best = min(times)
    return {
        "threads": threads,
        "n": n,
        "dtype": np.dtype(dtype).name,
        "repeats": repeats,
        "best_s": best,
        "median_s": float(np.median(times)),
        "flops_per_s": 2.0 * n**3 / best,
    }


def measure_machine_limits(
    bandwidth_elements: int, gemm_n: int, repeats: int
) -> dict[str, Any]:
    """Measure bandwidth and GEMM peak, single-threaded and on all cores.

    Parameters
    ----------
    bandwidth_elements : int
        Elements per triad array (float64); choose several times the last-level cache.
    gemm_n : int
        Order of the GEMM probe.
    repeats : int
        Timed repetitions of every probe.

    Returns
    -------
    dict
        The probes, and ``memory_bandwidth_bytes_per_s`` and ``peak_flops_per_s`` (per
        dtype): the best all-core figures, which the roofline bounds use.
    """
    cores = usable_cores()
    thread_counts = sorted({1, cores})
    bandwidth = [triad_bandwidth(bandwidth_elements, repeats, t) for t in thread_counts]
    gemm = [
        gemm_flops(gemm_n, np.dtype(dt), repeats, t)
        for dt in ("float64", "float32")
        for t in thread_counts
    ]
    peak = {
        dt: max(g["flops_per_s"] for g in gemm if g["dtype"] == dt)
        for dt in ("float64", "float32")
    }
    return {
        "cores": cores,
        "bandwidth_probes": bandwidth,
        "gemm_probes": gemm,
        "memory_bandwidth_bytes_per_s": max(b["bandwidth_bytes_per_s"] for b in bandwidth),
        "peak_flops_per_s": peak,
    }


def roofline_bound(
    n_samples: int,
    n_features: int,
    batch_size: int,
    dtype: np.dtype,
    limits: dict[str, Any],
    fit_intercept: bool = True,
    gram: bool = True,
) -> dict[str, Any]:
    """The least time any engine must spend streaming a shape on this machine.

    Parameters
    ----------
    n_samples, n_features, batch_size : int
        The shape of the stream.
    dtype : dtype
        The dtype the data is streamed in.
    limits : dict
        The result of :func:`measure_machine_limits`.
    fit_intercept : bool, default=True
        Whether the design has the intercept column (``d = p + 1``).
    gram : bool, default=True
        Count the Gram flops. The renewable engines must form a weighted Gram matrix per
        batch; first-order peers (SGD, L-BFGS) do not, so their bound is the read alone.

    Returns
    -------
    dict
        ``bytes``, ``flops`` (the Gram flops, reported even when not counted),
        ``memory_s``, ``compute_s``, ``bound_s`` (their maximum, or ``memory_s`` alone when
        ``gram`` is false), ``bound_kind`` ("memory" or "compute"), ``gram_in_bound`` and
        ``arithmetic_intensity`` (Gram flops per byte).
    """
    itemsize = np.dtype(dtype).itemsize
    d = n_features + int(fit_intercept)
    n_bytes = n_samples * (n_features + 1) * itemsize
    n_full, rest = divmod(n_samples, batch_size)
    rows = [batch_size] * n_full + ([rest] if rest else [])
    flops = float(sum(r * d * (d + 1) for r in rows))
    memory_s = n_bytes / limits["memory_bandwidth_bytes_per_s"]
    compute_s = flops / limits["peak_flops_per_s"][np.dtype(dtype).name]
    bound_s = max(memory_s, compute_s) if gram else memory_s
    return {
        "bytes": n_bytes,
        "flops": flops,
        "memory_s": memory_s,
        "compute_s": compute_s,
        "bound_s": bound_s,
        "bound_kind": "memory" if bound_s == memory_s else "compute",
        "gram_in_bound": gram,
        "arithmetic_intensity": flops / n_bytes if n_bytes else math.inf,
    }
