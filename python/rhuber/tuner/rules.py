"""The default plan without a model: one documented rule, derived from the store (docs/tuner.md,
"The rule").

A :class:`Rule` maps a workload and the machine's core count to one plan of native_cpu:

- **L1 solver** (penalized workloads): ``prox_newton`` while the X batch is at most
  ``prox_newton_max_bytes`` (None: always), else ``lamm``; in the sparse regime (the first
  batch's screen keeps at most half the features: ``Workload.sparse``) the cut-over is
  ``sparse_prox_newton_max_bytes``. Proximal Newton takes fewer, dearer iterations (a d × d
  model each, over a working set of the active features); LAMM's passes are cheap.
- **threads**: one thread while the batch has fewer than ``one_thread_below`` elements
  (rows × coefficients), else all cores: a fresh engine's worker threads are not earned back on
  a small batch.
- **Gram strategy** and **chunk**: ``gram`` and ``chunk_kib``, the same for every workload.

:func:`search` scores every rule of a small family (:func:`family`) on every machine of a store
— the geometric mean, over machines, of each machine's geomean regret (the rule's measured time
over the best measured plan's, per workload) — and returns the best, ties going to the simpler
rule. ``rhuber tune train`` writes it beside the models (``rule.json``); without a readable
file the built-in :data:`DEFAULT_RULE` (the search's result on the shipped store) applies.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engines.plans import Plan
from ..engines.workload import Workload
from .current import LOCK, loaded
from .paths import default_models_dir, has_models, local_models_root, models_dir

if TYPE_CHECKING:  # the store (sqlite3) stays out of a stream that reads the rule
    from .store import Measurement

RULE_FILE = "rule.json"
RULE_FORMAT = 1

#: The model is trusted per region: (penalized, batch size class). Size classes by elements per
#: batch (rows × coefficients): below 2^14, below 2^18, the rest.
SIZE_CLASSES = (1 << 14, 1 << 18)


def region(workload: Workload) -> str:
    """The region key of ``workload`` (``"l1=1/size=2"``): where the model was measured to
    beat the rule or not."""
    elements = workload.rows * workload.dim
    size = sum(elements >= edge for edge in SIZE_CLASSES)
    return f"l1={int(workload.penalized)}/size={size}"


def describe_region(key: str) -> str:
    """A region key in words: ``"l1=0/size=2"`` is "unpenalized batches of 262,144 or more
    elements (rows × coefficients)"."""
    penalty, size = (part.partition("=")[2] for part in key.split("/"))
    kind = "penalized" if penalty == "1" else "unpenalized"
    k = int(size)
    low = SIZE_CLASSES[k - 1] if k > 0 else None
    high = SIZE_CLASSES[k] if k < len(SIZE_CLASSES) else None
    if low is None:
        span = f"under {high:,}"
    elif high is None:
        span = f"{low:,} or more"
    else:
        span = f"{low:,} to {high - 1:,}"
    return f"{kind} batches of {span} elements (rows × coefficients)"


@dataclass(frozen=True)
class Rule:
    """One default plan per workload (module docstring). ``model_regions``: the regions where
    the model measured better than this rule on machines held out of its training (the advisor
    uses the model only there)."""

    prox_newton_max_bytes: int | None = 4 << 20
    one_thread_below: int = 1 << 16
    gram: str = "incremental"
    chunk_kib: int = 256
    model_regions: tuple[str, ...] = ()
    sparse_prox_newton_max_bytes: int | None = 4 << 20

    def plan(self, workload: Workload, cores: int, *, threads: int | None = None,
             l1_solver: str | None = None) -> Plan:
        """The rule's plan for ``workload`` on ``cores`` cores; ``threads`` / ``l1_solver``
        override what the user fixed."""
        batch_bytes = workload.rows * workload.features * workload.itemsize
        if l1_solver is None:
            cut = (self.sparse_prox_newton_max_bytes if workload.sparse
                   else self.prox_newton_max_bytes)
            l1_solver = ("prox_newton" if workload.penalized and (
                cut is None or batch_bytes <= cut) else "lamm")
        if threads is None:
            threads = 1 if workload.rows * workload.dim < self.one_thread_below else cores
        return Plan("native_cpu", threads=max(1, min(threads, cores)), gram=self.gram,
                    chunk_kib=self.chunk_kib, l1_solver=l1_solver)

    def describe(self) -> str:
        def solver(cut: int | None) -> str:
            return ("prox_newton" if cut is None else "lamm" if cut == 0 else
                    f"prox_newton up to {cut / 2**20:g} MiB batches, lamm above")

        dense, sparse = solver(self.prox_newton_max_bytes), solver(
            self.sparse_prox_newton_max_bytes)
        l1 = dense if dense == sparse else f"{dense} (sparse regime: {sparse})"
        return (f"L1: {l1}; 1 thread below {self.one_thread_below:,} elements a batch, "
                f"else all cores; gram={self.gram}; chunk={self.chunk_kib}k")

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "model_regions": list(self.model_regions)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rule:
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - fields
        if unknown:
            raise ValueError(f"unknown rule fields {sorted(unknown)}")
        values = dict(data)
        # A rule written before the sparse regime had one cut-over for both regimes.
        values.setdefault("sparse_prox_newton_max_bytes",
                          values.get("prox_newton_max_bytes", cls.prox_newton_max_bytes))
        if "model_regions" in values:
            values["model_regions"] = tuple(values["model_regions"])
        return cls(**values)


#: The search's result on the shipped store, with the regions where the model beat it (the
#: shipped rule.json, which rhuber tune train rewrites; this applies when no file can be read).
DEFAULT_RULE = Rule(prox_newton_max_bytes=None, one_thread_below=1 << 17, gram="incremental",
                    chunk_kib=256, model_regions=("l1=0/size=0", "l1=0/size=1", "l1=1/size=0",
                                                  "l1=1/size=2"),
                    sparse_prox_newton_max_bytes=None)


def family() -> list[Rule]:
    """The rules :func:`search` compares: L1 cut-over × the sparse regime's (coarser) × thread
    cut-over × Gram × chunk."""
    cuts = (None, *(m << 20 for m in (1, 2, 4, 8, 16)), 0)  # 0: lamm always
    sparse_cuts = (None, 4 << 20, 0)
    threads = (0, *(1 << k for k in range(10, 23)), 1 << 40)  # 1 << 40: one thread always
    return [Rule(c, t, g, k, sparse_prox_newton_max_bytes=s) for c in cuts for s in sparse_cuts
            for t in threads for g in ("incremental", "full") for k in (64, 256, 1024)]


def _complexity(rule: Rule) -> tuple[int, ...]:
    return (rule.prox_newton_max_bytes is not None,
            rule.sparse_prox_newton_max_bytes != rule.prox_newton_max_bytes,
            rule.gram != "incremental", rule.chunk_kib != 256)


def times_by_workload(measurements: Iterable[Measurement]
                      ) -> dict[tuple[str, str], dict[str, float]]:
    """(hardware, workload) → plan id → seconds per row, from the good measurements."""
    from .labels import throughput  # the search's, not the rule's: no stream needs it

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
        chosen = plans.get(rule.plan(w, cores[key[0]]).id)
        if chosen is not None:
            out[key] = chosen / best
    return out


def score(values: dict[tuple[str, str], float]) -> float:
    """Geomean over machines of each machine's geomean regret."""
    by_hw: dict[str, list[float]] = defaultdict(list)
    for (hw, _), r in values.items():
        by_hw[hw].append(math.log(r))
    if not by_hw:
        return math.inf
    return math.exp(sum(sum(v) / len(v) for v in by_hw.values()) / len(by_hw))


def search(measurements: Sequence[Measurement], cores: dict[str, int],
           rules: Sequence[Rule] | None = None) -> tuple[Rule, float]:
    """The rule of ``rules`` (default :func:`family`) with the lowest :func:`score` on
    ``measurements`` (``cores``: each hardware id's core count), and that score. A rule must
    have a measured plan for at least 90 % of the workloads the best-covered rule has."""
    times = times_by_workload(measurements)
    table = _table(times)
    scored = []
    for rule in rules or family():
        values = regrets(rule, times, cores, table=table)
        scored.append((len(values), score(values), _complexity(rule), rule))
    most = max(n for n, *_ in scored)
    _, best, _, rule = min((s for s in scored if s[0] >= 0.9 * most),
                           key=lambda s: (round(s[1], 6), s[2]))
    return rule, best


def save(rule: Rule, directory: str | Path, **provenance: Any) -> Path:
    path = Path(directory) / RULE_FILE
    path.write_text(json.dumps({"format": RULE_FORMAT, "rule": rule.as_dict(), **provenance},
                               indent=1, sort_keys=True) + "\n")
    return path


def load(directory: str | Path) -> Rule:
    """The rule in ``directory``'s ``rule.json``; :data:`DEFAULT_RULE` when there is none or it
    cannot be read."""
    try:
        data = json.loads((Path(directory) / RULE_FILE).read_text())
        if data.get("format") != RULE_FORMAT:
            return DEFAULT_RULE
        return Rule.from_dict(data["rule"])
    except (OSError, ValueError, KeyError, TypeError):
        return DEFAULT_RULE


def current_rule() -> Rule:
    """The rule this process's ``backend="auto"`` runs before (and beside) its advisor: the
    local models' ``rule.json`` when this machine's identity is known already
    (:func:`.hardware.peek_identity`, a file read) and it has local models, else the shipped
    one — read once per generation of the local models, loading no model (and, where no
    machine has local models, not the fingerprint's code either)."""
    with LOCK:
        shared = loaded()
        if "rule" not in shared:
            hw = None
            if local_models_root().is_dir():  # else no machine was calibrated: no identity read
                from .hardware import peek_identity

                hw = peek_identity()
            directory = (models_dir(hw.hardware_id)
                         if hw is not None and has_models(hw.hardware_id)
                         else default_models_dir())
            shared["rule"] = load(directory)
        return shared["rule"]
