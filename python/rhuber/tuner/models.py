"""The tuner's three models, trained with scikit-learn on a measurement store (docs/tuner.md,
"Models"), and the ensemble that ranks plans.

- ``throughput``: GradientBoostingRegressor on the features of (workload, plan, hardware) with
  ``profile_fractions=None`` (a decision is made before anything runs), target log(rows/s), one
  row per good measurement.
- ``plan``: RandomForestClassifier predicting the best measured plan id of a workload from the
  workload and hardware features; the plan features are those of the fixed :data:`REFERENCE_PLAN`
  (constant columns, so the forest never splits on them) to keep one feature vector for all
  three models.
- ``bottleneck``: multinomial LogisticRegression predicting :func:`labels.measurement_bottleneck`
  (peaks from the stored fingerprint) from the same features as ``throughput``.

Sizes are capped (trees, depth, leaf sizes) so each file stays far below 5 MB.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..engines.plans import Plan, plans_for
from ..engines.workload import Workload
from .features import SCHEMA_VERSION, FeatureExtractor
from .hardware import Hardware
from .labels import best_plans, measurement_bottleneck, throughput
from .model_files import MAX_FILE_BYTES, ModelFile, from_sklearn, read, sklearn_tensors, write
from .paths import MODEL_FILES, default_models_dir
from .store import Measurement

#: The plan whose features stand in for "no plan" in the plan classifier's input.
REFERENCE_PLAN = Plan("numpy")
TARGET = "log_rows_per_s"
SEED = 0
GBT_PARAMS = {"n_estimators": 600, "max_depth": 6, "learning_rate": 0.05, "subsample": 0.8,
              "min_samples_leaf": 3}
FOREST_PARAMS = {"n_estimators": 64, "max_depth": 10, "min_samples_leaf": 4}


def _library_version() -> str:
    try:
        from importlib.metadata import version

        return version("rhuber")
    except Exception:  # not installed as a distribution (a source tree)
        return "unknown"


@dataclass
class TrainingSet:
    """Rows of features with their labels, built from a store's measurements."""

    X: np.ndarray  # per good measurement
    log_rate: np.ndarray
    keys: list[tuple[str, str, str]]  # (hardware_id, workload_id, plan_id)
    X_plan: np.ndarray  # per (hardware, workload) with a best plan
    best: list[str]
    plan_keys: list[tuple[str, str]]
    X_bottleneck: np.ndarray
    bottleneck: list[str]


def hardware_of(fingerprints: dict[str, dict[str, Any]]) -> dict[str, Hardware]:
    return {h: Hardware.from_dict(f) for h, f in fingerprints.items()}


def training_set(measurements: Sequence[Measurement],
                 hardware: dict[str, Hardware]) -> TrainingSet:
    fx = FeatureExtractor()
    X, y, keys, Xb, yb = [], [], [], [], []
    for m in measurements:
        rate = throughput(m)
        if rate is None or not rate > 0:
            continue
        hw = hardware[m.hardware_id]
        x = fx.extract(Workload.from_id(m.workload_id), Plan.from_id(m.plan_id), hw)
        X.append(x)
        y.append(math.log(rate))
        keys.append((m.hardware_id, m.workload_id, m.plan_id))
        label = measurement_bottleneck(m, peak_gflops=hw.peak_flops_float64 / 1e9,
                                       bandwidth_gbs=hw.memory_bandwidth_bytes_per_s / 1e9)
        if label is not None:
            Xb.append(x)
            yb.append(label)
    best = best_plans(measurements)
    plan_keys = sorted(best)
    Xp = [plan_features(Workload.from_id(w), hardware[h]) for h, w in plan_keys]
    n = len(fx)
    return TrainingSet(np.asarray(X).reshape(-1, n), np.asarray(y), keys,
                       np.asarray(Xp).reshape(-1, n), [best[k].plan_id for k in plan_keys],
                       plan_keys, np.asarray(Xb).reshape(-1, n), yb)


def plan_features(workload: Workload, hardware: Hardware) -> np.ndarray:
    """The plan classifier's input: the features with :data:`REFERENCE_PLAN`'s plan part."""
    return FeatureExtractor().extract(workload, REFERENCE_PLAN, hardware)


def forest_file_bytes(forest: Any) -> int:
    """The tensor bytes of ``forest``'s model file (per node an int32 feature, float64
    threshold, two int32 children and a float64 probability per class)."""
    return sum(t.nbytes for t in sklearn_tensors(forest)[1].values())


#: What the plan forest's tensors may take of a model file (the rest: its header, whose
#: metadata lists the classes and features, a few KiB).
FOREST_BYTES = MAX_FILE_BYTES - (64 << 10)


def _bounded_forest(data: TrainingSet, seed: int, params: dict[str, Any]) -> Any:
    """The plan forest, its leaves made larger (``min_samples_leaf`` × 1.5 at a time) until its
    file fits the model-file bound. Its node count grows with the store (each machine adds
    best-plan samples) and every node carries a probability per class, so a store that grows
    would otherwise end in a forest ``tune train`` cannot write; larger leaves keep the same
    trees' shape at a coarser grain. The data card gives the leaf size used."""
    from sklearn.ensemble import RandomForestClassifier

    while True:
        forest = RandomForestClassifier(random_state=seed, **params).fit(data.X_plan, data.best)
        if forest_file_bytes(forest) <= FOREST_BYTES:
            return forest
        if params["min_samples_leaf"] >= len(data.best):  # stumps already: no smaller forest
            raise ValueError(f"the plan forest's {params['n_estimators']} trees do not fit the "
                             f"model file bound ({FOREST_BYTES} bytes of tensors) even as "
                             "stumps; train fewer trees")
        params = {**params, "min_samples_leaf": math.ceil(1.5 * params["min_samples_leaf"])}


def fit(data: TrainingSet, *, seed: int = SEED,
        params: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The three fitted scikit-learn estimators (throughput, plan, bottleneck).

    ``params`` overrides keyword arguments of the estimators, per model name, over their
    defaults (:data:`GBT_PARAMS`, :data:`FOREST_PARAMS`, ``max_iter=5000``): e.g.
    ``{"throughput": {"n_estimators": 300}}`` (a local model trained within calibrate's budget).
    """
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.linear_model import LogisticRegression

    over = params or {}
    unknown = set(over) - set(MODEL_FILES)
    if unknown:
        raise ValueError(f"params for unknown models {sorted(unknown)}; the models are "
                         f"{sorted(MODEL_FILES)}")
    return {"throughput": GradientBoostingRegressor(
                random_state=seed, **{**GBT_PARAMS, **over.get("throughput", {})}).fit(
                data.X, data.log_rate),
            "plan": _bounded_forest(data, seed, {**FOREST_PARAMS, **over.get("plan", {})}),
            "bottleneck": LogisticRegression(
                **{"max_iter": 5000, **over.get("bottleneck", {})}).fit(data.X_bottleneck,
                                                                        data.bottleneck)}


def train(measurements: Sequence[Measurement], fingerprints: dict[str, dict[str, Any]],
          *, seed: int = SEED, params: dict[str, dict[str, Any]] | None = None
          ) -> dict[str, ModelFile]:
    """The three models as model files, trained on ``measurements`` (``params``: as
    :func:`fit`)."""
    hardware = hardware_of(fingerprints)
    data = training_set(measurements, hardware)
    if len(data.log_rate) < 2 or len(set(data.best)) < 2 or len(set(data.bottleneck)) < 2:
        raise ValueError(f"too little to train on: {len(data.log_rate)} good measurements, "
                         f"{len(set(data.best))} distinct best plans, "
                         f"{len(set(data.bottleneck))} bottleneck classes (need 2+ of each)")
    base = {"feature_names": json.dumps(list(FeatureExtractor.names)),
            "feature_schema_version": str(SCHEMA_VERSION),
            "hardware_ids": json.dumps(sorted({k[0] for k in data.keys})),
            "trained_at": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "library_version": _library_version(), "seed": str(seed)}
    gbt, forest, logistic = fit(data, seed=seed, params=params).values()
    throughput_file = from_sklearn(gbt, {**base, "classes": "[]", "target": TARGET,
                                         "samples": str(len(data.log_rate))})
    throughput_file.metadata.update(training_distribution(data, throughput_file, fingerprints))
    return {
        "throughput": throughput_file,
        "plan": from_sklearn(forest, {
            **base, "classes": json.dumps(list(forest.classes_)), "target": "best_plan_id",
            "samples": str(len(data.best)),
            "params": json.dumps({k: forest.get_params()[k] for k in FOREST_PARAMS})}),
        "bottleneck": from_sklearn(logistic, {
            **base, "classes": json.dumps(list(logistic.classes_)), "target": "bottleneck",
            "samples": str(len(data.bottleneck))}),
    }


def training_distribution(data: TrainingSet, throughput_model: ModelFile,
                          fingerprints: dict[str, dict[str, Any]]) -> dict[str, str]:
    """What the advisor needs to tell an in-distribution workload (tuner/advisor.py), as the
    throughput file's extra metadata (JSON strings):

    - ``feature_min`` / ``feature_max``: each feature's range over the training rows;
    - ``rows_range`` / ``features_range``: the workloads' raw sizes (the log features clip);
    - ``uncertainty_bound``: the 99th percentile of the ensemble's tree disagreement
      (:meth:`Ensemble.throughput`) over the training rows;
    - ``fingerprints``: the measured hardware fingerprints, by hardware id.
    """
    workloads = [Workload.from_id(w) for _, w, _ in data.keys]
    values = throughput_model.tree_values(data.X)[:, :, 0] * float(
        throughput_model.tensors["scale"][0])
    spread = values.std(axis=1) * math.sqrt(values.shape[1])
    used = {h for h, _, _ in data.keys}
    return {
        "feature_min": json.dumps(data.X.min(axis=0).tolist()),
        "feature_max": json.dumps(data.X.max(axis=0).tolist()),
        "rows_range": json.dumps([min(w.rows for w in workloads), max(w.rows for w in workloads)]),
        "features_range": json.dumps([min(w.features for w in workloads),
                                      max(w.features for w in workloads)]),
        "uncertainty_bound": repr(float(np.quantile(spread, 0.99))),
        "fingerprints": json.dumps({h: fingerprints[h] for h in sorted(used)}, sort_keys=True),
    }


def save(models: dict[str, ModelFile], directory: str | Path) -> dict[str, Path]:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    return {name: write(models[name], directory / MODEL_FILES[name]) for name in MODEL_FILES}


def load(directory: str | Path) -> dict[str, ModelFile]:
    directory = Path(directory)
    models = {name: read(directory / file) for name, file in MODEL_FILES.items()}
    for name, model in models.items():
        if model.feature_names != list(FeatureExtractor.names):
            raise ValueError(f"{directory / MODEL_FILES[name]}: trained on other features "
                             f"(schema {model.metadata['feature_schema_version']}, this library "
                             f"{SCHEMA_VERSION}); retrain with `rhuber tune train`")
    return models


@dataclass(frozen=True)
class Ranked:
    plan: Plan
    log_rows_per_s: float
    uncertainty: float  # tree disagreement, in log(rows/s)


class Ensemble:
    """Ranks plans by the throughput model's prediction; reports tree disagreement.

    The uncertainty of a prediction is the standard deviation of the trees' scaled contributions
    times √n_trees — the spread their sum would have were the trees independent draws. It is a
    relative measure (which predictions the trees disagree on most), not a calibrated interval.
    """

    def __init__(self, models: dict[str, ModelFile]) -> None:
        self.models = models
        self.extractor = FeatureExtractor()

    @classmethod
    def load(cls, directory: str | Path | None = None) -> Ensemble:
        return cls(load(directory or default_models_dir()))

    def throughput(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predicted log(rows/s) and its uncertainty, per row of features."""
        model = self.models["throughput"]
        values = model.tree_values(X)[:, :, 0] * float(model.tensors["scale"][0])
        return model.raw(X)[:, 0], values.std(axis=1) * math.sqrt(values.shape[1])

    def rank(self, workload: Workload, plans: Iterable[Plan], hardware: Hardware
             ) -> list[Ranked]:
        """``plans`` from the fastest predicted to the slowest."""
        plans = list(plans)
        if not plans:
            return []
        X = np.stack([self.extractor.extract(workload, p, hardware) for p in plans])
        mean, spread = self.throughput(X)
        order = np.argsort(-mean, kind="stable")
        return [Ranked(plans[i], float(mean[i]), float(spread[i])) for i in order]

    def plan_probabilities(self, workload: Workload, hardware: Hardware) -> dict[str, float]:
        model = self.models["plan"]
        proba = model.predict_proba(plan_features(workload, hardware))[0]
        return dict(zip(model.classes, proba.tolist(), strict=True))

    def bottleneck(self, workload: Workload, plan: Plan, hardware: Hardware) -> str:
        return str(self.models["bottleneck"].predict(
            self.extractor.extract(workload, plan, hardware))[0])

    def suggest_experiments(self, n: int, hardware: Hardware, workloads: Iterable[Workload],
                            *, plans: Any = None, measured: Iterable[tuple[str, str]] = ()
                            ) -> list[tuple[str, str, float]]:
        """The ``n`` (workload_id, plan_id, uncertainty) not in ``measured`` whose predictions
        the trees disagree on most. ``plans(workload)`` gives the candidates (default
        :func:`plans_for` on ``hardware``)."""
        done = set(measured)
        candidates = []
        for w in workloads:
            for p in (plans or (lambda w: plans_for(w, hardware)))(w):
                if (w.id, p.id) not in done:
                    candidates.append((w, p))
        if not candidates or n <= 0:
            return []
        X = np.stack([self.extractor.extract(w, p, hardware) for w, p in candidates])
        _, spread = self.throughput(X)
        order = np.argsort(-spread, kind="stable")[:n]
        return [(candidates[i][0].id, candidates[i][1].id, float(spread[i])) for i in order]


def data_card(models: dict[str, ModelFile], paths: dict[str, Path], *, store: Path,
              holdout: float, held_workloads: int) -> str:
    """The Markdown data card ``rhuber tune train`` writes beside the model files."""
    meta = models["throughput"].metadata
    lines = [
        "# Data card: the tuner's models", "",
        f"Trained {meta['trained_at']} by rhuber {meta['library_version']} (seed "
        f"{meta['seed']}) from `{store}`, feature schema {meta['feature_schema_version']}, "
        f"hardware {', '.join(json.loads(meta['hardware_ids']))}.",
        f"Held out for validation: the latest {holdout:.0%} of workloads by measured_at "
        f"({held_workloads} workloads); `rhuber tune validate` scores on them.",
        "Features: FeatureExtractor with profile_fractions=None (known before a run); the plan "
        f"classifier sees the plan part of {REFERENCE_PLAN.id!r} (constant).", "",
        "| model | file | kind | target | samples | classes | bytes |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, model in models.items():
        m = model.metadata
        lines.append(f"| {name} | {paths[name].name} | {m['kind']} | {m['target']} | "
                     f"{m['samples']} | {len(model.classes)} | {paths[name].stat().st_size} |")
    forest = json.loads(models["plan"].metadata.get("params", json.dumps(FOREST_PARAMS)))
    lines += ["", f"Throughput: GradientBoostingRegressor {GBT_PARAMS}. Plan: "
              f"RandomForestClassifier {forest}. Bottleneck: LogisticRegression "
              "(multinomial, lbfgs)."]
    return "\n".join(lines) + "\n"
