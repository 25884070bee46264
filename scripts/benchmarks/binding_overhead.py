#!/usr/bin/env python3
"""The native CPU engine's call through Python: ``NativeCpuEngine.update`` (the batch checked, the
state and config handed over, the new state built) against the engine's own time, on one batch
from one primed state.

The engine's own time is taken in the same process: with ``--floor``, the C ABI's
``rh_cpu_update`` called through ctypes with its structs built once (the C++ update plus one
foreign call, nothing else); the difference to ``NativeCpuEngine.update`` is what the Python
path adds. Rounds rotate the calls so that load falls on all alike; ``update_again`` is the A/A
control. Prints one JSON line. Run it under each build to compare (scripts/benchmarks, docs/perf).

    binding_overhead.py [--rows 4096] [--features 16] [--rounds 400] [--floor]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from rhuber.core import Config
from rhuber.engines import make_engine

WARMUP = 20


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--floor", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n, p = args.rows, args.features
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + rng.standard_t(3, size=n)
    engine = make_engine("native_cpu", threads=1)
    config = Config()
    state, _ = engine.update(None, X, y, None, config)
    calls = {"update": lambda: engine.update(state, X, y, None, config),
             "update_again": lambda: engine.update(state, X, y, None, config)}
    if args.floor:
        native = engine._native
        d = p + 1
        w = np.ones(n)
        out = [np.empty(d), np.empty((d, d))]
        previous = native.state_struct(
            np.dtype(np.float64), d, state.coef, state.information, None, None,
            n_samples_seen=state.n_samples_seen, effective_weight=state.effective_weight,
            batch_count=state.batch_count, previous_lambda=state.previous_lambda,
            scale=state.scale)
        following = native.state_struct(np.dtype(np.float64), d, *out, None, None)
        batch = native.Batch(dtype=native.FLOAT64, rows=n, cols=p, X=X.ctypes.data,
                             y=y.ctypes.data, sample_weight=w.ctypes.data)
        cstruct = engine._config(config, np.dtype(np.float64))
        raw = engine._engine
        calls["floor"] = lambda: raw.update(previous, batch, cstruct, following)
    names = list(calls)
    times: dict[str, list[int]] = {name: [] for name in names}
    for k in range(args.rounds + WARMUP):
        for name in names[k % len(names):] + names[:k % len(names)]:
            start = time.perf_counter_ns()
            calls[name]()
            if k >= WARMUP:
                times[name].append(time.perf_counter_ns() - start)
    med = {name: statistics.median(t) / 1e3 for name, t in times.items()}
    print(json.dumps({"shape": f"{n}x{p}", "rounds": args.rounds,
                      "median_us": {k: round(v, 1) for k, v in med.items()}}))


if __name__ == "__main__":
    main()
