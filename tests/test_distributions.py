"""The three distributions share one version, and a native module of another version is refused.

The wheels themselves are built and installed into a fresh environment by `make test-dist`
(scripts/dist.sh, scripts/test_dist.sh), which `make test` runs.
"""

import tomllib
import types
from pathlib import Path

import pytest

import renewable_huber
from renewable_huber import _native
from renewable_huber.backends import make_engine
from renewable_huber.errors import EngineNotAvailableError, NativeVersionError

ROOT = Path(__file__).resolve().parent.parent
VERSION_FILE = "python/renewable_huber/_version.py"


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
    assert metadata["dependencies"]["result"][0] == "renewable-huber=={project[version]}"
    # The CMake projects read the same file (native/cmake/RhVersion.cmake).
    cmake = (ROOT / "native" / "cmake" / "RhVersion.cmake").read_text()
    assert f"../../{VERSION_FILE}" in cmake


def test_the_cuda_distribution_depends_on_nvidia_wheels_not_the_build_machine():
    deps = _pyproject("python-cuda/pyproject.toml")["tool"]["scikit-build"]["metadata"][
        "dependencies"]["result"]
    names = {d.split(">")[0].split("=")[0] for d in deps}
    assert {"nvidia-cuda-runtime", "nvidia-cublas", "nvidia-cusolver"} <= names
    cmake = (ROOT / "native" / "cuda" / "python" / "CMakeLists.txt").read_text()
    assert "$ORIGIN/nvidia/cu${CUDAToolkit_VERSION_MAJOR}/lib" in cmake
    assert "RH_CUDA_TOOLKIT_RPATH=OFF" in (ROOT / "scripts" / "dist.sh").read_text()


def test_the_installed_native_module_has_this_version():
    try:
        module = _native.load("native_cpu")
    except EngineNotAvailableError as exc:
        pytest.skip(f"renewable-huber-native-cpu is not installed: {exc}")
    assert module.__version__ == renewable_huber.__version__


def _old_module(monkeypatch, version="0.0.1"):
    fake = types.SimpleNamespace(__name__="_renewable_huber_native_cpu", __version__=version,
                                 __file__="/elsewhere/_renewable_huber_native_cpu.so")
    monkeypatch.setattr(_native.importlib, "import_module", lambda name: fake)
    return fake


def test_a_native_module_of_another_version_is_refused_naming_both(monkeypatch):
    _old_module(monkeypatch)
    with pytest.raises(NativeVersionError) as info:
        _native.load("native_cpu")
    message = str(info.value)
    assert "renewable-huber-native-cpu 0.0.1" in message
    assert f"renewable-huber {renewable_huber.__version__}" in message
    assert "/elsewhere/" in message


def test_auto_does_not_fall_back_silently_on_a_mismatch(monkeypatch):
    # A mismatched engine is an installation error to fix, not a reason to run the reference.
    _old_module(monkeypatch)
    with pytest.raises(NativeVersionError):
        make_engine("auto")


def test_a_module_without_a_version_is_refused(monkeypatch):
    fake = _old_module(monkeypatch)
    del fake.__version__
    with pytest.raises(NativeVersionError, match="None"):
        _native.load("native_cpu")
