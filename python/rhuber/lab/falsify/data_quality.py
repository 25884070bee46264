"""The checklist's F041–F060, training data quality: the measurement store (size, runs, CVs,
duplicates, balance, diversity, timestamps, fingerprints), the experiments archive, the time
split and the schema versions."""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

from ...engines.plans import Plan
from ...engines.workload import Workload
from ...tuner import labels, model_files
from ...tuner.features import SCHEMA_VERSION
from ...tuner.hardware import Hardware
from ...tuner.labels import best_plans
from ...tuner.quality import Quality, coefficient_of_variation, reject_outliers
from ...tuner.store import SCHEMA_VERSION as STORE_VERSION
from ...tuner.store import Store
from .context import EXPERIMENTS, Context, corpus_workloads
from .registry import Outcome, check, compare, count, holds, not_applicable, pct


@check("F041", "At least 1000 good measurements")
def f041(ctx: Context) -> Outcome:
    return count(len(ctx.good), ">=", 1000, "measurements")


@check("F042", "At least 3 timed runs kept per good measurement")
def f042(ctx: Context) -> Outcome:
    kept = [len(m.runs_s) - m.rejected_runs for m in ctx.good]
    return count(min(kept, default=0), ">=", 3, "runs (fewest)")


@check("F043", "CV < 15 % per good measurement, recomputed from its stored runs")
def f043(ctx: Context) -> Outcome:
    quality = Quality()
    worst, mismatched = 0.0, 0
    for m in ctx.good:
        kept, _ = reject_outliers(m.runs_s, quality.outlier_sigma)
        cv = coefficient_of_variation(kept)
        worst = max(worst, cv)
        mismatched += m.cv is None or not math.isclose(cv, m.cv, rel_tol=1e-9, abs_tol=1e-12)
    return compare(worst, "<", quality.max_cv, "{:.2%}",
                   f"largest; {mismatched} stored CVs differ from their runs'")


@check("F044", "No duplicate configuration (canonical workload and plan ids)")
def f044(ctx: Context) -> Outcome:
    seen: Counter[tuple[str, str, str]] = Counter()
    for m in ctx.measurements:
        cores = ctx.hardware[m.hardware_id].cores if m.hardware_id in ctx.hardware else None
        seen[(m.hardware_id, Workload.from_id(m.workload_id).id,
              Plan.from_id(m.plan_id).resolved(cores).id)] += 1
    duplicates = sum(n - 1 for n in seen.values())
    return count(duplicates, "==", 0, "duplicates",
                 "a plan stored once with engine defaults ('*') and once written out is a "
                 "duplicate")


@check("F045", "Balanced plan classes: the rarest best plan ≥ 5 % of workloads")
def f045(ctx: Context) -> Outcome:
    wins = Counter(b.plan_id for b in best_plans(ctx.good).values())
    total = sum(wins.values())
    rarest = min(wins, key=lambda p: (wins[p], p))
    return pct(wins[rarest] / total, ">=", 0.05,
               f"{len(wins)} best-plan classes over {total} workloads; rarest {rarest}")


@check("F046", "Balanced bottleneck classes: each ≥ 10 % of labelled measurements")
def f046(ctx: Context) -> Outcome:
    counts = Counter(ctx.bottleneck_labels)
    rarest = min(counts, key=counts.__getitem__)
    share = counts[rarest] / len(ctx.bottleneck_labels)
    return pct(share, ">=", 0.10, f"rarest {rarest}; "
               + ", ".join(f"{c} {n}" for c, n in counts.most_common()))


@check("F047", "Hardware diversity: at least 3 machines")
def f047(ctx: Context) -> Outcome:
    machines = {m.hardware_id for m in ctx.good}
    return count(len(machines), ">=", 3, "machines", ", ".join(sorted(machines)))


def _span(values: Iterable[int]) -> tuple[int, int]:
    values = list(values)
    return min(values), max(values)


@check("F048", "Model-size diversity (features p): a span of at least 64× (the seed's "
               "0.5B–32B)")
def f048(ctx: Context) -> Outcome:
    lo, hi = _span(w.features for w in corpus_workloads(ctx))
    return compare(hi / lo, ">=", 64, "{:.0f}×", f"features {lo} … {hi}")


@check("F049", "Batch-size diversity (rows per batch): a span of at least 64× (the seed's 1–64)")
def f049(ctx: Context) -> Outcome:
    lo, hi = _span(w.rows for w in corpus_workloads(ctx))
    return compare(hi / lo, ">=", 64, "{:.0f}×", f"rows {lo} … {hi}")


not_applicable(
    "F050", "Sequence-length diversity 1–32K",
    "no sequence axis: a renewable update's cost does not depend on how many batches came before "
    "(the estimator keeps a d × d summary), so a workload is one batch; rows per batch is F049")


@check("F051", "Steady state: the first timed run is within 5 % of the median (geomean)")
def f051(ctx: Context) -> Outcome:
    ratios = np.array([m.runs_s[0] / m.median_s for m in ctx.good if m.runs_s])
    return compare(float(np.exp(np.log(ratios).mean())), "<=", 1.05, "{:.4f}",
                   f"after the warm-up run; p95 {np.quantile(ratios, 0.95):.3f}")


@check("F052", "Background load: ≤ 5 % of measurements unstable (CV ≥ 15 % after re-measuring)")
def f052(ctx: Context) -> Outcome:
    status = Counter(m.status for m in ctx.measurements)
    remeasured = sum(m.remeasured > 0 for m in ctx.measurements)
    return pct(status.get("unstable", 0) / len(ctx.measurements), "<=", 0.05,
               f"{remeasured} measurements needed re-measured rounds; isolation itself is not "
               "recorded (the corpus's data card says other work ran at times)")


@check("F053", "Timestamp recorded: every measurement has an ISO 8601 measured_at")
def f053(ctx: Context) -> Outcome:
    bad = 0
    for m in ctx.measurements:
        try:
            stamp = _dt.datetime.fromisoformat(m.measured_at)
            bad += stamp.tzinfo is None
        except (TypeError, ValueError):
            bad += 1
    return count(bad, "==", 0, "missing or malformed", "with a time zone")


@check("F054", "Hardware id recorded: every measurement names a stored fingerprint of that id")
def f054(ctx: Context) -> Outcome:
    wrong = {h for h, f in ctx.fingerprints.items() if Hardware.from_dict(f).hardware_id != h}
    bad = sum(m.hardware_id not in ctx.fingerprints or m.hardware_id in wrong
              for m in ctx.measurements)
    return count(bad, "==", 0, "measurements", "the id is recomputed from the fingerprint")


def _experiments() -> list[dict[str, Any]]:
    if not EXPERIMENTS.exists():
        raise FileNotFoundError(f"{EXPERIMENTS} (the experiments archive of a source checkout)")
    with open(EXPERIMENTS) as f:
        return [json.loads(line) for line in f if line.strip()]


@check("F055", "Five-Whys annotations: ≥ 50 experiments with a root cause")
def f055(ctx: Context) -> Outcome:
    records = _experiments()
    annotated = sum(str(r.get("root_cause", "")).strip().lower() not in ("", "n/a", "none")
                    for r in records)
    return count(annotated, ">=", 50, "records", f"docs/perf/experiments.jsonl, {len(records)} "
                 "records")


@check("F056", "Success/failure balanced: 30–70 % of the experiments kept")
def f056(ctx: Context) -> Outcome:
    outcomes = [str(r.get("outcome", "")).lower() for r in _experiments()]
    kept = sum(o.startswith(("kept", "confirmed")) for o in outcomes)
    dropped = sum(o.startswith(("not adopted", "refuted", "hypothesis refuted", "targets not"))
                  for o in outcomes)
    share = kept / max(1, kept + dropped)
    return Outcome(0.30 <= share <= 0.70, f"{share:.1%}", "in [30 %, 70 %]",
                   f"{kept} kept, {dropped} not kept, {len(outcomes) - kept - dropped} other",
                   share)


@check("F057", "Root causes diverse: ≥ 5 bottleneck classes among the labels")
def f057(ctx: Context) -> Outcome:
    found = sorted(set(ctx.bottleneck_labels))
    return count(len(found), ">=", 5, "classes",
                 f"{', '.join(found)} of {', '.join(labels.BOTTLENECKS)}")


@check("F058", "Train/test split by time: no training measurement after the first held-out one")
def f058(ctx: Context) -> Outcome:
    train, held = ctx.split
    late = 0
    for hw in {m.hardware_id for m in held}:
        first_held = min(m.measured_at for m in held if m.hardware_id == hw)
        late += sum(m.measured_at > first_held for m in train if m.hardware_id == hw)
    return count(late, "==", 0, "training measurements", "validate.split, per machine")


@check("F059", "No leakage: the shipped models were trained on exactly the training part")
def f059(ctx: Context) -> Outcome:
    expected = {"throughput": len(ctx.train_set.log_rate), "plan": len(ctx.train_set.best),
                "bottleneck": len(ctx.train_set.bottleneck)}
    stated = {name: int(ctx.models[name].metadata["samples"]) for name in expected}
    held = {(m.hardware_id, m.workload_id) for m in ctx.split[1]}
    overlap = held & {(m.hardware_id, m.workload_id) for m in ctx.split[0]}
    differ = [f"{n} {stated[n]} vs {expected[n]}" for n in expected if stated[n] != expected[n]]
    return holds(not differ and not overlap, "; ".join(differ) or "samples match",
                 "each model's samples = the training part's",
                 f"{len(overlap)} workloads in both parts")


@check("F060", "Schemas versioned: store, features and model files match this library")
def f060(ctx: Context) -> Outcome:
    with Store(ctx.store_path, read_only=True) as store:
        found = {"store": store.schema_version}
    for name, m in ctx.models.items():
        found[f"{name} features"] = int(m.metadata["feature_schema_version"])
        found[f"{name} format"] = int(m.metadata["format_version"])
    expected = {k: STORE_VERSION if k == "store" else SCHEMA_VERSION if k.endswith("features")
                else int(model_files.FORMAT_VERSION) for k in found}
    wrong = [f"{k} {found[k]} (expected {expected[k]})" for k in found if found[k] != expected[k]]
    return holds(not wrong, "; ".join(wrong) or "all match", "versions recorded and current")
