"""The anomaly rules of docs/tracing.md: each looks at one batch's trace and names the first
iteration where its condition holds (with how many iterations it held in).

Thresholds are module constants so that docs/tracing.md and the tests can cite them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass

import numpy as np

from .records import BatchTrace, IterationRecord

#: A step is exploding when its norm grows more than this factor over the previous iteration's
#: step of the same solve (Newton and LAMM steps shrink as a solve converges) ...
EXPLODING_GROWTH = 100.0
#: ... and is not negligible: larger than this fraction of max(1, ‖β‖₂) at its starting point.
EXPLODING_FLOOR = 1e-3
#: The objective may rise by rounding only: by more than this many units of the dtype's
#: √eps times max(1, |Q|) it has increased (Armijo and LAMM's majorization forbid an increase).
OBJECTIVE_SLACK = 1.0
#: Rungs that are fallbacks from Cholesky.
FALLBACK_RUNGS = ("lu", "svd")


@dataclass(frozen=True)
class Anomaly:
    """A rule that fired in one batch: where first (phase, iteration; None for a batch-level
    rule), how many iterations it held in, and what was seen there."""

    rule: str
    stream: int
    batch: int
    phase: str | None
    iteration: int | None
    count: int
    detail: str

    def as_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        where = "" if self.iteration is None else f" {self.phase} iteration {self.iteration}"
        again = f" (in {self.count} iterations)" if self.count > 1 else ""
        return f"stream {self.stream} batch {self.batch}{where}: {self.rule}: {self.detail}{again}"


Finding = tuple[IterationRecord, str]


def _non_finite(batch: BatchTrace) -> Iterator[Finding]:
    for it in batch.iterations:
        bad = [f"{name} has {stats.nan} NaN and {stats.inf} infinite entries"
               for name, stats in (("residual", it.residual), ("score", it.score),
                                   ("Hessian diagonal", it.hessian_diagonal))
               if stats is not None and stats.non_finite]
        bad += [f"{name} is {value}" for name, value in
                (("objective", it.objective), ("step norm", it.step_norm))
                if not math.isfinite(value)]
        if bad:
            yield it, "; ".join(bad)


def _same_solve_pairs(batch: BatchTrace) -> Iterator[tuple[IterationRecord, IterationRecord]]:
    for before, after in zip(batch.iterations, batch.iterations[1:], strict=False):
        if before.phase == after.phase and after.iteration == before.iteration + 1:
            yield before, after


def _objective_increase(batch: BatchTrace) -> Iterator[Finding]:
    slack = OBJECTIVE_SLACK * math.sqrt(float(np.finfo(np.dtype(batch.dtype)).eps))
    for before, after in _same_solve_pairs(batch):
        rise = after.objective - before.objective
        if rise > slack * max(1.0, abs(before.objective)):
            yield after, f"Q rose by {rise:.3g} to {after.objective:.6g}"


def _exploding_step(batch: BatchTrace) -> Iterator[Finding]:
    for before, after in _same_solve_pairs(batch):
        if (after.step_norm > EXPLODING_GROWTH * before.step_norm
                and after.step_norm > EXPLODING_FLOOR * max(1.0, after.coef_norm)):
            yield after, (f"step norm {after.step_norm:.3g}, "
                          f"{after.step_norm / max(before.step_norm, 1e-300):.3g}x the last")


def _vanishing_curvature(batch: BatchTrace) -> Iterator[Finding]:
    for it in batch.iterations:
        if it.quadratic_rows < batch.n_coef:
            yield it, (f"{it.quadratic_rows} rows in the quadratic zone |r| <= tau, fewer than "
                       f"the {batch.n_coef} coefficients")


def _exhausted_line_search(batch: BatchTrace) -> Iterator[Finding]:
    for it in batch.iterations:
        if it.search_exhausted:
            what = "doublings of phi" if it.solver == "lamm" else "halvings"
            yield it, f"no trial accepted after {it.halvings} {what}; the solve stopped"


def _fallback_rung(batch: BatchTrace) -> Iterator[Finding]:
    for it in batch.iterations:
        if it.solver in FALLBACK_RUNGS:
            yield it, f"the {it.solver} rung solved the Newton system (rcond {it.rcond})"


#: Rule name -> the iterations where it holds. Order: as docs/tracing.md lists them.
ITERATION_RULES: dict[str, Callable[[BatchTrace], Iterator[Finding]]] = {
    "non_finite": _non_finite,
    "objective_increase": _objective_increase,
    "exploding_step": _exploding_step,
    "vanishing_curvature": _vanishing_curvature,
    "exhausted_line_search": _exhausted_line_search,
    "fallback_rung": _fallback_rung,
}
RULES = (*ITERATION_RULES, "not_converged")


def find_anomalies(batch: BatchTrace) -> list[Anomaly]:
    """Every rule that fires in ``batch``, in RULES order."""
    found = []
    for rule, check in ITERATION_RULES.items():
        hits = list(check(batch))
        if hits:
            first, detail = hits[0]
            found.append(Anomaly(rule, batch.stream, batch.batch, first.phase, first.iteration,
                                 len(hits), detail))
    if batch.converged is False:
        last = batch.iterations[-1] if batch.iterations else None
        found.append(Anomaly(
            "not_converged", batch.stream, batch.batch,
            None if last is None else last.phase, None if last is None else last.iteration, 1,
            f"the solve stopped after {batch.n_iter} iterations without meeting the tolerance"))
    return found
