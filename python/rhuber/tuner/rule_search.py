"""The search for the rule (:mod:`.rules`) over a measurement store (docs/tuner.md, "The rule").

:func:`search` scores every rule of a small family (:func:`family`) on every machine of a store
— the geometric mean, over machines, of each machine's geomean regret (the rule's measured time
over the best measured plan's, per workload) — and returns the best among rules whose plans
were measured on at least 90 % of the workloads. Rules within :data:`TIE_MARGIN` of the best
score are tied (the store's figures are not more precise than that): the simpler one wins, then
the one whose worst machine fares best, since the rule is what a machine the store has never
seen runs. A rule is scored on its plans' current measurements only; a plan measured there
before its code changed speed (:func:`.labels.stale`) still counts as measured where another
machine has current measurements of its solver in the same regime, so that the rule is not
pushed off it for the lack of a fresh figure on the machines not measured again; where no
machine measured the solver since, the stale figures are the only ones and score the rule (a
rule is never handed a plan unscored).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..engines.workload import Workload
from .labels import regime, stale, throughput
from .rules import Rule

if TYPE_CHECKING:
    from .store import Measurement

#: Rules whose scores differ by less than this share are tied: the score's own spread. On the
#: shipped store, each measurement's median drawn again from its timed runs (a bootstrap, 40
#: draws) moves the score by 0.12 % (one standard deviation) and a machine's geomean by 0.2-0.4 %;
#: the 1 MiB cut-over, ahead of 2 MiB by 0.01 %, was behind in 19 of the 40 draws.
TIE_MARGIN = 1e-3

#: The powers of two of work per thread the search tries, per measure (a batch of the corpus's
#: sizes, 256 … 262,144 rows and 3 … 513 coefficients, falls on either side of most of them).
_THREAD_SPANS = {"elements": (9, 21), "bytes": (12, 24), "rows": (7, 17), "flops": (11, 28)}


def family() -> list[Rule]:
    """The rules :func:`search` compares: L1 cut-over × the sparse regime's (coarser) × threads
    (each measure of work, powers of two per thread; all cores, one thread) × Gram × chunk."""
    cuts = (None, *(m << 20 for m in (1, 2, 4, 8, 16)), 0)  # 0: lamm always
    sparse_cuts = (None, 4 << 20, 0)
    threads = [("elements", 1), ("elements", 1 << 40)]  # all cores; one thread
    threads += [(work, 1 << k) for work, (low, high) in _THREAD_SPANS.items()
                for k in range(low, high + 1)]
    return [Rule(c, t, g, k, sparse_prox_newton_max_bytes=s, thread_work=work)
            for c in cuts for s in sparse_cuts for work, t in threads
            for g in ("incremental", "full") for k in (64, 256, 1024)]


def _complexity(rule: Rule) -> tuple[int, ...]:
    return (rule.thread_work != "elements", rule.prox_newton_max_bytes is not None,
            rule.sparse_prox_newton_max_bytes != rule.prox_newton_max_bytes,
            rule.gram != "incremental", rule.chunk_kib != 256)


def times_by_workload(measurements: Iterable[Measurement]
                      ) -> dict[tuple[str, str], dict[str, float]]:
    """(hardware, workload) → plan id → seconds per row, from the good measurements."""
    out: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for m in measurements:
        rate = throughput(m)
        if rate:
            out[(m.hardware_id, m.workload_id)][m.plan_id] = 1.0 / rate
    return out


def _table(times: dict[tuple[str, str], dict[str, float]]
           ) -> list[tuple[tuple[str, str], Workload, dict[str, float], float]]:
    return [(key, Workload.from_id(key[1]), plans, min(plans.values()))
            for key, plans in times.items() if Workload.from_id(key[1]).location == "host"]


def regrets(rule: Rule, times: dict[tuple[str, str], dict[str, float]],
            cores: dict[str, int], *, table: list[Any] | None = None
            ) -> dict[tuple[str, str], float]:
    """The rule's regret per (hardware, workload) whose rule plan was measured."""
    out = {}
    for key, w, plans, best in table if table is not None else _table(times):
        chosen = plans.get(rule.plan_id(w, cores[key[0]]))
        if chosen is not None:
            out[key] = chosen / best
    return out


def machine_regrets(values: dict[tuple[str, str], float]) -> dict[str, float]:
    """Each machine's geomean regret."""
    by_hw: dict[str, list[float]] = defaultdict(list)
    for (hw, _), r in values.items():
        by_hw[hw].append(math.log(r))
    return {hw: math.exp(sum(v) / len(v)) for hw, v in by_hw.items()}


def _over_machines(per_machine: dict[str, float]) -> float:
    """A rule's score: the geomean over machines of each machine's geomean regret."""
    if not per_machine:
        return math.inf
    return math.exp(sum(math.log(r) for r in per_machine.values()) / len(per_machine))


def _stale_rows(measurements: Sequence[Measurement]
                ) -> tuple[set[tuple[str, str, str]], list[Measurement]]:
    """The stale good measurements, split by whether their L1 solver has a current good
    measurement in the same regime on some machine: (hardware, workload, plan) of those that
    have one (newer figures supersede them: the search counts them as measured but scores the
    rule on current figures only), and those that have none (nothing newer says how fast the
    solver is: the stale figure is the best there is, and the search scores with it, as
    before the solver changed, rather than let a rule run it unscored)."""
    def kind(m: Measurement) -> tuple[str, bool]:
        return m.plan_id.rpartition("/l1=")[2], regime(m.workload_id)[1]

    current = {kind(m) for m in measurements if throughput(m) and regime(m.workload_id)[0]}
    old = [m for m in measurements if m.status == "ok" and stale(m)]
    return ({(m.hardware_id, m.workload_id, m.plan_id) for m in old if kind(m) in current},
            [m for m in old if kind(m) not in current])


def search(measurements: Sequence[Measurement], cores: dict[str, int],
           rules: Sequence[Rule] | None = None) -> tuple[Rule, float]:
    """The rule of ``rules`` (default :func:`family`) with the lowest score
    (:func:`_over_machines`) on ``measurements`` (``cores``: each hardware id's core count), and
    its score; within :data:`TIE_MARGIN` of the lowest, the simplest, then the one with the
    lowest worst machine. A rule must have a measured plan for at least 90 % of the workloads the
    best-covered rule has."""
    times = times_by_workload(measurements)
    measured_before, only_figures = _stale_rows(measurements)
    for m in only_figures:
        times[(m.hardware_id, m.workload_id)][m.plan_id] = 1.0 / m.rows_per_s
    table = _table(times)
    scored = []
    for rule in rules or family():
        values = regrets(rule, times, cores, table=table)
        covered = len(values)
        if measured_before:
            covered += sum((key[0], key[1], rule.plan_id(w, cores[key[0]])) in measured_before
                           for key, w, *_ in table)
        per_machine = machine_regrets(values)
        scored.append((covered, _over_machines(per_machine), _complexity(rule),
                       max(per_machine.values(), default=math.inf), rule))
    most = max(n for n, *_ in scored)
    eligible = [s for s in scored if s[0] >= 0.9 * most]
    best = min(s[1] for s in eligible)
    tied = [s for s in eligible if s[1] <= best * (1.0 + TIE_MARGIN)]
    _, chosen, _, _, rule = min(tied, key=lambda s: (s[2], s[3]))
    return rule, chosen
