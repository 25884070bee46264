"""What the checks read: the :class:`Context` (the measurement store, its time split, the model
files, the feature extractor, the advisor, the retraining proxy; each loaded lazily and once)
and the figures several checks share (R², MAPE, the proxy fit, the corpus's workloads)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ...engines.plans import Plan, plans_for
from ...engines.workload import Workload
from ...estimator import RenewableHuberRegressor
from ...tuner import model_files, models
from ...tuner.advisor import Advisor
from ...tuner.features import FeatureExtractor
from ...tuner.hardware import Hardware
from ...tuner.labels import best_plans, measurement_bottleneck, throughput
from ...tuner.store import Measurement, Store
from .. import validate
from ..collect import workload_batches

#: The shipped measurement corpus (the default store of ``rhuber tune falsify``).
CORPUS = Path(__file__).resolve().parents[2] / "tuner" / "data" / "corpus.sqlite"
#: The performance-experiment archive, the seed's Five-Whys (present in a source checkout).
EXPERIMENTS = Path(__file__).resolve().parents[4] / "docs" / "perf" / "experiments.jsonl"

#: The retraining stand-in (see the package docstring).
PROXY_GBT = {"n_estimators": 100, "max_depth": 4, "learning_rate": 0.1, "subsample": 0.8,
             "min_samples_leaf": 3}
SEED = models.SEED


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


# ---------------------------------------------------------------------------- the context


class Context:
    """Everything the checks read, computed once and only when a check asks for it."""

    def __init__(self, store: str | Path = CORPUS, models_dir: str | Path | None = None, *,
                 top: Any = None) -> None:
        # top: the `rhuber top` renderer (rhuber.cli._top), handed down by the command that runs
        # the scorecard, since the lab layer sits below the CLI.
        self.top = top
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

    @property
    def native_plan(self) -> Plan:
        """The native CPU plan with its engine defaults resolved for :attr:`machine`."""
        return Plan("native_cpu").resolved(self.machine.cores)

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

        w = Workload(rows=4096, features=16)
        est = RenewableHuberRegressor(backend="native_cpu", profile=True)
        for X, y in workload_batches(w, 2):
            est.partial_fit(X, y)
        return w, est.profile_


def ranked_first(keys: Sequence[tuple[str, str, str]], predicted: np.ndarray
                 ) -> dict[tuple[str, str], tuple[float, str]]:
    """For each (machine, workload) of ``keys`` (machine, workload, plan), the predicted
    log(rows/s) and the plan that the prediction ranks first (ties: the larger plan id)."""
    top: dict[tuple[str, str], tuple[float, str]] = {}
    for (hw, w, plan), p in zip(keys, predicted, strict=True):
        if (hw, w) not in top or (p, plan) > top[(hw, w)]:
            top[(hw, w)] = (float(p), plan)
    return top


def near_best_accuracy(ctx: Context, predicted: np.ndarray) -> float:
    """How often the plan a prediction of the held-out rows ranks first is within 3 % of the
    best measured plan of its workload."""
    top = ranked_first(ctx.held_set.keys, predicted)
    best = best_plans(ctx.held_good)
    return float(np.mean([plan in best[key].near_best for key, (_, plan) in top.items()]))


def corpus_workloads(ctx: Context) -> list[Workload]:
    return sorted({Workload.from_id(m.workload_id) for m in ctx.measurements},
                  key=lambda w: w.id)


def held_workloads(ctx: Context, limit: int | None = None) -> list[Workload]:
    ids = sorted({m.workload_id for m in ctx.held_good})
    return [Workload.from_id(w) for w in ids[:limit]]


def workload_series(ctx: Context) -> dict[tuple[Any, ...], list[Workload]]:
    """The corpus's workloads grouped by everything but their rows per batch."""
    series: dict[tuple[Any, ...], list[Workload]] = defaultdict(list)
    for w in corpus_workloads(ctx):
        series[(w.features, w.dtype, w.penalized, w.intercept, w.location)].append(w)
    return series


def model_outputs(m: model_files.ModelFile, X: np.ndarray) -> np.ndarray:
    """A model's raw outputs (the regressor) or class probabilities (the classifiers)."""
    return m.raw(X) if m.kind == "gbt_regressor" else m.predict_proba(X)
