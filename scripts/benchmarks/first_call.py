#!/usr/bin/env python3
"""What a fresh process and a fresh estimator pay before the engine's work (docs/perf).

Three experiments, each in fresh interpreters started in turn for every tree given (so that load
on a shared machine falls on all alike), medians over the runs:

- ``import``: the wall time of ``python -c "import rhuber"`` against ``import sklearn.base``
  (scikit-learn's own import is most of ours; the difference is what we add), and in one
  process the wall and CPU time of ``import sklearn.base`` then of ``import rhuber`` after it
  (what we add, measured without the two processes' noise);
- ``first_fit``: in a fresh process, after ``import rhuber`` and making the data (not timed), the
  first ``RenewableHuberRegressor(backend=B).partial_fit`` of a ROWSxFEATURES batch;
- ``fresh``: in one process, rounds of a fresh estimator's first ``partial_fit`` against the
  bare ``engine.update`` from no state on the same batch, twice (the A/A control), in rotating
  order; the estimator's cost above the engine is the median difference.

    first_call.py [--trees PATH,PATH] [--libraries LIB,LIB] [--runs 21] [--backend native_cpu]
                  [--shape 4096x16] [--also-backend auto]
                  [--dtype float64] [--rounds 200] [--experiments import,first_fit,fresh]

A tree is a directory holding the ``rhuber`` package (put first on PYTHONPATH); "." is the
installed one. ``--libraries`` gives each tree, in order, the ``librhuber_cpu.so`` its processes
load (RH_NATIVE_CPU_LIBRARY; "." the installed one), so an old build runs beside the new one; a
tree is then reported as ``TREE@LIBRARY``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

IMPORT = """
import time
w0, c0 = time.perf_counter(), time.process_time()
import sklearn.base
w1, c1 = time.perf_counter(), time.process_time()
import rhuber
w2, c2 = time.perf_counter(), time.process_time()
print((w1 - w0) * 1e3, (w2 - w1) * 1e3, (c1 - c0) * 1e3, (c2 - c1) * 1e3)
"""

FIRST_FIT = """
import time, numpy as np
t0 = time.perf_counter()
from rhuber import RenewableHuberRegressor
t1 = time.perf_counter()
rng = np.random.default_rng(0)
X = rng.normal(size=({rows}, {features})).astype("{dtype}")
y = (X @ np.ones({features}) + rng.standard_t(2, {rows})).astype("{dtype}")
t2 = time.perf_counter()
RenewableHuberRegressor(backend="{backend}").partial_fit(X, y)
t3 = time.perf_counter()
print((t3 - t2) * 1e3, (t1 - t0) * 1e3)
"""

FRESH = """
import statistics, time, warnings, numpy as np
from rhuber import RenewableHuberRegressor
rng = np.random.default_rng(0)
X = rng.normal(size=({rows}, {features})).astype("{dtype}")
y = (X @ np.ones({features}) + rng.standard_t(2, {rows})).astype("{dtype}")
probe = RenewableHuberRegressor(backend="{backend}").partial_fit(X, y)
engine, config = probe._engine(), probe._config()
names = ["engine", "engine_again", "estimator"]
times = {{n: [] for n in names}}
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for k in range({rounds} + 5):
        for name in names[k % 3:] + names[:k % 3]:
            if name == "estimator":
                est = RenewableHuberRegressor(backend="{backend}")
                start = time.perf_counter_ns()
                est.partial_fit(X, y)
            else:
                start = time.perf_counter_ns()
                engine.update(None, X, y, None, config)
            if k >= 5:
                times[name].append(time.perf_counter_ns() - start)
print(*(statistics.median(times[n]) / 1e6 for n in names))
"""


def run(tree: str, code: str) -> list[float]:
    env = dict(os.environ)
    tree, _, library = tree.partition("@")
    if library and library != ".":
        env["RH_NATIVE_CPU_LIBRARY"] = os.path.abspath(library)
    if tree != ".":
        env["PYTHONPATH"] = os.path.abspath(tree) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, text=True,
                         capture_output=True).stdout
    return [float(v) for v in out.split()]


def wall(tree: str, code: str) -> float:
    start = time.perf_counter()
    run(tree, code)
    return (time.perf_counter() - start) * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", default=".")
    parser.add_argument("--libraries", default="",
                        help="one librhuber_cpu.so per tree (\".\": the installed one)")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--backend", default="native_cpu")
    parser.add_argument("--also-backend", default="",
                        help="first_fit: backends also timed, each in its own fresh process "
                             "beside --backend's (e.g. native_cpu beside auto)")
    parser.add_argument("--shape", default="4096x16")
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--experiments", default="import,first_fit,fresh")
    args = parser.parse_args(argv)
    rows, features = map(int, args.shape.split("x"))
    fmt = {"rows": rows, "features": features, "dtype": args.dtype, "backend": args.backend,
           "rounds": args.rounds}
    trees = args.trees.split(",")
    if args.libraries:
        libraries = args.libraries.split(",")
        if len(libraries) != len(trees):
            parser.error("--libraries needs one library per tree")
        trees = [f"{tree}@{library}" for tree, library in zip(trees, libraries, strict=True)]
    experiments = args.experiments.split(",")
    samples: dict[str, list] = {}
    for _ in range(args.runs):
        for tree in trees:
            if "import" in experiments:
                samples.setdefault(f"process_import_sklearn_ms|{tree}", []).append(
                    wall(tree, "import sklearn.base"))
                samples.setdefault(f"process_import_rhuber_ms|{tree}", []).append(
                    wall(tree, "import rhuber"))
                figures = run(tree, IMPORT)
                for name, value in zip(("sklearn_base_ms", "rhuber_after_sklearn_ms",
                                        "sklearn_base_cpu_ms", "rhuber_after_sklearn_cpu_ms"),
                                       figures, strict=True):
                    samples.setdefault(f"{name}|{tree}", []).append(value)
            if "first_fit" in experiments:
                fit_ms, import_ms = run(tree, FIRST_FIT.format(**fmt))
                samples.setdefault(f"first_fit_ms|{tree}", []).append(fit_ms)
                samples.setdefault(f"in_process_import_ms|{tree}", []).append(import_ms)
                for other in args.also_backend.split(",") if args.also_backend else ():
                    fit_ms, _ = run(tree, FIRST_FIT.format(**{**fmt, "backend": other}))
                    samples.setdefault(f"first_fit_ms_{other}|{tree}", []).append(fit_ms)
            if "fresh" in experiments and len(samples.get(f"fresh|{tree}", [])) < 5:
                samples.setdefault(f"fresh|{tree}", []).append(run(tree, FRESH.format(**fmt)))
    report: dict[str, dict] = {}
    for key, values in samples.items():
        name, tree = key.split("|", 1)
        if name == "fresh":
            engine, again, est = (statistics.median(v[i] for v in values) for i in range(3))
            report.setdefault(tree, {})["fresh_first_partial_fit_ms"] = {
                "engine": round(engine, 4), "engine_again": round(again, 4),
                "estimator": round(est, 4), "over_engine_ms": round(est - engine, 4),
                "aa_ratio": round(again / engine, 4)}
        else:
            report.setdefault(tree, {})[name] = round(statistics.median(values), 3)
    for figures in report.values():
        if "process_import_rhuber_ms" in figures:
            figures["process_import_rhuber_minus_sklearn_ms"] = round(
                figures["process_import_rhuber_ms"] - figures["process_import_sklearn_ms"], 3)
    print(json.dumps({"backend": args.backend, "shape": args.shape, "dtype": args.dtype,
                      "runs": args.runs, "trees": report}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
