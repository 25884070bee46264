"""The CUDA C ABI is described once, in native/contracts/rh_cuda_contract.json. These tests hold
the header (native/include/rh_cuda.h) and the layout pins (native/cuda/abi_contract.cpp) to it,
without a compiler or a GPU: the header is parsed here and its struct layout computed with the
LP64 rules the wheels are built for."""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
HEADER = ROOT / "native" / "include" / "rh_cuda.h"
CONTRACT = ROOT / "native" / "contracts" / "rh_cuda_contract.json"
PINS = ROOT / "native" / "cuda" / "abi_contract.cpp"
CMAKE = ROOT / "native" / "cuda" / "CMakeLists.txt"
CORE_DIAGNOSTICS = ROOT / "native" / "include" / "rh" / "diagnostics.hpp"

# LP64: every scalar the ABI allows is naturally aligned. No other type may appear in a struct.
SCALAR_SIZES = {"int32_t": 4, "uint32_t": 4, "int64_t": 8, "uint64_t": 8, "double": 8}
POINTER_SIZE = 8


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def _normalize_type(text: str) -> str:
    return re.sub(r"\s*\*", "*", " ".join(text.split()))


def parse_header(text: str) -> dict:
    """The constants, handles, structs and functions that rh_cuda.h declares."""
    code = _strip_comments(text)
    constants = {
        name: int(value)
        for name, value in re.findall(r"#define\s+(RH_CUDA_\w+)\s+(-?\d+)\s*$", code, re.M)
    }
    handles = {
        name: f"struct {tag}*"
        for tag, name in re.findall(r"typedef\s+struct\s+(\w+)\s*\*\s*(\w+)\s*;", code)
    }
    structs = {}
    for name, body, alias in re.findall(
        r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", code, re.S
    ):
        assert name == alias, f"struct {name} is typedef'd as {alias}"
        fields = []
        for declaration in filter(None, (d.strip() for d in body.split(";"))):
            type_text, field = re.match(r"(.+?)\s*(\w+)$", declaration, re.S).groups()
            fields.append({"name": field, "type": _normalize_type(type_text)})
        structs[name] = fields
    functions = {}
    declarations = re.sub(r"^\s*#.*$", " ", code, flags=re.M)  # not the macros' own text
    for returns, name, params in re.findall(
        r"RH_CUDA_API\s+(.+?)\s*(\w+)\s*\(([^)]*)\)\s*;", declarations, re.S
    ):
        parsed = []
        if params.strip() != "void":
            for param in params.split(","):
                type_text, pname = re.match(r"(.+?)\s*(\w+)$", param.strip(), re.S).groups()
                parsed.append({"name": pname, "type": _normalize_type(type_text)})
        functions[name] = {"returns": _normalize_type(returns), "params": parsed}
    return {"constants": constants, "handles": handles, "structs": structs,
            "functions": functions}


def layout(fields: list[dict]) -> tuple[list[int], int, int]:
    """Offsets, size and alignment of a struct of ABI scalars and pointers."""
    offsets, offset, align = [], 0, 1
    for field in fields:
        t = field["type"]
        size = POINTER_SIZE if t.endswith("*") else SCALAR_SIZES.get(t)
        assert size is not None, f"field {field['name']} has a type outside the ABI: {t}"
        offset = (offset + size - 1) // size * size
        offsets.append(offset)
        offset += size
        align = max(align, size)
    return offsets, (offset + align - 1) // align * align, align


@pytest.fixture(scope="module")
def contract() -> dict:
    return json.loads(CONTRACT.read_text())


@pytest.fixture(scope="module")
def header() -> dict:
    return parse_header(HEADER.read_text())


def test_version_and_constants_match(contract, header):
    assert header["constants"]["RH_CUDA_ABI_VERSION_MAJOR"] == contract["abi_version"]["major"]
    assert header["constants"]["RH_CUDA_ABI_VERSION_MINOR"] == contract["abi_version"]["minor"]
    assert header["constants"] == contract["constants"]


def test_status_codes_are_distinct_and_ok_is_zero(contract):
    statuses = {k: v for k, v in contract["constants"].items() if k.startswith("RH_CUDA_ERROR_")}
    assert contract["constants"]["RH_CUDA_OK"] == 0
    assert len(set(statuses.values())) == len(statuses)
    assert 0 not in statuses.values()


def test_handles_are_typed_opaque_pointers(contract, header):
    assert header["handles"] == contract["handles"]


def test_structs_match_field_by_field(contract, header):
    assert list(header["structs"]) == [s["name"] for s in contract["structs"]]
    for struct in contract["structs"]:
        declared = header["structs"][struct["name"]]
        assert [(f["name"], f["type"]) for f in declared] == [
            (f["name"], f["type"]) for f in struct["fields"]
        ], struct["name"]


def test_struct_layout_has_no_hidden_padding(contract):
    for struct in contract["structs"]:
        offsets, size, align = layout(struct["fields"])
        assert offsets == [f["offset"] for f in struct["fields"]], struct["name"]
        assert (size, align) == (struct["size"], struct["align"]), struct["name"]
        # Explicit `reserved` fields fill every gap, so C, C++ and ctypes agree by construction.
        ends = [o + (POINTER_SIZE if f["type"].endswith("*") else SCALAR_SIZES[f["type"]])
                for o, f in zip(offsets, struct["fields"], strict=True)]
        assert all(e == o for e, o in zip(ends, [*offsets[1:], size], strict=True)), struct["name"]


def test_functions_match_signature_by_signature(contract, header):
    assert list(header["functions"]) == [f["name"] for f in contract["functions"]]
    for function in contract["functions"]:
        declared = header["functions"][function["name"]]
        assert declared["returns"] == function["returns"], function["name"]
        assert declared["params"] == function["params"], function["name"]


def test_entry_points_return_a_status_and_use_only_abi_types(contract):
    allowed = {*SCALAR_SIZES, "int", "void", "char", *contract["handles"],
               *(s["name"] for s in contract["structs"])}
    for function in contract["functions"]:
        name = function["name"]
        if name not in {"rh_cuda_abi_version", "rh_cuda_last_error", "rh_cuda_status_name"}:
            assert function["returns"] == "int", name
        for param in function["params"]:
            base = param["type"].replace("const ", "").rstrip("*")
            assert base in allowed, f"{name}({param['name']}: {param['type']})"


def test_every_create_has_a_free(contract):
    names = {f["name"] for f in contract["functions"]}
    for name in names:
        if name.endswith("_create"):
            assert name.removesuffix("_create") + "_free" in names, name


def test_static_asserts_pin_the_contract_layout(contract):
    pins = PINS.read_text()
    sizes = dict(re.findall(r"sizeof\((\w+)\)\s*==\s*(\d+)", pins))
    aligns = dict(re.findall(r"alignof\((\w+)\)\s*==\s*(\d+)", pins))
    offsets = {(s, f): int(o) for s, f, o in
               re.findall(r"offsetof\((\w+),\s*(\w+)\)\s*==\s*(\d+)", pins)}
    version = re.search(r"RH_CUDA_ABI_VERSION\s*==\s*\(\s*(\d+)\s*<<\s*16\s*\|\s*(\d+)\s*\)", pins)
    assert version and (int(version[1]), int(version[2])) == (
        contract["abi_version"]["major"], contract["abi_version"]["minor"])
    for struct in contract["structs"]:
        name = struct["name"]
        assert int(sizes[name]) == struct["size"], name
        assert int(aligns[name]) == struct["align"], name
        for field in struct["fields"]:
            assert offsets[(name, field["name"])] == field["offset"], (name, field["name"])
    assert len(offsets) == sum(len(s["fields"]) for s in contract["structs"])
    constants = dict(re.findall(r"static_assert\((RH_CUDA_\w+)\s*==\s*(-?\d+)\)", pins))
    expected = {k: str(v) for k, v in contract["constants"].items()
                if not k.startswith("RH_CUDA_ABI_VERSION")}
    assert constants == expected


def test_the_soname_follows_the_major_version(contract):
    """An incompatible ABI gets a new soname, so a consumer built for another major fails to load
    rather than misreading a struct."""
    soversion = re.search(r"\bSOVERSION\s+(\d+)", CMAKE.read_text())
    assert soversion and int(soversion[1]) == contract["abi_version"]["major"]


def test_diagnostics_carry_every_field_of_the_core_and_python(contract):
    """rh_cuda_diagnostics reports all of rh::Diagnostics (contract v2 appended rcond, contract v4
    the drift test's three doubles, ABI 5 LAMM's stationarity step) and everything
    rhuber.core.Diagnostics.as_dict() has."""
    from rhuber.core import Diagnostics

    fields = next(s for s in contract["structs"] if s["name"] == "rh_cuda_diagnostics")["fields"]
    names = [f["name"] for f in fields]
    body = re.search(r"struct Diagnostics\s*\{(.*?)\};", _strip_comments(
        CORE_DIAGNOSTICS.read_text()), re.S)[1]
    core = re.findall(r"(\w+)\s*=[^;]*;", body)
    assert sorted(names) == sorted(core)
    python = Diagnostics(converged=True, n_iter=1, objective=0.0, lambda_=0.0, bandwidth=1.0,
                         solver="cholesky", line_search_halvings=0, rcond=0.5).as_dict()
    assert sorted(names) == sorted(python)
    assert {"name": "rcond", "type": "double", "offset": 48} in fields
    assert fields[-1] == {"name": "stationarity_step", "type": "double", "offset": 80}


def test_config_carries_every_parameter_of_the_python_config(contract):
    """rh_cuda_config has a field for every key of Config.native_dict but l1_solver (the CUDA
    engine solves L1 batches with LAMM only; CudaEngine refuses another solver); the state info
    says whether the state holds square-root information (factorization="qr", ABI 4.1)."""
    import numpy as np

    from rhuber.core import Config

    fields = {f["name"] for f in next(s for s in contract["structs"]
                                      if s["name"] == "rh_cuda_config")["fields"]}
    keys = set(Config().native_dict(np.dtype(np.float64))) - {"l1_solver"}
    assert keys <= fields, keys - fields
    info = {f["name"] for f in next(s for s in contract["structs"]
                                    if s["name"] == "rh_cuda_state_info")["fields"]}
    sums = {"score_sq_sum", "curvature_sum", "curvature_sq_sum", "inference_weight",
            "inference_batches"}
    assert sums <= info
    assert "has_factor" in info


def _installed_library():
    """The CUDA binding with librh_cuda loaded, or a skip saying why it cannot be."""
    from rhuber import _native
    from rhuber.errors import EngineNotAvailableError

    try:
        return _native.load("cuda")
    except EngineNotAvailableError as exc:
        pytest.skip(f"rhuber-native-cuda is not installed: {exc}")


def test_the_binding_speaks_the_contract_version(contract):
    from rhuber._native import cuda

    version = contract["abi_version"]
    assert version["major"] << 16 | version["minor"] == cuda.ABI_VERSION
    assert f"librh_cuda.so.{version['major']}" == cuda.LIBRARY


def test_the_binding_has_the_contract_constants(contract):
    """The ctypes binding (rhuber._native.cuda) restates rh_cuda.h's codes once, in CONSTANTS;
    they must be the contract's, every one with its value."""
    from rhuber._native import cuda

    assert contract["constants"] == cuda.CONSTANTS


def test_the_bindings_structs_have_the_contract_layout(contract):
    from rhuber._native import cuda

    for struct in contract["structs"]:
        cls = cuda.STRUCTS[struct["name"]]
        assert ctypes.sizeof(cls) == struct["size"], struct["name"]
        assert [name for name, _ in cls._fields_] == [f["name"] for f in struct["fields"]]
        assert [getattr(cls, f["name"]).offset for f in struct["fields"]] == [
            f["offset"] for f in struct["fields"]], struct["name"]


def test_the_bindings_signatures_cover_the_contract_functions(contract):
    from rhuber._native import cuda

    assert set(cuda._SIGNATURES) == {f["name"] for f in contract["functions"]}
    for function in contract["functions"]:
        assert len(cuda._SIGNATURES[function["name"]][1]) == len(function["params"]), \
            function["name"]


@pytest.mark.parametrize(("code", "kind"), [
    ("RH_CUDA_ERROR_INVALID_ARGUMENT", ValueError), ("RH_CUDA_ERROR_UNSUPPORTED", ValueError),
    ("RH_CUDA_ERROR_NUMERICAL", "NumericalError"), ("RH_CUDA_ERROR_NO_DEVICE",
                                                    "EngineNotAvailableError"),
    ("RH_CUDA_ERROR_OUT_OF_MEMORY", MemoryError), ("RH_CUDA_ERROR_CUDA", RuntimeError),
    ("RH_CUDA_ERROR_INTERNAL", RuntimeError)])
def test_cuda_status_codes_map_to_our_exceptions(contract, code, kind):
    from rhuber import errors
    from rhuber._native import cuda

    kind = getattr(errors, kind) if isinstance(kind, str) else kind
    exc = cuda.error(contract["constants"][code], "the library's words")
    assert type(exc) is kind and str(exc) == "the library's words"


def test_a_missing_cuda_library_is_engine_not_available(monkeypatch):
    from rhuber import _native
    from rhuber.engines import make_engine
    from rhuber.errors import EngineNotAvailableError

    _native._load_cuda.cache_clear()
    monkeypatch.setenv("RH_NATIVE_CUDA_LIBRARY", "/nonexistent/librh_cuda.so.4")
    try:
        with pytest.raises(EngineNotAvailableError, match="needs the package rhuber-native-cuda"):
            make_engine("cuda")
    finally:
        monkeypatch.undo()
        _native._load_cuda.cache_clear()


def test_a_library_that_is_not_librh_cuda_is_refused():
    """open_library declares rh_cuda_abi_version first: the CPU library, which has no such call,
    is refused before anything in it is called."""
    from rhuber._native import cuda

    cpu = _installed_cpu_library()
    with pytest.raises(AttributeError, match="rh_cuda_abi_version"):
        cuda.open_library(cpu)


def _installed_cpu_library():
    from rhuber import _native
    from rhuber.errors import EngineNotAvailableError

    try:
        return _native.load("native_cpu").LIBRARY_PATH
    except EngineNotAvailableError as exc:
        pytest.skip(f"rhuber-native-cpu is not installed: {exc}")


def test_host_arrays_cross_read_only_for_input_and_writable_for_output():
    """CudaEngine returns states with read-only arrays and loads them again (another engine, a
    second stream): State.load's descriptors accept them, State.read's refuse them."""
    from rhuber._native import cuda

    a = np.arange(6.0).reshape(2, 3)
    a.flags.writeable = False
    described = cuda.host_array(a)._obj
    assert (described.data, described.rows, described.cols) == (a.ctypes.data, 2, 3)
    with pytest.raises(ValueError, match="writable"):
        cuda.host_array(a, writable=True)
    with pytest.raises(ValueError, match="C-contiguous"):
        cuda.host_array(np.zeros((3, 2)).T)


def test_cuda_backend_without_a_gpu_says_so():
    native = _installed_library()
    from rhuber.engines import make_engine
    from rhuber.errors import EngineNotAvailableError

    try:
        native.device_count()
    except EngineNotAvailableError:
        pass
    else:
        pytest.skip("a CUDA device is present: tests/gpu covers the engine there")
    with pytest.raises(EngineNotAvailableError, match="no CUDA device"):
        make_engine("cuda")


def test_gpu_tests_fail_without_a_device_when_a_gpu_is_required():
    """scripts/gpu_check.sh sets RH_REQUIRE_GPU=1: there, a machine where the engine cannot run
    (a driver older than the runtime, say) fails the GPU tests instead of skipping them."""
    native = _installed_library()
    try:
        native.device_count()
    except Exception:  # EngineNotAvailableError: what this test is about
        pass
    else:
        pytest.skip("a CUDA device is present: the GPU tests run")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "tests/gpu/test_cuda_golden.py"]
    env = {k: v for k, v in os.environ.items() if k != "RH_REQUIRE_GPU"}
    skipped = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                             check=False)
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    assert "skipped" in skipped.stdout and "failed" not in skipped.stdout
    required = subprocess.run(command, cwd=ROOT, env={**env, "RH_REQUIRE_GPU": "1"},
                              capture_output=True, text=True, check=False)
    assert required.returncode == 1, required.stdout + required.stderr
    assert "RH_REQUIRE_GPU=1, but the CUDA engine cannot run" in required.stdout
    assert "skipped" not in required.stdout


# ------------------------------------------------- the built library through ctypes, without a GPU

_CTYPES = {"int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32, "int64_t": ctypes.c_int64,
           "uint64_t": ctypes.c_uint64, "double": ctypes.c_double}


def _ctypes_struct(struct: dict) -> type[ctypes.Structure]:
    fields = [(f["name"], ctypes.c_void_p if f["type"].endswith("*") else _CTYPES[f["type"]])
              for f in struct["fields"]]
    return type(struct["name"], (ctypes.Structure,), {"_fields_": fields})


@pytest.fixture(scope="module")
def library(contract):
    path = _installed_library().LIBRARY_PATH
    assert path.name == f"librh_cuda.so.{contract['abi_version']['major']}"
    lib = ctypes.CDLL(str(path))
    lib.rh_cuda_last_error.restype = ctypes.c_char_p
    lib.rh_cuda_status_name.restype = ctypes.c_char_p
    lib.rh_cuda_abi_version.restype = ctypes.c_uint32
    return lib


def test_ctypes_agrees_with_the_contract_layout(contract):
    for struct in contract["structs"]:
        cls = _ctypes_struct(struct)
        assert ctypes.sizeof(cls) == struct["size"], struct["name"]
        assert [getattr(cls, f["name"]).offset for f in struct["fields"]] == [
            f["offset"] for f in struct["fields"]], struct["name"]


def test_library_exports_exactly_the_contract_functions(contract, library):
    for function in contract["functions"]:
        assert hasattr(library, function["name"]), function["name"]
    assert library.rh_cuda_abi_version() == (contract["abi_version"]["major"] << 16
                                             | contract["abi_version"]["minor"])


def test_status_names_are_stable(contract, library):
    for name, code in contract["constants"].items():
        if name == "RH_CUDA_OK" or name.startswith("RH_CUDA_ERROR_"):
            expected = "ok" if name == "RH_CUDA_OK" else name.removeprefix("RH_CUDA_ERROR_").lower()
            assert library.rh_cuda_status_name(code).decode() == expected
    assert library.rh_cuda_status_name(999).decode() == "unknown"


def test_errors_are_status_codes_with_a_thread_local_message(contract, library):
    codes = contract["constants"]
    status = library.rh_cuda_engine_create(None, None)
    assert status == codes["RH_CUDA_ERROR_INVALID_ARGUMENT"]
    assert library.rh_cuda_last_error().decode() == "options must not be NULL"
    seen = []
    thread = threading.Thread(target=lambda: seen.append(library.rh_cuda_last_error()))
    thread.start()
    thread.join()
    assert seen == [b""]  # another thread's failure is not this thread's
    assert library.rh_cuda_engine_free(None) == codes["RH_CUDA_OK"]
    assert library.rh_cuda_state_free(None) == codes["RH_CUDA_OK"]


def test_engine_creation_without_a_gpu_reports_no_device(contract, library):
    options = _ctypes_struct(next(s for s in contract["structs"]
                                  if s["name"] == "rh_cuda_engine_options"))()
    handle = ctypes.c_void_p()
    count = ctypes.c_int32()
    if library.rh_cuda_device_count(ctypes.byref(count)) == contract["constants"]["RH_CUDA_OK"]:
        pytest.skip("a CUDA device is present: tests/gpu covers the engine there")
    status = library.rh_cuda_engine_create(ctypes.byref(options), ctypes.byref(handle))
    assert status == contract["constants"]["RH_CUDA_ERROR_NO_DEVICE"]
    assert library.rh_cuda_last_error().decode().startswith("no CUDA device")
    assert handle.value is None


# ------------------------------------------------------- profiling (ABI 1.1), without a GPU

def test_profiling_entry_points_refuse_a_null_engine(contract, library):
    codes = contract["constants"]
    invalid = codes["RH_CUDA_ERROR_INVALID_ARGUMENT"]
    for mode in ("RH_CUDA_PROFILE_OFF", "RH_CUDA_PROFILE_PER_BATCH", "RH_CUDA_PROFILE_DEFERRED"):
        assert library.rh_cuda_engine_set_profiling(None, ctypes.c_int32(codes[mode])) == invalid
        assert library.rh_cuda_last_error().decode() == "engine must not be NULL"
    needed = ctypes.c_uint64(12345)
    status = library.rh_cuda_engine_profile_json(
        None, ctypes.c_int32(codes["RH_CUDA_PROFILE_FORMAT_REPORT"]), None, ctypes.c_uint64(0),
        ctypes.byref(needed))
    assert status == invalid
    assert library.rh_cuda_last_error().decode() == "engine must not be NULL"
    assert needed.value == 12345  # untouched on failure


def test_profile_json_checks_its_out_pointers_before_the_engine_is_used(contract, library):
    # A bogus, never-dereferenced handle: the NULL `needed` is refused first.
    codes = contract["constants"]
    bogus = ctypes.c_void_p(0x1)
    status = library.rh_cuda_engine_profile_json(
        bogus, ctypes.c_int32(codes["RH_CUDA_PROFILE_FORMAT_REPORT"]), None, ctypes.c_uint64(0),
        None)
    assert status == codes["RH_CUDA_ERROR_INVALID_ARGUMENT"]
    assert library.rh_cuda_last_error().decode() == "needed must not be NULL"
    needed = ctypes.c_uint64(0)
    status = library.rh_cuda_engine_profile_json(
        bogus, ctypes.c_int32(codes["RH_CUDA_PROFILE_FORMAT_REPORT"]), None, ctypes.c_uint64(16),
        ctypes.byref(needed))
    assert status == codes["RH_CUDA_ERROR_INVALID_ARGUMENT"]
    assert "buffer must not be NULL" in library.rh_cuda_last_error().decode()


def test_profiling_without_a_gpu_starts_at_engine_creation(contract, library):
    """Without a device no engine exists to profile: creation reports RH_CUDA_ERROR_NO_DEVICE,
    and the profiling calls then only see a NULL handle."""
    count = ctypes.c_int32()
    if library.rh_cuda_device_count(ctypes.byref(count)) == contract["constants"]["RH_CUDA_OK"]:
        pytest.skip("a CUDA device is present: tests/gpu/test_cuda_profiling.py covers it")
    options = _ctypes_struct(next(s for s in contract["structs"]
                                  if s["name"] == "rh_cuda_engine_options"))()
    handle = ctypes.c_void_p()
    status = library.rh_cuda_engine_create(ctypes.byref(options), ctypes.byref(handle))
    assert status == contract["constants"]["RH_CUDA_ERROR_NO_DEVICE"]
    assert library.rh_cuda_engine_set_profiling(
        handle, ctypes.c_int32(contract["constants"]["RH_CUDA_PROFILE_PER_BATCH"])
    ) == contract["constants"]["RH_CUDA_ERROR_INVALID_ARGUMENT"]


def test_cuda_engine_wrapper_exposes_the_profile(monkeypatch, contract):
    """CudaEngine switches the engine's profiling with the active rhuber.profile(), and
    profile_report() parses the engine's JSON; checked here on a stand-in native engine."""
    from rhuber.engines.cuda import AbiCodes, CudaEngine
    from rhuber.profiling import _hooks

    calls = []
    codes = contract["constants"]
    on, off = codes["RH_CUDA_PROFILE_PER_BATCH"], codes["RH_CUDA_PROFILE_OFF"]

    class FakeEngine:
        def set_profiling(self, mode):
            calls.append(mode)

        def profile_json(self, format):
            report = format == codes["RH_CUDA_PROFILE_FORMAT_REPORT"]
            return '{"schema_version": 1, "bricks": []}' if report else '{"traceEvents": []}'

    engine = CudaEngine.__new__(CudaEngine)
    engine._engine = FakeEngine()
    engine._abi = AbiCodes.from_constants(codes)
    engine._profiled_by = None
    engine._profiling = False
    engine._sync_profiling()
    assert calls == []
    monkeypatch.setattr(_hooks, "ACTIVE", object())
    engine._sync_profiling()
    engine._sync_profiling()
    assert calls == [on]  # once per profile, per_batch
    monkeypatch.setattr(_hooks, "ACTIVE", object())
    engine._sync_profiling()
    assert calls == [on, off, on]  # a new profile starts afresh
    monkeypatch.setattr(_hooks, "ACTIVE", None)
    engine._sync_profiling()
    assert calls == [on, off, on, off]
    assert engine.profile_report() == {"schema_version": 1, "bricks": []}
    assert engine.profile_trace() == '{"traceEvents": []}'
