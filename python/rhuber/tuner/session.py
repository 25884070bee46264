"""One stream's plan (docs/tuner.md, "The advisor"): which plan runs its next batch, why, and the
evidence its first batches measured (:class:`Session`), and what ``est.plan_`` reports of it
(:class:`PlanReport`).

Every stream has a session, so this module stays light: the advisor's module (its models, the
store, the machine's fingerprint) is imported only for a stream that has advice, or that has
shown it is long enough to ask for it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..engines.plans import Plan
from ..engines.workload import Workload
from . import current
from .reasons import (
    CHOSEN,
    LAMM_STALLED,
    NO_MODEL,
    REVERTED,
    RULE_FIRST,
    TOO_SHORT,
    TRIAL,
    TRIED,
    UNLOADED,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from .advisor import Advice

#: How far the measured rows/s may fall short of the promise before auto reverts.
REVERT_MARGIN = 0.10
#: Batches on the chosen plan not timed as evidence (engine start, first touch of memory).
WARMUP_BATCHES = 1
#: Batches whose median rows/s is compared with the promise.
EVIDENCE_BATCHES = 3
#: Batches of the default timed (after a warm-up) when a chosen plan broke its promise.
TRIAL_BATCHES = 2
#: Batches per trial plan: a warm-up (engine start, first touch) and one evidence batch.
TRIAL_PLAN_BATCHES = 2
#: Batches a stream runs on the rule's plan before any other plan is tried (or the advisor,
#: not yet loaded, is asked): a stream that has run n batches is taken to run about n more, so
#: the trial's 2 × (advisor.TRIAL_PLANS − 1) batches off the rule's plan are at most a tenth of what
#: remains; ``fit`` with fewer than twice this many batches runs the rule's plan throughout.
TRIAL_AFTER_BATCHES = 20
#: The expected stream time (seconds) that pays for loading the advisor in a process that has
#: not loaded it (0.1–0.5 s, measured 0.41 s on a loaded 2-core machine): at most ~4 % of it.
ADVISOR_AFTER_S = 10.0



def _median_after_warmup(rates: tuple[float, ...]) -> float | None:
    evidence = rates[WARMUP_BATCHES:] or rates
    return statistics.median(evidence) if evidence else None



def _advisor() -> Any:
    """The advisor's module (its models' code, the store, the machine's fingerprint), imported
    when a stream first needs it: one with advice, or a long one that asks for it."""
    from . import advisor

    return advisor




def trial_ran(*advices: Advice) -> bool:
    """Whether a trial of any of ``advices`` ran already, in this process or an earlier one (the
    local trials file)."""
    return any(_advisor().remembered(a.workload, a.trials, a.trial_key) is not None
               for a in advices)


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
#: plans — hashable, and possibly listed only when iterated —, the rule's plan).
Question = tuple[Workload, Collection[Plan], Plan]
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
      advisor (:func:`.current.available`), a stream starts on the rule's plan and keeps the
      question (``waiting``); once it has run :data:`TRIAL_AFTER_BATCHES` batches and its
      expected time (twice its time so far, or its known length at its pace so far) reaches
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
    unread: bool = False  # the penalty regime not read yet (read when the advisor is asked)

    @classmethod
    def from_advice(cls, advice: Advice, batches: int | None = None) -> Session:
        if advice.trials:
            known = _advisor().remembered(advice.workload, advice.trials, advice.trial_key)
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
    def rule_first(cls, question: Question, batches: int | None = None, *,
                   unread: bool = False, advice: Advice | None = None) -> Session:
        """The session of a stream that starts on the rule's plan and asks the advisor once it
        has shown it is long: before this process has loaded the advisor
        (:func:`.current.available`), or — ``advice``, the loaded advisor's answer in both
        regimes, trials — while the stream's penalty regime is not read (``unread``: the question
        is asked with the regime of the batch at which it is asked)."""
        default = question[2]
        if batches is not None and batches < 2 * TRIAL_AFTER_BATCHES:
            return cls._too_short(default, batches, advice)
        if advice is not None:
            return cls(default.id, RULE_FIRST, f"trials after {TRIAL_AFTER_BATCHES} batches; "
                       f"{advice.detail}", default, advice.default_rows_per_s, advice.model_id,
                       waiting=question, length=batches, unread=unread)
        return cls(default.id, RULE_FIRST, "the rule maps a batch's size and penalty to a plan, "
                   "fitted to the tuner's measurements; the model is asked once the stream has "
                   f"run {TRIAL_AFTER_BATCHES} batches and is expected to take "
                   f"{ADVISOR_AFTER_S:g} s", default, waiting=question, length=batches,
                   unread=unread)

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

    def lamm_stalled(self, iterations: int | None, stopped_short: bool = False) -> Session:
        """The session once a penalized batch ran out of ``iterations`` with LAMM on this
        session's plan, or met LAMM's step rule in them short of the minimizer
        (``stopped_short``; the estimator's lamm_stopped_short) (None: a batch of an earlier
        stream of the same columns did either): the same
        plan with proximal Newton, from that batch (re-solved) to the end of the stream,
        settled. LAMM is a first-order method whose rate follows the design's conditioning (raw
        columns of very different scales or far from centred can need many times max_iter);
        proximal Newton solves the same problem in Newton-like iterations whatever the scales
        (docs/tuner.md, "When LAMM does not converge")."""
        assert self.plan is not None
        plan = replace(self.plan, l1_solver="prox_newton")
        resolved = ("that batch was solved again with proximal Newton, which runs the rest of the "
                    "stream")
        if iterations is None:
            detail = ("an earlier stream of these columns did not converge with LAMM in this "
                      "process; proximal Newton runs this one")
        elif stopped_short:
            detail = (f"{self.display} stopped short of the minimizer after {iterations} LAMM "
                      "iterations (its step rule met while a coefficient's own Newton step was "
                      f"still large: columns of very different scales); {resolved}")
        else:
            detail = (f"{self.display} did not converge within {iterations} LAMM iterations; "
                      f"{resolved}")

        return Session(plan.id, LAMM_STALLED, detail, plan, settled=True, ran=self.ran,
                       rates=self.rates, length=self.length)

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

    def observe(self, rows: int, seconds: float,
                sparse: Callable[[], bool] | None = None) -> Session:
        """The session after a batch of ``rows`` took ``seconds`` on the plan that ran;
        ``sparse`` reads the stream's penalty regime from that batch, for a session that asks
        the advisor with its regime unread (``unread``). Every batch of a stream pays what runs
        here: the new session is made by :meth:`_evolve` (``replace`` costs ~10 µs)."""
        if self.settled:  # what its plan measured is kept until it has rates enough
            rates = self.rates if not seconds > 0 else _add_rate(self.rates, self.display,
                                                                  rows / seconds)
            if rates is self.rates and self.ran == self.display:
                return self
            return self._evolve(ran=self.display, rates=rates)
        if not seconds > 0:
            return self._evolve(ran=self.display)
        rate = rows / seconds
        changes = {"ran": self.display, "batches": self.batches + 1,
                   "seconds": self.seconds + seconds,
                   "rates": _add_rate(self.rates, self.display, rate)}
        if self.trials:
            return self._evolve(**changes)._next_trial(rate)
        if self.reason == RULE_FIRST:
            return self._evolve(**changes)._rule_first(sparse)
        if self.trial is not None:
            return self._evolve(**changes)._judge_trial((*self.trial, rate))
        timings = changes["timings"] = (*self.timings, rate)
        if len(timings) < WARMUP_BATCHES + EVIDENCE_BATCHES:
            return self._evolve(**changes)
        measured = _median_after_warmup(timings)
        assert measured is not None
        if self.reason != CHOSEN or measured >= (self.promised or 0.0) / (1.0 + REVERT_MARGIN):
            return self._evolve(settled=True, **changes)
        assert self.advice is not None  # the promise is broken: time the default
        return self._evolve(display=self.advice.default.id, plan=self.advice.default,
                            trial=(), **changes)

    def _rule_first(self, sparse: Callable[[], bool] | None) -> Session:
        """A batch on the rule's plan while the stream shows whether it is long."""
        if self.batches < TRIAL_AFTER_BATCHES:
            return self
        if self.waiting is not None:
            expected = (self.seconds * 2 if self.length is None
                        else self.seconds / self.batches * self.length)
            advisor = current.available()
            if advisor is UNLOADED and expected < ADVISOR_AFTER_S:
                return self
            if self.unread and sparse is None:
                return self  # asked at a batch that can read the regime
            if advisor is UNLOADED:
                advisor = _advisor().shared()
            if advisor is None:
                return replace(self, reason=NO_MODEL, detail="the tuner's models could not be "
                               "loaded; the rule's plan", waiting=None, settled=True)
            workload, candidates, default = self.waiting
            if self.unread and sparse is not None and sparse():
                workload = replace(workload, sparse=True)
            advice = advisor.advise(workload, candidates=candidates, default=default)
            return self._advised(advice)
        assert self.advice is not None
        return self._start_trials(self.advice)

    def _advised(self, advice: Advice) -> Session:
        """The stream's next batches once the advisor answered (mid-stream)."""
        keep = {"ran": self.ran, "rates": self.rates, "batches": self.batches,
                "seconds": self.seconds, "length": self.length}
        if advice.trials:
            known = _advisor().remembered(advice.workload, advice.trials, advice.trial_key)
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
        _advisor().remember(self.advice.workload, self.trials, winner, detail)
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
