#!/usr/bin/env python3
"""What the drift test costs a batch on native_cpu (docs/drift.md): a later batch of the reference
shape (32,768 × 90, float64) updated from the same state with the test (previous_lambda 0) and
without it (previous_lambda 1e-300: the contract skips the test after a penalized batch, and a
history pull of W · 1e-300 moves nothing), interleaved A/B/A2 (A2 = A again: the A/A control
of the machine's noise), medians of the per-round ratios.

    .venv/bin/python scripts/benchmarks/drift_cost.py --reps 21
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

from rhuber.core import Config
from rhuber.engines import make_engine


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=32_768)
    parser.add_argument("--features", type=int, default=90)
    parser.add_argument("--reps", type=int, default=21)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(7)
    beta = rng.normal(size=args.features)
    batches = []
    for _ in range(2):
        X = rng.normal(size=(args.rows, args.features))
        batches.append((X, X @ beta + 1.0 + rng.standard_t(3, size=args.rows)))
    engine = make_engine("native_cpu")
    config = Config()
    state, _ = engine.update(None, *batches[0], None, config)
    arms = {"with_test": state, "without_test": state.replace(previous_lambda=1e-300),
            "with_test_again": state}
    times: dict[str, list[float]] = {k: [] for k in arms}
    diags = {}
    for rep in range(args.reps + 1):  # the first pair warms up
        order = list(arms) if rep % 2 == 0 else list(reversed(arms))
        for arm in order:
            started = time.perf_counter()
            _, diag = engine.update(arms[arm], *batches[1], None, config)
            elapsed = time.perf_counter() - started
            if rep:
                times[arm].append(elapsed)
            diags[arm] = diag
    assert not math.isnan(diags["with_test"].drift_pvalue)
    assert math.isnan(diags["without_test"].drift_pvalue)
    assert diags["with_test"].n_iter == diags["without_test"].n_iter
    ratios = [a / b for a, b in zip(times["with_test"], times["without_test"], strict=True)]
    control = [a / b for a, b in zip(times["with_test_again"], times["with_test"], strict=True)]
    report = {
        "shape": f"{args.rows} x {args.features} float64", "reps": args.reps,
        "n_iter": diags["with_test"].n_iter,
        "median_seconds": {k: float(np.median(v)) for k, v in times.items()},
        "median_ratio": float(np.median(ratios)),
        "ratio_quartiles": [float(np.quantile(ratios, q)) for q in (0.25, 0.75)],
        "aa_control_median_ratio": float(np.median(control)),
        "aa_control_quartiles": [float(np.quantile(control, q)) for q in (0.25, 0.75)],
        "load_average": os.getloadavg(),
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
