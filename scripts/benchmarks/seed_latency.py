#!/usr/bin/env python3
"""The latency shape (one 4,096 x 16 batch) through the public estimators: ours against the seed
system (renewable-huber 0.7.1, from .venv-seed), tau fixed on both and each at its defaults.

Each contestant runs in a fresh process of its own interpreter; the processes take turns, round
after round, so load on a shared machine falls on all alike. In each process: the batch is made
outside the clock, one warm-up fit, then ``--fits`` fresh estimators each timed around its one
``partial_fit``; the process reports the median. Per contestant the figure is the median over
rounds; the ratio is the seed's over ours (above 1: ours is faster). An A/A pair (ours twice)
gives the noise floor.

    .venv/bin/python scripts/benchmarks/seed_latency.py --rounds 5 --out /tmp/seed_latency.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import gc, json, statistics, sys, time
import numpy as np
dtype, fits, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(0)
X = rng.standard_normal((4096, 16)).astype(dtype)
y = (X @ np.linspace(-1, 1, 16) + 0.5 + rng.standard_t(3, 4096)).astype(dtype)
y[rng.random(4096) < 0.05] += 30.0
if kind.startswith("seed"):
    from renewable_huber import RenewableHuberRegressor
    make = ((lambda: RenewableHuberRegressor(tau=1.345, backend="native_cpu", dtype=dtype))
            if kind == "seed_tau" else (lambda: RenewableHuberRegressor(dtype=dtype)))
else:
    from rhuber import RenewableHuberRegressor
    make = ((lambda: RenewableHuberRegressor(tau=1.345, backend="native_cpu"))
            if kind.startswith("ours_tau") else (lambda: RenewableHuberRegressor()))
make().partial_fit(X, y)
gc.disable()
times = []
for _ in range(fits):
    est = make()
    t0 = time.perf_counter()
    est.partial_fit(X, y)
    times.append(time.perf_counter() - t0)
print(json.dumps(statistics.median(times) * 1e3))
"""

CONTESTANTS = {  # name: interpreter
    "seed_tau": ROOT / ".venv-seed/bin/python",
    "ours_tau": ROOT / ".venv/bin/python",
    "ours_tau_again": ROOT / ".venv/bin/python",
    "seed_default": ROOT / ".venv-seed/bin/python",
    "ours_default": ROOT / ".venv/bin/python",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--fits", type=int, default=200)
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report = {}
    for dtype in args.dtypes:
        ms: dict[str, list[float]] = {name: [] for name in CONTESTANTS}
        for _ in range(args.rounds):
            for name, python in CONTESTANTS.items():
                run = subprocess.run([str(python), "-c", CHILD, dtype, str(args.fits), name],
                                     capture_output=True, text=True, check=True)
                ms[name].append(json.loads(run.stdout.splitlines()[-1]))
        median = {name: statistics.median(v) for name, v in ms.items()}
        report[dtype] = {
            "median_ms": median, "runs_ms": ms,
            "seed_over_ours_tau_fixed": median["seed_tau"] / median["ours_tau"],
            "seed_over_ours_defaults": median["seed_default"] / median["ours_default"],
            "aa_control": median["ours_tau_again"] / median["ours_tau"],
        }
        print(dtype, json.dumps({k: round(v, 3) for k, v in report[dtype].items()
                                 if not isinstance(v, dict)}), flush=True)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    sys.exit(main())
