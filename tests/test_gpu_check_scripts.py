"""The GPU machine's scripts hang together (docs/cuda.md, "Running gpu-check on the borrowed GPU
machine"), checked without a GPU, a network or a build: they parse, the bundle's list carries what
the offline path installs from it, and the offline plan names the steps and flags it promises."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ["gpu_check.sh", "gpu_bundle.sh", "gpu_rehearsal.sh"]

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def bundle_list() -> dict[str, list[list[str]]]:
    entries: dict[str, list[list[str]]] = {"wheel": [], "deb": []}
    for line in (ROOT / "scripts/gpu_bundle.txt").read_text().splitlines():
        fields = line.split("#", 1)[0].split()
        if fields:
            entries[fields[0]].append(fields[1:])
    return entries


def dry_run(*flags: str, **env: str) -> str:
    result = subprocess.run(
        ["bash", "scripts/gpu_check.sh", "--offline", "--dry-run", *flags], check=False, cwd=ROOT,
        env={**os.environ, "PYTHON": sys.executable, **env}, capture_output=True, text=True,
        timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("script", SCRIPTS)
def test_scripts_parse(script):
    subprocess.run(["bash", "-n", f"scripts/{script}"], cwd=ROOT, check=True, timeout=30)


def test_bundle_list_is_well_formed():
    entries = bundle_list()
    assert set(entries) == {"wheel", "deb"}
    for fields in entries["wheel"]:
        assert len(fields) == 2 and re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][^=\s]*", fields[0])
    for fields in entries["deb"]:
        assert len(fields) == 1
    names = [f[0].split("==")[0].lower() for f in entries["wheel"]] + \
        [f[0] for f in entries["deb"]]
    assert len(names) == len(set(names)), "one version of each"


def test_bundle_carries_what_the_offline_path_needs():
    modules = {module for _, module in bundle_list()["wheel"]}
    # The benchmark validates its document with jsonschema; rhuber builds with hatchling.
    assert {"jsonschema", "jsonschema_specifications", "referencing", "rpds", "hatchling",
            "trove_classifiers", "tomlkit"} <= modules
    assert "hatchling" in (ROOT / "pyproject.toml").read_text()
    assert "jsonschema" in (ROOT / "scripts/benchmarks/rhbench/schema.py").read_text()
    debs = {name for (name,) in bundle_list()["deb"]}
    # Headers and libraries of native/cmake/RhBlas.cmake, and every library they load.
    assert {"libopenblas-pthread-dev", "libopenblas0-pthread", "liblapacke-dev", "liblapacke",
            "libtmglib3", "libgfortran5", "libquadmath0"} <= debs
    rhblas = (ROOT / "native/cmake/RhBlas.cmake").read_text()
    check = (ROOT / "scripts/gpu_check.sh").read_text()
    for var in ("RH_CBLAS_INCLUDE_DIR", "RH_LAPACKE_INCLUDE_DIR", "RH_OPENBLAS_LIBRARY",
                "RH_LAPACKE_LIBRARY"):
        assert var in rhblas and f"-D{var}=" in check


def test_bundle_folder_is_ignored():
    assert "/.gpu-bundle/" in (ROOT / ".gitignore").read_text().splitlines()


def test_offline_plan_builds_installs_and_tests():
    plan = dry_run(RH_GPU_CHECK_BLAS="bundle")
    steps = re.findall(r"plan: (\w+)", plan)
    for name in ("preflight", "blas", "install_base", "build_cuda", "build_cpu", "imports",
                 "abi_build", "tests", "abi_consumer", "event_clock", "timing", "benchmark"):
        assert name in steps
    installs = [line for line in plan.splitlines()
                if re.search(r"plan: (install_base|build_)", line)]
    assert len(installs) == 3
    for line in installs:
        assert "--no-deps" in line and "--no-build-isolation" in line and "--no-index" in line
        assert "--target <temporary prefix>/site" in line
    assert "RH_REQUIRE_GPU=1" in plan
    assert re.search(r"plan: tests .*tests/gpu", plan)


def test_offline_build_only_plan_stops_before_the_gpu():
    steps = re.findall(r"plan: (\w+)", dry_run("--build-only", RH_GPU_CHECK_BLAS="system"))
    assert "build_cuda" in steps and "collect" in steps and "blas" not in steps
    assert not {"gpu", "tests", "timing", "benchmark", "abi_consumer"} & set(steps)


def test_no_registry_and_no_venv_in_the_offline_path():
    plan = dry_run(RH_GPU_CHECK_BLAS="bundle")
    assert "build_native_" not in plan  # the .venv's way in
    assert "pip download" not in plan and "cupy-cuda12x" not in plan
