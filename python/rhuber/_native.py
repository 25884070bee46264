"""The one place that imports the native engines' modules, and checks they match this package.

The three distributions share one version (``_version.py``); each native one pins this package
exactly, but an environment can still end up mixed (an old module left behind, a ``--no-deps``
install, a module from another prefix on ``sys.path``). Running a module built for another
version would pair Python and C++ sides that disagree on the state and the contract, so a
mismatch is an error naming both versions, never a silent fallback to another engine.
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import importlib.util
from pathlib import Path
from typing import Any

from ._version import __version__
from .errors import EngineNotAvailableError, NativeVersionError

MODULES = {
    "native_cpu": ("_rhuber_native_cpu", "rhuber-native-cpu"),
    "cuda": ("_rhuber_native_cuda", "rhuber-native-cuda"),
}

# NVIDIA's CUDA 13 wheels (nvidia-cuda-runtime, nvidia-cublas, nvidia-cusolver and what cuSOLVER
# pulls in) put their libraries in site-packages/nvidia/cu13/lib; in the order they load each other.
_NVIDIA_LIBRARIES = ("libcudart.so.13", "libnvJitLink.so.13", "libcusparse.so.12",
                     "libcublasLt.so.13", "libcublas.so.13", "libcusolver.so.12")


def load(backend: str) -> Any:
    """The native module of ``backend`` ("native_cpu" or "cuda"), checked against this version.

    Raises EngineNotAvailableError when it is not installed (or cannot load), and
    NativeVersionError when it was built for another version of rhuber.
    """
    module_name, distribution = MODULES[backend]
    try:
        _preload_scipy_openblas()
        if backend == "cuda":
            _preload_nvidia_libraries()
        module = importlib.import_module(module_name)
    except (ImportError, OSError) as exc:
        raise EngineNotAvailableError(
            f"backend={backend!r} needs the package {distribution} "
            f"(pip install {distribution}=={__version__}), which could not be imported: {exc}"
        ) from exc
    check_version(module, distribution)
    return module


def check_version(module: Any, distribution: str) -> None:
    """Raise NativeVersionError unless ``module`` was built for this version."""
    native = getattr(module, "__version__", None)
    if native != __version__:
        raise NativeVersionError(
            f"{distribution} {native} (module {module.__name__} at "
            f"{getattr(module, '__file__', '?')}) does not match rhuber {__version__}: "
            f"the three distributions must have the same version; "
            f"pip install '{distribution}=={__version__}'"
        )


@functools.cache
def _preload_scipy_openblas() -> ctypes.CDLL | None:
    """Load the OpenBLAS of the wheel scipy-openblas32, if installed, before a native module.

    Both modules need ``libscipy_openblas.so`` (the CPU engine's BLAS and LAPACKE, the CUDA
    engine's host-side LAPACKE). Their run path names ``$ORIGIN/scipy_openblas32/lib``, the wheel
    installed beside them (the usual case); this also covers it living in another ``sys.path``
    entry (a user site, a ``--target`` directory): once loaded, the loader reuses the library for
    the module's dependency of that name. Loaded by path, privately (RTLD_LOCAL), not by importing
    ``scipy_openblas32``: that import loads it RTLD_GLOBAL, and SciPy's own bundled OpenBLAS, which
    exports the same ``scipy_`` names, would then bind to ours (and to its thread setting).
    """
    spec = importlib.util.find_spec("scipy_openblas32")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        library = Path(location) / "lib" / "libscipy_openblas.so"
        if library.is_file():
            return ctypes.CDLL(str(library), mode=ctypes.RTLD_LOCAL)  # held by the cache
    return None


@functools.cache
def _preload_nvidia_libraries() -> None:
    """Load the CUDA libraries of NVIDIA's wheels, if installed, before the CUDA module.

    The module's run path already names ``$ORIGIN/nvidia/cu13/lib`` (the wheels installed beside
    it, the usual case); this also covers them living in another ``sys.path`` entry (a user site,
    a ``--target`` directory). Without the wheels, the module's run path and the system decide.
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
