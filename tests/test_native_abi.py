"""The C ABI of librhuber_cpu.so (native/include/rh_cpu.h) and its ctypes binding
(rhuber._native.cpu): the structs agree with the C compiler's layout, status codes become our
exceptions with the library's message, the library imports nothing from Python, and an update
reads the caller's arrays in place and writes nothing on failure."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from helpers import NATIVE_CPU, require_module
from rhuber import _native
from rhuber.core import Config
from rhuber.engines import NativeCpuEngine
from rhuber.errors import ModelFormatError, NumericalError

ROOT = Path(__file__).resolve().parent.parent
HEADER = ROOT / "native" / "include" / "rh_cpu.h"


@pytest.fixture(scope="module")
def cpu():
    return require_module(*NATIVE_CPU)


def _structs(module):
    return {"rh_cpu_engine_options": module.EngineOptions, "rh_cpu_config": module.Config,
            "rh_cpu_state": module.State, "rh_cpu_batch": module.Batch,
            "rh_cpu_diagnostics": module.Diagnostics,
            "rh_cpu_tensor_stats": module.TensorStats, "rh_cpu_iteration": module.Iteration}


def test_the_ctypes_structs_have_the_c_compilers_layout(cpu, tmp_path):
    """Every field of every struct at the offset the C compiler gives it, and the same size: a
    field added to the header but not to the binding (or moved) fails here."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler on PATH to lay out rh_cpu.h")
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "rh_cpu.h"', "int main(void) {"]
    for name, struct in _structs(cpu).items():
        lines.append(f'printf("{name} %zu\\n", sizeof({name}));')
        for field, _ in struct._fields_:
            c_field = "lambda" if field == "lambda_" else field
            lines.append(f'printf("{name}.{field} %zu\\n", offsetof({name}, {c_field}));')
    lines += ["return 0;", "}"]
    source = tmp_path / "layout.c"
    source.write_text("\n".join(lines))
    subprocess.run([compiler, "-std=c11", "-I", str(HEADER.parent), str(source), "-o",
                    str(tmp_path / "layout")], check=True)
    output = subprocess.run([str(tmp_path / "layout")], check=True, capture_output=True,
                            text=True).stdout
    c_layout = dict(line.rsplit(" ", 1) for line in output.splitlines())
    for name, struct in _structs(cpu).items():
        assert int(c_layout[name]) == ctypes.sizeof(struct), name
        for field, _ in struct._fields_:
            assert int(c_layout[f"{name}.{field}"]) == getattr(struct, field).offset, \
                f"{name}.{field}"


def test_the_binding_knows_the_headers_abi_major(cpu):
    text = HEADER.read_text()
    assert f"#define RH_CPU_ABI_VERSION_MAJOR {cpu.ABI_VERSION_MAJOR}\n" in text
    assert cpu.LIB.rh_cpu_abi_version() >> 16 == cpu.ABI_VERSION_MAJOR


def test_the_library_imports_no_python_symbol(cpu):
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm on PATH to list the library's symbols")
    undefined = subprocess.run([nm, "-D", "--undefined-only", str(cpu.LIBRARY_PATH)],
                               check=True, capture_output=True, text=True).stdout
    assert not [line for line in undefined.splitlines() if line.split()[-1].startswith("Py")]
    exported = subprocess.run([nm, "-D", "--defined-only", str(cpu.LIBRARY_PATH)], check=True,
                              capture_output=True, text=True).stdout
    names = [line.split()[-1] for line in exported.splitlines()]
    assert names and all(n.startswith("rh_cpu_") for n in names), names[:5]


def test_the_cuda_library_exports_its_c_abi_alone():
    """librh_cuda leaves only its rh_cuda_* calls: the weak std:: instantiations, typeinfo and
    vtables that libstdc++'s headers mark default would bind another C++ runtime's in the process
    (PyTorch's, CuPy's) to ours, or theirs to us."""
    require_module("cuda", "rhuber-native-cuda")
    from rhuber._native import cuda

    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm on PATH to list the library's symbols")
    exported = subprocess.run([nm, "-D", "--defined-only", str(cuda.LIBRARY_PATH)], check=True,
                              capture_output=True, text=True).stdout
    names = [line.split()[-1] for line in exported.splitlines()]
    assert names and all(n.startswith("rh_cuda_") for n in names), \
        [n for n in names if not n.startswith("rh_cuda_")][:5]


def test_the_library_is_called_without_the_gil(cpu):
    # ctypes.CDLL (not PyDLL) releases the GIL around every call.
    assert type(cpu.LIB) is ctypes.CDLL


@pytest.mark.parametrize(("status", "kind"), [(1, ValueError), (2, NumericalError),
                                              (3, MemoryError), (4, ModelFormatError),
                                              (5, RuntimeError), (99, RuntimeError)])
def test_status_codes_map_to_our_exceptions_with_the_message(cpu, status, kind):
    exc = cpu.error(status, "what the library said")
    assert type(exc) is kind and str(exc) == "what the library said"


def test_status_names_are_the_headers(cpu):
    names = [cpu.LIB.rh_cpu_status_name(s).decode() for s in range(6)]
    assert names == ["ok", "invalid_argument", "numerical", "out_of_memory", "model_format",
                     "internal"]


def _problem(dtype=np.float64, n=300, p=3):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, p)).astype(dtype)
    y = (X @ np.arange(1, p + 1) + rng.normal(size=n)).astype(dtype)
    return X, y


def test_a_bad_row_is_named_by_the_engine_and_the_state_is_untouched(cpu):
    engine = NativeCpuEngine(cpu, threads=1)
    X, y = _problem()
    state, _ = engine.update(None, X, y, None, Config())
    before = state.coef.copy(), state.information.copy()
    X[41, 2] = np.inf
    with pytest.raises(ValueError, match="row 41"):
        engine.update(state, X, y, None, Config())
    np.testing.assert_array_equal(state.coef, before[0])
    np.testing.assert_array_equal(state.information, before[1])


def test_the_state_crosses_in_place_and_the_new_one_is_fresh(cpu):
    """The previous state's arrays are read where they are (a C-contiguous float64 array's
    address is what the struct carries) and never written; the new state has its own."""
    engine = NativeCpuEngine(cpu, threads=1)
    X, y = _problem()
    first, _ = engine.update(None, X, y, None, Config())
    coef = first.coef.copy()
    second, _ = engine.update(first, X, y, None, Config())
    assert second.coef is not first.coef and not np.shares_memory(second.coef, first.coef)
    np.testing.assert_array_equal(first.coef, coef)
    struct = cpu.state_struct(np.dtype(np.float64), first.coef.size, first.coef,
                              first.information, None, None)
    assert struct.coef == first.coef.ctypes.data
    assert struct.information == first.information.ctypes.data


def test_a_float32_stream_stays_float32(cpu):
    engine = NativeCpuEngine(cpu, threads=1)
    X, y = _problem(np.float32)
    state, diag = engine.update(None, X, y, None, Config(inference_matrices=True))
    assert state.coef.dtype == np.float32 and state.gram.dtype == np.float32
    assert diag.converged


def test_an_engine_of_a_bad_gram_is_refused_in_python_and_c(cpu):
    with pytest.raises(ValueError, match="gram"):
        cpu.Engine(gram="sometimes")
    options = cpu.EngineOptions(gram=7)
    handle = ctypes.c_void_p()
    status = cpu.LIB.rh_cpu_engine_create(ctypes.byref(options), ctypes.byref(handle))
    assert status == cpu.INVALID_ARGUMENT
    assert "options.gram" in cpu.LIB.rh_cpu_last_error().decode()


def test_a_missing_library_is_engine_not_available(monkeypatch):
    from rhuber.errors import EngineNotAvailableError

    _native._load_cpu.cache_clear()
    monkeypatch.setenv("RH_NATIVE_CPU_LIBRARY", "/nonexistent/librhuber_cpu.so")
    try:
        with pytest.raises(EngineNotAvailableError, match="rhuber-native-cpu"):
            _native.load("native_cpu")
    finally:
        monkeypatch.undo()
        _native._load_cpu.cache_clear()
