"""The one place that loads the native libraries, checks they match this package, and turns their
status codes into exceptions.

Each native distribution ships a plain shared object with a C ABI (``librhuber_cpu.so``:
native/include/rh_cpu.h; ``librh_cuda.so.5``: rh_cuda.h), bound here with :mod:`ctypes`, which
releases the GIL for the duration of every call; the submodules hold one library's binding each
(:mod:`.cpu`; :mod:`.cuda`, imported with its library on first use). No interpreter-specific
module is built, so one ``py3-none`` wheel serves every CPython.

The three distributions share one version (``_version.py``); each native one pins this package
exactly, but an environment can still end up mixed (an old library left behind, a ``--no-deps``
install, a library from another prefix on ``sys.path``). Running a library built for another
version would pair Python and C++ sides that disagree on the state and the contract, so a
mismatch is an error naming both versions, never a silent fallback to another engine.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import importlib.metadata
import importlib.util
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import EngineNotAvailableError, NativeVersionError
from . import cpu
from .dl import open_lazily

# backend: (the directory in site-packages that holds its library, the distribution that installs
# it): rhuber_native_cpu/librhuber_cpu.so and rhuber_native_cuda/librh_cuda.so.<ABI major>.
# RH_NATIVE_CPU_LIBRARY / RH_NATIVE_CUDA_LIBRARY: another path (a development build).
MODULES = {
    "native_cpu": ("rhuber_native_cpu", "rhuber-native-cpu"),
    "cuda": ("rhuber_native_cuda", "rhuber-native-cuda"),
}
CPU_LIBRARY = "librhuber_cpu.so"

# NVIDIA's CUDA 13 wheels (nvidia-cuda-runtime, nvidia-cublas, nvidia-cusolver and what cuSOLVER
# pulls in) put their libraries in site-packages/nvidia/cu13/lib; in the order they load each other.
_NVIDIA_LIBRARIES = ("libcudart.so.13", "libnvJitLink.so.13", "libcusparse.so.12",
                     "libcublasLt.so.13", "libcublas.so.13", "libcusolver.so.12")


def load(backend: str) -> Any:
    """The binding of ``backend`` ("native_cpu" or "cuda"), checked against this version.

    Raises EngineNotAvailableError when it is not installed (or cannot load), and
    NativeVersionError when it was built for another version of rhuber.
    """
    if backend == "native_cpu":
        return _load_cpu()
    if backend == "cuda":
        return _load_cuda()
    raise ValueError(f"no native library for backend {backend!r}; expected one of {list(MODULES)}")


def _not_available(backend: str, exc: BaseException) -> EngineNotAvailableError:
    distribution = MODULES[backend][1]
    return EngineNotAvailableError(
        f"backend={backend!r} needs the package {distribution} "
        f"(pip install {distribution}=={__version__}), which could not be loaded: {exc}")


@functools.cache
def _load_cpu() -> Any:
    try:
        with _blas_without_thread_pool():
            _preload_scipy_openblas()
            library = cpu.open_library(cpu_library_path())
    except (ImportError, OSError, AttributeError) as exc:
        raise _not_available("native_cpu", exc) from exc
    check_version(library.version, MODULES["native_cpu"][1], f"library {library.path}")
    cpu.bind(library)
    return cpu


@functools.cache
def _load_cuda() -> Any:
    # The CUDA binding (it reads its contract file) loads with the library, on first use.
    from . import cuda

    override = os.environ.get("RH_NATIVE_CUDA_LIBRARY")
    try:
        with _blas_without_thread_pool():
            _preload_scipy_openblas()
            _preload_nvidia_libraries()
            path = Path(override) if override else _installed("cuda", cuda.LIBRARY)
            cuda.bind(cuda.open_library(path), path)
    except (ImportError, OSError, AttributeError) as exc:
        raise _not_available("cuda", exc) from exc
    if not override:  # a development build (the override) has no distribution to compare
        check_version(_distribution_version("cuda"), MODULES["cuda"][1], f"library {path}")
    return cuda


def _distribution_version(backend: str) -> str | None:
    try:
        return importlib.metadata.version(MODULES[backend][1])
    except importlib.metadata.PackageNotFoundError:
        return None


def cpu_library_path() -> Path:
    """Where librhuber_cpu.so is: $RH_NATIVE_CPU_LIBRARY, else the installed rhuber_native_cpu."""
    override = os.environ.get("RH_NATIVE_CPU_LIBRARY")
    return Path(override) if override else _installed("native_cpu", CPU_LIBRARY)


def _installed(backend: str, library: str) -> Path:
    """The installed library of ``backend`` (in its directory on sys.path)."""
    spec = importlib.util.find_spec(MODULES[backend][0])
    for location in (spec.submodule_search_locations or []) if spec else []:
        # Searched in os.path strings: pathlib's first operations in a process cost ~20-60 us
        # each, cold, and every script's first fit loads a library.
        candidate = os.path.join(location, library)
        if os.path.isfile(candidate):
            return Path(candidate)
    raise ImportError(f"no {MODULES[backend][0]}/{library} on sys.path")


def check_version(native: str | None, distribution: str, where: str) -> None:
    """Raise NativeVersionError unless the native side (at ``where``) was built for this version."""
    if native != __version__:
        raise NativeVersionError(
            f"{distribution} {native} ({where}) does not match rhuber {__version__}: "
            f"the three distributions must have the same version; "
            f"pip install '{distribution}=={__version__}'"
        )


# OpenBLAS reads this once, when it loads; it outranks GOTO_NUM_THREADS and OMP_NUM_THREADS.
_BLAS_THREADS_VARIABLE = "OPENBLAS_NUM_THREADS"
# One library load at a time: two threads' windows interleaved would restore each other's "1"
# and leave it in the process's environment for good.
_LOADING = threading.RLock()


@contextlib.contextmanager
def _blas_without_thread_pool() -> Iterator[None]:
    """The native libraries' OpenBLAS (scipy-openblas32's) loads without starting threads.

    OpenBLAS starts a worker per core but one as it loads, and each spins for about 2**28 cycles
    (~0.1 s) before it sleeps, beside the first fit's own threads on the same cores. The engines
    never use those workers: they call BLAS from their own threads, one BLAS thread each
    (openblas_set_num_threads(1)). So the variable is 1 while our libraries load and is then put
    back as it was. It reaches only a BLAS that loads in that window: ours, loaded privately
    (RTLD_LOCAL); NumPy's and SciPy's own copies loaded long before, with the user's setting.
    """
    with _LOADING:
        before = os.environ.get(_BLAS_THREADS_VARIABLE)
        os.environ[_BLAS_THREADS_VARIABLE] = "1"
        try:
            yield
        finally:
            if before is None:
                del os.environ[_BLAS_THREADS_VARIABLE]
            else:
                os.environ[_BLAS_THREADS_VARIABLE] = before


@functools.cache
def _preload_scipy_openblas() -> ctypes.CDLL | None:
    """Load the OpenBLAS of the wheel scipy-openblas32, if installed, before a native library.

    Both libraries need ``libscipy_openblas.so`` (the CPU engine's BLAS and LAPACKE, the CUDA
    engine's host-side LAPACKE). Their run paths name the wheel installed beside them (the usual
    case); this also covers it living in another ``sys.path`` entry (a user site, a ``--target``
    directory): once loaded, the loader reuses the library for the dependency of that name.
    Loaded by path, privately (RTLD_LOCAL), not by importing ``scipy_openblas32``: that import
    loads it RTLD_GLOBAL, and SciPy's own bundled OpenBLAS, which exports the same ``scipy_``
    names, would then bind to ours (and to its thread setting).
    """
    spec = importlib.util.find_spec("scipy_openblas32")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        library = os.path.join(location, "lib", "libscipy_openblas.so")  # strings: _installed
        if os.path.isfile(library):
            return open_lazily(library, ctypes.RTLD_LOCAL)  # held by the cache
    return None


@functools.cache
def _preload_nvidia_libraries() -> None:
    """Load the CUDA libraries of NVIDIA's wheels, if installed, before the CUDA library.

    The library's run path already names ``$ORIGIN/nvidia/cu13/lib`` (the wheels installed beside
    it, the usual case); this also covers them living in another ``sys.path`` entry (a user site,
    a ``--target`` directory). Without the wheels, the run path and the system decide.
    """
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return
    for location in spec.submodule_search_locations:
        lib = Path(location) / "cu13" / "lib"
        if (lib / "libcublas.so.13").is_file():
            for name in _NVIDIA_LIBRARIES:
                if (lib / name).is_file():
                    ctypes.CDLL(str(lib / name), mode=ctypes.RTLD_GLOBAL)
            return
