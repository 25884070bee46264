#!/usr/bin/env python3
"""What factorization="qr" costs native_cpu (docs/numerics.md): the reference shape (100,000 x 90
in batches of 32,768, ``make_contaminated_stream``) streamed through the engine in the Cholesky
mode and the qr mode, interleaved with an A/A control (Cholesky twice), ``--repeats`` streams
each; medians of wall time per stream, and the ratios qr / cholesky and cholesky / cholesky.

    .venv/bin/python scripts/studies/qr_cost.py --repeats 7
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

from rhuber.core.types import Config
from rhuber.datasets import make_contaminated_stream
from rhuber.engines import make_engine


def stream_time(engine, batches, config) -> tuple[float, int]:
    state, iterations = None, 0
    start = time.perf_counter()
    for X, y in batches:
        state, diagnostics = engine.update(state, X, y, None, config)
        iterations += diagnostics.n_iter
    return time.perf_counter() - start, iterations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--dtype", default="float64")
    args = parser.parse_args()
    stream = make_contaminated_stream(dtype=np.dtype(args.dtype))
    batches = [(np.ascontiguousarray(X), np.ascontiguousarray(y)) for X, y in stream]
    engine = make_engine("native_cpu", threads=args.threads or None)
    modes = {"cholesky": Config(), "cholesky_again": Config(), "qr": Config(factorization="qr")}
    times: dict[str, list[float]] = {name: [] for name in modes}
    iterations: dict[str, int] = {}
    stream_time(engine, batches, modes["qr"])  # warm-up: workspaces, pages
    for _ in range(args.repeats):
        for name, config in modes.items():
            seconds, iterations[name] = stream_time(engine, batches, config)
            times[name].append(seconds)
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(json.dumps({
        "shape": f"{stream.n_samples} x {stream.n_features} / {stream.batch_size}",
        "dtype": args.dtype, "repeats": args.repeats, "load": os.getloadavg(),
        "median_ms": {name: round(1000 * value, 1) for name, value in medians.items()},
        "min_ms": {name: round(1000 * min(values), 1) for name, values in times.items()},
        "iterations": iterations,
        "qr_over_cholesky": round(medians["qr"] / medians["cholesky"], 2),
        "a_a_control": round(medians["cholesky_again"] / medians["cholesky"], 2),
    }, indent=1))


if __name__ == "__main__":
    main()
