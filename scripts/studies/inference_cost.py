#!/usr/bin/env python3
"""What inference costs a stream (docs/inference.md): stream time through the estimator with
``inference_matrices`` False and True, side by side in one run, per shape and backend; and the
accumulation alone (``core.inference.accumulate``: scalars only, scalars and matrices) on one
batch of each shape.

Shapes: the reference shape (100,000 × 90 in batches of 32,768) and the streaming shape
(1,000,000 × 32 in batches of 65,536), both ``make_contaminated_stream`` (Student-t noise, 5 %
gross outliers). Backends: numpy, and native_cpu when installed (where its module does not
return the inference sums itself, the wrapper computes them on the host: the figure says so).
Each configuration streams ``--repeats`` times, alternating False / True; the best time counts,
as wall time and as the process's CPU time (all threads), which a machine busy with other work
disturbs less than wall time. On a shared machine run it single-threaded (native_cpu's n_jobs=1 is
the default here, and OpenBLAS's threads spin-wait, which counts as CPU time under load):

    OPENBLAS_NUM_THREADS=1 .venv/bin/python scripts/studies/inference_cost.py \
        --out docs/inference/cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from rhuber import RenewableHuberRegressor
from rhuber.core import inference as inf
from rhuber.datasets import make_contaminated_stream
from rhuber.engines import make_engine, native_cpu_available

SHAPES = {"reference": (100_000, 90, 32_768), "streaming": (1_000_000, 32, 65_536)}


def stream_seconds(batches: list, backend: str, matrices: bool,
                   n_jobs: int | None) -> tuple[float, float]:
    """(wall, CPU) seconds of one stream."""
    est = RenewableHuberRegressor(backend=backend, inference_matrices=matrices,
                                  n_jobs=n_jobs if backend == "native_cpu" else None)
    wall, cpu = time.perf_counter(), time.process_time()
    for X, y in batches:
        est.partial_fit(X, y)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    est.bse("H1" if matrices else "H2")  # the inference the stream paid for works
    return wall, cpu


def accumulate_seconds(X: np.ndarray, y: np.ndarray, matrices: bool, repeats: int) -> float:
    est = RenewableHuberRegressor(backend="numpy", inference_matrices=True).partial_fit(X, y)
    state = est._state
    Xt = np.column_stack([X, np.ones(len(y))])
    r = y - Xt @ state.coef
    tau = 1.345 * state.scale
    c = (np.abs(r) <= tau).astype(X.dtype)
    w = np.ones(len(y))
    best = np.inf
    for _ in range(repeats):
        started = time.process_time()
        inf.accumulate(state, Xt, w, r, tau, c, matrices, np)
        best = min(best, time.process_time() - started)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shapes", default="reference,streaming")
    parser.add_argument("--n-jobs", type=int, default=1, help="native_cpu threads (1)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    backends, host_sums = ["numpy"], False
    if native_cpu_available():
        try:
            native = make_engine("native_cpu")
        except AttributeError as exc:  # a module built before contract v3
            native = None
            print(f"native_cpu skipped: {exc}", file=sys.stderr)
        if native is not None and "inference_matrices" in native.contract_features:
            backends.append("native_cpu")
            # Whether the wrapper computes the sums on the host (an interim engines/__init__).
            host_sums = bool(getattr(native, "_host_sums", False))
    records = []
    for shape in args.shapes.split(","):
        rows, p, size = SHAPES[shape]
        data = make_contaminated_stream(rows, p, batch_size=size, seed=7)
        batches = [data.batch(k) for k in range(data.n_batches)]
        X0, y0 = batches[0]
        acc = {m: accumulate_seconds(X0, y0, m, 3) for m in (False, True)}
        records.append({"shape": shape, "kind": "accumulate one batch (CPU time)",
                        "rows": len(y0), "features": p, "scalars_ms": 1e3 * acc[False],
                        "scalars_and_matrices_ms": 1e3 * acc[True]})
        print(records[-1], file=sys.stderr)
        for backend in backends:
            times = {False: [], True: []}
            for _ in range(args.repeats):
                for matrices in (False, True):
                    times[matrices].append(stream_seconds(batches, backend, matrices,
                                                          args.n_jobs))
            wall = {m: min(w for w, _ in t) for m, t in times.items()}
            cpu = {m: min(c for _, c in t) for m, t in times.items()}
            records.append({
                "shape": shape, "kind": "stream", "backend": backend, "rows": rows,
                "features": p, "batch_size": size, "batches": len(batches),
                "wall_without_matrices": wall[False], "wall_with_matrices": wall[True],
                "cpu_without_matrices": cpu[False], "cpu_with_matrices": cpu[True],
                "cpu_ratio": cpu[True] / cpu[False],
                "sums_on_host": backend == "native_cpu" and host_sums,
                "all_seconds": {str(m): t for m, t in times.items()}})
            print(records[-1], file=sys.stderr)
    report = {"repeats": args.repeats, "load_average": list(os.getloadavg()),
              "cpus": os.cpu_count(), "native_cpu_n_jobs": args.n_jobs,
              "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
              "records": records}
    text = json.dumps(report, indent=1) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
