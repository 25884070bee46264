"""GPU tests: each one skips itself, with the reason, where the CUDA engine cannot run (the
module rhuber-native-cuda is not installed, or there is no CUDA device or driver).

With RH_REQUIRE_GPU=1 (scripts/gpu_check.sh sets it) each fails instead: on the GPU machine a
driver older than the CUDA runtime, say, must not pass as a run where everything skipped.

A test marked ``without_gpu`` runs everywhere: it checks, on the CPU engines, a premise that a GPU
test beside it relies on."""

from __future__ import annotations

import functools
import os

import pytest

from rhuber.engines.cuda import CudaEngine


@functools.cache
def cuda_unavailable() -> str | None:
    """Why the CUDA engine cannot run here, or None when it can."""
    from rhuber import _native
    from rhuber.errors import EngineNotAvailableError

    try:
        native = _native.load("cuda")
    except EngineNotAvailableError as exc:
        return f"rhuber-native-cuda is not installed ({exc})"
    try:
        native.device_count()
    except Exception as exc:  # EngineNotAvailableError: no device, no driver
        return str(exc)
    return None


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "without_gpu: a test under tests/gpu that needs no CUDA device")


def pytest_runtest_setup(item):
    # A hook of this conftest: it runs for the tests under tests/gpu only.
    if item.get_closest_marker("without_gpu") is not None:
        return
    reason = cuda_unavailable()
    if reason is None:
        return
    if os.environ.get("RH_REQUIRE_GPU") == "1":
        pytest.fail(f"RH_REQUIRE_GPU=1, but the CUDA engine cannot run: {reason}", pytrace=False)
    pytest.skip(f"needs a CUDA GPU: {reason}")


@pytest.fixture(scope="session")
def native():
    from rhuber import _native

    return _native.load("cuda")


@pytest.fixture
def engine(native):
    return CudaEngine(native, device=0)
