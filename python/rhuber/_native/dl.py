"""Loading a shared library with lazy binding.

``ctypes.CDLL`` always adds ``RTLD_NOW``, which resolves every function a library imports when it
loads: for OpenBLAS, 2,168 of them, of which the engine calls a few dozen (a third of its load
time). ``open_lazily`` calls the C library's ``dlopen`` with ``RTLD_LAZY`` instead and wraps the
handle in a ``ctypes.CDLL``; each function is then resolved on its first call. Only for libraries
that link with every symbol resolved (``-Wl,--no-undefined``) and their dependencies, so a call
cannot meet a missing symbol.
"""

from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path


@functools.cache
def _dlopen():
    libc = ctypes.CDLL(None)  # the process's own symbols: dlopen and dlerror are in its libc
    dlopen, dlerror = libc.dlopen, libc.dlerror
    dlopen.restype, dlopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_int]
    dlerror.restype, dlerror.argtypes = ctypes.c_char_p, []
    return dlopen, dlerror


def open_lazily(path: str | Path, mode: int = os.RTLD_LOCAL) -> ctypes.CDLL:
    """``ctypes.CDLL(path, mode)``, bound lazily; OSError with the loader's message on failure."""
    dlopen, dlerror = _dlopen()
    handle = dlopen(os.fsencode(path), mode | os.RTLD_LAZY)
    if not handle:
        message = dlerror()
        raise OSError(message.decode(errors="replace") if message else f"cannot load {path}")
    return ctypes.CDLL(str(path), mode=mode, handle=handle)
