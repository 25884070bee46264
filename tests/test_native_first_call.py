"""What a process pays the first time it loads the CPU engine: its OpenBLAS (scipy-openblas32's,
private to our libraries) starts no thread pool of its own, whose workers would spin beside the
first fit's threads, the user's OPENBLAS_NUM_THREADS is as it was for every other BLAS, and the
libraries bind their functions lazily."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import NATIVE_CPU, require_module

PROBE = """
import json, os
import numpy, scipy.linalg  # the user's own BLAS copies, loaded before ours as rhuber's import does
from rhuber import _native
before = len(os.listdir("/proc/self/task"))
cpu = _native.load("native_cpu")
after = len(os.listdir("/proc/self/task"))
print(json.dumps({"new_threads": after - before, "blas_threads": cpu.blas_info()["threads"],
                  "variable": os.environ.get("OPENBLAS_NUM_THREADS")}))
"""


@pytest.fixture(scope="module")
def cpu():
    return require_module(*NATIVE_CPU)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2,
                    reason="on one core OpenBLAS starts no worker thread whatever it is told")
@pytest.mark.parametrize("variable", [None, "2"])
def test_loading_the_engine_starts_no_blas_thread_and_keeps_the_users_setting(cpu, variable):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")}
    if variable is not None:
        env["OPENBLAS_NUM_THREADS"] = variable
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, check=True, text=True,
                         capture_output=True).stdout
    seen = json.loads(out)
    assert seen["new_threads"] == 0, seen
    assert seen["blas_threads"] == 1, seen
    assert seen["variable"] == variable, seen


@pytest.mark.parametrize("variable", [None, "3"])
def test_loads_in_threads_at_once_leave_the_users_setting(monkeypatch, variable):
    """Each load sets OPENBLAS_NUM_THREADS=1 for its window and puts the user's value back: two
    threads' windows interleaved would put back each other's 1 and keep it for good."""
    import threading
    import time

    from rhuber import _native

    if variable is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", variable)
    start = threading.Barrier(8)

    def load() -> None:
        start.wait()
        with _native._blas_without_thread_pool():
            time.sleep(0.002)  # a library loading

    threads = [threading.Thread(target=load) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert os.environ.get("OPENBLAS_NUM_THREADS") == variable


def test_a_library_opens_with_lazy_binding(tmp_path):
    """open_lazily resolves a library's functions on their first call, not at load (ctypes.CDLL
    resolves all of them: OpenBLAS's 2,168): a library whose one unused function needs a missing
    symbol loads, and its other function runs."""
    from rhuber._native.dl import open_lazily

    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build the probe library")
    source = tmp_path / "probe.c"
    source.write_text("int missing_everywhere(void);\n"
                      "int unused(void) { return missing_everywhere(); }\n"
                      "int answer(void) { return 42; }\n")
    library = tmp_path / "libprobe.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    with pytest.raises(OSError, match="missing_everywhere"):
        ctypes.CDLL(str(library))
    assert open_lazily(library).answer() == 42
    with pytest.raises(OSError, match="no_such_library"):
        open_lazily(tmp_path / "no_such_library.so")
