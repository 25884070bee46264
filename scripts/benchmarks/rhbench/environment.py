"""Metadata of the machine and software a benchmark ran on (RFC 0001, every record)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from rhuber.tuner.hardware import cpu_model, cpuinfo

#: Environment variables that decide how many threads BLAS, OpenMP and the engines use.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "RH_NUM_THREADS",
)

REPO_ROOT = Path(__file__).resolve().parents[3]


def _cpu_flags() -> list[str]:
    wanted = ("avx", "avx2", "avx512f", "fma", "sse4_2", "neon", "asimd")
    info = cpuinfo()
    present = set((info.get("flags") or info.get("Features") or "").split())
    return [flag for flag in wanted if flag in present]


def _memory_bytes() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def _git_state() -> dict[str, Any]:
    def run(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", *args], check=False, cwd=REPO_ROOT, capture_output=True, text=True,
                timeout=10,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    status = run("status", "--porcelain", "--untracked-files=no")
    return {
        "revision": run("rev-parse", "HEAD"),
        "branch": run("rev-parse", "--abbrev-ref", "HEAD"),
        "dirty": None if status is None else bool(status),
    }


def blas_provider() -> list[dict[str, Any]]:
    """The BLAS/LAPACK and OpenMP libraries loaded in this process, from threadpoolctl."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    keys = ("user_api", "internal_api", "prefix", "version", "num_threads", "threading_layer",
            "architecture", "filepath")
    return [{key: info.get(key) for key in keys} for info in threadpool_info()]


def _cupy_cuda() -> dict[str, Any]:
    """CuPy, CUDA runtime and GPU metadata; all None where CuPy or a GPU is absent."""
    out: dict[str, Any] = {"cupy": None, "cuda_runtime": None, "gpu": None}
    try:
        import cupy  # type: ignore[import-not-found]
    except ImportError:
        return out
    out["cupy"] = cupy.__version__
    try:
        out["cuda_runtime"] = int(cupy.cuda.runtime.runtimeGetVersion())
        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        out["gpu"] = {
            "name": name.decode() if isinstance(name, bytes) else str(name),
            "total_memory_bytes": int(props["totalGlobalMem"]),
            "compute_capability": f"{props['major']}.{props['minor']}",
            "driver": int(cupy.cuda.runtime.driverGetVersion()),
        }
    except Exception as exc:  # no device or no driver: recorded, not fatal
        out["gpu"] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def _native_cpu_version() -> str | None:
    from rhuber import _native
    from rhuber.errors import EngineNotAvailableError

    try:
        native = _native.load("native_cpu")
    except EngineNotAvailableError:
        return None
    return str(getattr(native, "__version__", "unknown"))


def collect_environment() -> dict[str, Any]:
    """Everything RFC 0001 asks each record to carry about where it ran.

    Returns
    -------
    dict
        Python, OS, CPU, NumPy, CuPy, CUDA runtime and GPU metadata, the thread environment,
        the BLAS/LAPACK provider, the package versions and the git revision.
    """
    import rhuber

    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = None
    env = {
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "os": {"system": platform.system(), "release": platform.release(),
               "platform": platform.platform()},
        "cpu": {
            "model": cpu_model(),
            "machine": platform.machine(),
            "logical_cpus": os.cpu_count(),
            "affinity_cpus": affinity,
            "flags": _cpu_flags(),
            "memory_bytes": _memory_bytes(),
        },
        "numpy": np.__version__,
        "threads": {
            "environment": {name: os.environ.get(name) for name in THREAD_VARIABLES},
            "blas_lapack": blas_provider(),
        },
        "packages": {
            "rhuber": rhuber.__version__,
            "rhuber_native_cpu": _native_cpu_version(),
            "scikit_learn": _version_of("sklearn"),
            "scipy": _version_of("scipy"),
        },
        "git": _git_state(),
    }
    env.update(_cupy_cuda())
    return env


def _version_of(module: str) -> str | None:
    try:
        return str(__import__(module).__version__)
    except ImportError:
        return None


def hardware_fingerprint(env: dict[str, Any]) -> str:
    """A short identity of the hardware; results from different hardware are not merged."""
    cpu = env["cpu"]
    gpu = env.get("gpu")
    gpu_name = gpu.get("name") if isinstance(gpu, dict) else None
    return f"{cpu['model']} x{cpu['logical_cpus']} | gpu={gpu_name}"
