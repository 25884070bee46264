"""The installed wheels, checked from a fresh environment (scripts/test_dist.sh runs this).

Run with ``python -I`` from outside the source tree, so that only the installed packages can be
imported. Checks: every module comes from the environment, not the checkout; the native modules
load their BLAS from the wheel scipy-openblas32 and bundle none; the golden corpus
passes on numpy and native_cpu; the CUDA module imports, loads NVIDIA's libraries from their wheels
beside it (not the build machine's toolkit), and without a GPU says that no device is there.

Usage: python -I dist_check.py CORPUS_JSON SOURCE_TREE [--cuda]
(--cuda: the CUDA wheel is installed too, and checked.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _fail(message: str) -> None:
    print(f"dist-check: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def check_installed_not_checkout(source_tree: Path, cuda: bool) -> None:
    import ctypes
    import importlib
    import importlib.util

    if cuda:
        # The CUDA library by itself, before rhuber preloads anything: its run path alone
        # must find NVIDIA's libraries.
        ctypes.CDLL(str(_site_packages() / "rhuber_native_cuda" / "librh_cuda.so.5"))
    from rhuber import _native

    paths = {"rhuber": Path(importlib.import_module("rhuber").__file__)}
    if cuda:
        paths["librh_cuda.so.5"] = _native.load("cuda").LIBRARY_PATH
    paths["librhuber_cpu.so"] = _native.load("native_cpu").LIBRARY_PATH  # loads it, and its BLAS
    for name, found in paths.items():
        path = found.resolve()
        if path.is_relative_to(source_tree) or not path.is_relative_to(Path(sys.prefix)):
            _fail(f"{name} loaded from {path}, not from the environment {sys.prefix}")
        print(f"dist-check: {name} from {path}")
    # The seed system's names (renewable-huber on PyPI) are not ours: nothing of theirs came in.
    for seed in ("renewable_huber", "_renewable_huber_native_cpu", "_renewable_huber_native_cuda"):
        if importlib.util.find_spec(seed) is not None:
            _fail(f"{seed} is importable: a seed distribution was installed with ours")


def _site_packages() -> Path:
    return next((Path(sys.prefix) / "lib").glob("python3*/site-packages"))


def _loaded(soname: str) -> set[Path]:
    maps = Path("/proc/self/maps").read_text().splitlines()
    return {Path(line.split()[-1]).resolve() for line in maps if line.endswith("/" + soname)}


def check_blas_from_its_wheel(cuda: bool) -> None:
    """The modules' OpenBLAS is scipy-openblas32's, not one bundled into our wheels (dist.sh)."""
    site = _site_packages()
    wheel_lib = (site / "scipy_openblas32" / "lib").resolve()
    loaded = _loaded("libscipy_openblas.so")
    if not loaded or any(not p.is_relative_to(wheel_lib) for p in loaded):
        _fail(f"libscipy_openblas.so loaded from {sorted(loaded)}, not from {wheel_lib}")
    wheels = ["rhuber_native_cpu"] + (["rhuber_native_cuda"] if cuda else [])
    for name in wheels:
        bundled = sorted(p.name for p in (site / f"{name}.libs").glob("*"))
        if any("blas" in b or "lapack" in b for b in bundled):
            _fail(f"the {name} wheel bundles a BLAS: {bundled}")
    print(f"dist-check: the native modules load OpenBLAS from {wheel_lib} and bundle none")


def check_golden(corpus_path: Path) -> None:
    from rhuber.engines import make_engine
    from rhuber.lab.golden import RUNG_CHECKED, compare_batch, replay_case

    corpus = json.loads(corpus_path.read_text())
    for backend in ("numpy", "native_cpu"):
        engine = make_engine(backend)
        for case in corpus["cases"]:
            records = replay_case(case, engine.update)
            for k, (got, want) in enumerate(zip(records, case["batches"], strict=True)):
                problems = compare_batch(got, want, case["dtype"],
                                         check_rung=case["name"] in RUNG_CHECKED)
                if problems:
                    _fail(f"golden case {case['name']} batch {k + 1} on {backend}: {problems}")
        print(f"dist-check: golden corpus v{corpus['version']} passes on {backend} "
              f"({len(corpus['cases'])} cases)")


def check_cuda_without_gpu() -> None:
    from rhuber import RenewableHuberRegressor
    from rhuber.errors import EngineNotAvailableError

    nvidia_dir = _site_packages() / "nvidia" / "cu13" / "lib"
    if not nvidia_dir.is_dir():
        _fail("NVIDIA's CUDA 13 wheels (site-packages/nvidia/cu13/lib) were not installed")
    for soname in ("libcudart.so.13", "libcublas.so.13", "libcusolver.so.12"):
        loaded = _loaded(soname)
        if not loaded:
            _fail(f"{soname} is not loaded after loading the CUDA library")
        if any(not p.is_relative_to(nvidia_dir.resolve()) for p in loaded):
            _fail(f"{soname} loaded from {sorted(loaded)}, not from NVIDIA's wheel {nvidia_dir}")
    print(f"dist-check: the CUDA library loads NVIDIA's libraries from {nvidia_dir}")
    try:
        RenewableHuberRegressor(backend="cuda").fit([[0.0], [1.0], [2.0]], [0.0, 1.0, 2.0])
    except EngineNotAvailableError as exc:
        if "no CUDA device" not in str(exc):
            _fail(f"backend='cuda' without a GPU raised an unclear error: {exc}")
        print(f"dist-check: backend='cuda' without a GPU says: {exc}")
    else:
        print("dist-check: a GPU is present; backend='cuda' fitted")


def main() -> None:
    corpus_path, source_tree = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    cuda = "--cuda" in sys.argv[3:]
    if Path.cwd().resolve().is_relative_to(source_tree):
        _fail(f"run from outside the source tree {source_tree}")
    check_installed_not_checkout(source_tree, cuda)
    check_blas_from_its_wheel(cuda)
    check_golden(corpus_path)
    if cuda:
        check_cuda_without_gpu()
    print("dist-check: passed")


if __name__ == "__main__":
    main()
