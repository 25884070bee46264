"""The advisor behind ``backend="auto"`` (docs/tuner.md, "The advisor").

For the first batch of a stream, the throughput model ranks the plans valid here; auto leaves the
safe default plan only when

1. the workload is inside the training distribution: this machine's bandwidth and peak are known
   (from the model's own fingerprint of this hardware id, or the fingerprint cache — never probed
   here), the batch's rows and features lie within the training workloads' sizes, every feature of
   the default plan lies within the training rows' range (± :data:`FEATURE_TOLERANCE`), and the
   trees' disagreement on the best plan is at most the model's ``uncertainty_bound`` (the 99th
   percentile over its training rows);
2. the best plan's predicted gain over the default is at least :data:`GAIN_MARGIN`;
3. the plan classifier agrees: it gives the best plan at least the probability it gives the
   default.

Then :class:`Session` keeps process-local evidence: the chosen plan's first batches are timed
(after :data:`WARMUP_BATCHES`, the median of :data:`EVIDENCE_BATCHES`). If the measured rows/s
fall short of the promised rows/s by more than :data:`REVERT_MARGIN` (below
promised / (1 + margin)), the promise is broken, and the default plan runs the next batches as a
trial (a warm-up and :data:`TRIAL_BATCHES` timed): if it measures faster than the chosen plan
did, the rest of the stream runs the default; otherwise the chosen plan resumes. Nothing is
written anywhere; the choice is a pure function of the model, the workload and those
measurements.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..engines.plans import Plan, default_plan, plans_for
from ..engines.workload import Workload
from . import local
from .hardware import Hardware, cached_limits, identify
from .models import MODEL_FILES, Ensemble, Ranked, default_models_dir, load
from .rules import DEFAULT_RULE, Rule, region
from .rules import load as load_rule

#: The predicted gain over the default plan needed to leave it (10 %).
GAIN_MARGIN = 0.10
#: How far the measured rows/s may fall short of the promise before auto reverts.
REVERT_MARGIN = 0.10
#: Batches on the chosen plan not timed as evidence (engine start, first touch of memory).
WARMUP_BATCHES = 1
#: Batches whose median rows/s is compared with the promise.
EVIDENCE_BATCHES = 3
#: Batches of the default timed (after a warm-up) when a chosen plan broke its promise.
TRIAL_BATCHES = 2
#: Plans timed on the stream's first batches when the model is unsure (the default first).
TRIAL_PLANS = 3
#: Batches per trial plan: a warm-up (engine start, first touch) and one evidence batch.
TRIAL_PLAN_BATCHES = 2
#: How far (in the [0, 1] feature scale) a feature may lie outside its training range.
FEATURE_TOLERANCE = 0.02
#: Answers an advisor remembers before it starts afresh.
_MAX_ANSWERS = 4096

CHOSEN = "chosen by the model"
OUT_OF_DISTRIBUTION = "default: out of distribution"
GAIN_BELOW_MARGIN = "default: gain below margin"
CLASSIFIER_DISAGREES = "default: plan classifier disagrees"
NO_MODEL = "default: no model"
RULE_REGION = "default: the rule (the model does not beat it here)"
TRIAL = "trial of the model's candidates"
TRIED = "chosen by trial"
TOO_SHORT = "default: stream too short for trials"
REVERTED = "reverted: measured slower"
PINNED = "pinned by plan="
PINNED_ENV = "pinned by RH_PLAN"
USER_BACKEND = "set by backend="

#: Feature-name prefixes of the plan part of a feature vector (the rest is workload + hardware).
_PLAN_FEATURES = ("backend_", "gram_", "l1_", "threads_", "chunk", "profile_", "brick_")


@dataclass(frozen=True)
class Advice:
    """The advisor's answer for one workload."""

    workload: Workload
    plan: Plan  # what auto runs
    default: Plan  # the safe default plan, resolved
    reason: str
    detail: str
    predicted_rows_per_s: float | None  # of ``plan``
    default_rows_per_s: float | None  # predicted, of ``default``
    ranked: tuple[Ranked, ...] = ()  # in-distribution candidates, best first
    model_id: str | None = None
    trials: tuple[Plan, ...] = ()  # when unsure: the plans to time, the default first

    @property
    def chosen(self) -> bool:
        return self.reason == CHOSEN

    @property
    def out_of_distribution(self) -> bool:
        """Whether the workload (or this machine) lies outside the training distribution,
        whether or not trials follow."""
        return self.reason == OUT_OF_DISTRIBUTION or (
            self.reason == TRIAL and self.detail.startswith("out of distribution"))


def _median_after_warmup(rates: tuple[float, ...]) -> float | None:
    evidence = rates[WARMUP_BATCHES:] or rates
    return statistics.median(evidence) if evidence else None


def _model_id(source: str, directory: Path) -> str:
    digest = hashlib.sha256((directory / MODEL_FILES["throughput"]).read_bytes()).hexdigest()
    return f"{source}:{digest[:12]}"


class Advisor:
    """A loaded model set and this machine's fingerprint; :meth:`advise` is deterministic."""

    def __init__(self, ensemble: Ensemble, hardware: Hardware, *, source: str = "shipped",
                 model_id: str = "unknown", rule: Rule = DEFAULT_RULE) -> None:
        self.ensemble = ensemble
        self.rule = rule
        self.source = source
        self.model_id = model_id
        meta = ensemble.models["throughput"].metadata
        if "feature_min" not in meta:
            raise ValueError("the throughput model has no training distribution (trained by an "
                             "older version); retrain it with `rhuber tune train`")
        self.feature_min = np.asarray(json.loads(meta["feature_min"]), dtype=np.float64)
        self.feature_max = np.asarray(json.loads(meta["feature_max"]), dtype=np.float64)
        self.rows_range = tuple(json.loads(meta["rows_range"]))
        self.features_range = tuple(json.loads(meta["features_range"]))
        self.uncertainty_bound = float(meta["uncertainty_bound"])
        fingerprints = json.loads(meta.get("fingerprints", "{}"))
        if not hardware.measured and hardware.hardware_id in fingerprints:
            hardware = Hardware.from_dict(fingerprints[hardware.hardware_id])
        self.hardware = hardware
        names = ensemble.extractor.names
        self._workload_features = np.asarray([not n.startswith(_PLAN_FEATURES) for n in names])
        self._answers: dict[tuple[Any, ...], Advice] = {}
        self._lock = threading.Lock()

    @classmethod
    def load(cls, hardware: Hardware | None = None,
             models_dir: str | Path | None = None) -> Advisor:
        """The models of ``models_dir``; by default this machine's local models
        (``rhuber tune calibrate``) when they exist, else the shipped ones."""

        hw = hardware if hardware is not None else identify()
        if not hw.measured:
            limits = cached_limits(hw.hardware_id)
            if limits is not None:
                hw = replace(hw, **limits)
        if models_dir is not None:
            directory, source = Path(models_dir), "custom"
        else:
            directory, source = local.models_dir(hw.hardware_id), "local"
            if not all((directory / f).exists() for f in MODEL_FILES.values()):
                directory, source = default_models_dir(), "shipped"
        return cls(Ensemble(load(directory)), hw, source=source,
                   model_id=_model_id(source, directory), rule=load_rule(directory))

    # ------------------------------------------------------------------ decisions

    def outside(self, workload: Workload, default: Plan) -> str | None:
        """Why ``workload`` is outside the training distribution, or None when inside."""
        hw = self.hardware
        for name, value, (low, high) in (("rows", workload.rows, self.rows_range),
                                         ("features", workload.features, self.features_range)):
            if not low <= value <= high:
                return f"{name} {value} outside the training workloads' [{low}, {high}]"
        x = self.ensemble.extractor.extract(workload, default, hw)
        bad = self._workload_features & ((x < self.feature_min - FEATURE_TOLERANCE)
                                         | (x > self.feature_max + FEATURE_TOLERANCE))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            return (f"feature {self.ensemble.extractor.names[i]} = {x[i]:.3g} outside the "
                    f"training range [{self.feature_min[i]:.3g}, {self.feature_max[i]:.3g}]")
        return None

    def advise(self, workload: Workload, *, candidates: Sequence[Plan] | None = None,
               default: Plan | None = None) -> Advice:
        """Which plan auto runs for ``workload``, and why.

        ``candidates`` (default :func:`plans_for` here) and ``default`` (default the rule's plan,
        where it is a candidate, else :func:`default_plan`, resolved) let the estimator respect
        settings the user fixed. Answers are remembered per question (a few milliseconds each
        the first time).
        """
        if candidates is None:
            candidates = plans_for(workload, self.hardware)
        if default is None:
            ruled = self.rule.plan(workload, self.hardware.cores)
            default = ruled if ruled in candidates else default_plan(workload)
        default = default.resolved(self.hardware.cores)
        key = (workload, tuple(candidates), default)
        with self._lock:
            if key not in self._answers:
                if len(self._answers) >= _MAX_ANSWERS:
                    self._answers.clear()
                self._answers[key] = self._advise(workload, list(candidates), default)
            return self._answers[key]

    def _advise(self, workload: Workload, candidates: list[Plan], default: Plan) -> Advice:

        def answer(reason: str, detail: str, plan: Plan = default,
                   ranked: tuple[Ranked, ...] = (), predicted: float | None = None,
                   default_rate: float | None = None) -> Advice:
            return Advice(workload, plan, default, reason, detail, predicted, default_rate,
                          ranked, self.model_id)

        why = self.outside(workload, default)
        plans = [default, *(p for p in candidates if p != default)]
        X = np.stack([self.ensemble.extractor.extract(workload, p, self.hardware)
                      for p in plans])
        low, high = self.feature_min - FEATURE_TOLERANCE, self.feature_max + FEATURE_TOLERANCE
        # Candidates whose plan part leaves the training range (cuda, for a model trained
        # without a GPU) are not ranked; the workload and machine part is judged by outside().
        inside = (((low <= X) & (high >= X)) | self._workload_features).all(axis=1)
        inside[0] = True  # the default is always ranked
        log_rate, spread = self.ensemble.throughput(X[inside])
        usable = [p for p, ok in zip(plans, inside, strict=True) if ok]
        order = np.argsort(-log_rate, kind="stable")
        ranked = tuple(Ranked(usable[i], float(log_rate[i]), float(spread[i])) for i in order)
        best, base = ranked[0], next(r for r in ranked if r.plan == default)
        rates = {"ranked": ranked, "default_rate": math.exp(base.log_rows_per_s)}

        def unsure(reason: str, detail: str) -> Advice:
            """Outside the confident region: time the default and the model's candidates
            predicted faster than it (at most TRIAL_PLANS in all) on the first batches."""
            faster = [r.plan for r in ranked if r.log_rows_per_s > base.log_rows_per_s]
            trials = (default, *faster[:TRIAL_PLANS - 1])
            if len(trials) < 2:
                return answer(reason, detail, predicted=rates["default_rate"], **rates)
            return Advice(workload, default, default, TRIAL, f"{reason.removeprefix('default: ')}"
                          f": {detail}", rates["default_rate"], rates["default_rate"], ranked,
                          self.model_id, trials)

        if why is not None:
            return unsure(OUT_OF_DISTRIBUTION, why)
        if best.uncertainty > self.uncertainty_bound:
            return unsure(OUT_OF_DISTRIBUTION, f"the model is unsure of {best.plan.id} "
                          f"(tree spread {best.uncertainty:.3f} > bound "
                          f"{self.uncertainty_bound:.3f})")
        if region(workload) not in self.rule.model_regions:
            return unsure(RULE_REGION, f"region {region(workload)}: on machines held out of "
                          "training the model did not beat the rule")
        gain = math.exp(best.log_rows_per_s - base.log_rows_per_s) - 1.0
        if best.plan == default or gain < GAIN_MARGIN:
            detail = ("the default is predicted fastest" if best.plan == default else
                      f"{best.plan.id} predicted {gain:+.1%}, below {GAIN_MARGIN:.0%}")
            return answer(GAIN_BELOW_MARGIN, detail, predicted=rates["default_rate"], **rates)
        votes = self.ensemble.plan_probabilities(workload, self.hardware)
        if votes.get(best.plan.id, 0.0) < votes.get(default.id, 0.0):
            return answer(CLASSIFIER_DISAGREES,
                          f"{best.plan.id} predicted {gain:+.1%}, but the plan classifier gives "
                          f"it {votes.get(best.plan.id, 0.0):.2f} against the default's "
                          f"{votes.get(default.id, 0.0):.2f}",
                          predicted=rates["default_rate"], **rates)
        return answer(CHOSEN, f"{gain:+.1%} predicted over {default.id}", plan=best.plan,
                      predicted=math.exp(best.log_rows_per_s), **rates)


_SHARED: dict[str, Any] = {}
_SHARED_LOCK = threading.Lock()


def shared() -> Advisor | None:
    """This process's advisor for this machine (loaded once); None when no model loads (the
    reason is warned once)."""
    with _SHARED_LOCK:
        if _SHARED.get("generation") != local.generation():
            _SHARED.clear()
            _SHARED["generation"] = local.generation()
        if "advisor" not in _SHARED:
            try:
                _SHARED["advisor"] = Advisor.load()
            except Exception as exc:  # any unreadable model: auto runs the default
                warnings.warn(f"backend='auto' runs the default plan: the tuner's models could "
                              f"not be loaded ({exc})", RuntimeWarning, stacklevel=2)
                _SHARED["advisor"] = None
        return _SHARED["advisor"]


def use_models(directory: str | Path) -> Advisor:
    """Make the models (and rule) of ``directory`` this process's advisor (benchmarks, a
    machine held out of training)."""
    advisor = Advisor.load(models_dir=directory)
    with _SHARED_LOCK:
        _SHARED.clear()
        _TRIED.clear()
        _SHARED["generation"] = local.generation()
        _SHARED["advisor"] = advisor
    return advisor


def reset_shared() -> None:
    """Forget the process's advisor (after calibration wrote new local models) and the trials
    its streams measured."""
    with _SHARED_LOCK:
        _SHARED.clear()
        _TRIED.clear()


#: What trials measured in this process: (workload, plans tried) → (winner, detail). A later
#: stream of the same workload runs the winner without trying again; never written anywhere.
_TRIED: dict[tuple[Workload, tuple[Plan, ...]], tuple[Plan, str]] = {}


# ----------------------------------------------------------------------- the stream's evidence


@dataclass(frozen=True)
class PlanReport:
    """``est.plan_``: the plan that ran and why."""

    plan: str
    reason: str
    detail: str = ""
    predicted_rows_per_s: float | None = None
    measured_rows_per_s: float | None = None
    model_id: str | None = None

    def __str__(self) -> str:
        def rate(value: float | None) -> str:
            return "n/a" if value is None else f"{value:,.0f} rows/s"

        text = f"{self.plan} ({self.reason}"
        text += f": {self.detail})" if self.detail else ")"
        text += (f"; predicted {rate(self.predicted_rows_per_s)}, measured "
                 f"{rate(self.measured_rows_per_s)}")
        return text + (f"; model {self.model_id}" if self.model_id else "")


@dataclass(frozen=True)
class Session:
    """One stream's plan: what runs next (``plan``; None means the estimator's own settings),
    why, and the evidence of its first batches. Immutable: :meth:`observe` returns the next
    session, so an update that fails leaves the old one in place.

    - A chosen plan runs :data:`WARMUP_BATCHES` + :data:`EVIDENCE_BATCHES` batches; if their
      median rows/s reaches promised / (1 + :data:`REVERT_MARGIN`) it stays. Otherwise the
      promise is broken and the default gets a trial of :data:`WARMUP_BATCHES` +
      :data:`TRIAL_BATCHES` batches: the faster of the two, as measured, runs the rest.
    - Outside the confident region (advice with ``trials``), each trial plan runs
      :data:`TRIAL_PLAN_BATCHES` batches in turn (the default first), a warm-up and an evidence
      batch; the plan with the most rows/s on its evidence batch runs the rest of the stream
      (ties to the earlier plan, so equal timings give the same choice). A stream that is
      known to be too short for them (``batches`` < trials × batches each + 1) runs the
      default.
    """

    display: str  # the plan id shown in plan_
    reason: str
    detail: str = ""
    plan: Plan | None = None
    promised: float | None = None  # predicted rows/s of what runs
    model_id: str | None = None
    advice: Advice | None = None
    timings: tuple[float, ...] = field(default=())  # rows/s of the first batches on ``display``
    trial: tuple[float, ...] | None = None  # rows/s of the default's trial, while it runs
    settled: bool = False
    trials: tuple[Plan, ...] = ()  # the plans being tried, while a trial runs
    tried: tuple[tuple[float, ...], ...] = ()  # rows/s of each trial plan's batches so far

    @classmethod
    def from_advice(cls, advice: Advice, batches: int | None = None) -> Session:
        if advice.trials and (advice.workload, advice.trials) in _TRIED:
            winner, detail = _TRIED[(advice.workload, advice.trials)]
            predicted = {r.plan: math.exp(r.log_rows_per_s) for r in advice.ranked}
            return cls(winner.id, TRIED, f"{detail}; remembered from an earlier stream of this "
                       "process", winner, predicted.get(winner), advice.model_id, advice,
                       settled=True)
        if advice.trials:
            if batches is not None and batches < len(advice.trials) * TRIAL_PLAN_BATCHES + 1:
                return cls(advice.default.id, TOO_SHORT,
                           f"{batches} batches, {len(advice.trials)} plans to try; "
                           f"{advice.detail}", advice.default, advice.default_rows_per_s,
                           advice.model_id, advice, settled=True)
            return cls(advice.trials[0].id, TRIAL, advice.detail, advice.trials[0],
                       advice.default_rows_per_s, advice.model_id, advice,
                       trials=advice.trials, tried=((),))
        return cls(advice.plan.id, advice.reason, advice.detail, advice.plan,
                   advice.predicted_rows_per_s, advice.model_id, advice)

    def measured(self) -> float | None:
        """Median rows/s of the timed batches after the warm-up (the warm-up batch alone when
        there is nothing else yet)."""
        return _median_after_warmup(self.timings)

    def observe(self, rows: int, seconds: float) -> Session:
        """The session after a batch of ``rows`` took ``seconds`` on the plan that ran."""
        if self.settled or not seconds > 0:
            return self
        rate = rows / seconds
        if self.trials:
            return self._next_trial(rate)
        if self.trial is not None:
            return self._judge_trial((*self.trial, rate))
        nxt = replace(self, timings=(*self.timings, rate))
        if len(nxt.timings) < WARMUP_BATCHES + EVIDENCE_BATCHES:
            return nxt
        measured = nxt.measured()
        assert measured is not None
        if self.reason != CHOSEN or measured >= (self.promised or 0.0) / (1.0 + REVERT_MARGIN):
            return replace(nxt, settled=True)
        assert self.advice is not None  # the promise is broken: time the default
        return replace(nxt, plan=self.advice.default, trial=())

    def _next_trial(self, rate: float) -> Session:
        tried = (*self.tried[:-1], (*self.tried[-1], rate))
        if len(tried[-1]) < TRIAL_PLAN_BATCHES:
            return replace(self, tried=tried)
        if len(tried) < len(self.trials):
            nxt = self.trials[len(tried)]
            return replace(self, display=nxt.id, plan=nxt, tried=(*tried, ()))
        evidence = [t[-1] for t in tried]  # each plan's batch after its warm-up
        k = max(range(len(evidence)), key=lambda i: (evidence[i], -i))
        winner = self.trials[k]
        figures = ", ".join(f"{p.id} {r:,.0f}" for p, r in zip(self.trials, evidence,
                                                                strict=True))
        assert self.advice is not None
        predicted = {r.plan: math.exp(r.log_rows_per_s) for r in self.advice.ranked}
        detail = f"{figures} rows/s measured ({self.detail})"
        with _SHARED_LOCK:
            if len(_TRIED) >= _MAX_ANSWERS:
                _TRIED.clear()
            _TRIED[(self.advice.workload, self.trials)] = (winner, detail)
        return Session(winner.id, TRIED, detail, winner,
                       predicted.get(winner), self.model_id, self.advice,
                       timings=tried[k], settled=True)

    def _judge_trial(self, trial: tuple[float, ...]) -> Session:
        if len(trial) < WARMUP_BATCHES + TRIAL_BATCHES:
            return replace(self, trial=trial)
        chosen, default = self.measured(), _median_after_warmup(trial)
        assert chosen is not None and default is not None and self.advice is not None
        versus = (f"{self.display} measured {chosen:,.0f} rows/s (promised "
                  f"{self.promised:,.0f}), the default {default:,.0f}")
        if chosen >= default:
            return replace(self, detail=f"{self.detail}; kept: {versus}", plan=self.advice.plan,
                           trial=None, settled=True)
        return Session(self.advice.default.id, REVERTED, versus, self.advice.default,
                       self.advice.default_rows_per_s, self.model_id, self.advice, trial,
                       settled=True)

    def report(self) -> PlanReport:
        if self.trials:  # a trial still running: what it has measured so far
            done = [(p, t[-1]) for p, t in zip(self.trials, self.tried, strict=False)
                    if len(t) == TRIAL_PLAN_BATCHES]
            so_far = ", ".join(f"{p.id} {r:,.0f} rows/s" for p, r in done) or "nothing yet"
            current = self.tried[-1] if self.tried else ()
            return PlanReport(self.display, self.reason,
                              f"{self.detail}; trying {len(self.tried)} of {len(self.trials)} "
                              f"plans, measured so far: {so_far}", self.promised,
                              _median_after_warmup(current) if current else None,
                              self.model_id)
        return PlanReport(self.display, self.reason, self.detail, self.promised,
                          self.measured(), self.model_id)
