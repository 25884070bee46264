"""The advisor behind ``backend="auto"`` (docs/tuner.md, "The advisor").

When a stream asks (its first batch where this process has loaded the advisor, else once the
stream has shown it is long: :class:`Session`), the throughput model ranks the plans valid here;
auto leaves the rule's plan only when

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
did, the rest of the stream runs the default; otherwise the chosen plan resumes. Where the
model is unsure, its candidates are tried on a long stream and the winner is kept in the local
trials file (:func:`trials_path`); nothing else is written. The choice is a pure function of
the model, the workload and those measurements.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .._atomic import atomic_write
from .._version import __version__
from ..engines.plans import Plan, default_plan, plans_for
from ..engines.workload import Workload
from . import local
from .hardware import Hardware, cache_dir, cached_limits, identified, peek_identity
from .models import MODEL_FILES, Ensemble, Ranked, default_models_dir, load
from .rules import DEFAULT_RULE, Rule, describe_region, region
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
#: Batches a stream runs on the rule's plan before any other plan is tried (or the advisor,
#: not yet loaded, is asked): a stream that has run n batches is taken to run about n more, so
#: the trial's 2 × (TRIAL_PLANS − 1) batches off the rule's plan are at most a tenth of what
#: remains; ``fit`` with fewer than twice this many batches runs the rule's plan throughout.
TRIAL_AFTER_BATCHES = 20
#: The expected stream time (seconds) that pays for loading the advisor in a process that has
#: not loaded it (0.1–0.5 s, measured 0.41 s on a loaded 2-core machine): at most ~4 % of it.
ADVISOR_AFTER_S = 10.0
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
RULE_FIRST = "the rule's plan first"
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

        hw = hardware if hardware is not None else identified()
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
            return unsure(RULE_REGION, f"{describe_region(region(workload))} (region "
                          f"{region(workload)}): on machines held out of training the model did "
                          "not beat the rule, the fixed mapping from a batch's size and penalty "
                          "to a plan that the tuner fitted to its measurements")
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
#: What :func:`available` answers while this process has not loaded its advisor yet.
UNLOADED = "unloaded"


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


def available() -> Advisor | str | None:
    """The advisor :func:`shared` would return if this process has loaded it already (None:
    no model loads), else :data:`UNLOADED` — without loading anything (loading costs
    0.1–0.5 s, which a stream pays only once it has shown it is long: :class:`Session`)."""
    with _SHARED_LOCK:
        if _SHARED.get("generation") != local.generation() or "advisor" not in _SHARED:
            return UNLOADED
        return _SHARED["advisor"]


def current_rule() -> Rule:
    """The rule the advisor would use, without loading it: the local models' ``rule.json``
    when this machine's identity is known already (:func:`hardware.peek_identity`) and it has
    local models, else the shipped one."""
    with _SHARED_LOCK:
        if _SHARED.get("generation") != local.generation():
            _SHARED.clear()
            _SHARED["generation"] = local.generation()
        if "rule" not in _SHARED:
            hw = peek_identity()
            directory = (local.models_dir(hw.hardware_id)
                         if hw is not None and local.has_models(hw.hardware_id)
                         else default_models_dir())
            _SHARED["rule"] = load_rule(directory)
        return _SHARED["rule"]


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
    its streams measured (those kept in the local trials file stay)."""
    with _SHARED_LOCK:
        _SHARED.clear()
        _TRIED.clear()
        _TRIAL_FILE.clear()


# ----------------------------------------------------------------------- what trials measured

#: What trials measured in this process: (workload, plans tried) → (winner, detail). A later
#: stream of the same workload runs the winner without trying again.
_TRIED: dict[tuple[Workload, tuple[Plan, ...]], tuple[Plan, str]] = {}
#: The local trials file (:func:`trials_path`) as read once by this process.
_TRIAL_FILE: dict[str, dict[str, Any]] = {}
TRIALS_FILE = "trials.json"
TRIALS_FORMAT = 1


def trials_path() -> Path:
    """Where trials' winners are kept for the next processes of this machine:
    ``<cache_dir>/trials.json`` beside the local store, keyed by hardware id, library version,
    workload and the plans tried."""
    return cache_dir() / TRIALS_FILE


def _trial_file_key(workload: Workload, trials: tuple[Plan, ...]) -> str | None:
    """The trials file's key of a trial; None when this process has no advisor of its own
    (whose hardware id keys the file)."""
    advisor = _SHARED.get("advisor")
    hardware = getattr(advisor, "hardware", None)
    hardware_id = getattr(hardware, "hardware_id", None)
    if not isinstance(hardware_id, str):
        return None
    return "|".join((hardware_id, __version__, workload.id, *(p.id for p in trials)))


def _read_trial_file() -> dict[str, Any]:
    if "entries" not in _TRIAL_FILE:
        try:
            data = json.loads(trials_path().read_text())
            entries = data["entries"] if data.get("format") == TRIALS_FORMAT else {}
            if not isinstance(entries, dict):
                entries = {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            entries = {}
        _TRIAL_FILE["entries"] = entries
    return _TRIAL_FILE["entries"]


def remembered(workload: Workload, trials: tuple[Plan, ...]) -> tuple[Plan, str] | None:
    """The winner and detail of an earlier trial of ``trials`` on ``workload``: in this process,
    else in the local trials file; None when none was run."""
    with _SHARED_LOCK:
        known = _TRIED.get((workload, trials))
        if known is not None:
            return known[0], f"{known[1]}; remembered from an earlier stream of this process"
        key = _trial_file_key(workload, trials)
        if key is None:
            return None
        entry = _read_trial_file().get(key)
    try:
        winner = Plan.from_id(entry["winner"])
    except (TypeError, KeyError, ValueError):
        return None
    if winner not in trials:
        return None
    return winner, (f"{entry.get('detail', '')}; remembered from an earlier process "
                    f"({entry.get('at', '?')})")


def _remember(workload: Workload, trials: tuple[Plan, ...], winner: Plan, detail: str) -> None:
    """Keep a trial's winner for this process and, where the advisor knows this machine, in the
    local trials file (a file that cannot be written is only a missed saving)."""
    with _SHARED_LOCK:
        if len(_TRIED) >= _MAX_ANSWERS:
            _TRIED.clear()
        _TRIED[(workload, trials)] = (winner, detail)
        key = _trial_file_key(workload, trials)
        if key is None:
            return
        entries = dict(_read_trial_file())
        entries[key] = {"winner": winner.id, "detail": detail,
                        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        while len(entries) > _MAX_ANSWERS:
            entries.pop(next(iter(entries)))
        _TRIAL_FILE["entries"] = entries
        try:
            path = trials_path()
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_write(path) as out:
                json.dump({"format": TRIALS_FORMAT, "entries": entries}, out, indent=0)
        except OSError:
            pass


# ----------------------------------------------------------------------- the stream's evidence


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 'es' if word.endswith('h') else 's'}"


@dataclass(frozen=True)
class PlanReport:
    """``est.plan_``: the plan that ran the stream's last batch, why, and what it measured (the
    median rows/s of its batches in this stream, each batch's rows over its update time, its
    first batch — the warm-up — left out unless it is the only one)."""

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
        if self.measured_rows_per_s is not None:
            text += " (its batches' median, the first left out)"
        return text + (f"; model {self.model_id}" if self.model_id else "")


#: A question for the advisor, kept by a stream that has not asked it yet: (workload, candidate
#: plans, the rule's plan).
Question = tuple[Workload, tuple[Plan, ...], Plan]
#: Rates kept per plan (a warm-up and the evidence after it): enough for a median.
_RATES_KEPT = 8


def _add_rate(rates: tuple[tuple[str, tuple[float, ...]], ...], plan: str, rate: float
              ) -> tuple[tuple[str, tuple[float, ...]], ...]:
    if rates and rates[-1][0] == plan and len(rates[-1][1]) >= _RATES_KEPT:
        return rates  # the plan running on has rates enough
    for i, (name, values) in enumerate(rates):
        if name == plan:
            if len(values) >= _RATES_KEPT:
                return rates
            return (*rates[:i], (name, (*values, rate)), *rates[i + 1:])
    return (*rates, (plan, (rate,)))


@dataclass(frozen=True)
class Session:
    """One stream's plan: what runs next (``plan``; None means the estimator's own settings),
    why, and the evidence of its first batches. Immutable: :meth:`observe` returns the next
    session, so an update that fails leaves the old one in place.

    - **A trial pays for itself or does not run.** Where the model is unsure (advice with
      ``trials``) the rule's plan runs the stream's first :data:`TRIAL_AFTER_BATCHES` batches
      (a stream that has run n batches is taken to run about n more; ``fit`` knows its length,
      and one under twice that many runs the rule's plan to the end: ``TOO_SHORT``). Then each
      other trial plan runs :data:`TRIAL_PLAN_BATCHES` batches, a warm-up and an evidence
      batch; the rule's evidence is the median of its batches so far. The plan with the most
      rows/s on its evidence runs the rest of the stream (ties to the earlier plan, so equal
      timings give the same choice), and the winner is remembered for later streams of the
      workload, in this process and in the local trials file (:func:`trials_path`).
    - **The advisor is loaded only for a long stream.** While this process has not loaded the
      advisor (:func:`available`), a stream starts on the rule's plan and keeps the question
      (``waiting``); once it has run :data:`TRIAL_AFTER_BATCHES` batches and its expected time
      (twice its time so far, or its known length at its pace so far) reaches
      :data:`ADVISOR_AFTER_S`, the advisor is loaded and asked. A short stream never pays for it.
    - A chosen plan runs :data:`WARMUP_BATCHES` + :data:`EVIDENCE_BATCHES` batches; if their
      median rows/s reaches promised / (1 + :data:`REVERT_MARGIN`) it stays. Otherwise the
      promise is broken and the default gets a trial of :data:`WARMUP_BATCHES` +
      :data:`TRIAL_BATCHES` batches: the faster of the two, as measured, runs the rest.
    """

    display: str  # the plan id of the next batch
    reason: str
    detail: str = ""
    plan: Plan | None = None
    promised: float | None = None  # predicted rows/s of what runs
    model_id: str | None = None
    advice: Advice | None = None
    timings: tuple[float, ...] = field(default=())  # rows/s of the chosen plan's first batches
    trial: tuple[float, ...] | None = None  # rows/s of the default's trial, while it runs
    settled: bool = False
    trials: tuple[Plan, ...] = ()  # the plans being tried, while a trial runs
    tried: tuple[tuple[float, ...], ...] = ()  # rows/s of each trial plan's batches so far
    waiting: Question | None = None  # the advisor not asked yet (not loaded in the process)
    batches: int = 0  # batches observed while the session was not settled
    seconds: float = 0.0  # their time
    length: int | None = None  # the stream's batches, when known (fit)
    ran: str = ""  # the plan id of the last batch
    rates: tuple[tuple[str, tuple[float, ...]], ...] = ()  # rows/s per plan id, first batches

    @classmethod
    def from_advice(cls, advice: Advice, batches: int | None = None) -> Session:
        if advice.trials:
            known = remembered(advice.workload, advice.trials)
            if known is not None:
                winner, detail = known
                return cls._winner(advice, winner, detail)
            if batches is not None and batches < 2 * TRIAL_AFTER_BATCHES:
                return cls._too_short(advice.default, batches, advice)
            return cls(advice.default.id, RULE_FIRST, f"trials after {TRIAL_AFTER_BATCHES} "
                       f"batches; {advice.detail}", advice.default, advice.default_rows_per_s,
                       advice.model_id, advice, length=batches)
        return cls(advice.plan.id, advice.reason, advice.detail, advice.plan,
                   advice.predicted_rows_per_s, advice.model_id, advice, length=batches)

    @classmethod
    def rule_first(cls, question: Question, batches: int | None = None) -> Session:
        """The session of a stream that starts on the rule's plan before the advisor is loaded
        in this process (:func:`available`)."""
        default = question[2]
        if batches is not None and batches < 2 * TRIAL_AFTER_BATCHES:
            return cls._too_short(default, batches, None)
        return cls(default.id, RULE_FIRST, "the rule maps a batch's size and penalty to a plan, "
                   "fitted to the tuner's measurements; the model is asked once the stream has "
                   f"run {TRIAL_AFTER_BATCHES} batches and is expected to take "
                   f"{ADVISOR_AFTER_S:g} s", default, waiting=question, length=batches)

    @classmethod
    def _too_short(cls, default: Plan, batches: int, advice: Advice | None) -> Session:
        return cls(default.id, TOO_SHORT, f"{_plural(batches, 'batch')}; trials need "
                   f"{2 * TRIAL_AFTER_BATCHES} or more", default,
                   None if advice is None else advice.default_rows_per_s,
                   None if advice is None else advice.model_id, advice, settled=True,
                   length=batches)

    @classmethod
    def _winner(cls, advice: Advice, winner: Plan, detail: str, **kwargs: Any) -> Session:
        predicted = {r.plan: math.exp(r.log_rows_per_s) for r in advice.ranked}
        return cls(winner.id, TRIED, detail, winner, predicted.get(winner), advice.model_id,
                   advice, settled=True, **kwargs)

    def _evolve(self, **changes: Any) -> Session:
        """``replace(self, **changes)`` without re-running the constructor: a stream on the
        rule's plan evolves its session every batch, and ``replace`` costs ~10 µs of a 0.6 ms
        batch."""
        new = object.__new__(Session)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new

    def measured(self, plan: str | None = None) -> float | None:
        """Median rows/s of ``plan``'s batches in this stream (default: the plan of the next
        batch), its warm-up left out unless it is the only one; None when it ran none."""
        name = self.display if plan is None else plan
        for key, values in self.rates:
            if key == name:
                return _median_after_warmup(values)
        return None

    def observe(self, rows: int, seconds: float) -> Session:
        """The session after a batch of ``rows`` took ``seconds`` on the plan that ran."""
        if self.settled:
            return self if self.ran == self.display else replace(self, ran=self.display)
        if not seconds > 0:
            return replace(self, ran=self.display)
        rate = rows / seconds
        now = self._evolve(ran=self.display, batches=self.batches + 1,
                           seconds=self.seconds + seconds,
                           rates=_add_rate(self.rates, self.display, rate))
        if self.trials:
            return now._next_trial(rate)
        if self.reason == RULE_FIRST:
            return now._rule_first()
        if self.trial is not None:
            return now._judge_trial((*self.trial, rate))
        nxt = replace(now, timings=(*self.timings, rate))
        if len(nxt.timings) < WARMUP_BATCHES + EVIDENCE_BATCHES:
            return nxt
        measured = _median_after_warmup(nxt.timings)
        assert measured is not None
        if self.reason != CHOSEN or measured >= (self.promised or 0.0) / (1.0 + REVERT_MARGIN):
            return replace(nxt, settled=True)
        assert self.advice is not None  # the promise is broken: time the default
        return replace(nxt, display=self.advice.default.id, plan=self.advice.default, trial=())

    def _rule_first(self) -> Session:
        """A batch on the rule's plan while the stream shows whether it is long."""
        if self.batches < TRIAL_AFTER_BATCHES:
            return self
        if self.waiting is not None:
            expected = (self.seconds * 2 if self.length is None
                        else self.seconds / self.batches * self.length)
            if expected < ADVISOR_AFTER_S and "advisor" not in _SHARED:
                return self  # not loaded (checked again under the lock below when it may be)
            advisor = available()
            if advisor is UNLOADED and expected < ADVISOR_AFTER_S:
                return self
            if advisor is UNLOADED:
                advisor = shared()
            if advisor is None:
                return replace(self, reason=NO_MODEL, detail="the tuner's models could not be "
                               "loaded; the rule's plan", waiting=None, settled=True)
            workload, candidates, default = self.waiting
            advice = advisor.advise(workload, candidates=candidates, default=default)
            return self._advised(advice)
        assert self.advice is not None
        return self._start_trials(self.advice)

    def _advised(self, advice: Advice) -> Session:
        """The stream's next batches once the advisor answered (mid-stream)."""
        keep = {"ran": self.ran, "rates": self.rates, "batches": self.batches,
                "seconds": self.seconds, "length": self.length}
        if advice.trials:
            known = remembered(advice.workload, advice.trials)
            if known is not None:
                return Session._winner(advice, known[0], known[1], **keep)
            return self._start_trials(advice)
        if advice.plan == advice.default:  # the rule's plan runs already: nothing to try
            return Session(advice.plan.id, advice.reason, advice.detail, advice.plan,
                           advice.predicted_rows_per_s, advice.model_id, advice, settled=True,
                           **keep)
        return Session(advice.plan.id, advice.reason, advice.detail, advice.plan,
                       advice.predicted_rows_per_s, advice.model_id, advice, **keep)

    def _start_trials(self, advice: Advice) -> Session:
        """The trial of ``advice.trials`` after the rule's plan (their first) has run the
        stream's first batches: its evidence is their median after the warm-up."""
        rule = self.measured(advice.default.id)
        assert rule is not None and advice.trials[0] == advice.default
        nxt = advice.trials[1]
        return replace(self, display=nxt.id, reason=TRIAL, detail=advice.detail, plan=nxt,
                       promised=advice.default_rows_per_s, model_id=advice.model_id,
                       advice=advice, waiting=None, trials=advice.trials,
                       tried=((rule, rule), ()))

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
        detail = f"{figures} rows/s measured ({self.detail})"
        _remember(self.advice.workload, self.trials, winner, detail)
        return Session._winner(self.advice, winner, detail, ran=self.ran, rates=self.rates,
                               batches=self.batches, seconds=self.seconds, length=self.length)

    def _judge_trial(self, trial: tuple[float, ...]) -> Session:
        if len(trial) < WARMUP_BATCHES + TRIAL_BATCHES:
            return replace(self, trial=trial)
        chosen, default = _median_after_warmup(self.timings), _median_after_warmup(trial)
        assert chosen is not None and default is not None and self.advice is not None
        versus = (f"{self.advice.plan.id} measured {chosen:,.0f} rows/s (promised "
                  f"{self.promised:,.0f}), the default {default:,.0f}")
        if chosen >= default:
            return replace(self, display=self.advice.plan.id,
                           detail=f"{self.detail}; kept: {versus}", plan=self.advice.plan,
                           trial=None, settled=True)
        return replace(self, reason=REVERTED, detail=versus,
                       promised=self.advice.default_rows_per_s, trial=trial, settled=True)

    def report(self) -> PlanReport:
        """What ran the last batch (before the first: what runs it), why, and its measured
        rows/s; the detail names the next batch's plan when it differs."""
        ran = self.ran or self.display
        detail = self.detail
        if self.trials:  # a trial still running: what it has measured so far
            done = [(p, t[-1]) for p, t in zip(self.trials, self.tried, strict=False)
                    if len(t) == TRIAL_PLAN_BATCHES]
            so_far = ", ".join(f"{p.id} {r:,.0f} rows/s" for p, r in done) or "nothing yet"
            detail = (f"{detail}; trying {len(self.tried)} of {len(self.trials)} plans, "
                      f"measured so far: {so_far}")
        if ran != self.display:
            detail = f"{detail}; the next batch runs {self.display}"
        promised = self.promised
        if ran != self.display and self.advice is not None:
            promised = {r.plan.id: math.exp(r.log_rows_per_s)
                        for r in self.advice.ranked}.get(ran)
        return PlanReport(ran, self.reason, detail, promised, self.measured(ran), self.model_id)
