#!/usr/bin/env python3
"""What the public estimator adds to its engine: ``partial_fit`` against the bare
``engine.update`` on the same batch from the same state (issue 16; the target is
estimator / engine <= 1.15).

Each round makes three calls from one state, in rotating order so that load on a shared machine
falls on all alike: the engine, the engine again (the A/A control: the noise of the
denominator) and partial_fit; the figures are medians and their ratios. The state is, by default,
one primed state restored by ``load_state_dict`` (untimed) before every call, so every call
solves the same problem, and partial_fit is the first batch after a load (a new plan session);
with ``--stream`` it is the estimator's own state as its stream goes on (a settled session),
over a few batches in turn.

    estimator_overhead.py [--backends native_cpu,numpy] [--shapes 4096x16,32768x90]
                          [--rounds 300] [--n-jobs N] [--stream]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings

from rhuber import RenewableHuberRegressor
from rhuber.datasets import make_contaminated_stream

WARMUP_ROUNDS = 5  # not kept
STREAM_BATCHES = 4  # distinct batches a --stream run takes in turn


def measure(backend: str, rows: int, features: int, rounds: int, n_jobs: int | None,
            stream: bool) -> dict:
    data = make_contaminated_stream(rows * (2 + STREAM_BATCHES), features, batch_size=rows)
    batches = [data.batch(k) for k in range(data.n_batches)]
    model = RenewableHuberRegressor(backend=backend, n_jobs=n_jobs)
    for X, y in batches[:2] + (batches[2:] * 2 if stream else []):  # stream: plan settled
        model.partial_fit(X, y)
    primed = model.state_dict()
    engine, config = model._engine(), model._config()
    names = ["engine", "engine_again", "estimator"]
    times: dict[str, list[float]] = {name: [] for name in names}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an ill-conditioned batch warns every round
        for k in range(rounds + WARMUP_ROUNDS):
            X, y = batches[2 + k % STREAM_BATCHES] if stream else batches[2]
            state = model._state
            for name in names[k % 3:] + names[:k % 3]:
                if not stream:
                    model.load_state_dict(primed)
                    state = model._state
                start = time.perf_counter_ns()
                if name == "estimator":
                    model.partial_fit(X, y)
                else:
                    engine.update(state, X, y, None, config)
                if k >= WARMUP_ROUNDS:
                    times[name].append(time.perf_counter_ns() - start)
    med = {name: statistics.median(t) / 1e6 for name, t in times.items()}
    return {"backend": backend, "shape": f"{rows}x{features}", "n_jobs": n_jobs,
            "mode": "stream" if stream else "load_state_dict", "rounds": rounds,
            "median_ms": {k: round(v, 4) for k, v in med.items()},
            "overhead_us": round((med["estimator"] - med["engine"]) * 1e3, 1),
            "aa_ratio": round(med["engine_again"] / med["engine"], 4),
            "estimator_over_engine": round(med["estimator"] / med["engine"], 4)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="native_cpu,numpy")
    parser.add_argument("--shapes", default="4096x16,32768x90", help="ROWSxFEATURES, ...")
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--n-jobs", type=int, default=None, help="native_cpu threads (all)")
    parser.add_argument("--stream", action="store_true",
                        help="from the estimator's own state as its stream goes on")
    args = parser.parse_args(argv)
    for shape in args.shapes.split(","):
        rows, features = map(int, shape.split("x"))
        for backend in args.backends.split(","):
            result = measure(backend, rows, features, args.rounds, args.n_jobs, args.stream)
            print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
