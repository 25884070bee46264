"""``rhuber tune calibrate``: measure this machine on a designed subset of workloads × plans,
within a budget (30 s by default), and train this machine's local models (docs/tuner.md,
"Calibration and online learning").

The design covers the space where the models' decisions matter with few measurements:

- **Workloads**: :data:`DESIGN_SIZES` — five (rows per batch, features) points of the corpus grid
  spread over it (from 362 × 8, overhead-bound, to 65,536 × 2, tall and thin, and 724 × 128,
  wide), each in both dtypes, with and without the L1 penalty: 20 workloads.
- **Plans**, in priority order, measured while the budget lasts: (1) per workload, the default
  plan (what ``backend="auto"`` runs without a model) and the plan the model in effect ranks
  first; (2) per workload, the :data:`UNCERTAIN_PLANS` pairs the model's trees disagree on most
  (:meth:`models.Ensemble.suggest_experiments`) among the plans it predicts within
  :data:`CONTENDER` × of its best (pairs already in the local store are left out, so a second
  calibration explores further), the most uncertain first; (3) the model's next choices, up to
  :data:`TOP_PLANS`: about 97 pairs on 2 cores.
  The model in effect is this machine's local one when it exists, else the shipped one.
- **Quality**: :data:`QUALITY`, lighter than the collector's — one warm-up run, 3 timed runs of 3
  batches, at most one re-measured round, no profiled run (the bottleneck model keeps the
  corpus's profiles).
- **Budget**: measuring stops :data:`TRAIN_RESERVE_FRACTION` of the budget before its end, to
  leave training its time (≈ 7–12 s on the 2-core development container, with
  :data:`local.LOCAL_PARAMS`). A pair is left out when its predicted time (the model's: rows ÷
  predicted throughput per run, plus :data:`RUN_OVERHEAD_S`) does not fit what is left or
  exceeds :data:`MAX_TASK_S`, and again after its warm-up run, which is timed, when the timed
  runs would not fit: the model's prediction can be far off (that is why one calibrates).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..engines.plans import Plan, default_plan, plans_for
from ..engines.workload import Workload
from ..estimator import RenewableHuberRegressor
from ..tuner import local
from ..tuner.hardware import Hardware, fingerprint
from ..tuner.models import Ensemble, default_models_dir
from ..tuner.rules import DEFAULT_RULE, Rule
from ..tuner.rules import load as load_rule
from ..tuner.store import Measurement
from .collect import PENALTY_ALPHA, Quality, measure_interleaved, workload_batches

#: (rows per batch, features) of the design: corpus grid points spread over its range.
DESIGN_SIZES: tuple[tuple[int, int], ...] = ((362, 8), (724, 128), (2048, 64), (16384, 16),
                                             (65536, 2))
DESIGN_DTYPES = ("float64", "float32")
DESIGN_PENALTIES = (False, True)
#: Calibration's measurement rules: the collector's (collect.Quality) made lighter.
QUALITY = Quality(warmup=1, runs=3, max_remeasure=1, batches_per_run=3, profile=False)
#: How many of the model's best-ranked plans are measured per workload (besides the default).
TOP_PLANS = 2
#: How many of the pairs the model's trees disagree on most are measured per workload.
UNCERTAIN_PLANS = 2
#: Uncertain pairs are sought among the plans predicted within this factor of the predicted
#: best: where a wrong prediction could change the decision. (The NumPy reference, 10–100 ×
#: slower here, is the trees' most uncertain plan and the slowest and noisiest to measure, but
#: never a decision the model has to get right.)
CONTENDER = 3.0
BUDGET_S = 30.0
#: The share of the budget kept for training the local models after measuring.
TRAIN_RESERVE_FRACTION = 0.5
#: Per timed run, beyond the predicted batch time: a fresh estimator and Python around it.
RUN_OVERHEAD_S = 0.003
#: A pair predicted to take longer than this is not measured (the budget is for many pairs).
MAX_TASK_S = 1.5


def design(sizes: Sequence[tuple[int, int]] = DESIGN_SIZES,
           dtypes: Sequence[str] = DESIGN_DTYPES,
           penalties: Sequence[bool] = DESIGN_PENALTIES) -> list[Workload]:
    """The calibration's workloads (host input, with intercept)."""
    return [Workload(rows=n, features=p, dtype=d, penalized=pen)
            for n, p in sizes for d in dtypes for pen in penalties]


@dataclass(frozen=True)
class Task:
    """One (workload, plan) to measure: why, and its predicted time."""

    workload: Workload
    plan: Plan
    reason: str  # "default", "top-1", "top-2", ..., "uncertain"
    predicted_s: float


def predicted_seconds(log_rows_per_s: float, workload: Workload,
                      quality: Quality = QUALITY) -> float:
    """The wall time of one measurement of a plan predicted at ``log_rows_per_s``."""
    run = workload.rows * quality.batches_per_run / float(np.exp(log_rows_per_s))
    runs = quality.warmup + quality.runs + int(quality.profile)
    return runs * (run + RUN_OVERHEAD_S)


def tasks(ensemble: Any, hardware: Hardware, workloads: Iterable[Workload], *,
          top: int = TOP_PLANS, uncertain: int = UNCERTAIN_PLANS, quality: Quality = QUALITY,
          skip: Iterable[tuple[str, str]] = (), rule: Rule = DEFAULT_RULE) -> list[Task]:
    """The design's (workload, plan) pairs in priority order: per workload the default plan
    (``rule``'s, what auto runs without a model; the engine default where the rule's plan is not
    a candidate here) and
    the model's first choice; then, per workload, the ``uncertain`` pairs the trees disagree on
    most among the contenders (plans predicted within :data:`CONTENDER` × of the best; not
    chosen already nor in ``skip``), the most uncertain first; then the model's choices
    2 … ``top``.
    """
    workloads = list(workloads)
    cores = hardware.cores
    first: list[Task] = []
    later: list[Task] = []
    chosen: set[tuple[str, str]] = set()

    def add(into: list[Task], w: Workload, plan: Plan, reason: str, log_rate: float) -> None:
        if (w.id, plan.id) not in chosen:
            chosen.add((w.id, plan.id))
            into.append(Task(w, plan, reason, predicted_seconds(log_rate, w, quality)))

    contenders: dict[Workload, list[Plan]] = {}
    for w in workloads:
        candidates = plans_for(w, hardware)
        ranked = ensemble.rank(w, candidates, hardware)
        by_id = {r.plan.id: r for r in ranked}
        contenders[w] = [r.plan for r in ranked
                         if ranked[0].log_rows_per_s - r.log_rows_per_s <= math.log(CONTENDER)]
        ruled = rule.plan(w, cores)
        default = (ruled if ruled in candidates else default_plan(w)).resolved(cores)
        if default.id in by_id:
            add(first, w, default, "default", by_id[default.id].log_rows_per_s)
        for k, r in enumerate(ranked[:top]):
            add(first if k == 0 else later, w, r.plan, f"top-{k + 1}", r.log_rows_per_s)
    suggested = []
    done = chosen | set(skip)
    for w in workloads:  # per workload, so that no one workload takes them all
        suggested += [(spread, w, Plan.from_id(plan_id)) for _, plan_id, spread in
                      ensemble.suggest_experiments(uncertain, hardware, [w],
                                                   plans=contenders.__getitem__,
                                                   measured=done)]
    middle: list[Task] = []
    for _, w, plan in sorted(suggested, key=lambda s: -s[0]):
        x = ensemble.extractor.extract(w, plan, hardware)
        add(middle, w, plan, "uncertain", float(ensemble.throughput(x[None, :])[0][0]))
    return first + middle + later


def warm_up(workload: Workload, plan: Plan, batches: list[tuple[Any, Any]]) -> float:
    """One warm-up run as the collector makes it (a fresh estimator streaming ``batches``),
    timed; ``inf`` when the plan fails (:func:`collect.measure_interleaved` then stores the
    failure)."""

    model = RenewableHuberRegressor(plan=plan, fit_intercept=workload.intercept,
                                    alpha=PENALTY_ALPHA if workload.penalized else 0.0)
    start = time.perf_counter()
    try:
        for X, y in batches:
            model.partial_fit(X, y)
    except Exception:
        return math.inf
    return time.perf_counter() - start


def model_in_effect(hardware_id: str) -> tuple[Any, str, Rule]:
    """The ensemble of this machine's local models when they load, else the shipped one; which
    it is; and the default rule written beside it."""

    if local.has_models(hardware_id):
        directory = local.models_dir(hardware_id)
        try:
            return Ensemble.load(directory), "local", load_rule(directory)
        except (OSError, ValueError):
            pass
    return Ensemble.load(), "shipped", load_rule(default_models_dir())


def machine() -> Hardware:
    """This machine's measured fingerprint (the probes run once; cached in cache_dir())."""

    return fingerprint(measure=True)


@dataclass(frozen=True)
class CalibrationResult:
    models_dir: Path
    hardware_id: str
    measured: list[Measurement]  # in this call
    skipped: int  # designed pairs left out (budget, or predicted too long)
    training_measurements: int  # corpus and local rows after the merge
    local_measurements: int  # of them from the local store
    model: str  # the model that chose the plans: "local" or "shipped"
    measure_seconds: float
    train_seconds: float
    seconds: float


def calibrate(*, budget_s: float = BUDGET_S, workloads: Sequence[Workload] | None = None,
              top: int = TOP_PLANS, uncertain: int = UNCERTAIN_PLANS,
              quality: Quality = QUALITY,
              hardware: Hardware | None = None,
              base: tuple[Sequence[Measurement], dict[str, dict[str, Any]]] | None = None,
              params: dict[str, dict[str, Any]] | None = None,
              train_reserve_fraction: float = TRAIN_RESERVE_FRACTION,
              progress: Callable[[str], None] | None = print) -> CalibrationResult:
    """Measure the design (:func:`design`, :func:`tasks`) into the local store, then train and
    write this machine's local models; ``budget_s`` bounds the whole (training included, as
    well as the model predicts it). ``base``, ``params``: as :func:`local.train` (the shipped
    corpus and :data:`local.LOCAL_PARAMS` by default)."""
    say = progress or (lambda text: None)
    start = time.perf_counter()

    def elapsed() -> float:
        return time.perf_counter() - start

    local.writable_cache_dir()  # before the fingerprint's seconds of probes, not after them
    hw = hardware if hardware is not None else machine()
    if not hw.measured:
        raise ValueError("calibrate needs a measured fingerprint (fingerprint(measure=True))")
    say(f"[{elapsed():5.1f} s] hardware {hw.hardware_id}: {hw.cpu_model}, {hw.cores} cores")
    ensemble, source, rule = model_in_effect(hw.hardware_id)
    workloads = design() if workloads is None else list(workloads)
    with local.open_store() as store:
        store.add_hardware(hw.hardware_id, hw.as_dict())
        todo = tasks(ensemble, hw, workloads, top=top, uncertain=uncertain, quality=quality,
                     skip=store.done(hw.hardware_id), rule=rule)
        say(f"[{elapsed():5.1f} s] {len(todo)} pairs designed over {len(workloads)} workloads "
            f"(plans ranked by the {source} model); measuring into {store.path}")
        deadline = budget_s * (1.0 - train_reserve_fraction)
        measured: list[Measurement] = []
        skipped = 0
        batches: dict[Workload, list[tuple[Any, Any]]] = {}
        measure_start = elapsed()
        timed = replace(quality, warmup=0)  # the probe below is the warm-up
        done = 0  # tasks decided so far, for the log's i/n
        # Consecutive tasks of one workload and backend together (each workload's default and
        # first choice lead the priority order side by side).
        for (w, _), run in itertools.groupby(todo, lambda t: (t.workload, t.plan.backend)):
            group = list(run)
            if w not in batches:  # generated once per workload, outside the timing
                batches[w] = workload_batches(w, quality.batches_per_run)
            fits, pending = [], 0.0  # pending: the timed runs the group's fits still take
            for task in group:
                done += 1
                if (task.predicted_s > MAX_TASK_S
                        or elapsed() + pending + task.predicted_s > deadline):
                    skipped += 1
                    continue
                # The warm-up runs here, timed: a model's prediction can be far off (that is
                # what calibrating is for), so the measured run decides whether the rest fits.
                probe = [warm_up(w, task.plan, batches[w]) for _ in range(max(1, quality.warmup))]
                rest = (quality.runs + int(quality.profile)) * (probe[-1] + RUN_OVERHEAD_S)
                if probe[-1] < math.inf and (rest > MAX_TASK_S
                                             or elapsed() + pending + rest > deadline):
                    skipped += 1
                    say(f"[{elapsed():5.1f} s] {done:>3}/{len(todo)} {w.id} {task.plan.id} "
                        f"({task.reason}): left out, a run takes {probe[-1]:.3g} s")
                    continue
                fits.append((done, task))
                pending += rest if rest < math.inf else 0.0
            if not fits:
                continue
            # The pairs of a workload that fit are timed together, their runs interleaved
            # (collect.measure_interleaved): the default and the model's first choice, which
            # the priority order puts side by side, are compared within the same rounds.
            taken = measure_interleaved(w, [t.plan for _, t in fits], hw.hardware_id, timed,
                                        batches[w])
            for (i, task), m in zip(fits, taken, strict=True):
                store.record(m)
                measured.append(m)
                rate = f"{m.rows_per_s:.3g} rows/s" if m.rows_per_s else m.error or ""
                say(f"[{elapsed():5.1f} s] {i:>3}/{len(todo)} {w.id} {task.plan.id} "
                    f"({task.reason}): {rate} {m.status}")
        measure_seconds = elapsed() - measure_start
    say(f"[{elapsed():5.1f} s] measured {len(measured)} pairs in {measure_seconds:.1f} s "
        f"({skipped} left out for the budget); training the local models")
    trained = local.train(hw, base=base, params=params)
    total = elapsed()
    return CalibrationResult(models_dir=trained.path, hardware_id=hw.hardware_id,
                             measured=measured, skipped=skipped,
                             training_measurements=trained.measurements,
                             local_measurements=trained.local, model=source,
                             measure_seconds=measure_seconds, train_seconds=trained.seconds,
                             seconds=total)
