"""The seed's 100-point falsification checklist (F001–F100) as checks against this product
(``rhuber tune falsify``; docs/tuner.md, "Falsification scorecard").

The seed (shared/seeds/ml-tuner-compute-bricks.txt §9) was written for an LLM-inference tuner;
shared/spec/bricks-and-tuner.md maps it here: tokens/s are rows/s, kernels are plans, model size
is the number of features, quantization is the dtype, the GPU is the machine. Each item is either

- a check: a small function of a :class:`Context` (the measurement store, the model files, the
  feature extractor, the plans, the native reader, the advisor) that computes a figure and
  compares it with a threshold, returning an :class:`Outcome`; or
- not applicable, with the reason (GGUF, attention, WASM: things with no counterpart here).

No check is a constant: each reads something that a broken store, model or extractor changes.
A check that raises fails, with the exception as its reason.

Checks that need retraining (cross-validation, ablations, bootstraps) fit a smaller gradient
boosting model, :data:`PROXY_GBT` (100 trees of depth 4, under a second on the corpus; on the
held-out workloads it scores as the shipped 600 × 6 model does, R² 0.987 against 0.984), so that
the whole scorecard runs in well under a minute on two cores. The shipped models themselves are
judged wherever no retraining is needed.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime as _dt
import io
import json
import math
import os
import re
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from . import labels, model_files, models, validate
from .features import BRICKS, SCHEMA_VERSION, SIMD_ORDINAL, FeatureExtractor
from .hardware import Hardware
from .labels import best_plans, measurement_bottleneck, throughput
from .plans import Plan, plans_for
from .store import Measurement, Store
from .workload import Workload

#: The shipped measurement corpus (the default store of ``rhuber tune falsify``).
CORPUS = Path(__file__).resolve().parent / "data" / "corpus.sqlite"
#: The performance-experiment archive, the seed's Five-Whys (present in a source checkout).
EXPERIMENTS = Path(__file__).resolve().parents[3] / "docs" / "perf" / "experiments.jsonl"

CATEGORIES = ("model accuracy", "feature engineering", "training data quality",
              "integration correctness", "generalization and robustness")
#: The retraining stand-in (see the module docstring).
PROXY_GBT = {"n_estimators": 100, "max_depth": 4, "learning_rate": 0.1, "subsample": 0.8,
             "min_samples_leaf": 3}
SEED = models.SEED

PASS, FAIL, NA = "pass", "fail", "na"


@dataclass(frozen=True)
class Outcome:
    """What a check measured, against what, and whether it passed."""

    passed: bool
    measured: str
    threshold: str
    reason: str = ""
    value: float | None = None


@dataclass(frozen=True)
class Item:
    """One entry of the checklist: a check function, or the reason it does not apply."""

    id: str
    title: str
    run: Callable[[Context], Outcome] | None = None
    not_applicable: str | None = None

    @property
    def category(self) -> str:
        return CATEGORIES[(int(self.id[1:]) - 1) // 20]


@dataclass(frozen=True)
class Result:
    id: str
    category: str
    title: str
    status: str  # PASS, FAIL or NA
    measured: str | None
    threshold: str | None
    reason: str
    value: float | None = None
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


REGISTRY: dict[str, Item] = {}


def check(item_id: str, title: str) -> Callable[[Callable[[Context], Outcome]],
                                                Callable[[Context], Outcome]]:
    def register(fn: Callable[[Context], Outcome]) -> Callable[[Context], Outcome]:
        _register(Item(item_id, title, run=fn))
        return fn
    return register


def not_applicable(item_id: str, title: str, reason: str) -> None:
    _register(Item(item_id, title, not_applicable=reason))


def _register(item: Item) -> None:
    if item.id in REGISTRY:
        raise ValueError(f"{item.id} registered twice")
    REGISTRY[item.id] = item


# ---------------------------------------------------------------------------- comparisons

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b}


def compare(value: float, op: str, bound: float, fmt: str = "{:.4g}", reason: str = ""
            ) -> Outcome:
    """``value op bound`` as an Outcome; a NaN value fails."""
    value = float(value)
    passed = not math.isnan(value) and _OPS[op](value, bound)
    return Outcome(passed, fmt.format(value), f"{op} {fmt.format(bound)}", reason, value)


def pct(value: float, op: str, bound: float, reason: str = "") -> Outcome:
    return compare(value, op, bound, "{:.1%}", reason)


def count(value: int, op: str, bound: int, what: str, reason: str = "") -> Outcome:
    return compare(value, op, bound, "{:.0f} " + what, reason)


def holds(ok: bool, measured: str, expected: str, reason: str = "") -> Outcome:
    """A yes/no property; ``measured`` says what was found."""
    return Outcome(bool(ok), measured, expected, reason, float(bool(ok)))


def r2(y: np.ndarray, predicted: np.ndarray) -> float:
    return float(1 - np.sum((y - predicted) ** 2) / np.sum((y - y.mean()) ** 2))


def mape(log_y: np.ndarray, log_predicted: np.ndarray) -> float:
    """Mean absolute percentage error of rows/s, from logs."""
    return float(np.mean(np.abs(np.expm1(log_predicted - log_y))))


def fit_proxy(X: np.ndarray, y: np.ndarray, seed: int = SEED) -> Any:
    from sklearn.ensemble import GradientBoostingRegressor

    return GradientBoostingRegressor(random_state=seed, **PROXY_GBT).fit(X, y)


def masked(X: np.ndarray, columns: Iterable[int]) -> np.ndarray:
    """``X`` with ``columns`` set to 0: a tree never splits on a constant column, so this is
    the model without those features."""
    out = X.copy()
    out[:, list(columns)] = 0.0
    return out


def rss_bytes() -> int:
    """This process's resident memory (Linux /proc; the peak elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


# ---------------------------------------------------------------------------- the context


class Context:
    """Everything the checks read, computed once and only when a check asks for it."""

    def __init__(self, store: str | Path = CORPUS, models_dir: str | Path | None = None) -> None:
        self.store_path = Path(store)
        self.models_dir = Path(models_dir) if models_dir else models.default_models_dir()
        self.extractor = FeatureExtractor()

    # -- the store
    @cached_property
    def _read(self) -> tuple[list[Measurement], dict[str, dict[str, Any]]]:
        if not self.store_path.exists():
            raise ValueError(f"{self.store_path}: no such store")
        with Store(self.store_path, read_only=True) as store:
            return list(store.measurements()), store.hardware()

    @property
    def measurements(self) -> list[Measurement]:
        return self._read[0]

    @property
    def fingerprints(self) -> dict[str, dict[str, Any]]:
        return self._read[1]

    @cached_property
    def good(self) -> list[Measurement]:
        return [m for m in self.measurements if throughput(m)]

    @cached_property
    def hardware(self) -> dict[str, Hardware]:
        return models.hardware_of(self.fingerprints)

    @cached_property
    def machine(self) -> Hardware:
        """The store's most-measured machine: the one the advisor checks run as."""
        top = Counter(m.hardware_id for m in self.measurements).most_common(1)
        if not top:
            raise ValueError(f"{self.store_path} holds no measurement")
        return self.hardware[top[0][0]]

    @cached_property
    def split(self) -> tuple[list[Measurement], list[Measurement]]:
        return validate.split(self.measurements)

    @cached_property
    def train_set(self) -> models.TrainingSet:
        return models.training_set(self.split[0], self.hardware)

    @cached_property
    def held_set(self) -> models.TrainingSet:
        return models.training_set(self.split[1], self.hardware)

    @cached_property
    def held_good(self) -> list[Measurement]:
        return [m for m in self.split[1] if throughput(m)]

    @cached_property
    def bottleneck_labels(self) -> list[str]:
        out = []
        for m in self.good:
            hw = self.hardware[m.hardware_id]
            label = measurement_bottleneck(m, peak_gflops=hw.peak_flops_float64 / 1e9,
                                           bandwidth_gbs=hw.memory_bandwidth_bytes_per_s / 1e9)
            if label is not None:
                out.append(label)
        return out

    # -- the models
    @cached_property
    def models(self) -> dict[str, model_files.ModelFile]:
        return models.load(self.models_dir)

    @cached_property
    def ensemble(self) -> models.Ensemble:
        return models.Ensemble(self.models)

    @cached_property
    def report(self) -> dict[str, Any]:
        """``validate.evaluate`` of the models on the store's held-out workloads."""
        return validate.evaluate(self.models, self.split[1], self.fingerprints)

    @cached_property
    def held_predictions(self) -> tuple[np.ndarray, np.ndarray]:
        """The shipped throughput model's log(rows/s) and tree spread on the held-out rows."""
        return self.ensemble.throughput(self.held_set.X)

    def predict_log(self, pairs: Sequence[tuple[Workload, Plan]], hw: Hardware) -> np.ndarray:
        X = np.stack([self.extractor.extract(w, p, hw) for w, p in pairs])
        return self.ensemble.throughput(X)[0]

    @cached_property
    def advisor(self) -> Any:
        from .advisor import Advisor

        return Advisor.load(hardware=self.machine, models_dir=self.models_dir)

    @cached_property
    def held_advice(self) -> list[Any]:
        """The advisor's advice for every held-out workload, in workload-id order."""
        return [self.advisor.advise(w) for w in held_workloads(self)]

    @property
    def chosen_advice(self) -> Any:
        """The first held-out workload's advice that leaves the default (None if none does)."""
        return next((a for a in self.held_advice if a.chosen), None)

    def advisor_for(self, hardware: Hardware) -> Any:
        from .advisor import Advisor

        return Advisor.load(hardware=hardware, models_dir=self.models_dir)

    @cached_property
    def permutation_importance(self) -> dict[str, float]:
        """Increase of the shipped throughput model's squared error on the held-out rows when
        one feature's column is shuffled (seeded), by feature name."""
        X, y = self.held_set.X, self.held_set.log_rate
        model = self.models["throughput"]
        base = float(np.mean((model.raw(X)[:, 0] - y) ** 2))
        rng = np.random.default_rng(SEED)
        out = {}
        for j, name in enumerate(self.extractor.names):
            if np.ptp(X[:, j]) == 0:
                out[name] = 0.0
                continue
            shuffled = X.copy()
            shuffled[:, j] = rng.permutation(shuffled[:, j])
            out[name] = float(np.mean((model.raw(shuffled)[:, 0] - y) ** 2)) - base
        return out

    @cached_property
    def feature_matrix(self) -> np.ndarray:
        """Features of every good stored measurement and of edge workloads (sizes 1 … 10⁷,
        both dtypes, penalty, intercept, host and device) × every plan here."""
        edges = [Workload(rows=n, features=p, dtype=d, penalized=pen, intercept=i, location=loc)
                 for n in (1, 256, 10**7) for p in (1, 512, 10**4)
                 for d in ("float32", "float64") for pen in (False, True)
                 for i in (False, True) for loc in ("host", "device")]
        plans = {p for w in edges[:8] for p in plans_for(w, self.machine)} | {
            Plan("numpy"), Plan("cuda"), Plan("native_cpu"), Plan("native_cpu", gram="full")}
        edge_rows = np.stack([self.extractor.extract(w, p, self.machine)
                              for w in edges for p in sorted(plans, key=lambda p: p.id)])
        return np.vstack([self.train_set.X, self.held_set.X, edge_rows])

    def ranking(self) -> list[str]:
        imp = self.permutation_importance
        return sorted(imp, key=lambda n: (-imp[n], n))

    # -- retraining (the proxy)
    @cached_property
    def proxy(self) -> Any:
        return fit_proxy(self.train_set.X, self.train_set.log_rate)

    def proxy_held(self, model: Any, drop: Iterable[int] = ()) -> np.ndarray:
        return model.predict(masked(self.held_set.X, drop))

    def proxy_r2(self, drop: Iterable[str] = ()) -> float:
        """Held-out R² of log(rows/s) of the proxy trained without the features ``drop``."""
        columns = [self.extractor.names.index(n) for n in drop]
        model = self.proxy if not columns else fit_proxy(masked(self.train_set.X, columns),
                                                         self.train_set.log_rate)
        return r2(self.held_set.log_rate, self.proxy_held(model, columns))

    @cached_property
    def cv_r2(self) -> list[float]:
        """5-fold cross-validation of the proxy on the training part, grouped by workload."""
        from sklearn.model_selection import GroupKFold

        X, y = self.train_set.X, self.train_set.log_rate
        groups = [k[1] for k in self.train_set.keys]
        scores = []
        for fit_rows, test_rows in GroupKFold(n_splits=5).split(X, y, groups):
            model = fit_proxy(X[fit_rows], y[fit_rows])
            scores.append(r2(y[test_rows], model.predict(X[test_rows])))
        return scores

    @cached_property
    def small_training(self) -> list[Measurement]:
        """12 workloads of the training part, spread over the ids: a sparse store."""
        workloads = sorted({m.workload_id for m in self.split[0]})
        chosen = set(workloads[:: max(1, len(workloads) // 12)][:12])
        return [m for m in self.split[0] if m.workload_id in chosen]

    @cached_property
    def small_models(self) -> dict[str, model_files.ModelFile]:
        return models.train(self.small_training, self.fingerprints, seed=SEED)

    @cached_property
    def profile_run(self) -> tuple[Workload, Any]:
        """A profiled two-batch stream through the estimator (``profile=True``)."""
        from ..estimator import RenewableHuberRegressor
        from .collect import workload_batches

        w = Workload(rows=4096, features=16)
        est = RenewableHuberRegressor(backend="native_cpu", profile=True)
        for X, y in workload_batches(w, 2):
            est.partial_fit(X, y)
        return w, est.profile_


def near_best_accuracy(ctx: Context, predicted: np.ndarray) -> float:
    """How often the plan a prediction of the held-out rows ranks first is within 3 % of the
    best measured plan of its workload."""
    top: dict[tuple[str, str], tuple[float, str]] = {}
    for (hw, w, plan), p in zip(ctx.held_set.keys, predicted, strict=True):
        if (hw, w) not in top or (p, plan) > top[(hw, w)]:
            top[(hw, w)] = (float(p), plan)
    best = best_plans(ctx.held_good)
    return float(np.mean([plan in best[key].near_best for key, (_, plan) in top.items()]))


def corpus_workloads(ctx: Context) -> list[Workload]:
    return sorted({Workload.from_id(m.workload_id) for m in ctx.measurements},
                  key=lambda w: w.id)


def held_workloads(ctx: Context, limit: int | None = None) -> list[Workload]:
    ids = sorted({m.workload_id for m in ctx.held_good})
    return [Workload.from_id(w) for w in ids[:limit]]


# ============================================================ F001–F020: model accuracy


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
    w, plan = Workload(rows=4096, features=32), Plan("native_cpu").resolved(ctx.machine.cores)
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
    predicted = ctx.held_predictions[0]
    ranked: dict[tuple[str, str], tuple[float, str]] = {}
    measured: dict[tuple[str, str], set[str]] = defaultdict(set)
    for (hw, w, plan), p in zip(ctx.held_set.keys, predicted, strict=True):
        measured[(hw, w)].add(plan)
        if (hw, w) not in ranked or (p, plan) > ranked[(hw, w)]:
            ranked[(hw, w)] = (float(p), plan)
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


def _default_series(ctx: Context) -> dict[tuple[Any, ...], list[Workload]]:
    series: dict[tuple[Any, ...], list[Workload]] = defaultdict(list)
    for w in corpus_workloads(ctx):
        series[(w.features, w.dtype, w.penalized, w.intercept, w.location)].append(w)
    return series


@check("F015", "Monotonic with batch size: predicted rows/s falls by > 5 % on ≤ 10 % of the "
               "steps rows → next rows")
def f015(ctx: Context) -> Outcome:
    plan = Plan("native_cpu").resolved(ctx.machine.cores)
    drops = steps = 0
    for series in _default_series(ctx).values():
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
    plan = Plan("native_cpu").resolved(h.cores)
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

    plan = Plan("native_cpu").resolved(ctx.machine.cores)
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


# ======================================================= F021–F040: feature engineering


@check("F021", "No NaN feature (every stored measurement and edge workloads × plans)")
def f021(ctx: Context) -> Outcome:
    X = ctx.feature_matrix
    return count(int(np.isnan(X).sum()), "==", 0, "NaN", f"{X.shape[0]} vectors")


@check("F022", "No infinite feature")
def f022(ctx: Context) -> Outcome:
    X = ctx.feature_matrix
    return count(int(np.isinf(X).sum()), "==", 0, "infinite", f"{X.shape[0]} vectors")


@check("F023", "All features in [0, 1]")
def f023(ctx: Context) -> Outcome:
    X = ctx.feature_matrix
    outside = int(np.sum((X < 0) | (X > 1)))
    return count(outside, "==", 0, "values outside", f"range seen [{X.min():.3g}, {X.max():.3g}]")


@check("F024", "Feature importances sum to 1 ± 1e-6 (gradient boosting, retrained)")
def f024(ctx: Context) -> Outcome:
    total = float(np.sum(ctx.proxy.feature_importances_))
    return compare(abs(total - 1.0), "<=", 1e-6, "{:.2e}",
                   f"|Σ − 1|, Σ = {total:.9f}; 0 when no tree splits (a model that learned "
                   "nothing)")


def _top_features(model: Any, k: int = 5) -> set[int]:
    return set(np.argsort(-model.feature_importances_, kind="stable")[:k].tolist())


@check("F025", "Top-5 features stable: > 80 % overlap over 3 bootstrap resamples")
def f025(ctx: Context) -> Outcome:
    X, y = ctx.train_set.X, ctx.train_set.log_rate
    workloads = np.array([k[1] for k in ctx.train_set.keys])
    unique = np.unique(workloads)
    rng = np.random.default_rng(SEED)
    reference = _top_features(ctx.proxy)
    overlaps = []
    for b in range(3):
        drawn = rng.choice(unique, size=unique.size, replace=True)
        rows = np.concatenate([np.flatnonzero(workloads == w) for w in drawn])
        overlaps.append(len(_top_features(fit_proxy(X[rows], y[rows], seed=SEED + b + 1))
                            & reference) / 5)
    return pct(float(np.mean(overlaps)), ">", 0.80, "workloads resampled with replacement; "
               f"reference top-5: {', '.join(ctx.extractor.names[i] for i in sorted(reference))}")


@check("F026", "Roofline bound below measured time for every good measurement")
def f026(ctx: Context) -> Outcome:
    from .probes import roofline_bound

    worst, violations = 0.0, 0
    for m in ctx.good:
        hw, w = ctx.hardware[m.hardware_id], Workload.from_id(m.workload_id)
        limits = {"memory_bandwidth_bytes_per_s": hw.memory_bandwidth_bytes_per_s,
                  "peak_flops_per_s": {"float64": hw.peak_flops_float64,
                                       "float32": hw.peak_flops_float32}}
        bound = roofline_bound(w.rows, w.features, w.rows, np.dtype(w.dtype), limits,
                               fit_intercept=w.intercept)["bound_s"]
        per_batch = m.median_s * w.rows / m.rows_per_run
        worst = max(worst, bound / per_batch)
        violations += bound > per_batch
    return count(violations, "==", 0, "violations",
                 f"{len(ctx.good)} measurements; closest: the bound is {worst:.1%} of the "
                 "measured batch time")


@check("F027", "Arithmetic intensity positive, and its feature never falling as features grow")
def f027(ctx: Context) -> Outcome:
    i = ctx.extractor.names.index("arithmetic_intensity")
    plan = Plan("numpy")
    falls = 0
    for ws in _default_series(ctx).values():
        by_p = sorted({w.features: w for w in ws}.values(), key=lambda w: w.features)
        values = [ctx.extractor.extract(w, plan, ctx.machine)[i] for w in by_p]
        falls += int(np.sum(np.diff(values) < 0))
    raw = [labels.arithmetic_intensity(w) for w in corpus_workloads(ctx)]
    bad = falls + sum(not v > 0 for v in raw)
    return count(bad, "==", 0, "violations",
                 f"{falls} falls along p; smallest intensity {min(raw):.3g} flop/B (the "
                 "feature is 0 at the grid's lowest edge by its normalization)")


@check("F028", "Hardware features populated for every stored machine (GPU ones: 0 without)")
def f028(ctx: Context) -> Outcome:
    names = ("cores_log", "simd_level", "l2_log", "l3_log", "bandwidth_log", "peak_flops_log")
    gpu = ("gpu_present", "gpu_sms_log", "gpu_bandwidth_log", "gpu_l2_log")
    missing = []
    for hid, hw in ctx.hardware.items():
        v = ctx.extractor.extract_dict(Workload(rows=4096, features=32), Plan("numpy"), hw)
        missing += [f"{hid}:{n}" for n in names if not v[n] > 0]
        missing += [f"{hid}:{n}" for n in gpu if (v[n] > 0) != hw.has_gpu]
    return count(len(missing), "==", 0, "missing", ", ".join(missing[:5]))


@check("F029", "Plan one-hot groups (backend, gram, l1) sum to 1 for every plan")
def f029(ctx: Context) -> Outcome:
    groups = {g: [i for i, n in enumerate(ctx.extractor.names) if n.startswith(g)]
              for g in ("backend_", "gram_", "l1_")}
    plans = {p for w in (Workload(4096, 32), Workload(4096, 32, penalized=True))
             for p in plans_for(w, ctx.machine)}
    plans |= {Plan("numpy"), Plan("cuda"), Plan("native_cpu"), Plan("native_cpu", gram="full"),
              Plan("native_cpu", l1_solver="prox_newton")}
    bad = 0
    for p in plans:
        x = ctx.extractor.extract(Workload(4096, 32), p, ctx.machine)
        bad += sum(x[idx].sum() != 1.0 for idx in groups.values())
    return count(bad, "==", 0, "groups not summing to 1", f"{len(plans)} plans")


#: Pairs correlated by construction on one machine (as tests/test_tuner_features.py lists them,
#: with the reasons there): they carry different information across machines.
CORRELATED_BY_DESIGN = {
    ("features_log", "arithmetic_intensity"), ("features_log", "roofline_memory_share"),
    ("arithmetic_intensity", "roofline_memory_share"), ("batch_bytes_log", "roofline_time_log"),
    ("dtype_float32", "peak_flops_log")}


@check("F030", "No two features correlated above 0.95 (but one-hot complements and the "
               "documented pairs)")
def f030(ctx: Context) -> Outcome:
    X = np.vstack([ctx.train_set.X, ctx.held_set.X])
    names = ctx.extractor.names
    varying = [i for i in range(len(names)) if np.ptp(X[:, i]) > 0]
    corr = np.corrcoef(X[:, varying].T)
    prefix = ("backend_", "gram_", "l1_")
    group = {n: next((g for g in prefix if n.startswith(g)), n) for n in names}
    offenders = []
    for a in range(len(varying)):
        for b in range(a + 1, len(varying)):
            pair = (names[varying[a]], names[varying[b]])
            if (abs(corr[a, b]) > 0.95 and group[pair[0]] != group[pair[1]]
                    and pair not in CORRELATED_BY_DESIGN):
                offenders.append(f"{pair[0]}~{pair[1]} {corr[a, b]:.3f}")
    return count(len(offenders), "==", 0, "pairs", "; ".join(offenders[:4]) or
                 "over every stored measurement's features")


@check("F031", "Log transform helps: log(rows/s) target beats a raw rows/s target (MAPE)")
def f031(ctx: Context) -> Outcome:
    log_mape = mape(ctx.held_set.log_rate, ctx.proxy_held(ctx.proxy))
    raw = fit_proxy(ctx.train_set.X, np.exp(ctx.train_set.log_rate))
    raw_mape = mape(ctx.held_set.log_rate, np.log(np.maximum(raw.predict(ctx.held_set.X),
                                                             1e-9)))
    return pct(log_mape, "<", raw_mape, "the sizes are log-scaled already and trees are "
               "invariant to monotone input transforms, so the transform that can matter is "
               "the target's")


@check("F032", "Interaction features help: ΔR² > 0.01 (batch bytes, solve share, chunks per "
               "batch)")
def f032(ctx: Context) -> Outcome:
    drop = ("batch_bytes_log", "solve_share", "chunks_per_batch_log")
    delta = ctx.proxy_r2() - ctx.proxy_r2(drop)
    return compare(delta, ">", 0.01, "{:.4f}", "held-out R² with all features minus without")


@check("F033", "Roofline features help: ΔR² > 0.02")
def f033(ctx: Context) -> Outcome:
    drop = ("roofline_time_log", "roofline_memory_share", "batch_fits_l2", "batch_fits_l3")
    delta = ctx.proxy_r2() - ctx.proxy_r2(drop)
    return compare(delta, ">", 0.02, "{:.4f}", "held-out R² with all features minus without")


HARDWARE_FEATURES = ("cores_log", "smt", "simd_level", "l2_log", "l3_log", "bandwidth_log",
                     "peak_flops_log", "gpu_present", "gpu_sms_log", "gpu_bandwidth_log",
                     "gpu_l2_log")


@check("F034", "Hardware features help: ΔR² > 0.05")
def f034(ctx: Context) -> Outcome:
    X = ctx.train_set.X
    columns = [ctx.extractor.names.index(n) for n in HARDWARE_FEATURES]
    if all(np.ptp(X[:, c]) == 0 for c in columns):
        return compare(0.0, ">", 0.05, "{:.4f}",
                       f"{len(ctx.fingerprints)} machine(s): every hardware feature is constant "
                       "in training, so dropping them changes nothing")
    varying = [n for n, c in zip(HARDWARE_FEATURES, columns, strict=True) if np.ptp(X[:, c]) > 0]
    delta = ctx.proxy_r2() - ctx.proxy_r2(HARDWARE_FEATURES)
    return compare(delta, ">", 0.05, "{:.4f}", "held-out R² with all features minus without; "
                   f"{len(ctx.fingerprints)} machine(s), varying in training: "
                   f"{', '.join(varying)}")


@check("F035", "Plan one-hots necessary: near-best plan accuracy drops > 5 points without them")
def f035(ctx: Context) -> Outcome:
    columns = [i for i, n in enumerate(ctx.extractor.names)
               if n.startswith(("backend_", "gram_", "l1_"))]
    without = fit_proxy(masked(ctx.train_set.X, columns), ctx.train_set.log_rate)
    full = near_best_accuracy(ctx, ctx.proxy_held(ctx.proxy))
    ablated = near_best_accuracy(ctx, ctx.proxy_held(without, columns))
    return compare((full - ablated) * 100, ">", 5.0, "{:.1f} points",
                   f"{full:.1%} with, {ablated:.1%} without (the plan ranked first is within 3 % "
                   "of the best measured)")


@check("F036", "Batch size (rows_log) among the 3 most important features")
def f036(ctx: Context) -> Outcome:
    rank = ctx.ranking().index("rows_log") + 1
    return count(rank, "<=", 3, "(rank)", "permutation importance of the shipped model on the "
                 f"held-out rows; top 3: {', '.join(ctx.ranking()[:3])}")


BANDWIDTH_FEATURES = ("bandwidth_log", "roofline_time_log", "roofline_memory_share")


@check("F037", "Memory bandwidth in the top 5 (a bandwidth feature or a roofline feature "
               "built on it)")
def f037(ctx: Context) -> Outcome:
    ranking = ctx.ranking()
    rank = min(ranking.index(n) for n in BANDWIDTH_FEATURES) + 1
    return count(rank, "<=", 5, "(rank)", f"best of {', '.join(BANDWIDTH_FEATURES)}; top 5: "
                 f"{', '.join(ranking[:5])}")


@check("F038", "Model size (the seed's parameters; here features p) in the top 5")
def f038(ctx: Context) -> Outcome:
    ranking = ctx.ranking()
    rank = min(ranking.index(n) for n in ("features_log", "arithmetic_intensity")) + 1
    return count(rank, "<=", 5, "(rank)", "best of features_log, arithmetic_intensity")


RAW_FEATURES = ("rows_log", "features_log", "dtype_float32", "penalized", "intercept",
                "input_on_device")


@check("F039", "Derived features beat raw ones: ΔR² > 0 over workload sizes + plan alone")
def f039(ctx: Context) -> Outcome:
    derived = [n for n in ctx.extractor.names
               if n not in RAW_FEATURES and not n.startswith(("backend_", "gram_", "l1_",
                                                              "threads_", "chunk_"))]
    delta = ctx.proxy_r2() - ctx.proxy_r2(derived)
    return compare(delta, ">", 0.0, "{:.4f}", "held-out R² with all features minus raw only")


@check("F040", "Feature dimension ≤ 50 (extractor and every model file)")
def f040(ctx: Context) -> Outcome:
    sizes = [len(ctx.extractor)] + [len(m.feature_names) for m in ctx.models.values()]
    return count(max(sizes), "<=", 50, "features")


# ===================================================== F041–F060: training data quality


@check("F041", "At least 1000 good measurements")
def f041(ctx: Context) -> Outcome:
    return count(len(ctx.good), ">=", 1000, "measurements")


@check("F042", "At least 3 timed runs kept per good measurement")
def f042(ctx: Context) -> Outcome:
    kept = [len(m.runs_s) - m.rejected_runs for m in ctx.good]
    return count(min(kept, default=0), ">=", 3, "runs (fewest)")


@check("F043", "CV < 15 % per good measurement, recomputed from its stored runs")
def f043(ctx: Context) -> Outcome:
    from .collect import Quality, coefficient_of_variation, reject_outliers

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
    from .store import SCHEMA_VERSION as STORE_VERSION

    with Store(ctx.store_path, read_only=True) as store:
        found = {"store": store.schema_version}
    for name, m in ctx.models.items():
        found[f"{name} features"] = int(m.metadata["feature_schema_version"])
        found[f"{name} format"] = int(m.metadata["format_version"])
    expected = {k: STORE_VERSION if k == "store" else SCHEMA_VERSION if k.endswith("features")
                else int(model_files.FORMAT_VERSION) for k in found}
    wrong = [f"{k} {found[k]} (expected {expected[k]})" for k in found if found[k] != expected[k]]
    return holds(not wrong, "; ".join(wrong) or "all match", "versions recorded and current")


# ================================================ F061–F080: integration correctness


@check("F061", "Brick profiler integration: a profiled stream's brick fractions feed the "
               "features and the bottleneck rules")
def f061(ctx: Context) -> Outcome:
    w, prof = ctx.profile_run
    rows = [r for r in prof.report() if r.calls > 0]
    total = sum(r.total_ns for r in rows)
    fractions = {r.brick: r.total_ns / total for r in rows if r.brick in BRICKS}
    x = ctx.extractor.extract_dict(w, Plan("native_cpu"), ctx.machine, fractions)
    label = labels.bottleneck(fractions, w, backend="native_cpu",
                              peak_gflops=ctx.machine.peak_flops_float64 / 1e9,
                              bandwidth_gbs=ctx.machine.memory_bandwidth_bytes_per_s / 1e9)
    return count(len(fractions), ">=", 5, "bricks",
                 f"profile_present {x['profile_present']:.0f}, bottleneck {label}")


@check("F062", "cbtop integration (here `rhuber top`): a frame shows the profile's bricks and "
               "a bottleneck hint")
def f062(ctx: Context) -> Outcome:
    from ..profiling import _top

    w, prof = ctx.profile_run
    peaks = _top.Peaks(ctx.machine.memory_bandwidth_bytes_per_s / 1e9,
                       ctx.machine.peak_flops_float64 / 1e9)
    report = prof.report()
    hint = _top.bottleneck_hint(report, peaks, prof.roofline(peaks.gb_per_s,
                                                             peaks.gflop_per_s))
    frame = _top.render(_top.TopState(source=w.id, backend="native_cpu"), report,
                        prof.breakdown(), hint, final=True)
    shown = [r.brick for r in report.rows if r.brick in frame]
    return holds(len(shown) == len(report.rows) and "bottleneck:" in frame,
                 f"{len(shown)}/{len(report.rows)} bricks shown, hint "
                 f"{'shown' if 'bottleneck:' in frame else 'missing'}",
                 "every brick and the hint", hint)


not_applicable("F063", "batuta oracle integration",
               "batuta is the seed's external orchestration oracle; this product has no such "
               "consumer (the estimator's backend='auto' is the tuner's one user, F066–F067)")


@check("F064", "The CLI (the seed's `pmat brick-tune`; here `rhuber tune recommend --json`) "
               "exits 0")
def f064(ctx: Context) -> Outcome:
    import contextlib

    from ..cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["tune", "recommend", "--rows", "4096", "--features", "32", "--json",
                     "--no-measure", "--models", str(ctx.models_dir)])
    try:
        json.loads(out.getvalue())
        parsed = "JSON parses"
    except json.JSONDecodeError:
        parsed = "output is not JSON"
    return holds(code == 0 and parsed == "JSON parses", f"exit {code}, {parsed}",
                 "exit 0 and JSON", err.getvalue().strip()[:120])


@check("F065", "Models load in < 100 ms (all three, native reader attached)")
def f065(ctx: Context) -> Outcome:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        models.load(ctx.models_dir)
        times.append(time.perf_counter() - start)
    return compare(float(np.median(times)) * 1e3, "<", 100.0, "{:.1f} ms", "median of 3")


RECOMMENDATION_KEYS = {"workload", "hardware_id", "cores", "model", "auto", "default", "plans",
                       "bottleneck", "experiments", "commands"}


@check("F066", "Recommendations JSON valid: round-trips with every documented key")
def f066(ctx: Context) -> Outcome:
    from .recommend import recommend

    problems = []
    for w in held_workloads(ctx, 3):
        doc = recommend(w, ctx.advisor).as_dict()
        back = json.loads(json.dumps(doc))
        if back != doc:
            problems.append(f"{w.id}: changes through JSON")
        if set(doc) != RECOMMENDATION_KEYS:
            problems.append(f"{w.id}: keys {sorted(set(doc) ^ RECOMMENDATION_KEYS)}")
    return holds(not problems, "; ".join(problems) or "3 of 3 valid", "valid")


@check("F067", "Recommendations actionable: the advised plan parses, is valid here and fits")
def f067(ctx: Context) -> Outcome:
    from ..estimator import RenewableHuberRegressor
    from .collect import workload_batches

    bad, fitted = [], 0
    for advice in ctx.held_advice:
        if Plan.from_id(advice.plan.id) != advice.plan or advice.plan not in plans_for(
                advice.workload, ctx.machine):
            bad.append(advice.plan.id)
    chosen = ctx.chosen_advice
    if chosen is not None:
        small = dataclasses.replace(chosen.workload, rows=min(chosen.workload.rows, 1024))
        X, y = workload_batches(small, 1)[0]
        est = RenewableHuberRegressor(plan=chosen.plan.id, fit_intercept=small.intercept)
        est.partial_fit(X, y)
        fitted = int(np.isfinite(est.coef_).all())
    return holds(not bad and fitted == 1, f"{len(bad)} unusable plans; a chosen plan "
                 f"{'fitted' if fitted else 'did not fit or none was chosen'}",
                 "every advised plan usable", ", ".join(bad[:3]))


@check("F068", "Vector compatibility: a feature vector (1-D float64) goes into the native reader "
               "as is")
def f068(ctx: Context) -> Outcome:
    x = ctx.extractor.extract(Workload(4096, 32), Plan("numpy"), ctx.machine)
    native = ctx.models["throughput"].native
    if native is None:
        return holds(False, "native module missing", "the C++ reader")
    out = np.asarray(native.predict(x))
    ok = (x.dtype == np.float64 and x.ndim == 1 and x.flags.c_contiguous
          and out.shape == (native.n_outputs,))
    return holds(ok, f"x {x.dtype}{list(x.shape)} → {list(out.shape)}", "[48] → [n_outputs]")


@check("F069", "Matrix compatibility: rows of features predict as each row alone")
def f069(ctx: Context) -> Outcome:
    X = ctx.held_set.X[:64]
    worst = 0.0
    for name, m in ctx.models.items():
        if m.native is None:
            return holds(False, "native module missing", "the C++ reader")
        together = np.asarray(m.native.predict(X))
        alone = np.stack([np.asarray(m.native.predict(x)) for x in X])
        if together.shape != (len(X), m.native.n_outputs):
            return holds(False, f"{name} shape {together.shape}", "[rows, n_outputs]")
        worst = max(worst, float(np.max(np.abs(together - alone))))
    return compare(worst, "==", 0.0, "{:.3g}", "largest difference, 64 rows × 3 models")


@check("F070", "SafeTensors round trip: write, read, same tensors, metadata and predictions")
def f070(ctx: Context) -> Outcome:
    X = ctx.held_set.X[:256]
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, m in ctx.models.items():
            back = model_files.read(model_files.write(m, Path(tmp) / f"{name}.safetensors"))
            same = (back.metadata == m.metadata and set(back.tensors) == set(m.tensors)
                    and all(np.array_equal(back.tensors[k], m.tensors[k]) for k in m.tensors))
            if not same:
                problems.append(f"{name}: content")
            if not np.array_equal(back.raw(X), m.raw(X)):
                problems.append(f"{name}: predictions")
    return holds(not problems, "; ".join(problems) or "3 of 3 identical", "identical")


def _random_pairs(ctx: Context, n: int, seed: int) -> list[tuple[Workload, Plan]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        w = Workload(rows=int(rng.integers(1, 10**6)), features=int(rng.integers(1, 2048)),
                     dtype=str(rng.choice(["float32", "float64"])), penalized=bool(
                         rng.integers(2)), intercept=bool(rng.integers(2)))
        plans = [*plans_for(w, ctx.machine), Plan("native_cpu"), Plan("cuda")]
        out.append((w, plans[int(rng.integers(len(plans)))]))
    return out


@check("F071", "Feature extractor deterministic: 300 random inputs, same output bit for bit")
def f071(ctx: Context) -> Outcome:
    other = FeatureExtractor()
    differ = sum(not np.array_equal(ctx.extractor.extract(w, p, ctx.machine),
                                    other.extract(w, p, ctx.machine))
                 for w, p in _random_pairs(ctx, 300, SEED))
    return count(differ, "==", 0, "differences")


@check("F072", "Prediction deterministic: repeated calls equal, native = NumPy (≤ 1e-12), "
               "advice repeatable")
def f072(ctx: Context) -> Outcome:
    X = ctx.held_set.X[:256]
    worst, repeat = 0.0, 0
    for m in ctx.models.values():
        first = m.predict_proba(X) if m.kind != "gbt_regressor" else m.raw(X)
        again = m.predict_proba(X) if m.kind != "gbt_regressor" else m.raw(X)
        repeat += not np.array_equal(first, again)
        numpy_only = dataclasses.replace(m, native=None)
        reference = (numpy_only.predict_proba(X) if m.kind != "gbt_regressor"
                     else numpy_only.raw(X))
        worst = max(worst, float(np.max(np.abs(first - reference)
                                        / np.maximum(1.0, np.abs(reference)))))
    changed = sum(a != ctx.advisor.advise(a.workload) for a in ctx.held_advice[:10])
    ok = repeat == 0 and changed == 0 and worst <= 1e-12
    return holds(ok, f"native vs NumPy {worst:.2e}, {repeat} unrepeatable predictions, "
                 f"{changed} changed advice", "≤ 1e-12, 0, 0")


@check("F073", "Thread-safe inference: 4 threads predicting and advising concurrently agree "
               "with serial")
def f073(ctx: Context) -> Outcome:
    X = ctx.held_set.X[:512]
    model = ctx.models["throughput"]
    workloads = held_workloads(ctx, 4)
    serial = (model.raw(X), [ctx.advisor.advise(w) for w in workloads])

    def work(_: int) -> tuple[np.ndarray, list[Any]]:
        return model.raw(X), [ctx.advisor.advise(w) for w in workloads]

    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(work, range(8)))
    differ = sum(not np.array_equal(r[0], serial[0]) or r[1] != serial[1] for r in results)
    return count(differ, "==", 0, "runs differing", "8 runs on 4 threads")


@check("F074", "Inference memory safe (host memory: no GPU here): RSS grows < 4 MB over 20,000 "
               "predictions and 200 loads")
def f074(ctx: Context) -> Outcome:
    from .model_files import native_evaluator

    path = ctx.models_dir / models.MODEL_FILES["bottleneck"]
    native = ctx.models["throughput"].native
    if native is None:
        return holds(False, "native module missing", "the C++ reader")
    x = ctx.held_set.X[0]
    for _ in range(1000):  # warm up allocators
        native.predict(x)
    before = rss_bytes()
    for _ in range(20_000):
        native.predict(x)
    for _ in range(200):
        native_evaluator(path)
    grown = (rss_bytes() - before) / 1e6
    return compare(grown, "<", 4.0, "{:.2f} MB")


@check("F075", "Error handling graceful: 400 corrupted model files refused cleanly, none crash")
def f075(ctx: Context) -> Outcome:
    path = ctx.models_dir / models.MODEL_FILES["bottleneck"]
    data = path.read_bytes()
    rng = np.random.default_rng(SEED)
    variants = [data[: int(rng.integers(0, len(data)))] for _ in range(100)]
    for _ in range(300):
        b = bytearray(data)
        b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
        variants.append(bytes(b))
    refused = crashed = 0
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "model.safetensors"
        for blob in variants:
            target.write_bytes(blob)
            try:
                m = model_files.read(target)
                m.predict_proba(ctx.held_set.X[:4])
            except ValueError:
                refused += 1
            except Exception:  # anything but a clear ValueError is a failure of the reader
                crashed += 1
    return count(crashed, "==", 0, "unclean failures",
                 f"{refused} refused with a ValueError, {len(variants) - refused - crashed} "
                 "still valid (bytes no check depends on); Python and native readers")


@check("F076", "Missing features handled: short vectors, unmeasured hardware → a clear error or "
               "the documented default")
def f076(ctx: Context) -> Outcome:
    x = ctx.held_set.X[0]
    unmeasured = dataclasses.replace(_unseen_machine(ctx.machine),
                                     memory_bandwidth_bytes_per_s=None)
    cases: dict[str, Callable[[], Any]] = {
        "47 features, NumPy": lambda: dataclasses.replace(
            ctx.models["throughput"], native=None).raw(x[:-1]),
        "47 features, ensemble": lambda: ctx.ensemble.throughput(x[None, :-1]),
        "unmeasured hardware, extractor": lambda: ctx.extractor.extract(
            Workload(4096, 32), Plan("numpy"), unmeasured),
    }
    native = ctx.models["throughput"].native
    if native is not None:
        cases["47 features, native"] = lambda: native.predict(x[:-1])
    handled = 0
    for call in cases.values():
        try:
            call()
        except ValueError:
            handled += 1
    from .advisor import OUT_OF_DISTRIBUTION, Advisor

    blind = Advisor(ctx.ensemble, unmeasured)
    handled += blind.advise(Workload(4096, 32)).reason == OUT_OF_DISTRIBUTION
    return count(handled, "==", len(cases) + 1, "handled",
                 "the last: the advisor on a machine without measured limits keeps the default")


def _unseen_machine(h: Hardware) -> Hardware:
    return dataclasses.replace(
        h, cpu_model="unseen CPU", logical_cores=h.logical_cores * 8,
        physical_cores=h.physical_cores * 8,
        memory_bandwidth_bytes_per_s=4 * h.memory_bandwidth_bytes_per_s,
        peak_flops_float64=4 * h.peak_flops_float64, peak_flops_float32=4 * h.peak_flops_float32)


@check("F077", "Unseen hardware handled: the advisor falls back to the default plan")
def f077(ctx: Context) -> Outcome:
    from .advisor import OUT_OF_DISTRIBUTION

    advisor = ctx.advisor_for(_unseen_machine(ctx.machine))
    advice = [advisor.advise(w) for w in held_workloads(ctx, 10)]
    kept = sum(a.reason == OUT_OF_DISTRIBUTION and a.plan == a.default for a in advice)
    return count(kept, "==", len(advice), "of the workloads on the default",
                 "a machine with 8× the cores and 4× bandwidth and peak")


@check("F078", "Unseen plan handled: finite predictions, never advised outside the training "
               "range")
def f078(ctx: Context) -> Outcome:
    cores = ctx.machine.cores
    unseen = [Plan("native_cpu", threads=cores, gram="full", chunk_kib=1 << 20),
              Plan("native_cpu", threads=1, gram="incremental", chunk_kib=1), Plan("cuda")]
    chosen_unseen = nonfinite = 0
    for w in held_workloads(ctx, 10):
        default = Plan("native_cpu").resolved(cores)
        nonfinite += int(np.sum(~np.isfinite(ctx.predict_log([(w, p) for p in unseen],
                                                             ctx.machine))))
        advice = ctx.advisor.advise(w, candidates=[default, *unseen[:2]])
        chosen_unseen += advice.plan in unseen
    return count(chosen_unseen + nonfinite, "==", 0, "failures",
                 f"{chosen_unseen} unseen plans advised, {nonfinite} non-finite predictions")


SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$")


@check("F079", "API versioned: semantic library version, integer format and schema versions")
def f079(ctx: Context) -> Outcome:
    from .._version import __version__
    from .store import SCHEMA_VERSION as STORE_VERSION

    ok = (bool(SEMVER.match(__version__)) and model_files.FORMAT_VERSION.isdigit()
          and isinstance(SCHEMA_VERSION, int) and isinstance(STORE_VERSION, int))
    return holds(ok, f"library {__version__}, model format {model_files.FORMAT_VERSION}, "
                 f"features {SCHEMA_VERSION}, store {STORE_VERSION}", "versioned")


TRAINING_DISTRIBUTION_KEYS = ("feature_min", "feature_max", "rows_range", "features_range",
                              "uncertainty_bound", "fingerprints")


@check("F080", "Backward compatible: a format-1 model without the newer metadata still loads "
               "and predicts the same")
def f080(ctx: Context) -> Outcome:
    from .advisor import Advisor

    m = ctx.models["throughput"]
    old = dataclasses.replace(m, metadata={k: v for k, v in m.metadata.items()
                                           if k not in TRAINING_DISTRIBUTION_KEYS}, native=None)
    X = ctx.held_set.X[:256]
    with tempfile.TemporaryDirectory() as tmp:
        back = model_files.read(model_files.write(old, Path(tmp) / "old.safetensors"))
        same = np.array_equal(back.raw(X), m.raw(X))
    try:
        Advisor(models.Ensemble({**ctx.models, "throughput": back}), ctx.machine)
        advisor = "advisor accepted it"
    except ValueError:
        advisor = "advisor asks to retrain (clear error)"
    return holds(same, f"loads, predictions {'equal' if same else 'differ'}; {advisor}",
                 "loads and predicts the same")


# ========================================== F081–F100: generalization and robustness


@check("F081", "Held-out R² within 5 % of the cross-validation R²")
def f081(ctx: Context) -> Outcome:
    cv = float(np.mean(ctx.cv_r2))
    held = ctx.proxy_r2()
    return pct(abs(held - cv) / cv, "<=", 0.05, f"held-out {held:.4f}, 5-fold {cv:.4f} (proxy)")


def _proxy_mape(ctx: Context, train_rows: np.ndarray, X_test: np.ndarray,
                y_test: np.ndarray) -> float:
    model = fit_proxy(ctx.train_set.X[train_rows], ctx.train_set.log_rate[train_rows])
    return mape(y_test, model.predict(X_test))


def _all_rows(ctx: Context) -> tuple[np.ndarray, np.ndarray, list[tuple[str, str, str]]]:
    return (np.vstack([ctx.train_set.X, ctx.held_set.X]),
            np.concatenate([ctx.train_set.log_rate, ctx.held_set.log_rate]),
            ctx.train_set.keys + ctx.held_set.keys)


@check("F082", "New hardware generalizes: MAPE < 15 % on a machine left out of training")
def f082(ctx: Context) -> Outcome:
    machines = sorted({k[0] for k in ctx.train_set.keys})
    if len(machines) < 2:
        return holds(False, f"{len(machines)} machine(s) in the store", "≥ 2 machines, < 15 %",
                     "no machine to leave out; calibration stores from other machines "
                     "(`rhuber tune calibrate`) would make this measurable")
    X, y, keys = _all_rows(ctx)
    errors = []
    for hw in machines:
        train_rows = np.array([k[0] != hw for k in ctx.train_set.keys])
        test = np.array([k[0] == hw for k in keys])
        errors.append(_proxy_mape(ctx, train_rows, X[test], y[test]))
    return pct(max(errors), "<", 0.15, "worst machine left out (proxy)")


@check("F083", "New model size (features p) generalizes: MAPE < 15 % on p values left out")
def f083(ctx: Context) -> Outcome:
    left_out = {8, 64}
    X, y, keys = _all_rows(ctx)
    p_of = [Workload.from_id(k[1]).features for k in ctx.train_set.keys]
    train_rows = np.array([p not in left_out for p in p_of])
    test = np.array([Workload.from_id(k[1]).features in left_out for k in keys])
    return pct(_proxy_mape(ctx, train_rows, X[test], y[test]), "<", 0.15,
               f"features {sorted(left_out)} never seen in training, {int(test.sum())} "
               "measurements (proxy)")


@check("F084", "New dtype (the seed's quantization) generalizes: float64-trained MAPE on "
               "float32 < 20 %")
def f084(ctx: Context) -> Outcome:
    X, y, keys = _all_rows(ctx)
    train_rows = np.array([Workload.from_id(k[1]).dtype == "float64"
                           for k in ctx.train_set.keys])
    test = np.array([Workload.from_id(k[1]).dtype == "float32" for k in keys])
    return pct(_proxy_mape(ctx, train_rows, X[test], y[test]), "<", 0.20,
               f"{int(test.sum())} float32 measurements (proxy)")


@check("F085", "Adversarial inputs handled: extreme workloads and non-finite vectors, no crash")
def f085(ctx: Context) -> Outcome:
    crashes, cases = [], 0
    workloads = [Workload(rows=n, features=p, dtype=d) for n in (1, 10**12)
                 for p in (1, 10**5) for d in ("float32", "float64")]
    for w in workloads:
        cases += 1
        try:
            ctx.advisor.advise(w)
        except ValueError:
            pass
        except Exception as exc:
            crashes.append(f"{w.id}: {type(exc).__name__}")
    for value in (np.nan, np.inf, -np.inf, 1e300, -1e300):
        x = np.full(len(ctx.extractor), value)
        for name, m in ctx.models.items():
            cases += 1
            try:
                out = m.raw(x) if m.kind == "gbt_regressor" else m.predict_proba(x)
                if m.kind in model_files.TREE_KINDS and not np.isfinite(out).all():
                    crashes.append(f"{name}({value}): non-finite")
            except ValueError:
                pass
            except Exception as exc:
                crashes.append(f"{name}({value}): {type(exc).__name__}")
    return count(len(crashes), "==", 0, "unhandled",
                 "; ".join([f"{cases} cases", *crashes[:3]]))


@check("F086", "Out-of-distribution detection: sizes beyond the corpus are flagged, the "
               "corpus's are not")
def f086(ctx: Context) -> Outcome:
    from .advisor import OUT_OF_DISTRIBUTION

    outside = [Workload(rows=10**7, features=32), Workload(rows=64, features=32),
               Workload(rows=4096, features=4096), Workload(rows=4096, features=1)]
    flagged = sum(ctx.advisor.advise(w).reason == OUT_OF_DISTRIBUTION for w in outside)
    inside = ctx.held_advice
    quiet = sum(a.reason != OUT_OF_DISTRIBUTION for a in inside)
    return holds(flagged == len(outside) and quiet >= len(inside) / 2,
                 f"{flagged}/{len(outside)} outside flagged, {quiet}/{len(inside)} held-out "
                 "workloads not flagged", "all outside; at least half inside")


@check("F087", "Concept drift detection: a chosen plan that measures slower reverts to the "
               "default")
def f087(ctx: Context) -> Outcome:
    from .advisor import CHOSEN, EVIDENCE_BATCHES, REVERTED, WARMUP_BATCHES, Session

    advice = ctx.chosen_advice
    if advice is None:
        return holds(False, "the advisor chose no plan on the held-out workloads",
                     "a chosen plan to observe")
    rows, promised = advice.workload.rows, advice.predicted_rows_per_s

    def after(rate: float) -> str:
        session = Session.from_advice(advice)
        for _ in range(WARMUP_BATCHES + EVIDENCE_BATCHES):
            session = session.observe(rows, rows / rate)
        return session.reason

    slow, on_time = after(promised / 2), after(promised)
    return holds(slow == REVERTED and on_time == CHOSEN,
                 f"at half the promise: {slow}; at the promise: {on_time}",
                 f"{REVERTED!r} / {CHOSEN!r}", advice.workload.id)


@check("F088", "Retraining improves: more training workloads → higher held-out R²")
def f088(ctx: Context) -> Outcome:
    early, _ = validate.split(ctx.split[0], 0.5)
    first_half = {(m.hardware_id, m.workload_id) for m in early}
    rows = np.array([(k[0], k[1]) in first_half for k in ctx.train_set.keys])
    half = fit_proxy(ctx.train_set.X[rows], ctx.train_set.log_rate[rows])
    before = r2(ctx.held_set.log_rate, ctx.proxy_held(half))
    after = ctx.proxy_r2()
    return compare(after - before, ">", 0.0, "{:.4f}",
                   f"R² {before:.4f} on the earlier half of the training workloads, "
                   f"{after:.4f} on all (proxy)")


@check("F089", "Feature drift detection: a workload with features the training never saw is "
               "flagged")
def f089(ctx: Context) -> Outcome:
    from .advisor import OUT_OF_DISTRIBUTION

    seen = {Workload.from_id(m.workload_id).intercept for m in ctx.split[0]}
    drifted = [Workload(rows=4096, features=32, intercept=not v) for v in seen]
    if len(seen) == 2:  # both seen: drift in the dtype of a machine instead
        drifted = [Workload(rows=4096, features=32, location="device")]
    advice = [ctx.advisor.advise(w) for w in drifted]
    flagged = sum(a.reason == OUT_OF_DISTRIBUTION for a in advice)
    return count(flagged, "==", len(advice), "flagged",
                 "; ".join(f"{a.workload.id}: {a.detail}" for a in advice)[:160])


@check("F090", "Model degradation detection: validation flags a model whose predictions are 3× "
               "off")
def f090(ctx: Context) -> Outcome:
    m = ctx.models["throughput"]
    tensors = {**m.tensors, "init": m.tensors["init"] + math.log(3.0)}
    degraded = dataclasses.replace(m, tensors=tensors, native=None)
    report = validate.evaluate({**ctx.models, "throughput": degraded}, ctx.split[1],
                               ctx.fingerprints)
    target = report["targets"]["mape"]
    return holds(not target["met"] and ctx.report["targets"]["mape"]["met"],
                 f"degraded MAPE {target['measured']:.1%} flagged as not met, grade "
                 f"{report['grade']}", "the degraded model flagged, the shipped one not")


@check("F091", "Cold start: with no model, backend='auto' runs the default plan")
def f091(ctx: Context) -> Outcome:
    from ..estimator import RenewableHuberRegressor
    from . import advisor as _advisor
    from .collect import workload_batches

    w = Workload(rows=1024, features=8)
    X, y = workload_batches(w, 1)[0]
    with _advisor._SHARED_LOCK:
        saved = dict(_advisor._SHARED)
        _advisor._SHARED.clear()
        _advisor._SHARED["advisor"] = None
    try:
        est = RenewableHuberRegressor(backend="auto").partial_fit(X, y)
    finally:
        with _advisor._SHARED_LOCK:
            _advisor._SHARED.clear()
            _advisor._SHARED.update(saved)
    report = est.plan_
    from .plans import default_plan

    expected = default_plan(w).resolved().id
    return holds(report.reason == _advisor.NO_MODEL and report.plan == expected
                 and bool(np.isfinite(est.coef_).all()),
                 f"{report.plan} ({report.reason})", f"{expected} ({_advisor.NO_MODEL})")


@check("F092", "Sparse data: training on 12 workloads works (held-out R² > 0.5); on one, a clear "
               "refusal")
def f092(ctx: Context) -> Outcome:
    one = ctx.small_training[0].workload_id
    try:
        models.train([m for m in ctx.small_training if m.workload_id == one], ctx.fingerprints)
        refusal = "trained on one workload"
    except ValueError:
        refusal = "one workload refused"
    small = ctx.small_models["throughput"]
    score = r2(ctx.held_set.log_rate, small.raw(ctx.held_set.X)[:, 0])
    ok = score > 0.5 and refusal == "one workload refused"
    return Outcome(ok, f"{score:.4f}", "> 0.5", f"{len(ctx.small_training)} measurements; "
                   f"{refusal}", score)


@check("F093", "Class imbalance handled: bottleneck balanced accuracy within 5 points of "
               "accuracy")
def f093(ctx: Context) -> Outcome:
    per_class = ctx.report["bottleneck"]
    support = np.array([v["support"] for v in per_class.values()], dtype=float)
    recall = np.array([v["recall"] for v in per_class.values()])
    accuracy = float(recall @ support / support.sum())
    balanced = float(recall.mean())
    return compare((accuracy - balanced) * 100, "<=", 5.0, "{:.1f} points",
                   f"accuracy {accuracy:.1%}, balanced {balanced:.1%}; the classifiers are "
                   "unweighted, this measures whether the minority classes pay for it")


@check("F094", "Noisy labels: 10 % noise on log(rows/s) costs < 0.02 of held-out R²")
def f094(ctx: Context) -> Outcome:
    rng = np.random.default_rng(SEED)
    noisy = ctx.train_set.log_rate + rng.normal(0.0, 0.1, ctx.train_set.log_rate.shape)
    model = fit_proxy(ctx.train_set.X, noisy)
    drop = ctx.proxy_r2() - r2(ctx.held_set.log_rate, ctx.proxy_held(model))
    return compare(drop, "<", 0.02, "{:.4f}", "Gaussian σ = 0.1 in log (proxy)")


@check("F095", "Missing hardware fields: unknown caches and SIMD fill 0, the rest stays valid")
def f095(ctx: Context) -> Outcome:
    partial = dataclasses.replace(ctx.machine, l1d_bytes=None, l2_bytes=None, l3_bytes=None,
                                  simd="none", blas_vendor=None, blas_version=None,
                                  blas_kernel=None)
    x = ctx.extractor.extract_dict(Workload(4096, 32), Plan("numpy"), partial)
    values = np.array(list(x.values()))
    filled = [x[n] for n in ("l2_log", "l3_log", "batch_fits_l2", "batch_fits_l3", "simd_level")]
    ok = bool(np.isfinite(values).all() and (values >= 0).all() and (values <= 1).all()
              and not any(filled))
    return holds(ok, f"filled {filled}", "finite, in [0, 1], unknowns 0")


@check("F096", "Extreme values clipped: sizes far outside the grid map to the edges")
def f096(ctx: Context) -> Outcome:
    small = ctx.extractor.extract_dict(Workload(rows=1, features=1), Plan("numpy"), ctx.machine)
    huge = ctx.extractor.extract_dict(Workload(rows=10**12, features=10**6), Plan("numpy"),
                                      ctx.machine)
    edges = [small["rows_log"], small["features_log"], huge["rows_log"], huge["features_log"]]
    values = np.array(list(small.values()) + list(huge.values()))
    ok = edges == [0.0, 0.0, 1.0, 1.0] and bool(((values >= 0) & (values <= 1)).all())
    return holds(ok, f"rows_log, features_log: {edges[:2]} at 1 × 1, {edges[2:]} at 1e12 × 1e6",
                 "[0, 0] and [1, 1]")


not_applicable("F097", "Multi-GPU handling",
               "an estimator runs on one device (its `device` parameter) and the plans have no "
               "multi-device dimension; the corpus has no GPU at all")
not_applicable("F098", "WASM compatibility (zero-JS browser)",
               "no browser target: the product is a Python package with C++ extension modules")


@check("F099", "ARM fingerprints handled (no ARM machine here): asimd/SVE map to SIMD levels")
def f099(ctx: Context) -> Outcome:
    bad = []
    for simd in ("asimd", "sve"):
        arm = dataclasses.replace(ctx.machine, machine="aarch64", cpu_model="ARM Neoverse",
                                  simd=simd)
        x = ctx.extractor.extract_dict(Workload(4096, 32), Plan("numpy"), arm)
        if x["simd_level"] != SIMD_ORDINAL[simd] or not x["simd_level"] > 0:
            bad.append(simd)
    return count(len(bad), "==", 0, "unmapped", "the extractor only; running on ARM is "
                 "untested here")


@check("F100", "Reproducibility: the same store and seed train identical models")
def f100(ctx: Context) -> Outcome:
    again = models.train(ctx.small_training, ctx.fingerprints, seed=SEED)
    differ = []
    for name, m in ctx.small_models.items():
        other = again[name]
        meta = {k: v for k, v in m.metadata.items() if k != "trained_at"}
        if meta != {k: v for k, v in other.metadata.items() if k != "trained_at"}:
            differ.append(f"{name} metadata")
        if any(not np.array_equal(m.tensors[k], other.tensors[k]) for k in m.tensors):
            differ.append(f"{name} tensors")
    return count(len(differ), "==", 0, "differences",
                 f"models.train twice on {len(ctx.small_training)} measurements, seed {SEED}")


# ---------------------------------------------------------------------------- running


def ids() -> list[str]:
    return sorted(REGISTRY)


def run_item(item: Item, ctx: Context) -> Result:
    start = time.perf_counter()
    if item.run is None:
        return Result(item.id, item.category, item.title, NA, None, None,
                      item.not_applicable or "")
    try:
        outcome = item.run(ctx)
    except Exception as exc:  # a check that cannot run fails, saying why
        outcome = Outcome(False, "error", "runs", f"{type(exc).__name__}: {exc}")
    return Result(item.id, item.category, item.title, PASS if outcome.passed else FAIL,
                  outcome.measured, outcome.threshold, outcome.reason, outcome.value,
                  round(time.perf_counter() - start, 3))


def run(ctx: Context, only: Iterable[str] | None = None) -> list[Result]:
    """The results of the checklist's items (``only`` those ids), in id order."""
    chosen = ids() if only is None else sorted(set(only))
    unknown = [i for i in chosen if i not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown checklist ids {unknown}; expected F001 … F100")
    return [run_item(REGISTRY[i], ctx) for i in chosen]


def summary(results: Sequence[Result]) -> dict[str, int]:
    counts = Counter(r.status for r in results)
    return {"passed": counts[PASS], "failed": counts[FAIL], "not_applicable": counts[NA],
            "applicable": counts[PASS] + counts[FAIL], "total": len(results)}


def scorecard(results: Sequence[Result], seconds: float | None = None) -> str:
    """The results line by line under their categories, then ``N/M passed (K not
    applicable)``."""
    lines: list[str] = []
    category = None
    for r in results:
        if r.category != category:
            category = r.category
            lines += ["", f"## {category}"]
        label = {PASS: "PASS", FAIL: "FAIL", NA: "N/A "}[r.status]
        if r.status == NA:
            lines.append(f"{r.id} {label} {r.title}: {r.reason}")
            continue
        text = f"{r.id} {label} {r.title}: {r.measured} (threshold {r.threshold})"
        lines.append(text + (f"; {r.reason}" if r.reason else ""))
    s = summary(results)
    tail = f"; {seconds:.1f} s" if seconds is not None else ""
    lines += ["", f"{s['passed']}/{s['applicable']} passed ({s['not_applicable']} not "
              f"applicable, {s['total']} items{tail})"]
    return "\n".join(lines).lstrip("\n") + "\n"
