"""Measuring workloads × plans into the store, by the seed's quality rules (§5.3).

A run streams ``batches_per_run`` batches of the workload through a fresh
``RenewableHuberRegressor(plan=...)`` — what users run — timing the ``partial_fit`` calls. A
workload's plans are measured together, their runs interleaved round by round. Per
(workload, plan): ``warmup`` untimed runs, then ``runs`` timed ones; runs beyond 3σ of the mean
are rejected (and counted); while the coefficient of variation of the rest is at least ``max_cv``
another round of ``runs`` is timed, at most ``max_remeasure`` times, after which the measurement
is stored as ``unstable``. A plan that raises is stored as ``failed`` with its error. One more,
profiled, run gives the brick fractions.
"""

from __future__ import annotations

import datetime as _dt
import gc
import itertools
import os
import random
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._version import __version__
from ..datasets import make_contaminated_stream
from ..engines.plans import Plan, plans_for
from ..engines.regime import start_gradient
from ..engines.workload import Workload
from ..errors import EngineNotAvailableError
from ..estimator import RenewableHuberRegressor
from ..profiling import profile
from ..tuner.hardware import identify
from ..tuner.quality import (
    Quality,
    coefficient_of_variation,
    git_revision,
    reject_outliers,
    rounded_fractions,
)
from ..tuner.store import Measurement, Store

#: The L1 strength of a penalized workload: large enough that LAMM / proximal Newton do real
#: work, small enough that most coefficients stay non-zero on the synthetic streams.
PENALTY_ALPHA = 0.01
#: A sparse workload's L1 strength, as a share of the largest gradient at the start point of its
#: first batch (engines.regime): the screen then keeps a few features, the solve ends with a
#: few active, as on a stream with lambda_scale 3 and 256 features.
SPARSE_SHARE = 0.7

#: The default grid's axes: rows per batch 256 … 262,144 and features 2 … 512,
#: log-spaced, both dtypes, penalty off and on.
GRID_ROWS = (256, 1024, 4096, 16384, 65536, 262144)
GRID_FEATURES = (2, 8, 32, 128, 512)

#: The designed subset ``rhuber tune collect`` measures by default: (rows, features)
#: points spread over the corpus grid (√2-spaced rows 256 … 65,536, features 2 … 512, and
#: between its points), plus the RFC benchmark shapes' batches beyond the first corpus's 4 MiB:
#: wide 4,096 × 256 (8 MiB in float64), reference 32,768 × 90 (22.5 MiB), streaming
#: 65,536 × 32 (16 MiB) and wide-standard 16,384 × 256 (32 MiB). Each in both dtypes, penalty
#: off, on, and on in the sparse regime (REGIMES): 156 workloads, measured in a seeded shuffled
#: order, so a budget that runs out leaves a random sample of the design, not its largest
#: batches.
DESIGN_POINTS = (
    (256, 2), (256, 32), (362, 8), (512, 16), (724, 128), (1024, 4), (1024, 64), (1448, 16),
    (2048, 32), (2048, 256), (2896, 8), (4096, 2), (4096, 16), (4096, 128), (4096, 256),
    (5793, 64), (8192, 8), (11585, 32), (16384, 4), (16384, 256), (23170, 16), (32768, 90),
    (46341, 8), (65536, 2), (65536, 32), (65536, 64),
)


#: The penalty's regimes a design measures, as (penalized, sparse).
REGIMES = ((False, False), (True, False), (True, True))


def design(points: Sequence[tuple[int, int]] = DESIGN_POINTS,
           regimes: Sequence[tuple[bool, bool]] = REGIMES) -> list[Workload]:
    """The designed subset: ``points`` × both dtypes × ``regimes`` (default: unpenalized,
    penalized, penalized and sparse; host, intercept)."""
    return [Workload(rows=n, features=p, dtype=dtype, penalized=penalized, sparse=sparse)
            for n, p in points for dtype in ("float64", "float32")
            for penalized, sparse in regimes]


def grid(rows: Sequence[int] = GRID_ROWS, features: Sequence[int] = GRID_FEATURES, *,
         dtypes: Sequence[str] = ("float64", "float32"), penalties: Sequence[bool] = (False, True),
         max_batch_bytes: int | None = None, min_rows_per_coef: float = 0.0) -> list[Workload]:
    """Workloads over the given axes (host input, with intercept), smallest batch first;
    ``max_batch_bytes`` drops those whose X batch is larger (a machine-sized corpus),
    ``min_rows_per_coef`` those with fewer rows per batch than that many times the coefficients
    (a batch with fewer rows than coefficients is underdetermined: its solves run to max_iter,
    which measures the iteration cap, not the plan)."""
    out = []
    for n in rows:
        for p in features:
            for dtype in dtypes:
                for penalized in penalties:
                    w = Workload(rows=n, features=p, dtype=dtype, penalized=penalized)
                    if ((max_batch_bytes is None or n * p * w.itemsize <= max_batch_bytes)
                            and n >= min_rows_per_coef * w.dim):
                        out.append(w)
    return sorted(out, key=lambda w: (w.rows * w.features, w.id))


def restrict_cores(cores: int) -> str:
    """Restrict this process (and the threads it starts from now on) to its first ``cores``
    usable CPUs (``os.sched_setaffinity``), to simulate a smaller machine: the fingerprint then
    has another core count, hence another hardware id. Returns the label the store keeps."""
    real = identify()
    usable = sorted(os.sched_getaffinity(0))
    if not 1 <= cores < len(usable):
        raise ValueError(f"--simulate-cores {cores}: expected 1 … {len(usable) - 1} (this "
                         f"process may use {len(usable)} cores)")
    os.sched_setaffinity(0, usable[:cores])
    return (f"simulated: {real.hardware_id} ({real.cpu_model}) restricted to {cores} of its "
            f"{len(usable)} cores by os.sched_setaffinity in the collecting process")


def workload_batches(workload: Workload, batches: int, seed: int = 0) -> list[tuple[Any, Any]]:
    """The synthetic stream a workload is measured on (the demo's contaminated stream)."""
    stream = make_contaminated_stream(workload.rows * batches, workload.features,
                                      batch_size=workload.rows, seed=seed, dtype=workload.dtype)
    return [tuple(np.ascontiguousarray(a) for a in stream.batch(k)) for k in range(batches)]


def penalty_alpha(workload: Workload, batches: list[tuple[Any, Any]]) -> float:
    """The alpha a workload is measured with: 0, :data:`PENALTY_ALPHA`, or for the sparse
    regime :data:`SPARSE_SHARE` of the first batch's largest gradient at the start point."""
    if not workload.penalized:
        return 0.0
    if not workload.sparse:
        return PENALTY_ALPHA
    X, y = batches[0]
    g, _ = start_gradient(X, y, tau=None, epsilon=RenewableHuberRegressor().epsilon,
                          fit_intercept=workload.intercept)
    return SPARSE_SHARE * float(g.max())


def _estimator(workload: Workload, plan: Plan, batches: list[tuple[Any, Any]]) -> Any:
    return RenewableHuberRegressor(plan=plan, fit_intercept=workload.intercept,
                                   alpha=penalty_alpha(workload, batches))


def _timed_run(workload: Workload, plan: Plan, batches: list[tuple[Any, Any]]) -> float:
    model = _estimator(workload, plan, batches)
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for X, y in batches:
            model.partial_fit(X, y)
        return time.perf_counter() - start
    finally:
        if enabled:
            gc.enable()


def brick_fractions(workload: Workload, plan: Plan, batches: list[tuple[Any, Any]]
                    ) -> tuple[dict[str, float] | None, int | None]:
    """Each brick's share of one profiled run's wall time, and ``unattributed`` for the rest
    (Python, dispatch, whatever no brick times), with the number of brick records; (None, None)
    without the native profiler."""

    try:
        prof = profile(trace_capacity=0)
    except EngineNotAvailableError:
        return None, None
    model = _estimator(workload, plan, batches)
    with prof:
        start = time.perf_counter_ns()
        for X, y in batches:
            model.partial_fit(X, y)
        wall = time.perf_counter_ns() - start
    rows = list(prof.report())
    fractions = {row.brick: row.total_ns / wall for row in rows if row.total_ns > 0}
    fractions["unattributed"] = max(0.0, 1.0 - sum(fractions.values()))
    return rounded_fractions(fractions), sum(row.calls for row in rows)


def measure(workload: Workload, plan: Plan, hardware_id: str, quality: Quality = Quality(),
            batches: list[tuple[Any, Any]] | None = None, *,
            deadline: float | None = None) -> Measurement | None:
    """One stored measurement of ``plan`` on ``workload``; never raises for the plan's own
    failure (it is stored as ``failed``). With a ``deadline`` (``time.perf_counter()``
    seconds), None when the timed warm-up run shows the measurement's runs would end past it."""
    taken = measure_interleaved(workload, [plan], hardware_id, quality, batches,
                                deadline=deadline)
    return None if taken is None else taken[0]


def measure_interleaved(workload: Workload, plans: Sequence[Plan], hardware_id: str,
                        quality: Quality = Quality(),
                        batches: list[tuple[Any, Any]] | None = None, *,
                        deadline: float | None = None, seed: int = 0
                        ) -> list[Measurement] | None:
    """One stored measurement of each of ``plans`` on ``workload`` (in their order), their runs
    interleaved: every round times each plan once, in a shuffled order (seeded), so that a change
    in the machine's speed while the workload is measured (another tenant's burst on a shared
    machine, a clock change) falls on all its plans alike rather than on whichever plan was
    running then. On a 2-core KVM guest, plans that run the same computation (chunk sizes that
    each cover a whole row block) came out geomean 1.159× apart measured one after the other and
    1.099× interleaved (docs/tuner.md, "A workload's plans are measured together"). The quality
    rules hold per plan: its warm-up, its timed runs, outliers, and rounds re-timed (only the
    plans still above ``max_cv``, interleaved among themselves). A plan that raises is stored as
    ``failed`` and leaves the rounds. With a ``deadline``, None when the timed warm-up round
    shows the runs would end past it. Plans of different backends are best measured apart:
    NumPy's OpenBLAS threads keep polling after a product and slow whatever runs next
    (:func:`collect` does so)."""
    batches = workload_batches(workload, quality.batches_per_run) if batches is None else batches
    rows_per_run = sum(len(y) for _, y in batches)
    measured_at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    revision = git_revision()
    rng = random.Random(seed)
    runs: dict[str, list[float]] = {p.id: [] for p in plans}
    errors: dict[str, str] = {}
    active = list(plans)

    def timed(plan: Plan) -> float | None:
        try:
            return _timed_run(workload, plan, batches)
        except Exception as exc:  # a plan that cannot run here is a result, not a crash
            errors[plan.id] = f"{type(exc).__name__}: {exc}"
            return None

    def rounds(among: list[Plan], count: int, record: bool = True) -> dict[str, float]:
        slowest: dict[str, float] = {}
        for _ in range(count):
            for plan in rng.sample(among, len(among)):
                if plan.id in errors:
                    continue
                t = timed(plan)
                if t is None:
                    continue
                slowest[plan.id] = max(slowest.get(plan.id, 0.0), t)
                if record:
                    runs[plan.id].append(t)
        return slowest

    warm = rounds(active, quality.warmup, record=False)
    if deadline is not None and (time.perf_counter() + sum(warm.values())
                                 * (quality.runs + quality.profile) > deadline):
        return None
    active = [p for p in active if p.id not in errors]
    rounds(active, quality.runs)
    remeasured = dict.fromkeys(runs, 0)
    while True:
        again = [p for p in active if p.id not in errors
                 and remeasured[p.id] < quality.max_remeasure
                 and coefficient_of_variation(
                     reject_outliers(runs[p.id], quality.outlier_sigma)[0]) >= quality.max_cv]
        if not again:
            break
        for p in again:
            remeasured[p.id] += 1
        rounds(again, quality.runs)
    fractions: dict[str, tuple[dict[str, float] | None, int | None]] = {}
    for plan in active:
        if quality.profile and plan.id not in errors:
            try:
                fractions[plan.id] = brick_fractions(workload, plan, batches)
            except Exception as exc:
                errors[plan.id] = f"{type(exc).__name__}: {exc}"
    out = []
    for plan in plans:
        common = {"hardware_id": hardware_id, "workload_id": workload.id, "plan_id": plan.id,
                  "rows_per_run": rows_per_run, "library_version": __version__,
                  "git_revision": revision, "measured_at": measured_at}
        if plan.id in errors:
            out.append(Measurement(**common, status="failed", runs_s=runs[plan.id],
                                   error=errors[plan.id]))
            continue
        kept, rejected = reject_outliers(runs[plan.id], quality.outlier_sigma)
        cv = coefficient_of_variation(kept)
        median = statistics.median(kept)
        frac, calls = fractions.get(plan.id, (None, None))
        out.append(Measurement(**common, status="ok" if cv < quality.max_cv else "unstable",
                               runs_s=runs[plan.id], rejected_runs=rejected,
                               remeasured=remeasured[plan.id], median_s=median, cv=cv,
                               rows_per_s=rows_per_run / median, brick_fractions=frac,
                               brick_calls=calls))
    return out


@dataclass(frozen=True)
class CollectSummary:
    measured: int  # in this call
    skipped: int  # already in the store (a resumed collection)
    pending: int  # left when the budget ran out
    failed: int
    unstable: int
    seconds: float


def collect(store: Store, hardware: Any, workloads: Iterable[Workload], *,
            plans: Callable[[Workload, Any], list[Plan]] = plans_for,
            quality: Quality = Quality(), budget_s: float | None = None,
            progress: bool = True, shuffle_seed: int | None = 0) -> CollectSummary:
    """Measure every (workload, plan) not yet in the store for ``hardware`` (with
    ``hardware_id`` and ``as_dict()``), a workload's plans of one backend together, their runs
    interleaved (:func:`measure_interleaved`), stopping cleanly — between workloads — once
    ``budget_s`` seconds have passed, or before a workload whose timed warm-up round shows its
    runs would end past the budget (so a budget is overrun by at most one warm-up round). Each
    measurement is stored in its own transaction; a rerun resumes where the last one stopped.

    The workloads are measured in a seeded shuffled order (``shuffle_seed``; None keeps the
    given order) so that the time a workload was measured says nothing about its size: a
    time-split validation then holds out a sample of the grid, not its largest batches."""
    from tqdm import tqdm

    start = time.perf_counter()
    store.add_hardware(hardware.hardware_id, hardware.as_dict())
    done = store.done(hardware.hardware_id)
    order = list(workloads)
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(order)
    tasks = [(w, p) for w in order for p in plans(w, hardware)]
    pending = [(w, p) for w, p in tasks if (w.id, p.id) not in done]
    counts = {"measured": 0, "failed": 0, "unstable": 0}
    bar = tqdm(total=len(pending), unit="plan", disable=not progress, dynamic_ncols=True)
    batches_for: tuple[Workload | None, Any] = (None, None)
    try:
        # A workload's plans of one backend together, in the tasks' order; backends one after
        # the other (NumPy's first, as plans_for lists them), so that the polling of NumPy's
        # BLAS threads after its plan falls on the next group's untimed warm-up round.
        for _, run in itertools.groupby(pending, lambda t: (t[0].id, t[1].backend)):
            group = list(run)
            w, together = group[0][0], [p for _, p in group]
            if budget_s is not None and time.perf_counter() - start >= budget_s:
                break
            if batches_for[0] != w:  # generated once per workload, outside the timing
                batches_for = (w, workload_batches(w, quality.batches_per_run))
            bar.set_postfix_str(f"{w.id} {together[0].backend} ×{len(together)}")
            # The deadline only with a budget: a plain call runs to the end.
            extra = {} if budget_s is None else {"deadline": start + budget_s}
            taken = measure_interleaved(w, together, hardware.hardware_id, quality,
                                        batches_for[1], **extra)
            if taken is None:  # its runs would overrun the budget: stop here, resumable
                break
            for m in taken:  # one transaction each: a kill leaves whole rows
                store.record(m)
                counts["measured"] += 1
                counts["failed"] += m.status == "failed"
                counts["unstable"] += m.status == "unstable"
            bar.update(len(taken))
    finally:
        bar.close()
    return CollectSummary(measured=counts["measured"], skipped=len(tasks) - len(pending),
                          pending=len(pending) - counts["measured"], failed=counts["failed"],
                          unstable=counts["unstable"], seconds=time.perf_counter() - start)
