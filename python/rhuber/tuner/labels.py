"""What the models learn to predict, derived from stored measurements: throughput, the best plan
per workload, and the bottleneck class.

Bottleneck rules (documented in docs/tuner.md, tested on constructed profiles), applied in this
order to the brick fractions of a measurement's profiled run (each brick's share of the run's wall
time; ``unattributed`` is the rest):

1. ``transfer`` — stage + transfer take at least 30 % (host↔device copies dominate);
2. ``launch`` — a CUDA plan whose mean brick lasts under 20 µs while bricks cover less than half
   of the run (kernel launches and synchronizations dominate);
3. ``overhead`` — validate + unattributed take at least 40 % (Python, dispatch, checks: work that
   does not scale with the arithmetic);
4. ``solve`` — the solve brick (the d × d factorizations) takes at least 30 %;
5. ``compute`` — the BLAS-3 bricks (gram, info_update) take at least 50 % and the workload's
   arithmetic intensity (flops per byte of X read by a Gram pass, ≈ d / 4 in float64, d / 2 in
   float32) is at or above the machine's ridge point (peak GFLOP/s ÷ bandwidth GB/s);
6. ``memory`` — everything else: passes over X (residual, score, line search, elementwise work)
   bounded by bandwidth.
"""

from __future__ import annotations

import datetime as _dt
import functools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..engines.plans import Plan
from ..engines.workload import Workload

if TYPE_CHECKING:  # the store (sqlite3) stays out of a stream that reads the rule
    from .store import Measurement

BOTTLENECKS = ("memory", "compute", "solve", "overhead", "transfer", "launch")
#: Plans within this fraction of the best one's throughput count as tied for best.
NEAR_BEST = 0.03

TRANSFER_SHARE = 0.30
LAUNCH_MEAN_BRICK_S = 20e-6
OVERHEAD_SHARE = 0.40
SOLVE_SHARE = 0.30
COMPUTE_SHARE = 0.50


@dataclass(frozen=True)
class SpeedChange:
    """A change to an L1 solver's code that moved its speed on penalized workloads by more than
    the machines' noise, relative to the other plans: measurements of that solver taken before
    it (``since``, the last commit of the change) no longer describe the library, and a
    store keeps them only until the machine is measured again."""

    l1_solver: str
    since: _dt.datetime  # timezone-aware
    what: str

    def concerns(self, m: Measurement) -> bool:
        return (m.plan_id.endswith(f"/l1={self.l1_solver}") and regime(m.workload_id)[0]
                and _measured_before(m, self.since))


@functools.lru_cache(maxsize=4096)
def regime(workload_id: str) -> tuple[bool, bool]:
    """(penalized, sparse) of a workload id, parsed once (a store repeats each id per plan)."""
    w = Workload.from_id(workload_id)
    return w.penalized, w.sparse


#: Every :class:`SpeedChange` since the store's first rows (docs/tuner.md, "Stale rows").
SPEED_CHANGES = (
    SpeedChange("lamm", _dt.datetime(2026, 12, 4, 22, 25, 39, tzinfo=_dt.timezone.utc),
                "LAMM's later batches by expansion and its anchoring (6d5c8a1..8fbf971): on the "
                "AMD EPYC its stream of 24,000 x 24 float32 penalized batches takes 0.53x its "
                "earlier time, prox_newton's 0.90x, and LAMM became the faster solver on 15 of "
                "52 dense penalized workloads (4 before)"),
)


def _measured_before(m: Measurement, since: _dt.datetime) -> bool:
    try:
        at = _dt.datetime.fromisoformat(m.measured_at)
    except ValueError:  # an unreadable time says nothing about its age: the row is kept
        return False
    if at.tzinfo is None:
        at = at.replace(tzinfo=_dt.timezone.utc)
    return at < since


def stale(m: Measurement) -> bool:
    """Whether ``m`` measured a plan's code before a :data:`SPEED_CHANGES` entry concerning it."""
    return any(change.concerns(m) for change in SPEED_CHANGES)


def throughput(m: Measurement) -> float | None:
    """Rows per second of a good measurement (None for a failed, unstable or :func:`stale`
    one)."""
    return m.rows_per_s if m.status == "ok" and not stale(m) else None


@dataclass(frozen=True)
class BestPlan:
    workload_id: str
    plan_id: str
    rows_per_s: float
    near_best: tuple[str, ...]  # every plan within NEAR_BEST of it, the best included


def best_plans(measurements: Iterable[Measurement]) -> dict[tuple[str, str], BestPlan]:
    """The best plan of each (hardware, workload), from good measurements only."""
    by_key: dict[tuple[str, str], list[Measurement]] = defaultdict(list)
    for m in measurements:
        if throughput(m) is not None:
            by_key[(m.hardware_id, m.workload_id)].append(m)
    out = {}
    for key, ms in by_key.items():
        top = max(ms, key=lambda m: (m.rows_per_s, m.plan_id))
        near = tuple(sorted(m.plan_id for m in ms
                            if m.rows_per_s >= (1 - NEAR_BEST) * top.rows_per_s))
        out[key] = BestPlan(key[1], top.plan_id, top.rows_per_s, near)
    return out


def arithmetic_intensity(workload: Workload) -> float:
    """Flops per byte of a Gram pass: n·d² flops (the lower triangle, counted as the brick table
    counts it) over the n·d·itemsize bytes of X̃ read."""
    return workload.dim / workload.itemsize


def bottleneck(fractions: dict[str, float], workload: Workload, *, backend: str,
               peak_gflops: float, bandwidth_gbs: float, bricks_per_run: int | None = None,
               run_seconds: float | None = None) -> str:
    """The bottleneck class of one profiled run by the rules of this module's docstring."""
    share = lambda *names: sum(fractions.get(n, 0.0) for n in names)  # noqa: E731
    if share("stage", "transfer") >= TRANSFER_SHARE:
        return "transfer"
    covered = 1.0 - fractions.get("unattributed", 0.0)
    if (backend == "cuda" and bricks_per_run and run_seconds is not None and covered < 0.5
            and covered * run_seconds / bricks_per_run < LAUNCH_MEAN_BRICK_S):
        return "launch"
    if share("validate", "unattributed") >= OVERHEAD_SHARE:
        return "overhead"
    if share("solve") >= SOLVE_SHARE:
        return "solve"
    ridge = peak_gflops / bandwidth_gbs
    if share("gram", "info_update") >= COMPUTE_SHARE and arithmetic_intensity(workload) >= ridge:
        return "compute"
    return "memory"


def measurement_bottleneck(m: Measurement, *, peak_gflops: float, bandwidth_gbs: float
                           ) -> str | None:
    """The bottleneck class of a stored measurement (None when it has no profile or failed)."""
    if m.status == "failed" or not m.brick_fractions:
        return None
    # The profiled run streams the same batches as a timed run: median_s is its length.
    return bottleneck(m.brick_fractions, Workload.from_id(m.workload_id),
                      backend=Plan.from_id(m.plan_id).backend, peak_gflops=peak_gflops,
                      bandwidth_gbs=bandwidth_gbs, bricks_per_run=m.brick_calls,
                      run_seconds=m.median_s)
