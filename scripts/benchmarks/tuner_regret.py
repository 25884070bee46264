#!/usr/bin/env python3
"""How good is backend="auto"? Its stream time against every plan's, side by side in one run,
on workloads that are not in the tuner's corpus (off its grid of rows and features).

For each workload, every contestant — each plan valid here pinned with ``plan=``, and the
estimator with ``backend="auto"`` — streams the same batches through the public ``partial_fit``
(a fresh estimator per stream, as users run it); the contestants take turns in a seeded shuffled
order, repetition after repetition, so load on a shared machine falls on all alike, and each
contestant's figure is its median stream time, which picks the best plan. Then, per workload,
as the median over rounds of the ratio within a round (load drifting between rounds cancels):

- regret  = auto's time / the best plan's time        (target: geomean <= 1.03)
- vs default = auto's time / the default plan's time  (target: <= 1.02 at p99)
- speed-up = the default plan's time / auto's time    (reported: geomean, max)
- control  = the default plan's time, measured twice as two contestants (an A/A pair): the
             noise floor of the ratios above on this machine at this moment

The advisor's first answer for a workload is given before the timed runs and its cost reported
apart (it is paid once per workload and process; later streams reuse the answer).

    .venv/bin/python scripts/benchmarks/tuner_regret.py --out docs/perf/tuner_regret.json
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import statistics
import sys
import time
from typing import Any

from rhuber import RenewableHuberRegressor
from rhuber.engines.plans import Plan, plans_for
from rhuber.engines.workload import Workload
from rhuber.lab.collect import PENALTY_ALPHA, workload_batches
from rhuber.tuner import advisor as adv

#: Off the corpus grid (rows 256·√2^k, features 2^k): between its points, both dtypes, some
#: penalized, a few beyond its sizes or the training batches' bytes (auto keeps the default).
ROWS = (600, 1500, 3000, 6000, 12000, 24000)
FEATURES = (6, 24, 96)
EXTRA = (Workload(1500, 12, "float64", penalized=True),
         Workload(6000, 6, "float32", penalized=True),
         Workload(600, 24, "float32", penalized=True),
         Workload(3000, 48, "float64", penalized=True),
         Workload(12000, 3, "float64", penalized=True),
         Workload(150_000, 12), Workload(3000, 400))


def workloads(limit_bytes: int) -> list[Workload]:
    grid = [Workload(n, p, dtype) for n in ROWS for p in FEATURES
            for dtype in ("float64", "float32") if n * p * (8 if dtype == "float64" else 4)
            <= limit_bytes]
    return grid + [w for w in EXTRA if w.rows * w.features * w.itemsize <= 4 * limit_bytes]


def _stream_seconds(workload: Workload, plan: Plan | None, batches: list[Any]
                    ) -> tuple[float, Any]:
    """The stream's time through a fresh estimator, and its ``plan_``."""
    model = RenewableHuberRegressor(plan=plan, fit_intercept=workload.intercept,
                                    alpha=PENALTY_ALPHA if workload.penalized else 0.0)
    start = time.perf_counter()
    for X, y in batches:
        model.partial_fit(X, y)
    return time.perf_counter() - start, model.plan_


def measure(workload: Workload, batches: int, repetitions: int, seed: int) -> dict[str, Any]:
    data = workload_batches(workload, batches, seed=seed)
    plans = plans_for(workload)
    default = Plan("native_cpu").resolved()
    # None is auto; "control" the default plan a second time: an A/A pair whose ratio is the
    # noise floor of every ratio below.
    contestants: list[Plan | str | None] = [None, *plans, "control"]
    start = time.perf_counter()
    shared = adv.shared()
    advice = shared.advise(workload) if shared is not None else None
    decision_ms = (time.perf_counter() - start) * 1e3
    def key(c: Plan | str | None) -> str:
        return "auto" if c is None else c if isinstance(c, str) else c.id

    last_auto: list[Any] = []

    def run(c: Plan | str | None, batches: list[Any]) -> float:
        seconds, report = _stream_seconds(workload, default if c == "control" else c, batches)
        if c is None:
            last_auto[:] = [report]
        return seconds

    times: dict[str, list[float]] = {key(c): [] for c in contestants}
    order = random.Random(seed)
    for c in contestants:  # warm-up: engines, caches, the advisor's answer
        run(c, data[:2])
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repetitions):
            round_ = list(contestants)
            order.shuffle(round_)
            for c in round_:
                times[key(c)].append(run(c, data))
    finally:
        if enabled:
            gc.enable()
    median = {k: statistics.median(v) for k, v in times.items()}
    plan_times = {k: v for k, v in median.items() if k not in ("auto", "control")}
    best = min(plan_times, key=plan_times.__getitem__)
    report = last_auto[0]

    def paired(a: str, b: str) -> float:
        """The median over rounds of a's time / b's time in the same round: load that drifts
        between rounds cancels."""
        return statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))

    return {
        "workload": workload.id, "batches": batches, "repetitions": repetitions,
        "auto_plan": report.plan, "auto_reason": report.reason,
        "advice_plan": None if advice is None else advice.plan.id,
        "decision_ms": decision_ms, "best_plan": best, "default_plan": default.id,
        "seconds": median,
        "regret": paired("auto", best),
        "vs_default": paired("auto", default.id),
        "default_regret": paired(default.id, best),
        "control_vs_default": paired("control", default.id),
    }


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    regret = [r["regret"] for r in rows]
    versus = [r["vs_default"] for r in rows]
    speedup = [1.0 / v for v in versus]
    chosen = [r for r in rows if r["auto_reason"] == adv.CHOSEN]
    return {
        "workloads": len(rows),
        "auto_regret_geomean": _geomean(regret), "auto_regret_p95": _quantile(regret, 0.95),
        "auto_vs_default_p99": _quantile(versus, 0.99), "auto_vs_default_max": max(versus),
        "speedup_geomean": _geomean(speedup), "speedup_max": max(speedup),
        "default_regret_geomean": _geomean([r["default_regret"] for r in rows]),
        "noise_floor_control_vs_default_p99": _quantile([r["control_vs_default"] for r in rows],
                                                        0.99),
        "noise_floor_control_vs_default_geomean": _geomean([r["control_vs_default"]
                                                            for r in rows]),
        "moved_off_default": len(chosen),
        "reverted": sum(r["auto_reason"] == adv.REVERTED for r in rows),
        "speedup_geomean_where_moved": _geomean([1 / r["vs_default"] for r in chosen])
        if chosen else None,
        "decision_ms_median": statistics.median(r["decision_ms"] for r in rows),
        "targets": {"regret_geomean_le_1.03": _geomean(regret) <= 1.03,
                    "vs_default_p99_le_1.02": _quantile(versus, 0.99) <= 1.02},
    }


def offline(margins: list[float]) -> list[dict[str, Any]]:
    """The advisor's rules replayed on the corpus's held-out workloads (the latest 20 % by
    time, which the shipped model never saw), from their stored measurements — no timing, so no
    noise: per gain margin, auto's regret and its time over the default plan's."""
    from rhuber.lab import validate
    from rhuber.tuner.hardware import Hardware
    from rhuber.tuner.labels import throughput
    from rhuber.tuner.models import Ensemble, default_models_dir
    from rhuber.tuner.store import Store

    with Store(default_models_dir().parent / "corpus.sqlite", read_only=True) as store:
        measurements, fingerprints = list(store.measurements()), store.hardware()
    _, held = validate.split(measurements)
    rates: dict[str, dict[str, float]] = {}
    for m in held:
        rate = throughput(m)
        if rate:
            rates.setdefault(m.workload_id, {})[m.plan_id] = rate
    ensemble = Ensemble.load()
    hardware = Hardware.from_dict(fingerprints[held[0].hardware_id])  # the corpus's one machine
    default = Plan("native_cpu").resolved(hardware.cores)
    results = []
    for margin in margins:
        adv.GAIN_MARGIN, saved = margin, adv.GAIN_MARGIN
        try:
            advisor = adv.Advisor(ensemble, hardware)  # a fresh memo for each margin
            regret, versus = [], []
            for workload_id, measured in rates.items():
                if default.id not in measured:
                    continue
                advice = advisor.advise(
                    Workload.from_id(workload_id),
                    candidates=[Plan.from_id(p) for p in measured], default=default)
                chosen = measured[advice.plan.id]
                regret.append(max(measured.values()) / chosen)
                versus.append(measured[default.id] / chosen)
        finally:
            adv.GAIN_MARGIN = saved
        results.append({"gain_margin": margin, "workloads": len(regret),
                        "auto_regret_geomean": _geomean(regret),
                        "auto_regret_p95": _quantile(regret, 0.95),
                        "auto_vs_default_p99": _quantile(versus, 0.99),
                        "speedup_geomean": _geomean([1 / v for v in versus])})
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=12, help="batches per stream")
    parser.add_argument("--repetitions", type=int, default=9)
    parser.add_argument("--max-batch-mb", type=float, default=8.0,
                        help="skip grid workloads with a larger X batch")
    parser.add_argument("--limit", type=int, default=None, help="only the first N workloads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--offline", action="store_true",
                        help="only replay the advisor on the corpus's held-out measurements, "
                             "for gain margins 0, 5 and 10 %%")
    args = parser.parse_args(argv)
    if args.offline:
        print(json.dumps(offline([0.0, 0.05, adv.GAIN_MARGIN]), indent=2))
        return 0

    chosen = workloads(int(args.max_batch_mb * 2**20))[:args.limit]
    rows = []
    began = time.perf_counter()
    for k, workload in enumerate(chosen, start=1):
        row = measure(workload, args.batches, args.repetitions, args.seed)
        rows.append(row)
        print(f"[{k}/{len(chosen)} {time.perf_counter() - began:5.0f}s] {workload.id:38s} "
              f"auto {row['auto_plan']:48s} regret {row['regret']:.3f} vs default "
              f"{row['vs_default']:.3f} ({row['auto_reason']})", file=sys.stderr, flush=True)
    summary = summarize(rows)
    replayed = offline([0.0, 0.05, adv.GAIN_MARGIN])
    print(json.dumps({"summary": summary, "offline": replayed}, indent=2))
    if args.out:
        with open(args.out, "w") as out:
            json.dump({"summary": summary, "offline": replayed, "workloads": rows,
                       "argv": sys.argv[1:], "cpu_count": os.cpu_count()}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
