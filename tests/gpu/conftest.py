"""GPU tests: each one skips itself, with the reason, where the CUDA engine cannot run (the
module renewable-huber-native-cuda is not installed, or there is no CUDA device or driver)."""

from __future__ import annotations

import functools

import pytest


@functools.cache
def cuda_unavailable() -> str | None:
    """Why the CUDA engine cannot run here, or None when it can."""
    try:
        import _renewable_huber_native_cuda as native
    except ImportError as exc:
        return f"renewable-huber-native-cuda is not installed ({exc})"
    try:
        native.device_count()
    except Exception as exc:  # EngineNotAvailableError: no device, no driver
        return str(exc)
    return None


def pytest_collection_modifyitems(config, items):
    reason = cuda_unavailable()
    if reason is None:
        return
    marker = pytest.mark.skip(reason=f"needs a CUDA GPU: {reason}")
    for item in items:
        if "tests/gpu/" in str(item.path).replace("\\", "/"):
            item.add_marker(marker)


@pytest.fixture(scope="session")
def native():
    import _renewable_huber_native_cuda

    return _renewable_huber_native_cuda


@pytest.fixture
def engine(native):
    return native.make_engine(device=0)
