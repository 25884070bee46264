"""A stream's plan: which plan runs each batch of an estimator, and why (docs/tuner.md, "The
advisor").

The estimator only asks this module: :func:`plan_for` (the plan of the next batch),
:func:`start` (the stream's session, decided from its first batch) and :func:`observe` (a timed
batch, the session's evidence). In order of precedence:

1. ``plan=`` pins a plan, read on every batch (``pinned by plan=``);
2. ``backend`` other than ``"auto"`` runs that engine with its defaults (``set by backend=``);
3. the environment variable :data:`PLAN_VARIABLE` (``RH_PLAN=<plan id>``), read at the start
   of each stream of a ``backend="auto"`` estimator (``pinned by RH_PLAN``);
4. the advisor (:mod:`rhuber.tuner.advisor`): the rule's default plan, the model's choice, or
   trials of its candidates once the stream has shown it is long; the session keeps the
   evidence. A process that has not loaded the advisor starts on the rule's plan and loads it
   only for a long stream (``Session``), so a short script never pays for it.

Every plan found here is checked against the settings it overrides (``backend``, ``n_jobs``,
``l1_solver``): a disagreement is a ``ValueError`` naming them.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Container, Iterator
from typing import Any

from .engines import native_cpu_available
from .engines import regime as _regime
from .engines.plans import Plan, machine_cores, offers, parse_plan, plans_for
from .engines.workload import Workload
from .tuner import current, reasons, rules
from .tuner.session import Question, Session, trial_ran

#: Pins a plan for estimators with backend="auto" and plan=None, bypassing the advisor.
PLAN_VARIABLE = "RH_PLAN"


def threads(n_jobs: int | None) -> int | None:
    """``n_jobs`` as a thread count; None: all cores (-1 too; -2 all but one, as in
    scikit-learn)."""
    if n_jobs is None or n_jobs == -1:
        return None
    if n_jobs < 0:
        return max(1, machine_cores() + 1 + int(n_jobs))
    return int(n_jobs)


@functools.lru_cache(maxsize=1024)
def auto_plans(workload: Workload, threads: int | None, threads_fixed: bool,
               solver: str) -> tuple[tuple[Plan, ...], Plan]:
    """The plans auto may choose from for ``workload`` — those agreeing with threads the user
    fixed and a non-default L1 solver — and the engine's default plan; no candidates without
    native_cpu. Remembered: enumerating and validating the plans costs ~0.1 ms, paid by every
    stream otherwise (the installed engines do not change within a process)."""

    if not native_cpu_available():
        return (), Plan("numpy")
    default = engine_default(threads, solver)
    plans = tuple(p for p in plans_for(workload, cuda=False)
                  if (not threads_fixed or p.backend != "native_cpu"
                      or p.threads == default.threads)
                  and (solver == "lamm" or p.l1_solver == solver))
    return plans, default


@functools.lru_cache(maxsize=64)
def engine_default(threads: int | None, solver: str) -> Plan:
    """native_cpu's default plan with ``threads`` (None: all cores) and ``solver``, written out."""
    return Plan("native_cpu", threads=threads, l1_solver=solver).resolved()


@dataclasses.dataclass(frozen=True)
class Candidates:
    """:func:`auto_plans`' candidates for a workload, listed only when iterated: whether a plan
    is one is answered without them (:func:`.engines.plans.offers`), which is all a stream
    starting on its rule's plan asks until the advisor is (~0.07 ms of a fresh process's first
    batch otherwise)."""

    workload: Workload
    threads: int | None
    threads_fixed: bool
    solver: str

    def __contains__(self, plan: object) -> bool:
        if not isinstance(plan, Plan) or not offers(plan, self.workload):
            return False
        return ((not self.threads_fixed or plan.backend != "native_cpu"
                 or plan.threads == engine_default(self.threads, self.solver).threads)
                and (self.solver == "lamm" or plan.l1_solver == self.solver))

    def __iter__(self) -> Iterator[Plan]:
        return iter(self.plans())

    def __len__(self) -> int:
        return len(self.plans())

    def plans(self) -> tuple[Plan, ...]:
        return auto_plans(self.workload, self.threads, self.threads_fixed, self.solver)[0]


def pinned(est: Any) -> tuple[Plan | None, str]:
    """The plan the user pinned and how: ``plan=``, else ``RH_PLAN`` where the advisor would
    run (backend="auto"), else (None, "")."""
    if est.plan is not None:
        return parse_plan(est.plan), reasons.PINNED
    if est.backend != "auto":
        return None, ""
    text = os.environ.get(PLAN_VARIABLE, "").strip()
    if text:
        try:
            return Plan.from_id(text), reasons.PINNED_ENV
        except ValueError as exc:
            raise ValueError(f"{PLAN_VARIABLE}={text!r}: {exc}") from None
    return None, ""


def checked(est: Any, plan: Plan, source: str) -> Plan:
    """``plan``, unless it contradicts ``backend``, ``n_jobs`` or ``l1_solver`` set on ``est``."""
    if est.backend == "auto" and est.l1_solver == "lamm" and est.n_jobs is None:
        return plan  # all deferring to the plan (every batch reads it: keep this cheap)
    disagree = []
    if est.backend not in ("auto", plan.backend):
        disagree.append(f"backend={est.backend!r}")
    if est.l1_solver not in ("lamm", plan.l1_solver):
        disagree.append(f"l1_solver={est.l1_solver!r}")
    cores = machine_cores()
    if plan.backend == "native_cpu" and est.n_jobs is not None and \
            (threads(est.n_jobs) or cores) != (plan.threads or cores):
        disagree.append(f"n_jobs={est.n_jobs!r}")
    if disagree:
        raise ValueError(
            f"{source}{plan.id!r} decides the backend, threads and L1 solver, and conflicts "
            f"with {', '.join(disagree)}; leave those at their defaults (backend='auto', "
            "n_jobs=None, l1_solver='lamm') or make them agree with the plan")
    return plan


def plan_for(est: Any, session: Session | None) -> Plan | None:
    """The plan of the next batch — ``plan=``, else (backend="auto") this stream's: pinned by
    ``RH_PLAN`` or the advisor's — checked; None: ``backend`` and ``n_jobs`` decide."""
    if est.plan is not None:
        return checked(est, parse_plan(est.plan), "plan=")
    if est.backend != "auto":
        return None
    if session is not None:
        return session.plan
    plan, _ = pinned(est)  # before the stream's first batch
    return None if plan is None else checked(est, plan, f"{PLAN_VARIABLE}=")


def penalized(est: Any) -> bool:
    """Whether ``est``'s batches carry an L1 penalty: ``alpha > 0``, or the λ schedule
    (``lambda_scale > 0``: every batch's λ is then positive whatever ``alpha`` is)."""
    return float(est.alpha) > 0 or float(getattr(est, "lambda_scale", None) or 0) > 0


def workload(est: Any, X: Any, y: Any = None) -> Workload:
    """The workload a batch ``X`` of ``est``'s stream is; with its targets ``y``, a penalized
    one also has its regime (:mod:`.engines.regime`), else it is taken as dense."""
    l1 = penalized(est)
    return Workload(rows=max(1, int(X.shape[0])), features=int(X.shape[1]),
                    dtype=X.dtype, penalized=l1, intercept=bool(est.fit_intercept),
                    sparse=l1 and y is not None and sparse(est, X, y))


def sparse(est: Any, X: Any, y: Any) -> bool:
    """Whether the batch ``X``, ``y`` puts ``est``'s penalized stream in the sparse regime: the
    strong-rule screen (:mod:`.engines.regime`; one pass over at most 2,048 rows, ~0.1 ms on a
    stream's first batch)."""
    return _regime.is_sparse(_regime.active_share(
        X, y, alpha=float(est.alpha), lambda_scale=est.lambda_scale, tau=est.tau,
        epsilon=float(est.epsilon), fit_intercept=bool(est.fit_intercept)))


def batch_workload(est: Any, X: Any, session: Session | None) -> Workload:
    """The workload of a later batch ``X`` of a stream: its shape, and the regime the stream
    was read to (dense without a session, or while it is not read)."""
    w = workload(est, X)
    if w.penalized and session is not None and _planned_sparse(session):
        return dataclasses.replace(w, sparse=True)
    return w


def _planned_sparse(session: Session) -> bool:
    """Whether the batch a session's plan was decided for was sparse: the advice's workload, or
    that of the question it keeps for the advisor (not asked yet)."""
    if session.advice is not None:
        return session.advice.workload.sparse
    return session.waiting is not None and session.waiting[0].sparse


def start(est: Any, X: Any, batches: int | None = None, y: Any = None) -> Session:
    """The session of a stream whose first batch is ``X`` with targets ``y`` (``batches``: how
    many the stream has, when known, as in ``fit``; None for ``partial_fit``).

    A penalized stream's regime is read (the screen, ~0.1 ms: as much as a whole small batch)
    only where the plan its first batch runs depends on it (:func:`_answer`), and for a
    profiled stream (online learning records each batch's regime); otherwise the stream asks
    the advisor later with the regime of the batch at which it asks."""
    plan, how = pinned(est)
    if plan is not None:
        checked(est, plan, "plan=" if how == reasons.PINNED else f"{PLAN_VARIABLE}=")
        # plan= is read from the parameter on every batch; RH_PLAN once, here.
        return Session(plan.id, how, plan=None if how == reasons.PINNED else plan)
    if est.backend != "auto":
        return Session(est.backend, reasons.USER_BACKEND, f"backend={est.backend!r}")
    advisor = current.available()  # never loaded here: a stream's first batch does not wait
    session = _auto_session(est, X, batches, y, advisor)
    if _LAMM_STALLED and _stall_key(est, X) in _LAMM_STALLED and _may_leave_lamm(est, session):
        return session.lamm_stalled(None)
    return session


def _auto_session(est: Any, X: Any, batches: int | None, y: Any, advisor: Any) -> Session:
    """:func:`start`'s session for an auto stream, remembered per workload and settings."""
    key = _start_key(est, X, y, batches, advisor)
    known = _ANSWERS.get(key) if key is not None else None
    if isinstance(known, _ByRegime):  # the session depends on the regime only: read it
        read = sparse(est, X, y)
        session = known.sessions.get(read)
        if session is None:
            session, _ = _start(est, X, batches, y, advisor, read)
            known.sessions[read] = session
        return session
    if known is not None:
        return known
    session, read = _start(est, X, batches, y, advisor)
    if key is not None:
        _remember(key, session if read is None else _ByRegime({read: session}))
    return session


def _start_key(est: Any, X: Any, y: Any, batches: int | None, advisor: Any
               ) -> tuple[Any, ...] | None:
    """What the session :func:`start` makes from a batch depends on, besides the regime where
    it reads it: every stream of a workload would otherwise pay ~15 µs to find the same session
    again (a stream of twelve 600-row batches takes ~1.1 ms), and a stream that reads its
    regime ~60–90 µs more on a cold first batch (:class:`_ByRegime`). None: not remembered."""
    try:
        key = ("session", int(X.shape[0]), int(X.shape[1]), X.dtype, penalized(est),
               bool(est.fit_intercept), y is None, bool(getattr(est, "profile", False)),
               est.n_jobs, est.l1_solver, batches, current.generation(),
               current.trials_generation(), advisor)
        hash(key)
    except (TypeError, ValueError, AttributeError, IndexError):  # no shape, unhashable setting
        return None
    return key


@dataclasses.dataclass(frozen=True)
class _ByRegime:
    """:func:`start`'s sessions for a key whose session depends on the penalty's regime, per
    regime read (True: sparse): the screen still reads each stream's first batch, but finding
    the session from its answer costs a lookup."""

    sessions: dict[bool, Session]


def _remember(key: tuple[Any, ...], answer: Any) -> None:
    if len(_ANSWERS) >= _MAX_ANSWERS:
        _ANSWERS.clear()
    _ANSWERS[key] = answer


def _start(est: Any, X: Any, batches: int | None, y: Any, advisor: Any,
           regime: bool | None = None) -> tuple[Session, bool | None]:
    """:func:`start`'s session for an auto stream, and the penalty's regime where it read the
    batch's data to find it (True: sparse; None: not read). ``regime``: read already."""
    w = workload(est, X)
    read = not w.penalized or y is None
    found: bool | None = None

    def with_regime() -> Workload:
        nonlocal read, found
        found = sparse(est, X, y) if regime is None else regime
        read = True
        return dataclasses.replace(w, sparse=found)

    if not read and getattr(est, "profile", False):
        w = with_regime()
    known = _memo(est, w, read, advisor)
    if known is _READ_REGIME:
        w = with_regime()
        known = _memo(est, w, read, advisor)
    if isinstance(known, _Unread) and known.remembered():
        # trials in either regime, one of which ran already: its regime decides
        w = with_regime()
        known = _memo(est, w, read, advisor)
    if isinstance(known, Session):
        return known, found
    if isinstance(known, tuple):  # the question, for when the stream has shown it is long
        return Session.rule_first(known, batches=batches, unread=not read), found
    if isinstance(known, _Unread):  # trials in either regime: try them once the stream is long
        return Session.rule_first(known.question, batches=batches, unread=True,
                                  advice=known.trying), found
    return Session.from_advice(known, batches=batches), found


def _memo(est: Any, w: Workload, read: bool, advisor: Any) -> Any:
    """:func:`_answer`, remembered per question."""
    key = (w, read, est.n_jobs, est.l1_solver,
           (advisor, current.generation()) if advisor is reasons.UNLOADED else advisor)
    try:
        known = _ANSWERS.get(key)
    except TypeError:  # an unhashable setting or advisor: no memo
        key, known = None, None
    if known is None:
        known = _answer(est, w, advisor, read)
        if key is not None:
            _remember(key, known)
    return known


#: The answers of start() per (workload, regime read, n_jobs, l1_solver, advisor): finding the
#: candidates and the rule's plan cost ~35 µs, which a stream of small batches would pay at
#: every start (the advisor memoizes its own answers too); and the sessions made from them
#: (:func:`_start_key`).
_ANSWERS: dict[tuple[Any, ...], Any] = {}
_MAX_ANSWERS = 4096
#: :func:`_answer`'s word for "the first batch's plan depends on the penalty's regime: read it".
_READ_REGIME = "read the regime"


@dataclasses.dataclass(frozen=True)
class _Unread:
    """The loaded advisor's answers for a penalized batch whose regime is not read, when either
    regime's answer tries candidates once the stream is long and both start on the same plan
    (the rule's): the stream starts on it, and reads its regime when it asks (or at its start,
    where a trial of either regime has run already: its winner runs from the first batch)."""

    question: Question
    dense: Any  # Advice
    sparse: Any  # Advice

    def remembered(self) -> bool:
        return trial_ran(*(a for a in (self.dense, self.sparse) if a.trials))

    @property
    def trying(self) -> Any:
        """The answer whose trials the stream would run (the dense one where both have)."""
        return self.dense if self.dense.trials else self.sparse


def _answer(est: Any, w: Workload, advisor: Any, read: bool = True) -> Any:
    """The advice for a stream of ``est`` whose first batch is ``w``, the session when there is
    no advice to take (no native engine, no model), or — the advisor not loaded in this process —
    the question to ask it once the stream has shown it is long. With the regime of a penalized
    ``w`` not ``read``: :data:`_READ_REGIME` where the plan of the first batch depends on it —
    the rule's, or the loaded advisor's, and always where the model chooses (its promise is
    checked) — else the answer for either regime (an :class:`_Unread` where either tries
    candidates later from the same first plan)."""
    solver = est.l1_solver if w.penalized else "lamm"
    if not native_cpu_available():
        return Session(Plan("numpy").id, reasons.NO_MODEL,
                       "only the NumPy reference is installed")
    candidates: Candidates | tuple[Plan, ...] = Candidates(
        w, threads(est.n_jobs), est.n_jobs is not None, solver)
    if advisor is not reasons.UNLOADED:
        candidates = candidates.plans()
    rule = rules.current_rule() if advisor is reasons.UNLOADED else getattr(
        advisor, "rule", rules.DEFAULT_RULE)
    fixed = (threads(est.n_jobs) if est.n_jobs is not None else None,
             None if solver == "lamm" else solver)
    plan = rule_default(rule, w, candidates, *fixed)
    other = None if read else dataclasses.replace(w, sparse=True)
    if other is not None and rule_default(rule, other, candidates, *fixed) != plan:
        return _READ_REGIME
    if advisor is None:
        return Session(plan.id, reasons.NO_MODEL,
                       "the tuner's models could not be loaded; the rule's plan", plan=plan)
    if advisor is reasons.UNLOADED:
        return (w, candidates, plan)
    advice = advisor.advise(w, candidates=candidates, default=plan)
    if other is None:
        return advice
    advice_sparse = advisor.advise(other, candidates=candidates, default=plan)
    if advice.chosen or advice_sparse.chosen or _first_plan(advice) != _first_plan(advice_sparse):
        return _READ_REGIME
    if advice.trials or advice_sparse.trials:
        # The first batches run the same plan in either regime: the regime is read when the
        # stream has shown it is long enough for the trial, not by every stream at its start.
        return _Unread((w, candidates, plan), advice, advice_sparse)
    return advice


def _first_plan(advice: Any) -> Plan:
    """The plan a stream's first batches run on ``advice``: the rule's, where trials follow."""
    return advice.default if advice.trials else advice.plan


def rule_default(rule: rules.Rule, w: Workload, candidates: Container[Plan],
                 fixed_threads: int | None, fixed_solver: str | None) -> Plan:
    """The rule's plan for ``w`` (:mod:`rhuber.tuner.rules`) with the threads and L1 solver the
    user fixed; the engine's default plan (with them) where the rule's is not a candidate here."""
    plan = rule.plan(w, machine_cores(), threads=fixed_threads, l1_solver=fixed_solver)
    return plan if plan in candidates else engine_default(fixed_threads, fixed_solver or "lamm")


#: The iterations auto lets LAMM run on a batch of a plan auto chose before it solves the batch
#: again with proximal Newton (after_stalled_lamm), which converges where LAMM stalls: raw
#: columns far from centred held LAMM for all of the estimator's max_iter first (500 passes
#: over a 40,000 × 10 batch: 107 ms, against 5 ms for proximal Newton). LAMM's solves on
#: standardized columns take 10-50 (the RFC shapes' first batches at most 48).
LAMM_TRIAL_ITERATIONS = 100


def lamm_trial(est: Any, session: Session | None, config: Any) -> Any:
    """``config`` for a batch of ``est``'s stream: with max_iter at most LAMM_TRIAL_ITERATIONS
    where auto runs LAMM on a plan of its own (a batch it leaves unconverged is solved again
    with proximal Newton and the estimator's max_iter), as it is otherwise."""
    if config.max_iter <= LAMM_TRIAL_ITERATIONS or not _may_leave_lamm(est, session):
        return config
    return _with_max_iter(config, LAMM_TRIAL_ITERATIONS)


@functools.lru_cache(maxsize=16)
def _with_max_iter(config: Any, max_iter: int) -> Any:
    return dataclasses.replace(config, max_iter=max_iter)


def after_stalled_lamm(est: Any, session: Session | None, X: Any, iterations: int,
                       stopped_short: bool = False) -> Session | None:
    """The session to solve the batch ``X`` again with, which did not converge within
    ``iterations`` (or met LAMM's step rule short of the minimizer: ``stopped_short``), where
    LAMM ran on a plan that auto chose (:meth:`Session.lamm_stalled`); None
    where the solver is not auto's to change: a plan or l1_solver set on the estimator,
    ``RH_PLAN``, another backend. Later streams of the same columns in this process then start
    on proximal Newton (:func:`start`): a cross-validation's fits would otherwise each pay
    LAMM's iterations again."""
    if not _may_leave_lamm(est, session):
        return None
    _LAMM_STALLED.add(_stall_key(est, X))
    return session.lamm_stalled(iterations, stopped_short)


def _may_leave_lamm(est: Any, session: Session | None) -> bool:
    """Whether ``session`` runs LAMM on a plan that auto chose for a penalized stream."""
    if (session is None or est.backend != "auto" or est.plan is not None
            or est.l1_solver != "lamm" or not penalized(est)):
        return False
    plan = session.plan
    return (plan is not None and plan.backend == "native_cpu" and plan.l1_solver == "lamm"
            and session.reason != reasons.PINNED_ENV)


def _stall_key(est: Any, X: Any) -> tuple[Any, ...]:
    """The streams that LAMM's stall on one stream is taken to say something of: the same
    columns (count and dtype) and intercept, whatever the batch size."""
    return (int(X.shape[1]), X.dtype, bool(est.fit_intercept))


#: :func:`_stall_key` of the streams whose LAMM ran out of iterations in this process.
_LAMM_STALLED: set[tuple[Any, ...]] = set()


def observe(est: Any, session: Session, X: Any, y: Any, seconds: float) -> Session:
    """The session after the batch ``X``, ``y`` took ``seconds`` on the plan that ran (from
    which a session that asks the advisor with its regime unread reads it)."""
    if session.unread:
        return session.observe(int(X.shape[0]), seconds, lambda: sparse(est, X, y))
    return session.observe(int(X.shape[0]), seconds)
