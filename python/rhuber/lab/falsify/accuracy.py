"""The checklist's F001–F020, model accuracy: the shipped models judged on the held-out
(time-split) workloads: throughput error, the plan classifier, the bottleneck classifier,
latency, size, and whether predictions move the way the hardware and the plans say they
should."""

from __future__ import annotations

import dataclasses
import math
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from ...engines.plans import Plan
from ...engines.workload import Workload
from ...tuner import models
from .context import Context, corpus_workloads, held_workloads, ranked_first, workload_series
from .registry import Outcome, check, compare, count, holds, pct


@check("F001", "Throughput MAPE on held-out workloads < 10 %")
def f001(ctx: Context) -> Outcome:
    return pct(ctx.report["throughput"]["mape"], "<", 0.10,
               "validate.evaluate on the latest 20 % of workloads (time split)")


@check("F002", "Throughput R² of log(rows/s) on held-out workloads > 0.85")
def f002(ctx: Context) -> Outcome:
    return compare(ctx.report["throughput"]["r2_log"], ">", 0.85)


@check("F003", "Plan classifier accuracy > 80 % (within 3 % of the best measured plan)")
def f003(ctx: Context) -> Outcome:
    cls = ctx.report["classifier"]
    return pct(cls["near_best_accuracy"], ">", 0.80,
               f"exact best plan {cls['accuracy']:.1%}; plans within 3 % (the measurement "
               "noise, labels.NEAR_BEST) count as the best")


@check("F004", "Plan classifier top-3 accuracy > 95 %")
def f004(ctx: Context) -> Outcome:
    return pct(ctx.report["classifier"]["top3_accuracy"], ">", 0.95)


def _worst_class(ctx: Context, metric: str) -> Outcome:
    per_class = ctx.report["bottleneck"]
    if not per_class:
        return holds(False, "no labelled held-out measurement", "> 85 % per class")
    worst = min(per_class, key=lambda c: per_class[c][metric])
    detail = ", ".join(f"{c} {v[metric]:.3f}" for c, v in per_class.items())
    return pct(per_class[worst][metric], ">", 0.85, f"worst class {worst}; {detail}")


@check("F005", "Bottleneck precision > 85 % in every class")
def f005(ctx: Context) -> Outcome:
    return _worst_class(ctx, "precision")


@check("F006", "Bottleneck recall > 85 % in every class")
def f006(ctx: Context) -> Outcome:
    return _worst_class(ctx, "recall")


@check("F007", "Bottleneck F1 > 0.85 in every class")
def f007(ctx: Context) -> Outcome:
    return _worst_class(ctx, "f1")


@check("F008", "No bottleneck class under 5 % of the labelled samples")
def f008(ctx: Context) -> Outcome:
    counts = Counter(ctx.bottleneck_labels)
    classes = ctx.models["bottleneck"].classes
    shares = {c: counts.get(c, 0) / max(1, len(ctx.bottleneck_labels)) for c in classes}
    rarest = min(shares, key=shares.__getitem__)
    return pct(shares[rarest], ">=", 0.05, f"rarest of the model's classes: {rarest}")


@check("F009", "Plan classifier expected calibration error < 0.1")
def f009(ctx: Context) -> Outcome:
    return compare(ctx.report["classifier"]["ece"], "<", 0.1, reason="10 equal-width bins")


@check("F010", "Prediction latency < 1 ms (features + native throughput model, one row)")
def f010(ctx: Context) -> Outcome:
    w, plan = Workload(rows=4096, features=32), ctx.native_plan
    model = ctx.models["throughput"]
    times = []
    for _ in range(200):
        start = time.perf_counter()
        model.raw(ctx.extractor.extract(w, plan, ctx.machine))
        times.append(time.perf_counter() - start)
    path = "native reader" if model.native is not None else "NumPy (native module missing)"
    return compare(float(np.median(times)) * 1e3, "<", 1.0, "{:.3f} ms",
                   f"median of 200, through the {path}")


@check("F011", "Model files < 10 MB in all")
def f011(ctx: Context) -> Outcome:
    total = sum((ctx.models_dir / f).stat().st_size for f in models.MODEL_FILES.values())
    return compare(total / 1e6, "<", 10.0, "{:.2f} MB")


@check("F012", "Ensemble agreement > 70 %: throughput ranking and plan classifier pick the "
               "same plan")
def f012(ctx: Context) -> Outcome:
    ranked = ranked_first(ctx.held_set.keys, ctx.held_predictions[0])
    measured: dict[tuple[str, str], set[str]] = defaultdict(set)
    for hw, w, plan in ctx.held_set.keys:
        measured[(hw, w)].add(plan)
    agree = []
    for (hw, w), plans in measured.items():
        votes = ctx.ensemble.plan_probabilities(Workload.from_id(w), ctx.hardware[hw])
        known = {c: v for c, v in votes.items() if c in plans}
        choice = max(known, key=lambda c: (known[c], c)) if known else None
        agree.append(choice == ranked[(hw, w)][1])
    return pct(float(np.mean(agree)), ">", 0.70,
               "the bottleneck model chooses no plan, so two of the three can agree")


@check("F013", "Confidence correlates with error: Spearman ρ(tree spread, |error|) > 0.5")
def f013(ctx: Context) -> Outcome:
    from scipy.stats import spearmanr

    predicted, spread = ctx.held_predictions
    rho = spearmanr(spread, np.abs(predicted - ctx.held_set.log_rate)).statistic
    return compare(rho, ">", 0.5, reason="held-out measurements")


@check("F014", "No catastrophic prediction: none off by more than 2× on held-out measurements")
def f014(ctx: Context) -> Outcome:
    ratio = np.abs(ctx.held_predictions[0] - ctx.held_set.log_rate)
    return count(int(np.sum(ratio > math.log(2))), "==", 0, "predictions",
                 f"of {len(ratio)}; worst {math.exp(ratio.max()):.2f}×")


@check("F015", "Monotonic with batch size: predicted rows/s falls by > 5 % on ≤ 10 % of the "
               "steps rows → next rows")
def f015(ctx: Context) -> Outcome:
    plan = ctx.native_plan
    drops = steps = 0
    for series in workload_series(ctx).values():
        ws = sorted(series, key=lambda w: w.rows)
        if len(ws) < 2:
            continue
        pred = ctx.predict_log([(w, plan) for w in ws], ctx.machine)
        drops += int(np.sum(np.diff(pred) < math.log(0.95)))
        steps += len(ws) - 1
    return pct(drops / max(1, steps), "<=", 0.10,
               f"{drops} of {steps} steps, the default plan over the corpus's rows grid")


@check("F016", "Hardware scaling: with 2× bandwidth and GEMM peak no workload is predicted "
               "slower")
def f016(ctx: Context) -> Outcome:
    h = ctx.machine
    better = dataclasses.replace(
        h, memory_bandwidth_bytes_per_s=2 * h.memory_bandwidth_bytes_per_s,
        peak_flops_float64=2 * h.peak_flops_float64, peak_flops_float32=2 * h.peak_flops_float32)
    plan = ctx.native_plan
    pairs = [(w, plan) for w in held_workloads(ctx)]
    gain = ctx.predict_log(pairs, better) - ctx.predict_log(pairs, h)
    not_slower = float(np.mean(gain >= math.log(0.99)))
    return pct(not_slower, ">=", 0.95,
               f"held-out workloads not predicted slower (by > 1 %), default plan; geomean "
               f"predicted speed-up {math.exp(float(gain.mean())):.3f}×; {len(ctx.fingerprints)}"
               " machine(s) in the store: the model sees bandwidth and peak only through the "
               "roofline features of one machine")


def _ordering_agreement(ctx: Context, counterpart: Callable[[Workload, Plan],
                                                            tuple[Workload, Plan] | None],
                        min_ratio: float = 1.10) -> tuple[float, int]:
    """How often the model orders a held-out measurement and its counterpart (the same
    configuration with one knob changed, measured anywhere in the store) as measured, where
    they differ by at least ``min_ratio``; and how many such pairs there are."""
    rate = {(m.hardware_id, m.workload_id, m.plan_id): m.rows_per_s for m in ctx.good}
    pairs, measured_sign = [], []
    for m in ctx.held_good:
        w, p = Workload.from_id(m.workload_id), Plan.from_id(m.plan_id)
        other = counterpart(w, p)
        if other is None:
            continue
        key = (m.hardware_id, other[0].id, other[1].id)
        if key not in rate or abs(math.log(m.rows_per_s / rate[key])) < math.log(min_ratio):
            continue
        pairs.append(((w, p), other, ctx.hardware[m.hardware_id]))
        measured_sign.append(m.rows_per_s > rate[key])
    if not pairs:
        return float("nan"), 0
    a = np.array([ctx.predict_log([x], hw)[0] for x, _, hw in pairs])
    b = np.array([ctx.predict_log([y], hw)[0] for _, y, hw in pairs])
    return float(np.mean((a > b) == np.asarray(measured_sign))), len(pairs)


@check("F017", "Dtype ordering (the seed's quantization): float32 vs float64 predicted as "
               "measured on ≥ 80 % of pairs")
def f017(ctx: Context) -> Outcome:
    def other(w: Workload, p: Plan) -> tuple[Workload, Plan]:
        dtype = "float64" if w.dtype == "float32" else "float32"
        return dataclasses.replace(w, dtype=dtype), p

    share, n = _ordering_agreement(ctx, other)
    return pct(share, ">=", 0.80, f"{n} held-out pairs differing by ≥ 10 % when measured")


@check("F018", "Quadratic brick scaling (the seed's attention): predicted P(compute "
               "bottleneck) rises with features, mean Spearman ρ > 0.5")
def f018(ctx: Context) -> Outcome:
    from scipy.stats import spearmanr

    plan = ctx.native_plan
    model = ctx.models["bottleneck"]
    if "compute" not in model.classes:
        return holds(False, "no 'compute' class in the bottleneck model", "a compute class")
    k = model.classes.index("compute")
    by_rows: dict[tuple[Any, ...], list[Workload]] = defaultdict(list)
    for w in corpus_workloads(ctx):
        by_rows[(w.rows, w.dtype, w.penalized, w.intercept)].append(w)
    rhos = []
    for ws in by_rows.values():
        if len(ws) >= 3:
            X = np.stack([ctx.extractor.extract(w, plan, ctx.machine) for w in ws])
            rhos.append(spearmanr([w.features for w in ws],
                                  model.predict_proba(X)[:, k]).statistic)
    return compare(float(np.nanmean(rhos)), ">", 0.5,
                   reason=f"{len(rhos)} series of the default plan; the Gram's n·d² is the "
                          "brick that grows faster than the data, as attention does with "
                          "sequence length")


@check("F019", "Plan-knob benefit (the seed's CUDA graphs): incremental vs full Gram predicted "
               "as measured on ≥ 80 % of pairs")
def f019(ctx: Context) -> Outcome:
    def other(w: Workload, p: Plan) -> tuple[Workload, Plan] | None:
        if p.backend != "native_cpu" or p.gram is None:
            return None
        gram = "full" if p.gram == "incremental" else "incremental"
        return w, dataclasses.replace(p, gram=gram)

    share, n = _ordering_agreement(ctx, other)
    return pct(share, ">=", 0.80, f"{n} held-out pairs differing by ≥ 10 % when measured; "
               "there are no CUDA graphs here, the Gram strategy is the plan's work-saving knob")


@check("F020", "Cross-validation stable: coefficient of variation of 5-fold R² < 5 %")
def f020(ctx: Context) -> Outcome:
    scores = np.asarray(ctx.cv_r2)
    return pct(float(scores.std() / scores.mean()), "<", 0.05,
               f"fold R² {', '.join(f'{s:.3f}' for s in scores)} (proxy GBT, grouped by "
               "workload)")
