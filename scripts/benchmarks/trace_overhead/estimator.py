#!/usr/bin/env python3
"""Tracing's cost through the public estimator: partial_fit from one primed state with
trace=False, trace=False again (the A/A control) and trace=True, in rotating order, many rounds;
medians and ratios per engine (docs/tracing.md, "Cost").

    estimator.py [--rows 4096] [--features 16] [--rounds 200]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from rhuber import RenewableHuberRegressor
from rhuber.datasets import make_contaminated_stream


def measure(backend: str, rows: int, features: int, rounds: int) -> dict:
    stream = make_contaminated_stream(rows * 3, features, batch_size=rows, seed=0)
    first, second, batch = (stream.batch(k) for k in range(3))
    primed = RenewableHuberRegressor(backend=backend).partial_fit(*first).partial_fit(*second)
    state = primed.state_dict()
    models = {"off": RenewableHuberRegressor(backend=backend),
              "off_again": RenewableHuberRegressor(backend=backend),
              "on": RenewableHuberRegressor(backend=backend, trace=True)}
    for model in models.values():
        model.load_state_dict(state).partial_fit(*batch)  # warm: engine made, plan chosen
    times: dict[str, list[float]] = {name: [] for name in models}
    names = list(models)
    for k in range(rounds):
        for name in names[k % 3:] + names[:k % 3]:
            model = models[name].load_state_dict(state)
            if name == "on":
                model.trace_.batches.clear()
            start = time.perf_counter()
            model.partial_fit(*batch)
            times[name].append(time.perf_counter() - start)
    med = {name: statistics.median(t) for name, t in times.items()}
    return {"backend": backend, "rows": rows, "features": features, "rounds": rounds,
            "median_ms": {k: round(v * 1e3, 4) for k, v in med.items()},
            "aa_ratio": round(med["off_again"] / med["off"], 4),
            "on_over_off": round(med["on"] / med["off"], 4)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--backends", default="numpy,native_cpu")
    args = parser.parse_args(argv)
    for backend in args.backends.split(","):
        print(json.dumps(measure(backend, args.rows, args.features, args.rounds)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
