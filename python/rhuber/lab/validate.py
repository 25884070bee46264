"""Validating the tuner's models on held-out workloads (docs/tuner.md, "Models").

The split is by time: the latest :data:`HOLDOUT_FRACTION` of each store's workloads, ordered by
their last measurement (``measured_at``), are held out; ``rhuber tune train`` trains on the rest
(:func:`split`). Every figure is computed from measurements: the models only choose (a plan, a
class); what a choice is worth is read from the measured times.

- throughput: MAPE of the predicted rows/s against the measured rows/s, R² of log(rows/s);
- plan: the ensemble's choice (the plan the throughput model ranks first among the plans measured
  for the workload) and the plan classifier's choice (its most probable class among them); accuracy
  (the choice is the best measured plan), near-best accuracy (within 3 % of it), top-3 accuracy,
  expected calibration error of the classifier (10 equal-width confidence bins);
- regret: the chosen plan's measured time over the best measured plan's time, geomean / p95 / max,
  next to the default plan's (what ``backend="auto"`` runs where native_cpu is installed:
  ``default_plan(w).resolved(cores)``; numpy where native_cpu was not measured), and the choice's
  time over the default's (p95);
- bottleneck: precision, recall and F1 per class of the logistic model against the labels of
  :func:`labels.measurement_bottleneck`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..engines.plans import Plan
from ..engines.workload import Workload
from ..tuner.advisor import Advisor
from ..tuner.hardware import Hardware
from ..tuner.labels import BOTTLENECKS, best_plans, measurement_bottleneck, throughput
from ..tuner.model_files import ModelFile
from ..tuner.models import Ensemble, hardware_of, plan_features
from ..tuner.models import train as train_models
from ..tuner.reasons import TRIAL
from ..tuner.rule_search import search as search_rule
from ..tuner.rule_search import times_by_workload
from ..tuner.rules import DEFAULT_RULE, Rule, region
from ..tuner.session import TRIAL_AFTER_BATCHES, TRIAL_PLAN_BATCHES
from ..tuner.store import Measurement

#: How much lower than the rule's the model's held-out geomean regret in a region must be for
#: the advisor to use the model there: about two standard errors of that geomean over a
#: region's ~100 held-out workloads, each measured to a few percent. A model that only ties the
#: rule (its gains within the replay's noise) is a risk on workloads it did not see, not a gain.
MODEL_REGION_MARGIN = 0.01
#: Every region key (tuner.rules.region).
ALL_REGIONS = tuple(f"l1={a}/size={b}" for a in (0, 1) for b in range(3))

HOLDOUT_FRACTION = 0.2
#: The issue's targets: (figure, bound, how it compares).
TARGETS = (("regret_geomean", 1.03, "<="), ("regret_p95", 1.10, "<="), ("mape", 0.15, "<"),
           ("vs_default_p95", 1.02, "<="))


def split(measurements: Sequence[Measurement], fraction: float = HOLDOUT_FRACTION
          ) -> tuple[list[Measurement], list[Measurement]]:
    """(train, held out): per machine, the latest ``fraction`` of workloads by their last
    ``measured_at`` (ties broken by workload id) are held out."""
    last: dict[tuple[str, str], str] = {}
    for m in measurements:
        key = (m.hardware_id, m.workload_id)
        last[key] = max(last.get(key, ""), m.measured_at)
    held: set[tuple[str, str]] = set()
    for hw in {k[0] for k in last}:
        keys = sorted((t, k) for k, t in last.items() if k[0] == hw)
        count = math.ceil(fraction * len(keys)) if len(keys) > 1 else 0
        held |= {k for _, k in keys[len(keys) - count:]}
    train = [m for m in measurements if (m.hardware_id, m.workload_id) not in held]
    test = [m for m in measurements if (m.hardware_id, m.workload_id) in held]
    return train, test


def default_plan_id(workload: Workload, cores: int | None, measured: set[str]) -> str:
    """``default_plan(w).resolved(cores)`` as it is where native_cpu is installed; numpy when
    the store has no native_cpu measurement of the workload."""
    if workload.location == "device":
        return Plan("cuda").id
    native = Plan("native_cpu").resolved(cores).id
    return native if native in measured else Plan("numpy").id


def _quantile(values: Sequence[float], q: float) -> float:
    return float(np.quantile(np.asarray(values, dtype=np.float64), q))


def _regret_summary(values: Sequence[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=np.float64)
    return {"geomean": float(np.exp(np.log(a).mean())), "p95": _quantile(a, 0.95),
            "max": float(a.max())}


def evaluate(models: dict[str, ModelFile], measurements: Sequence[Measurement],
             fingerprints: dict[str, dict[str, Any]], *, rule: Rule | None = None
             ) -> dict[str, Any]:
    """Every figure of the report on ``measurements`` (the held-out part of a store), with the
    regret of ``rule``'s plans (default :data:`DEFAULT_RULE`) beside the models'."""
    rule = DEFAULT_RULE if rule is None else rule
    ensemble = Ensemble(models)
    hardware = hardware_of(fingerprints)
    good = [m for m in measurements if throughput(m)]
    if not good:
        raise ValueError("no good measurement to validate on")
    ex = ensemble.extractor

    # throughput
    X = np.stack([ex.extract(Workload.from_id(m.workload_id), Plan.from_id(m.plan_id),
                             hardware[m.hardware_id]) for m in good])
    predicted, _ = ensemble.throughput(X)
    measured = np.log([m.rows_per_s for m in good])
    mape = float(np.mean(np.abs(np.exp(predicted) - np.exp(measured)) / np.exp(measured)))
    r2 = float(1 - np.sum((measured - predicted) ** 2) / np.sum((measured - measured.mean()) ** 2))
    pred_of = {(m.hardware_id, m.workload_id, m.plan_id): float(p)
               for m, p in zip(good, predicted, strict=True)}

    # plans
    rate: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for m in good:
        rate[(m.hardware_id, m.workload_id)][m.plan_id] = m.rows_per_s
    best = best_plans(good)
    plan_model = models["plan"]
    classes = plan_model.classes
    rows = []
    for key in sorted(rate):
        hw_id, w_id = key
        w, hw = Workload.from_id(w_id), hardware[hw_id]
        rates = rate[key]
        top = best[key]
        default = default_plan_id(w, hw.cores, set(rates))
        # The engine's default plan, or the rule's, may be missing here (measured stale: a
        # penalized workload's LAMM on a machine not measured since LAMM changed speed); its
        # figures are then left out of this workload, and a workload with neither is skipped.
        ruled = rule.plan(w, hw.cores).id
        if ruled not in rates and default not in rates:
            continue
        rule_or_default = ruled if ruled in rates else default
        ranked = sorted(rates, key=lambda p: (-pred_of[(hw_id, w_id, p)], p))
        proba = plan_model.predict_proba(plan_features(w, hw))[0]
        scores = {c: float(p) for c, p in zip(classes, proba, strict=True) if c in rates}
        total = sum(scores.values())
        if total > 0:
            by_classifier = sorted(scores, key=lambda c: (-scores[c], c))
            confidence = scores[by_classifier[0]] / total
        else:  # the classifier knows none of the measured plans: it falls back to the default
            by_classifier, confidence = [default if default in rates else ruled], 0.0
        rows.append({"key": key, "best": top.plan_id, "near": top.near_best,
                     "t_best": 1 / top.rows_per_s,
                     "t_default": 1 / rates[default] if default in rates else None,
                     "ensemble": ranked[:3], "classifier": by_classifier[:3],
                     "t_ensemble": 1 / rates[ranked[0]],
                     "t_classifier": 1 / rates[by_classifier[0]],
                     "t_rule": 1 / rates[rule_or_default],
                     "confidence": confidence})
    if not rows:
        raise ValueError("no held-out workload has its default plan or the rule's measured")

    with_default = [r for r in rows if r["t_default"] is not None]

    def choice(name: str) -> dict[str, Any]:
        regret = [r[f"t_{name}"] / r["t_best"] for r in rows]
        vs_default = [r[f"t_{name}"] / r["t_default"] for r in with_default] or [math.nan]
        return {"accuracy": float(np.mean([r[name][0] == r["best"] for r in rows])),
                "near_best_accuracy": float(np.mean([r[name][0] in r["near"] for r in rows])),
                "top3_accuracy": float(np.mean([r["best"] in r[name] for r in rows])),
                "regret": _regret_summary(regret),
                "vs_default": {"geomean": float(np.exp(np.log(vs_default).mean())),
                               "p95": _quantile(vs_default, 0.95),
                               "max": float(np.max(vs_default))}}

    correct = np.array([r["classifier"][0] == r["best"] for r in rows], dtype=np.float64)
    conf = np.array([r["confidence"] for r in rows])
    bins = np.minimum((conf * 10).astype(int), 9)
    ece = float(sum(abs(correct[bins == b].mean() - conf[bins == b].mean()) * (bins == b).sum()
                    for b in range(10) if (bins == b).any()) / len(rows))

    # bottleneck
    labelled, labels = [], []
    for m in good:
        hw = hardware[m.hardware_id]
        label = measurement_bottleneck(m, peak_gflops=hw.peak_flops_float64 / 1e9,
                                       bandwidth_gbs=hw.memory_bandwidth_bytes_per_s / 1e9)
        if label is not None:
            labelled.append(m)
            labels.append(label)
    per_class = {}
    if labelled:
        Xb = np.stack([ex.extract(Workload.from_id(m.workload_id), Plan.from_id(m.plan_id),
                                  hardware[m.hardware_id]) for m in labelled])
        guess = models["bottleneck"].predict(Xb)
        truth = np.asarray(labels, dtype=object)
        for c in BOTTLENECKS:
            tp = int(np.sum((guess == c) & (truth == c)))
            fp = int(np.sum((guess == c) & (truth != c)))
            fn = int(np.sum((guess != c) & (truth == c)))
            if tp + fp + fn == 0:
                continue
            p = tp / (tp + fp) if tp + fp else 0.0
            r = tp / (tp + fn) if tp + fn else 0.0
            per_class[c] = {"precision": p, "recall": r,
                            "f1": 2 * p * r / (p + r) if p + r else 0.0, "support": tp + fn}

    default_regret = _regret_summary([r["t_default"] / r["t_best"] for r in with_default]
                                     or [math.nan])
    ens = choice("ensemble")
    report: dict[str, Any] = {
        "workloads": len(rows), "measurements": len(good),
        "hardware_ids": sorted({m.hardware_id for m in good}),
        "throughput": {"mape": mape, "r2_log": r2},
        "ensemble": ens, "classifier": {**choice("classifier"), "ece": ece},
        "default": {"regret": default_regret},
        "rule": {"regret": _regret_summary([r["t_rule"] / r["t_best"] for r in rows]),
                 "description": rule.describe()},
        "bottleneck": per_class,
    }
    figures = {"regret_geomean": ens["regret"]["geomean"], "regret_p95": ens["regret"]["p95"],
               "mape": mape, "vs_default_p95": ens["vs_default"]["p95"]}
    report["targets"] = {name: {"measured": figures[name], "bound": bound, "op": op,
                                "met": figures[name] <= bound if op == "<=" else
                                figures[name] < bound}
                         for name, bound, op in TARGETS}
    report["grade"] = grade(report)
    return report


def grade(report: dict[str, Any]) -> str:
    """A: every target met; B: the ensemble beats the default plan's regret (geomean) and is
    within 10 % of it at p95 against the default; C: it beats the default's geomean regret;
    F: otherwise."""
    if all(t["met"] for t in report["targets"].values()):
        return "A"
    ens, default = report["ensemble"], report["default"]
    better = ens["regret"]["geomean"] < default["regret"]["geomean"]
    if better and ens["vs_default"]["p95"] <= 1.10:
        return "B"
    return "C" if better else "F"


def markdown(report: dict[str, Any], *, title: str = "Validation report") -> str:
    """The report as Markdown (what VALIDATION.md holds)."""
    ens, cls, dft = report["ensemble"], report["classifier"], report["default"]
    t = report["throughput"]

    def reg(r: dict[str, float]) -> str:
        return f"{r['geomean']:.4f} | {r['p95']:.4f} | {r['max']:.4f}"

    lines = [
        f"# {title}", "",
        f"Held-out: {report['workloads']} workloads ({report['measurements']} good measurements) "
        f"on {len(report['hardware_ids'])} machine(s) ({', '.join(report['hardware_ids'])}). "
        f"Grade **{report['grade']}**.", "",
        "## Targets", "",
        "| figure | measured | target | met |", "|---|---|---|---|",
    ]
    for name, v in report["targets"].items():
        lines.append(f"| {name} | {v['measured']:.4f} | {v['op']} {v['bound']} | "
                     f"{'yes' if v['met'] else 'no'} |")
    lines += ["", "## Throughput", "",
              f"MAPE {t['mape']:.2%}, R² of log(rows/s) {t['r2_log']:.4f}.", "",
              "## Plan choice (regret = measured time of the choice / best measured time)", "",
              "| chooser | regret geomean | p95 | max | accuracy | within 3 % | top-3 | "
              "time / default's p95 |", "|---|---|---|---|---|---|---|---|",
              f"| ensemble (throughput ranking) | {reg(ens['regret'])} | {ens['accuracy']:.1%} | "
              f"{ens['near_best_accuracy']:.1%} | {ens['top3_accuracy']:.1%} | "
              f"{ens['vs_default']['p95']:.4f} |",
              f"| plan classifier | {reg(cls['regret'])} | {cls['accuracy']:.1%} | "
              f"{cls['near_best_accuracy']:.1%} | {cls['top3_accuracy']:.1%} | "
              f"{cls['vs_default']['p95']:.4f} |",
              f"| the rule ({report['rule']['description']}) | "
              f"{reg(report['rule']['regret'])} | | | | |",
              f"| engine default plan | {reg(dft['regret'])} | | | | 1 |", "",
              f"Expected calibration error of the plan classifier: {cls['ece']:.4f}.", "",
              "## Bottleneck classifier", "",
              "| class | precision | recall | F1 | support |", "|---|---|---|---|---|"]
    for c, v in report["bottleneck"].items():
        lines.append(f"| {c} | {v['precision']:.3f} | {v['recall']:.3f} | {v['f1']:.3f} | "
                     f"{v['support']} |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------- machines held out, the rule, auto

#: The stream length the offline replay charges trials against (the live benchmark's streams).
REPLAY_STREAM_BATCHES = 12
#: The models' parameters for the leave-one-machine-out folds (calibrate's lighter boosting:
#: one fold trains in seconds, within 0.3 % of the shipped parameters' regret on the time split).
FOLD_PARAMS: dict[str, dict[str, Any]] = {"throughput": {"n_estimators": 300},
                                          "bottleneck": {"solver": "sag"}}


def replay(advisor: Advisor, measurements: Sequence[Measurement], hardware: Hardware,
           rule: Rule, *, stream_batches: int = REPLAY_STREAM_BATCHES
           ) -> list[dict[str, Any]]:
    """Per workload of one machine: the measured time (per row) of the best plan, the engine's
    default plan, the rule's plan and auto's choice — the advisor's answer as the estimator
    acts on it: its plan, or, when it asks for trials, a ``stream_batches`` stream that runs the
    rule's plan for TRIAL_AFTER_BATCHES batches, each other trial plan for TRIAL_PLAN_BATCHES
    and the fastest measured one for the rest (the trials' cost included) — or the rule's plan
    throughout when the stream is too short to repay a trial (under 2 × TRIAL_AFTER_BATCHES)."""
    times = times_by_workload(m for m in measurements if m.hardware_id == hardware.hardware_id)
    out = []
    for (_, wid), plans in sorted(times.items()):
        w = Workload.from_id(wid)
        engine = default_plan_id(w, hardware.cores, set(plans))
        ruled = rule.plan(w, hardware.cores).id
        if ruled not in plans:  # not measured, or measured stale (labels.stale)
            continue
        candidates = [Plan.from_id(p) for p in sorted(plans)]
        advice = advisor.advise(w, candidates=candidates, default=Plan.from_id(ruled))
        if advice.trials and stream_batches < 2 * TRIAL_AFTER_BATCHES:
            choice, t_auto = ruled, plans[ruled]  # too short to repay a trial: the rule's plan
        elif advice.trials:
            tried = [plans[p.id] for p in advice.trials]
            others = len(tried) - 1  # the rule's plan, first, is timed on the stream's start
            rest = stream_batches - TRIAL_AFTER_BATCHES - others * TRIAL_PLAN_BATCHES
            t_auto = (tried[0] * TRIAL_AFTER_BATCHES + sum(tried[1:]) * TRIAL_PLAN_BATCHES
                      + rest * min(tried)) / stream_batches
            choice = advice.trials[tried.index(min(tried))].id
        else:
            choice = advice.plan.id
            t_auto = plans[choice]
        out.append({"workload": wid, "region": region(w), "t_best": min(plans.values()),
                    "t_engine": plans.get(engine), "t_rule": plans[ruled], "t_auto": t_auto,
                    "auto_plan": choice, "auto_reason": advice.reason,
                    "t_model": plans[advice.ranked[0].plan.id] if advice.ranked else
                    plans[ruled]})
    return out


def _geomean(values: Sequence[float]) -> float:
    return float(np.exp(np.log(np.asarray(values, dtype=np.float64)).mean()))


def _summary(rows: Sequence[dict[str, Any]], key: str) -> dict[str, float]:
    return _regret_summary([r[key] / r["t_best"] for r in rows]) if rows else {}


def replay_summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Regret (geomean, p95, max) of auto, the rule, the model's ranking and the engine default;
    auto against the rule (geomean, p90) and the speed-ups over the rule and the engine."""
    if not rows:
        return {"workloads": 0}
    vs_rule = [r["t_auto"] / r["t_rule"] for r in rows]
    up_rule = [r["t_rule"] / r["t_auto"] for r in rows]
    with_engine = [r for r in rows if r["t_engine"] is not None]
    up_engine = [r["t_engine"] / r["t_auto"] for r in with_engine] or [math.nan]
    return {"workloads": len(rows),
            "auto": _summary(rows, "t_auto"), "rule": _summary(rows, "t_rule"),
            "model": _summary(rows, "t_model"),
            "engine_default": _regret_summary(
                [r["t_engine"] / r["t_best"] for r in with_engine] or [math.nan]),
            "auto_vs_rule": {"geomean": _geomean(vs_rule), "p90": _quantile(vs_rule, 0.90)},
            "speedup_over_rule": {"geomean": _geomean(up_rule), "max": float(max(up_rule))},
            "speedup_over_engine_default": {"geomean": _geomean(up_engine),
                                            "max": float(max(up_engine))},
            "trials": sum(r["auto_reason"] == TRIAL for r in rows)}


def fold(measurements: Sequence[Measurement], fingerprints: dict[str, dict[str, Any]],
         held: str, *, params: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Machine ``held`` left out: the rule searched and the models trained on the other
    machines (``params``, default :data:`FOLD_PARAMS`), replayed on ``held``'s measurements with
    the model allowed in every region (``rows``); ``replay_in(regions)`` replays it with the
    model allowed only there."""
    train_rows = [m for m in measurements if m.hardware_id != held]
    hardware = hardware_of(fingerprints)
    rule, _ = search_rule(train_rows, {h: hw.cores for h, hw in hardware.items()})
    ensemble = Ensemble(train_models(train_rows, fingerprints,
                                     params=FOLD_PARAMS if params is None else params))

    def replay_in(regions: Sequence[str]) -> list[dict[str, Any]]:
        gated = rule.replace(model_regions=tuple(regions))
        advisor = Advisor(ensemble, hardware[held], source="fold", model_id=f"fold-{held}",
                          rule=gated)
        return replay(advisor, measurements, hardware[held], gated)

    return {"held_out": held, "rule": rule.describe(), "rows": replay_in(ALL_REGIONS),
            "replay_in": replay_in}


def model_regions(folds: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """The regions where, over every held-out machine's workloads, auto with the model (trials
    included) had a geomean regret at least :data:`MODEL_REGION_MARGIN` below the rule's."""
    by_region: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for f in folds:
        for r in f["rows"]:
            by_region[r["region"]].append((r["t_auto"] / r["t_best"], r["t_rule"] / r["t_best"]))
    bound = math.log1p(-MODEL_REGION_MARGIN)
    return tuple(sorted(k for k, v in by_region.items()
                        if np.log([a / b for a, b in v]).mean() <= bound))


def leave_one_machine_out(measurements: Sequence[Measurement],
                          fingerprints: dict[str, dict[str, Any]], *,
                          params: dict[str, dict[str, Any]] | None = None,
                          simulated: dict[str, str] | None = None) -> dict[str, Any]:
    """Each machine of the store held out in turn (:func:`fold`); the regions where the model
    beat the rule (:func:`model_regions`); then each fold replayed again with the model used
    only there — what the shipped advisor does."""
    machines = sorted({m.hardware_id for m in measurements})
    if len(machines) < 2:
        raise ValueError(f"leave-one-machine-out needs 2+ machines; the store has "
                         f"{len(machines)}")
    folds = [fold(measurements, fingerprints, h, params=params) for h in machines]
    regions = model_regions(folds)

    def public(f: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
        return {"held_out": f["held_out"], "rule": f["rule"], "summary": replay_summary(rows)}

    return {"machines": machines, "simulated": dict(simulated or {}),
            "model_regions": list(regions),
            "folds": [public(f, f["replay_in"](regions)) for f in folds],
            "folds_model_everywhere": [public(f, f["rows"]) for f in folds]}


def lomo_markdown(report: dict[str, Any]) -> str:
    """The leave-one-machine-out report as Markdown (a section of VALIDATION.md)."""

    def reg(r: dict[str, float]) -> str:
        return f"{r['geomean']:.3f} / {r['p95']:.3f} / {r['max']:.2f}"

    lines = ["## Leave one machine out", "",
             "Each machine held out in turn: the rule searched and the models trained on the "
             "other machines, auto replayed on the held-out machine's measurements "
             f"(trials charged on {REPLAY_STREAM_BATCHES}-batch streams). Regret = the "
             "choice's measured time / the best measured plan's; geomean / p95 / max.", "",
             f"The model is used in regions {', '.join(report['model_regions']) or '(none)'} "
             "(where, over all held-out machines, it beat the rule by at least "
             f"{MODEL_REGION_MARGIN:.0%}); elsewhere the rule, with "
             "trials of the model's candidates.", "",
             "| held out | workloads | auto | rule | model alone | engine default | auto/rule "
             "geomean, p90 | speed-up over rule (geomean, max) | over engine default | trials |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for f in report["folds"]:
        s = f["summary"]
        if not s["workloads"]:
            continue
        label = f["held_out"] + (" (simulated)" if f["held_out"] in report["simulated"] else "")
        lines.append(
            f"| {label} | {s['workloads']} | {reg(s['auto'])} | {reg(s['rule'])} | "
            f"{reg(s['model'])} | {reg(s['engine_default'])} | "
            f"{s['auto_vs_rule']['geomean']:.3f}, {s['auto_vs_rule']['p90']:.3f} | "
            f"{s['speedup_over_rule']['geomean']:.3f}x, {s['speedup_over_rule']['max']:.2f}x | "
            f"{s['speedup_over_engine_default']['geomean']:.3f}x, "
            f"{s['speedup_over_engine_default']['max']:.2f}x | {s['trials']} |")
    lines += ["", "Rules searched per fold: " + "; ".join(
        f"without {f['held_out']}: {f['rule']}" for f in report["folds"]), ""]
    for h, how in report["simulated"].items():
        lines.append(f"- {h}: {how}")
    return "\n".join(lines) + "\n"
