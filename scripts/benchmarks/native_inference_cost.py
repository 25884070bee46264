#!/usr/bin/env python3
"""What the inference matrices cost the native CPU engine, through the estimator.

Streams each shape through ``RenewableHuberRegressor(backend="native_cpu")`` with
``inference_matrices`` False and True, alternating within each repetition so that both see the
same machine load; reports the best wall and process-CPU seconds of each, and their ratio. The
scalar sums are always formed (in the information pass); the matrices G and K add two Grams to
that pass.

    .venv/bin/python scripts/benchmarks/native_inference_cost.py --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

from rhuber import RenewableHuberRegressor
from rhuber.datasets import make_contaminated_stream

SHAPES = {"reference": (100_000, 90, 32_768), "streaming": (1_000_000, 32, 65_536)}


def stream_seconds(batches: list, matrices: bool) -> tuple[float, float]:
    """(wall, CPU) seconds of one stream; the inference it paid for is read once after it."""
    est = RenewableHuberRegressor(backend="native_cpu", inference_matrices=matrices)
    wall, cpu = time.perf_counter(), time.process_time()
    for X, y in batches:
        est.partial_fit(X, y)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    est.bse("HC0" if matrices else "H2")
    return wall, cpu


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--shapes", default="reference,streaming")
    args = parser.parse_args(argv)
    records = []
    for shape in args.shapes.split(","):
        rows, p, size = SHAPES[shape]
        data = make_contaminated_stream(rows, p, batch_size=size, seed=7)
        batches = [data.batch(k) for k in range(data.n_batches)]
        stream_seconds(batches[:1], False)  # warm: the module, the engine's threads
        times: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
        for _ in range(args.repeats):
            for matrices in (False, True):
                times[matrices].append(stream_seconds(batches, matrices))
        wall = {m: min(w for w, _ in t) for m, t in times.items()}
        cpu = {m: min(c for _, c in t) for m, t in times.items()}
        records.append({
            "shape": f"{rows}x{p} f64, batches of {size}", "batches": len(batches),
            "wall_without_matrices_s": round(wall[False], 4),
            "wall_with_matrices_s": round(wall[True], 4),
            "wall_ratio": round(wall[True] / wall[False], 3),
            "cpu_without_matrices_s": round(cpu[False], 4),
            "cpu_with_matrices_s": round(cpu[True], 4),
            "cpu_ratio": round(cpu[True] / cpu[False], 3),
            "all_wall_s": {str(m): [round(w, 4) for w, _ in t] for m, t in times.items()}})
        print(json.dumps(records[-1]), file=sys.stderr)
    print(json.dumps({"machine": f"{os.cpu_count()}-core {cpu_model()}",
                      "load_average": [round(x, 2) for x in os.getloadavg()],
                      "repeats": args.repeats, "records": records}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
