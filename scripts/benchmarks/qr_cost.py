#!/usr/bin/env python3
"""What factorization="qr" costs a stream against the Cholesky mode (docs/numerics.md): the
reference shape (docs/perf/benchmark-protocol.md: 100,000 × 90 in batches of 32,768, float64,
Huber with t3 noise) streamed from an empty state in each mode, interleaved A/B/A2 (A2 = the
Cholesky mode again: the A/A control of the machine's noise), medians of the per-round ratios.

    .venv/bin/python scripts/benchmarks/qr_cost.py --backend native_cpu --reps 11
    .venv/bin/python scripts/benchmarks/qr_cost.py --backend numpy --reps 5

A backend that does not implement the qr mode refuses it by name (engines.require_features).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from rhuber.core import Config
from rhuber.engines import make_engine, require_features


def stream(engine, batches, config):
    state = diag = None
    for X, y in batches:
        state, diag = engine.update(state, X, y, None, config)
    return state, diag


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="native_cpu",
                        choices=("numpy", "native_cpu", "cuda"))
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=90)
    parser.add_argument("--batch", type=int, default=32_768)
    parser.add_argument("--dtype", default="float64", choices=("float32", "float64"))
    parser.add_argument("--reps", type=int, default=11)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(7)
    X = rng.normal(size=(args.rows, args.features)).astype(args.dtype)
    beta = rng.normal(size=args.features)
    y = (X @ beta + 1.0 + rng.standard_t(3, size=args.rows)).astype(args.dtype)
    batches = [(np.ascontiguousarray(X[a:a + args.batch]), y[a:a + args.batch])
               for a in range(0, args.rows, args.batch)]
    engine = make_engine(args.backend)
    configs = {"cholesky": Config(), "qr": Config(factorization="qr"),
               "cholesky_again": Config()}
    for config in configs.values():
        require_features(engine, config)  # a clear error where the mode is missing
    times: dict[str, list[float]] = {k: [] for k in configs}
    finals = {}
    for rep in range(args.reps + 1):  # the first round warms up
        order = list(configs) if rep % 2 == 0 else list(reversed(configs))
        for arm in order:
            started = time.perf_counter()
            state, diag = stream(engine, batches, configs[arm])
            elapsed = time.perf_counter() - started
            if rep:
                times[arm].append(elapsed)
            finals[arm] = (state, diag)
    ratios = [q / c for q, c in zip(times["qr"], times["cholesky"], strict=True)]
    control = [a / c for a, c in zip(times["cholesky_again"], times["cholesky"], strict=True)]
    agreement = float(np.max(np.abs(finals["qr"][0].coef - finals["cholesky"][0].coef)))
    report = {
        "backend": engine.name,
        "shape": f"{args.rows} x {args.features} in batches of {args.batch}, {args.dtype}",
        "reps": args.reps,
        "median_ms": {k: 1e3 * float(np.median(v)) for k, v in times.items()},
        "qr_over_cholesky_median_ratio": float(np.median(ratios)),
        "control_cholesky_again_over_cholesky": float(np.median(control)),
        "max_abs_coef_difference": agreement,
        "last_batch_solver": {k: finals[k][1].solver for k in configs},
        "last_batch_iterations": {k: finals[k][1].n_iter for k in configs},
        "load_average": os.getloadavg(),
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
