#!/usr/bin/env python
"""The CUDA engine under NVTX ranges, for Nsight Systems and Nsight Compute (RFC 0001, "Nsight
baseline"): a warm-up fit, then complete fits, each batch in its own range::

    rh.profile/warmup
    rh.profile/fit[k]
        rh.profile/batch[j]           (inside: the engine's rh.cuda/update, solve, ... ranges)

Run it alone for wall-clock timings, or through nsys_profile.sh / ncu_profile.sh::

    .venv/bin/python scripts/profiling/profile_cuda_update.py --rows 100000 --features 90 \\
        --batch-size 32768 --json out/timings.json

Batches are NumPy arrays (host-fed) unless --device-resident, which puts them on the device
with CuPy first (outside every range) so the engine reads them in place through DLPack.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np


class Nvtx:
    """NVTX push/pop through whichever binding is installed (nvtx, CuPy, PyTorch); without one
    the ranges are skipped and the JSON says so."""

    def __init__(self) -> None:
        self.binding = "none"
        self._push = self._pop = None
        try:
            import nvtx

            self._push = lambda name: nvtx.push_range(name, domain="rh.profile")
            self._pop = lambda: nvtx.pop_range(domain="rh.profile")
            self.binding = "nvtx"
            return
        except ImportError:
            pass
        for module, push, pop in (("cupy.cuda.nvtx", "RangePush", "RangePop"),
                                  ("torch.cuda.nvtx", "range_push", "range_pop")):
            try:
                binding = __import__(module, fromlist=[push])
            except ImportError:
                continue
            self._push, self._pop = getattr(binding, push), getattr(binding, pop)
            self.binding = module
            return

    @contextlib.contextmanager
    def range(self, name: str) -> Iterator[None]:
        if self._push is None:
            yield
            return
        self._push(f"rh.profile/{name}")
        try:
            yield
        finally:
            self._pop()


def make_batches(args: argparse.Namespace) -> list[tuple[Any, Any]]:
    rng = np.random.default_rng(args.seed)
    beta = rng.normal(size=args.features)
    batches = []
    for start in range(0, args.rows, args.batch_size):
        n = min(args.batch_size, args.rows - start)
        X = rng.normal(size=(n, args.features))
        y = X @ beta + 0.5 + rng.standard_t(3, size=n)
        batches.append((X.astype(args.dtype), y.astype(args.dtype)))
    if args.device_resident:
        import cupy as cp

        batches = [(cp.asarray(X), cp.asarray(y)) for X, y in batches]
        cp.cuda.Device().synchronize()
    return batches


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=90)
    parser.add_argument("--batch-size", type=int, default=32_768)
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    parser.add_argument("--alpha", type=float, default=0.0)
    parser.add_argument("--fits", type=int, default=3, help="complete fits after the warm-up")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--device-resident", action="store_true",
                        help="feed CuPy arrays (DLPack) instead of NumPy arrays")
    parser.add_argument("--json", type=Path, help="write the timings here")
    args = parser.parse_args(argv)

    from rhuber.core import Config
    from rhuber.engines import make_engine
    from rhuber.errors import EngineNotAvailableError

    nvtx = Nvtx()
    try:
        engine = make_engine("cuda", args.device)
    except EngineNotAvailableError as exc:
        print(f"profile_cuda_update: {exc}", file=sys.stderr)
        return 2
    config = Config(alpha=args.alpha)
    batches = make_batches(args)

    def fit() -> tuple[list[float], list[int]]:
        state, seconds, iterations = None, [], []
        for j, (X, y) in enumerate(batches):
            with nvtx.range(f"batch[{j}]"):
                start = time.perf_counter()
                state, diag = engine.update(state, X, y, None, config)
                seconds.append(time.perf_counter() - start)
            iterations.append(diag.n_iter)
        return seconds, iterations

    with nvtx.range("warmup"):
        fit()
    allocations = engine.stats()["device_allocations"]
    fits = []
    for k in range(args.fits):
        with nvtx.range(f"fit[{k}]"):
            seconds, iterations = fit()
        fits.append({"batch_seconds": seconds, "total_seconds": sum(seconds),
                     "iterations": iterations})
    result = {
        "shape": {"rows": args.rows, "features": args.features, "batch_size": args.batch_size,
                  "batches": len(batches), "dtype": args.dtype, "alpha": args.alpha},
        "input": "device-resident (CuPy, DLPack)" if args.device_resident else "host-fed (NumPy)",
        "nvtx_binding": nvtx.binding,
        "fits": fits,
        "median_fit_seconds": float(np.median([f["total_seconds"] for f in fits])),
        "allocations_after_warmup": engine.stats()["device_allocations"] - allocations,
        "engine_stats": engine.stats(),
    }
    text = json.dumps(result, indent=2)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
