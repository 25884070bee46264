#!/usr/bin/env python3
"""Scale-out on a Dask LocalCluster: rows/s of the in-order stream (fit_stream) against the
parallel combine (fit_parallel, K groups), and the coefficient error of each, in one run.

The data (the RFC's streaming shape by default: 1,000,000 x 32, partitions of 65,536 rows,
Student-t noise and 5 % gross outliers from rhuber.datasets) is generated on the workers
and persisted there before anything is timed, as data already living on a cluster would be.
Each estimator uses one engine thread (n_jobs=1), as many as each worker has. Errors follow the
shape sweep (rhbench.sweep.coef_error): the slopes' relative L2 error against the generating
coefficients; and the distance of each estimate to the sequential stream and to a fit of all the
rows as one batch (RenewableHuberRegressor.fit, in this process).

    .venv/bin/python scripts/benchmarks/scale_out.py --out docs/perf/scale_out.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rhbench.environment import collect_environment
from rhbench.sweep import RFC_SHAPES

STREAMING = next(s for s in RFC_SHAPES if s.name == "streaming")


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _errors(est: Any, stream: Any, sequential: Any, full: Any) -> dict[str, float]:
    diff = est.coef_ - stream.coef
    out = {"rel_l2": _relative(est.coef_, stream.coef), "max_abs": float(np.abs(diff).max()),
           "intercept_abs": float(abs(est.intercept_ - stream.intercept))}
    if sequential is not None:
        out["distance_to_sequential"] = _relative(est.coef_, sequential.coef_)
    out["distance_to_full_fit"] = _relative(est.coef_, full.coef_)
    return out


def _timed(run, repetitions: int, client: Any = None) -> tuple[Any, list[float], float | None]:
    """The last result, the wall seconds of each repetition and, on a cluster, the median of
    the seconds the partial_fit tasks computed (the rest of the wall time is scheduling, moving
    the estimator between workers, the combine, and waiting for a core)."""
    seconds, computing, result = [], [], None
    for _ in range(repetitions):
        if client is None:
            start = time.perf_counter()
            result = run()
            seconds.append(time.perf_counter() - start)
            continue
        from distributed import get_task_stream

        with get_task_stream(client) as stream:
            start = time.perf_counter()
            result = run()
            seconds.append(time.perf_counter() - start)
        computing.append(sum(s["stop"] - s["start"] for t in stream.data
                             if "partial-fit" in str(t["key"])
                             for s in t["startstops"] if s["action"] == "compute"))
    return result, seconds, statistics.median(computing) if computing else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=STREAMING.n_samples)
    parser.add_argument("--features", type=int, default=STREAMING.n_features)
    parser.add_argument("--partition", type=int, default=STREAMING.batch_size,
                        help="rows per partition (one batch each)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes, 1 thread each")
    parser.add_argument("--groups", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--backend", default="native_cpu", choices=("numpy", "native_cpu"))
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=10,
                        help="data sets of the error sweep at the tests' shape")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)

    import dask
    import dask.array as da
    import distributed

    from rhuber import RenewableHuberRegressor
    from rhuber.dask import fit_parallel, fit_stream
    from rhuber.datasets import make_contaminated_stream

    stream = make_contaminated_stream(args.rows, args.features, batch_size=args.partition,
                                      seed=0)
    params = dict(backend=args.backend, n_jobs=1)
    batches = [stream.batch(k) for k in range(stream.n_batches)]
    X_all, y_all = np.concatenate([b[0] for b in batches]), np.concatenate([b[1] for b in batches])
    full = RenewableHuberRegressor(backend=args.backend).fit(X_all, y_all)
    del X_all, y_all

    def one_process() -> Any:
        est = RenewableHuberRegressor(**params)
        for X, y in batches:
            est.partial_fit(X, y)
        return est

    local, local_s, _ = _timed(one_process, args.repetitions)
    rows: list[dict[str, Any]] = []

    def record(mode: str, groups: int | None, est: Any, seconds: list[float],
               task_compute_s: float | None, sequential: Any) -> None:
        rows.append({"mode": mode, "groups": groups, "seconds": seconds,
                     "rows_per_s": args.rows / statistics.median(seconds),
                     "task_compute_s": task_compute_s,
                     "error": _errors(est, stream, sequential, full)})

    load_before = os.getloadavg()
    record("one process, partial_fit", None, local, local_s, None, local)
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        parts = [dask.delayed(stream.batch)(k) for k in range(stream.n_batches)]
        X = da.concatenate([da.from_delayed(p[0], (stream.batch_rows(k), args.features),
                                            stream.dtype) for k, p in enumerate(parts)])
        y = da.concatenate([da.from_delayed(p[1], (stream.batch_rows(k),), stream.dtype)
                            for k, p in enumerate(parts)])
        X, y = client.persist([X, y])
        distributed.wait([X, y])
        # Untimed: the workers' first task imports rhuber.dask and builds an engine.
        fit_parallel(RenewableHuberRegressor(**params), X, y, n_groups=args.workers)
        sequential, *timing = _timed(
            lambda: fit_stream(RenewableHuberRegressor(**params), X, y), args.repetitions,
            client)
        assert np.array_equal(sequential.information_, local.information_)  # the same stream
        record("fit_stream (in order)", None, sequential, *timing, sequential)
        for k in args.groups:
            est, *timing = _timed(
                lambda k=k: fit_parallel(RenewableHuberRegressor(**params), X, y, n_groups=k),
                args.repetitions, client)
            record("fit_parallel", k, est, *timing, sequential)

    sweep = error_sweep(args.seeds, args.groups)
    document = {
        "benchmark": "scale_out",
        "shape": {"rows": args.rows, "features": args.features, "partition_rows": args.partition,
                  "partitions": stream.n_batches,
                  "data": "rhuber.datasets.make_contaminated_stream(seed=0): Student-t "
                          "(df 3) noise, 5 % outliers of 50-100 noise scales"},
        "cluster": {"kind": "distributed.LocalCluster", "workers": args.workers,
                    "threads_per_worker": 1, "processes": True},
        "estimator": params, "repetitions": args.repetitions,
        "environment": collect_environment(),
        # The machine may be shared: the 1-minute load average before and after the runs.
        "load_average": [load_before[0], os.getloadavg()[0]],
        "results": rows,
        "error_sweep": sweep,
    }
    print(table(document))
    if args.out:
        args.out.write_text(json.dumps(document, indent=1) + "\n")
    return 0


def error_sweep(seeds: int, groups: list[int]) -> dict[str, Any]:
    """The combine's error at the shape of tests/test_dask_cluster.py (16,000 x 8, partitions
    of 1,000, the NumPy reference) over ``seeds`` data sets, on Dask's synchronous scheduler
    (the results do not depend on the scheduler): the largest ratios are the documented bound's
    evidence."""
    import dask
    import dask.array as da

    from rhuber import RenewableHuberRegressor
    from rhuber.dask import fit_parallel, fit_stream
    from rhuber.datasets import make_contaminated_stream

    runs = []
    with dask.config.set(scheduler="sync"):
        for seed in range(seeds):
            stream = make_contaminated_stream(16_000, 8, batch_size=1_000, seed=seed)
            Xn, yn = stream.materialize()
            X, y = da.from_array(Xn, chunks=(1_000, 8)), da.from_array(yn, chunks=(1_000,))
            seq = fit_stream(RenewableHuberRegressor(backend="numpy"), X, y)
            full = RenewableHuberRegressor(backend="numpy").fit(Xn, yn)
            run = {"seed": seed, "sequential": _errors(seq, stream, None, full), "parallel": {}}
            for k in groups:
                par = fit_parallel(RenewableHuberRegressor(backend="numpy"), X, y, n_groups=k)
                run["parallel"][str(k)] = _errors(par, stream, seq, full)
            runs.append(run)
    summary = {}
    for k in map(str, groups):
        ratio = [(r["parallel"][k]["distance_to_sequential"] / r["sequential"]["rel_l2"],
                  r["parallel"][k]["rel_l2"] / r["sequential"]["rel_l2"]) for r in runs]
        summary[k] = {
            "max_distance_over_sequential_error": max(d for d, _ in ratio),
            "max_error_over_sequential_error": max(e for _, e in ratio),
            "median_rel_l2": statistics.median(r["parallel"][k]["rel_l2"] for r in runs),
            "median_distance_to_sequential": statistics.median(
                r["parallel"][k]["distance_to_sequential"] for r in runs),
            "median_distance_to_full_fit": statistics.median(
                r["parallel"][k]["distance_to_full_fit"] for r in runs)}
    summary["sequential"] = {
        "median_rel_l2": statistics.median(r["sequential"]["rel_l2"] for r in runs),
        "median_distance_to_full_fit": statistics.median(
            r["sequential"]["distance_to_full_fit"] for r in runs)}
    return {"shape": {"rows": 16_000, "features": 8, "partition_rows": 1_000}, "seeds": seeds,
            "summary": summary, "runs": runs}


def table(document: dict[str, Any]) -> str:
    """The Markdown table of a run (docs/scale-out.md)."""
    lines = ["| mode | groups | rows/s (median) | partial_fit tasks' compute s | "
             "error vs truth (rel. L2) | distance to in-order stream | "
             "distance to full-data fit |",
             "|---|---|---|---|---|---|---|"]
    for r in document["results"]:
        e = r["error"]
        busy = "" if r["task_compute_s"] is None else f"{r['task_compute_s']:.2f}"
        lines.append(f"| {r['mode']} | {r['groups'] or ''} | {r['rows_per_s']:,.0f} | {busy} | "
                     f"{e['rel_l2']:.3g} | {e.get('distance_to_sequential', 0):.2g} | "
                     f"{e['distance_to_full_fit']:.2g} |")
    sweep = document["error_sweep"]
    lines += ["", f"Error sweep: {sweep['seeds']} data sets of 16,000 x 8 (partitions of 1,000):",
              "", "| groups | median error vs truth | median distance to in-order | "
              "median distance to full fit | max distance / in-order error | "
              "max error / in-order error |", "|---|---|---|---|---|---|"]
    seq = sweep["summary"]["sequential"]
    lines.append(f"| in order | {seq['median_rel_l2']:.4g} | 0 | "
                 f"{seq['median_distance_to_full_fit']:.2g} | | |")
    for k, v in sweep["summary"].items():
        if k != "sequential":
            lines.append(f"| {k} | {v['median_rel_l2']:.4g} | "
                         f"{v['median_distance_to_sequential']:.2g} | "
                         f"{v['median_distance_to_full_fit']:.2g} | "
                         f"{v['max_distance_over_sequential_error']:.3f} | "
                         f"{v['max_error_over_sequential_error']:.3f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
