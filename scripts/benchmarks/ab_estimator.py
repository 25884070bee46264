#!/usr/bin/env python3
"""Time what users run — RenewableHuberRegressor.partial_fit over a stream — for two builds of
the library, side by side in one run, and print the ratios.

Each build is a PYTHONPATH prefix (a worktree's python/ and a --target install of its native
engine, say; an empty string means this environment as it is). Repetitions alternate A, B, A, B
in fresh subprocesses so that load on a shared machine falls on both alike; the figure is the
ratio of the medians (B / A: below 1 means B is faster). A build of the native engine alone is a
library path (--a-library, --b-library: RH_NATIVE_CPU_LIBRARY for that side).

    ab_estimator.py --a /tmp/old/python:/tmp/old-site --b "" --backend native_cpu
    ab_estimator.py --a "" --b "" --a-library /tmp/old/librhuber_cpu.so --full
    ab_estimator.py --a "" --b "" --a-library … --b-library … --full --alpha 0.01 --tau 1.345
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rhbench.sweep import PROFILES, RFC_SHAPES

CHILD = r"""
import json, sys, time
import numpy as np
from rhuber import RenewableHuberRegressor
from rhuber.datasets import make_contaminated_stream
rows, features, batch, backend, passes, dtype, n_jobs, alpha, tau = json.loads(sys.argv[1])
stream = make_contaminated_stream(rows, features, batch_size=batch, seed=0, dtype=dtype)
batches = [stream.batch(k) for k in range(stream.n_batches)]
times = []
for _ in range(passes):
    model = RenewableHuberRegressor(backend=backend, n_jobs=n_jobs, alpha=alpha, tau=tau)
    start = time.perf_counter()
    for X, y in batches:
        model.partial_fit(X, y)
    times.append(time.perf_counter() - start)
print(json.dumps(min(times)))
"""


def run_once(pythonpath: str, shape: tuple, env: dict, library: str | None = None) -> float:
    child_env = dict(env)
    if library:
        child_env["RH_NATIVE_CPU_LIBRARY"] = library
    if pythonpath:
        child_env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(shape)], env=child_env,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a", required=True, help="PYTHONPATH prefix of build A ('' = as is)")
    parser.add_argument("--b", required=True, help="PYTHONPATH prefix of build B ('' = as is)")
    parser.add_argument("--a-library", help="build A's native CPU library (a development build)")
    parser.add_argument("--b-library", help="build B's native CPU library")
    parser.add_argument("--shapes", nargs="*", help="only these shapes (by name)")
    parser.add_argument("--backend", default="native_cpu")
    parser.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    parser.add_argument("--n-jobs", type=int,
                        help="the estimator's n_jobs (default: None, all cores)")
    parser.add_argument("--alpha", type=float, default=0.0,
                        help="the estimator's alpha (L1 per unit of weight; default 0)")
    parser.add_argument("--tau", type=float, default=None,
                        help="a fixed tau (default: the MAD scale's)")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--passes", type=int, default=2, help="passes per subprocess (min kept)")
    parser.add_argument("--full", action="store_true", help="the RFC shapes at full size, "
                        "not the smoke profile's reduced ones")
    args = parser.parse_args(argv)
    env = dict(os.environ)
    results = {}
    sizes = RFC_SHAPES if args.full else PROFILES["smoke"].shapes
    for size in sizes:
        if args.shapes and size.name not in args.shapes:
            continue
        spec = (size.n_samples, size.n_features, size.batch_size, args.backend, args.passes,
                args.dtype, args.n_jobs, args.alpha, args.tau)
        a, b = [], []
        for _ in range(args.repetitions):
            a.append(run_once(args.a, spec, env, args.a_library))
            b.append(run_once(args.b, spec, env, args.b_library))
        ratio = statistics.median(b) / statistics.median(a)
        results[size.name] = {"rows": size.n_samples, "features": size.n_features,
                               "batch_size": size.batch_size, "a_median_s": statistics.median(a),
                               "b_median_s": statistics.median(b), "b_over_a": ratio}
        print(f"{size.name:>10}  {size.n_samples:>9,} x {size.n_features:<4} "
              f"A {statistics.median(a) * 1e3:9.2f} ms  B {statistics.median(b) * 1e3:9.2f} ms  "
              f"B/A {ratio:.3f}", flush=True)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
