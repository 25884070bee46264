"""The three distributions share one version, and a native module of another version is refused.

The wheels themselves are built and installed into a fresh environment by `make test-dist`
(scripts/dist.sh, scripts/test_dist.sh), which `make test` runs.
"""

import re
import tomllib
import types
from pathlib import Path

import pytest

import rhuber
from rhuber import _native
from rhuber.engines import make_engine
from rhuber.errors import EngineNotAvailableError, NativeVersionError

ROOT = Path(__file__).resolve().parent.parent
VERSION_FILE = "python/rhuber/_version.py"


def _pyproject(path: str) -> dict:
    return tomllib.loads((ROOT / path).read_text())


def test_the_pure_distribution_reads_its_version_from_the_version_file():
    project = _pyproject("pyproject.toml")
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["hatch"]["version"]["path"] == VERSION_FILE


@pytest.mark.parametrize("dist_dir", ["python-cpu", "python-cuda"])
def test_native_distributions_read_the_version_file_and_pin_the_pure_one(dist_dir):
    project = _pyproject(f"{dist_dir}/pyproject.toml")
    assert "version" not in project["project"] and "dependencies" not in project["project"]
    assert set(project["project"]["dynamic"]) == {"version", "dependencies"}
    metadata = project["tool"]["scikit-build"]["metadata"]
    assert metadata["version"]["input"] == f"../{VERSION_FILE}"
    assert metadata["dependencies"]["result"][0] == "rhuber=={project[version]}"
    # The CMake projects read the same file (native/cmake/RhVersion.cmake).
    cmake = (ROOT / "native" / "cmake" / "RhVersion.cmake").read_text()
    assert f"../../{VERSION_FILE}" in cmake


@pytest.mark.parametrize("path", ["pyproject.toml", "python-cpu/pyproject.toml",
                                  "python-cuda/pyproject.toml"])
def test_every_distribution_accepts_python_3_10(path):
    assert _pyproject(path)["project"]["requires-python"] == ">=3.10"


@pytest.mark.parametrize("dist_dir", ["python-cpu", "python-cuda"])
def test_native_wheels_are_py3_none_without_nanobind(dist_dir):
    """A C ABI loaded with ctypes ties a native wheel to no interpreter: py3-none, one wheel for
    every CPython; and nothing of nanobind is left to build (make test-dist checks the tag and
    `nm -D` of the built wheels)."""
    project = _pyproject(f"{dist_dir}/pyproject.toml")
    assert project["tool"]["scikit-build"]["wheel"]["py-api"] == "py3"
    assert not [r for r in project["build-system"]["requires"] if "nanobind" in r]
    build = _pyproject("pyproject.toml")["project"]["optional-dependencies"]["build"]
    assert not [r for r in build if "nanobind" in r]
    cmake = [p.read_text() for p in (ROOT / "native").rglob("*.cmake")]
    cmake += [p.read_text() for p in (ROOT / "native").rglob("CMakeLists.txt")]
    assert not [text for text in cmake if "nanobind" in text]


def test_the_cuda_distribution_depends_on_nvidia_wheels_not_the_build_machine():
    deps = _pyproject("python-cuda/pyproject.toml")["tool"]["scikit-build"]["metadata"][
        "dependencies"]["result"]
    names = {d.split(">")[0].split("=")[0] for d in deps}
    assert {"nvidia-cuda-runtime", "nvidia-cublas", "nvidia-cusolver"} <= names
    cmake = (ROOT / "native" / "cuda" / "CMakeLists.txt").read_text()
    assert "$ORIGIN/../nvidia/cu${CUDAToolkit_VERSION_MAJOR}/lib" in cmake
    assert "RH_CUDA_TOOLKIT_RPATH=OFF" in (ROOT / "scripts" / "dist.sh").read_text()


@pytest.mark.parametrize("dist_dir", ["python-cpu", "python-cuda"])
def test_native_distributions_build_and_run_on_scipy_openblas32_not_a_bundled_blas(dist_dir):
    project = _pyproject(f"{dist_dir}/pyproject.toml")
    skbuild = project["tool"]["scikit-build"]
    assert skbuild["cmake"]["define"]["RH_BLAS"] == "scipy-openblas32"
    build = [r for r in project["build-system"]["requires"] if r.startswith("scipy-openblas32")]
    run = [r for r in skbuild["metadata"]["dependencies"]["result"]
           if r.startswith("scipy-openblas32")]
    assert build == run and len(run) == 1  # the same minimum to build against and to run with
    # Found relative to the module in site-packages; never bundled into the wheel.
    assert '"$ORIGIN/scipy_openblas32/lib"' in (ROOT / "native/cmake/RhBlas.cmake").read_text()
    assert "--exclude 'libscipy_openblas.so'" in (ROOT / "scripts/dist.sh").read_text()


def test_every_blas_name_the_native_sources_call_has_its_scipy_openblas_name():
    # scipy-openblas32 declares only scipy_-prefixed names; the header maps ours onto them.
    header = (ROOT / "native/cmake/rh_scipy_openblas_names.h").read_text()
    mapped = dict(re.findall(r"^#define (\w+) (\w+)$", header, re.MULTILINE))
    assert all(new == f"scipy_{old}" for old, new in mapped.items())
    sources = [p for ext in ("cpp", "hpp", "h", "cu") for p in (ROOT / "native").rglob(f"*.{ext}")]
    called = {name for p in sources if p.name != "rh_scipy_openblas_names.h"
              for name in re.findall(r"\b((?:cblas|LAPACKE|openblas)_\w+)\s*\(", p.read_text())}
    assert called, "no BLAS call found: the pattern no longer matches the sources"
    assert called <= set(mapped), f"not mapped: {sorted(called - set(mapped))}"


def test_the_installed_native_module_has_this_version():
    try:
        module = _native.load("native_cpu")
    except EngineNotAvailableError as exc:
        pytest.skip(f"rhuber-native-cpu is not installed: {exc}")
    assert module.__version__ == rhuber.__version__


@pytest.fixture
def fresh_load():
    """rhuber._native.load("native_cpu") loads afresh in the test and after it."""
    _native._load_cpu.cache_clear()
    yield
    _native._load_cpu.cache_clear()


def _old_module(monkeypatch, version="0.0.1"):
    from rhuber._native import cpu

    fake = types.SimpleNamespace(version=version, path="/elsewhere/librhuber_cpu.so")
    monkeypatch.setattr(_native, "cpu_library_path", lambda: fake.path)
    monkeypatch.setattr(cpu, "open_library", lambda path: fake)
    return fake


def test_a_native_module_of_another_version_is_refused_naming_both(monkeypatch, fresh_load):
    _old_module(monkeypatch)
    with pytest.raises(NativeVersionError) as info:
        _native.load("native_cpu")
    message = str(info.value)
    assert "rhuber-native-cpu 0.0.1" in message
    assert f"rhuber {rhuber.__version__}" in message
    assert "/elsewhere/" in message


def test_auto_does_not_fall_back_silently_on_a_mismatch(monkeypatch, fresh_load):
    # A mismatched engine is an installation error to fix, not a reason to run the reference.
    _old_module(monkeypatch)
    with pytest.raises(NativeVersionError):
        make_engine("auto")


def test_a_module_without_a_version_is_refused(monkeypatch, fresh_load):
    _old_module(monkeypatch, version=None)
    with pytest.raises(NativeVersionError, match="None"):
        _native.load("native_cpu")
