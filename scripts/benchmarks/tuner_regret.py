#!/usr/bin/env python3
"""How good is backend="auto"? Its stream time against every plan's, side by side in one run,
on workloads that are not in the tuner's corpus (off its grid of rows and features, both
penalties and dtypes, batches up to the RFC's wide and streaming sizes).

For each workload, every contestant — each native_cpu plan valid here pinned with ``plan=``,
the rule's plan (pinned), the old engine-default plan, and the estimator with
``backend="auto"`` — streams the same batches through the public ``partial_fit`` (a fresh
estimator per stream, as users run it); the contestants take turns in a seeded shuffled order,
repetition after repetition, so load on a shared machine falls on all alike, and each
contestant's figure is its median stream time, which picks the best plan. Then, per workload,
as the median over rounds of the ratio within a round (load drifting between rounds cancels):

- regret   = auto's time / the best plan's time          (target: geomean <= 1.03, p95 <= 1.10)
- vs rule  = auto's time / the rule's plan's time         (target: geomean <= 0.98, p90 <= 1.02)
- speed-up = the engine default's (or the rule's) time / auto's time (geomean, max)
- control  = the rule's plan measured twice as two contestants (an A/A pair): the noise floor
- first stream = auto's first stream of the workload in the process, when it runs its trials
  (later streams of the same workload run the trial's winner), against the best plan's median

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
from collections import Counter
from typing import Any

from rhuber import RenewableHuberRegressor
from rhuber.engines.plans import Plan, plans_for
from rhuber.engines.workload import Workload
from rhuber.lab.collect import PENALTY_ALPHA, workload_batches
from rhuber.tuner import advisor as adv
from rhuber.tuner import rules

#: Off the corpus grid (rows 256·√2^k, features 2^k) and off the issue-28 design points: both
#: dtypes, penalty off and on, batches up to the RFC's wide (4,096 × 256) and streaming
#: (65,536 × 32) sizes.
WORKLOADS = (
    Workload(600, 24, "float32", penalized=True), Workload(1500, 12, "float64", penalized=True),
    Workload(3000, 48, "float64", penalized=True), Workload(6000, 6, "float32", penalized=True),
    Workload(12000, 3, "float64", penalized=True), Workload(24000, 24, "float32", penalized=True),
    Workload(3500, 240, "float64", penalized=True), Workload(60000, 30, "float32", penalized=True),
    Workload(600, 6, "float64"), Workload(1500, 96, "float32"), Workload(6000, 24, "float64"),
    Workload(12000, 96, "float32"), Workload(3500, 240, "float32"),
    Workload(60000, 30, "float64"),
)


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
    plans = [p for p in plans_for(workload) if p.backend == "native_cpu"]
    engine = Plan("native_cpu").resolved()
    shared = adv.shared()
    rule = (shared.rule if shared is not None else rules.DEFAULT_RULE).plan(
        workload, os.cpu_count() or 1)

    def key(c: Plan | str | None) -> str:
        return "auto" if c is None else c if isinstance(c, str) else c.id

    # auto's first stream of this workload in the process, the one that runs the trials, after
    # a one-batch auto stream that pays the advisor's answer (a few ms, once per workload and
    # process) and starts no trial it could finish.
    _stream_seconds(workload, None, data[:1])
    first_s, first_report = _stream_seconds(workload, None, data)
    # None is auto; "control" the rule's plan a second time: an A/A pair.
    contestants: list[Plan | str | None] = [None, *plans, "control"]
    last_auto: list[Any] = []

    def run(c: Plan | str | None, batches: list[Any]) -> float:
        seconds, report = _stream_seconds(workload, rule if c == "control" else c, batches)
        if c is None:
            last_auto[:] = [report]
        return seconds

    times: dict[str, list[float]] = {key(c): [] for c in contestants}
    order = random.Random(seed)
    for c in contestants:  # warm-up: engines, caches
        if c is not None:
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

    def paired(a: str, b: str, rounds: slice = slice(None)) -> float:
        """The median over rounds of a's time / b's time in the same round: load that drifts
        between rounds cancels."""
        return statistics.median(x / y for x, y in zip(times[a][rounds], times[b][rounds],
                                                        strict=True))

    # The best of 24 noisy medians is biased fast (the winner's curse): cross-fitted, the best
    # plan is picked on the even rounds and auto's ratio to it taken on the odd ones.
    even = {k: statistics.median(v[0::2]) for k, v in plan_times_all(times).items()}
    best_even = min(even, key=even.__getitem__)

    return {
        "workload": workload.id, "batches": batches, "repetitions": repetitions,
        "auto_plan": report.plan, "auto_reason": report.reason, "auto_detail": report.detail,
        "first_stream_plan": first_report.plan, "first_stream_reason": first_report.reason,
        "first_stream_detail": first_report.detail,
        "best_plan": best, "engine_default_plan": engine.id, "rule_plan": rule.id,
        "seconds": median,
        "regret": paired("auto", best),
        "regret_crossfit": paired("auto", best_even, slice(1, None, 2)),
        "vs_rule": paired("auto", rule.id),
        "vs_engine_default": paired("auto", engine.id),
        "rule_regret": paired(rule.id, best),
        "engine_default_regret": paired(engine.id, best),
        "first_stream_regret": first_s / median[best],
        "control_vs_rule": paired("control", rule.id),
    }


def plan_times_all(times: dict[str, list[float]]) -> dict[str, list[float]]:
    return {k: v for k, v in times.items() if k not in ("auto", "control")}


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
    vs_rule = [r["vs_rule"] for r in rows]
    over_rule = [1.0 / v for v in vs_rule]
    over_engine = [1.0 / r["vs_engine_default"] for r in rows]
    first = [r["first_stream_regret"] for r in rows]
    crossfit = [r["regret_crossfit"] for r in rows]
    return {
        "workloads": len(rows),
        "auto_regret_geomean": _geomean(regret), "auto_regret_p95": _quantile(regret, 0.95),
        "auto_regret_max": max(regret),
        "auto_regret_crossfit_geomean": _geomean(crossfit),
        "auto_regret_crossfit_p95": _quantile(crossfit, 0.95),
        "auto_vs_rule_geomean": _geomean(vs_rule), "auto_vs_rule_p90": _quantile(vs_rule, 0.90),
        "speedup_over_rule_geomean": _geomean(over_rule), "speedup_over_rule_max": max(over_rule),
        "speedup_over_engine_default_geomean": _geomean(over_engine),
        "speedup_over_engine_default_max": max(over_engine),
        "rule_regret_geomean": _geomean([r["rule_regret"] for r in rows]),
        "engine_default_regret_geomean": _geomean([r["engine_default_regret"] for r in rows]),
        "first_stream_regret_geomean": _geomean(first),
        "first_stream_regret_p95": _quantile(first, 0.95),
        "noise_floor_control_vs_rule_geomean": _geomean([r["control_vs_rule"] for r in rows]),
        "noise_floor_control_vs_rule_p90": _quantile([r["control_vs_rule"] for r in rows], 0.9),
        "reasons": dict(Counter(r["auto_reason"] for r in rows)),
        "first_stream_reasons": dict(Counter(r["first_stream_reason"] for r in rows)),
        "targets": {"regret_geomean_le_1.03": _geomean(regret) <= 1.03,
                    "regret_p95_le_1.10": _quantile(regret, 0.95) <= 1.10,
                    "vs_rule_geomean_le_0.98": _geomean(vs_rule) <= 0.98,
                    "vs_rule_p90_le_1.02": _quantile(vs_rule, 0.90) <= 1.02},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=12, help="batches per stream")
    parser.add_argument("--repetitions", type=int, default=11)
    parser.add_argument("--limit", type=int, default=None, help="only the first N workloads")
    parser.add_argument("--only", action="append", default=[], metavar="ID",
                        help="only the workloads whose id contains ID (repeatable), e.g. "
                             "n600/p24/float32")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--models", default=None, metavar="DIR",
                        help="auto's models and rule (default: this machine's, as users get "
                             "them); e.g. models trained with this machine held out")
    args = parser.parse_args(argv)
    if args.models:
        adv.use_models(args.models)

    chosen = [w for w in WORKLOADS if not args.only or any(o in w.id for o in args.only)]
    chosen = chosen[:args.limit]
    rows = []
    began = time.perf_counter()
    load = os.getloadavg()
    for k, workload in enumerate(chosen, start=1):
        row = measure(workload, args.batches, args.repetitions, args.seed)
        rows.append(row)
        print(f"[{k}/{len(chosen)} {time.perf_counter() - began:5.0f}s] {workload.id:36s} "
              f"auto {row['auto_plan']:50s} regret {row['regret']:.3f} (crossfit "
              f"{row['regret_crossfit']:.3f}, control {row['control_vs_rule']:.3f}) vs rule "
              f"{row['vs_rule']:.3f} first {row['first_stream_regret']:.3f} "
              f"({row['first_stream_reason']})", file=sys.stderr, flush=True)
    summary = summarize(rows)
    summary["load_average_before_after"] = [load, os.getloadavg()]
    summary["seconds"] = time.perf_counter() - began
    print(json.dumps(summary, indent=2))
    if args.out:
        with open(args.out, "w") as out:
            json.dump({"summary": summary, "workloads": rows, "argv": sys.argv[1:],
                       "cpu_count": os.cpu_count()}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
