"""The advisor behind ``backend="auto"`` (docs/tuner.md, "The advisor").

When a stream asks (its first batch where this process has loaded the advisor, else once the
stream has shown it is long: :class:`.session.Session`), the throughput model ranks the plans
valid here; auto leaves the rule's plan only when

1. the workload is inside the training distribution: this machine's bandwidth and peak are known
   (from the model's own fingerprint of this hardware id, or the fingerprint cache — never probed
   here), the batch's rows and features lie within the training workloads' sizes, every feature of
   the default plan lies within the training rows' range (± :data:`FEATURE_TOLERANCE`), and the
   trees' disagreement on the best plan is at most the model's ``uncertainty_bound`` (the 99th
   percentile over its training rows);
2. the best plan's predicted gain over the default is at least :data:`GAIN_MARGIN`;
3. the plan classifier agrees: it gives the best plan at least the probability it gives the
   default.

Then the stream's session (:mod:`.session`, with the margins and batch counts below) keeps
process-local evidence: the chosen plan's first batches are timed
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

import functools
import hashlib
import json
import math
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from .._atomic import atomic_write
from .._version import __version__
from ..engines.plans import Plan, default_plan, plans_for
from ..engines.workload import Workload
from . import local
from .current import LOCK as _SHARED_LOCK
from .current import SHARED as _SHARED
from .current import loaded, trials_changed
from .hardware import Hardware, cache_dir, cached_limits, identified
from .models import MODEL_FILES, Ensemble, Ranked, default_models_dir, load
from .reasons import (
    CHOSEN,
    CLASSIFIER_DISAGREES,
    GAIN_BELOW_MARGIN,
    OUT_OF_DISTRIBUTION,
    RULE_REGION,
    TRIAL,
)
from .rules import DEFAULT_RULE, Rule, describe_region, region
from .rules import load as load_rule

#: The predicted gain over the default plan needed to leave it (10 %).
GAIN_MARGIN = 0.10
#: Plans timed on the stream's first batches when the model is unsure (the default first).
TRIAL_PLANS = 3
#: How far (in the [0, 1] feature scale) a feature may lie outside its training range.
FEATURE_TOLERANCE = 0.02
#: Answers an advisor remembers before it starts afresh.
_MAX_ANSWERS = 4096


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

    @functools.cached_property
    def trial_key(self) -> str:
        """What keys a trial of this advice's plans on its workload (:func:`remembered`): made
        once per answer, which every stream of the workload looks up."""
        return trial_key(self.workload, self.trials)

    @property
    def chosen(self) -> bool:
        return self.reason == CHOSEN

    @property
    def out_of_distribution(self) -> bool:
        """Whether the workload (or this machine) lies outside the training distribution,
        whether or not trials follow."""
        return self.reason == OUT_OF_DISTRIBUTION or (
            self.reason == TRIAL and self.detail.startswith("out of distribution"))


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


def shared() -> Advisor | None:
    """This process's advisor for this machine (loaded once); None when no model loads (the
    reason is warned once). Whether it is loaded already: :func:`.current.available`."""
    with _SHARED_LOCK:
        state = loaded()
        if "advisor" not in state:
            try:
                state["advisor"] = Advisor.load()
            except Exception as exc:  # any unreadable model: auto runs the default
                warnings.warn(f"backend='auto' runs the default plan: the tuner's models could "
                              f"not be loaded ({exc})", RuntimeWarning, stacklevel=2)
                state["advisor"] = None
        return state["advisor"]


def use_models(directory: str | Path) -> Advisor:
    """Make the models (and rule) of ``directory`` this process's advisor (benchmarks, a
    machine held out of training)."""
    advisor = Advisor.load(models_dir=directory)
    with _SHARED_LOCK:
        _SHARED.clear()
        _TRIED.clear()
        trials_changed()
        loaded()["advisor"] = advisor
    return advisor


def reset_shared() -> None:
    """Forget the process's advisor (after calibration wrote new local models) and the trials
    its streams measured (those kept in the local trials file stay)."""
    with _SHARED_LOCK:
        _SHARED.clear()
        _TRIED.clear()
        _TRIAL_FILE.clear()
        trials_changed()


# ----------------------------------------------------------------------- what trials measured

#: What trials measured in this process: :func:`trial_key` (workload, plans tried) → (winner,
#: detail). A later stream of the same workload runs the winner without trying again.
_TRIED: dict[str, tuple[Plan, str]] = {}
#: The local trials file (:func:`trials_path`) as read once by this process.
_TRIAL_FILE: dict[str, dict[str, Any]] = {}
TRIALS_FILE = "trials.json"
TRIALS_FORMAT = 1


def trials_path() -> Path:
    """Where trials' winners are kept for the next processes of this machine:
    ``<cache_dir>/trials.json`` beside the local store, keyed by hardware id, library version,
    workload and the plans tried."""
    return cache_dir() / TRIALS_FILE


def trial_key(workload: Workload, trials: tuple[Plan, ...]) -> str:
    """The key of a trial of ``trials`` on ``workload``: their ids."""
    return "|".join((workload.id, *(p.id for p in trials)))


def _trial_file_key(key: str) -> str | None:
    """The trials file's key of the trial :func:`trial_key` ``key``; None when this process has
    no advisor of its own (whose hardware id keys the file)."""
    advisor = _SHARED.get("advisor")
    hardware = getattr(advisor, "hardware", None)
    hardware_id = getattr(hardware, "hardware_id", None)
    if not isinstance(hardware_id, str):
        return None
    return "|".join((hardware_id, __version__, key))


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


def remembered(workload: Workload, trials: tuple[Plan, ...], key: str | None = None
               ) -> tuple[Plan, str] | None:
    """The winner and detail of an earlier trial of ``trials`` on ``workload`` (``key``: their
    :func:`trial_key`, when known): in this process, else in the local trials file; None when
    none was run."""
    key = trial_key(workload, trials) if key is None else key
    with _SHARED_LOCK:
        known = _TRIED.get(key)
        if known is not None:
            return known[0], f"{known[1]}; remembered from an earlier stream of this process"
        file_key = _trial_file_key(key)
        if file_key is None:
            return None
        entry = _read_trial_file().get(file_key)
    try:
        winner = Plan.from_id(entry["winner"])
    except (TypeError, KeyError, ValueError):
        return None
    if winner not in trials:
        return None
    return winner, (f"{entry.get('detail', '')}; remembered from an earlier process "
                    f"({entry.get('at', '?')})")


def remember(workload: Workload, trials: tuple[Plan, ...], winner: Plan, detail: str) -> None:
    """Keep a trial's winner for this process and, where the advisor knows this machine, in the
    local trials file (a file that cannot be written is only a missed saving)."""
    with _SHARED_LOCK:
        if len(_TRIED) >= _MAX_ANSWERS:
            _TRIED.clear()
        _TRIED[trial_key(workload, trials)] = (winner, detail)
        trials_changed()
        key = _trial_file_key(trial_key(workload, trials))
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
