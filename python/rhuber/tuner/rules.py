"""The default plan without a model: one documented rule, derived from the store (docs/tuner.md,
"The rule").

A :class:`Rule` maps a workload and the machine's core count to one plan of native_cpu:

- **L1 solver** (penalized workloads): ``prox_newton`` while the X batch is at most
  ``prox_newton_max_bytes`` (None: always), else ``lamm``; in the sparse regime (the first
  batch's screen keeps at most half the features: ``Workload.sparse``) the cut-over is
  ``sparse_prox_newton_max_bytes``. Proximal Newton takes fewer, dearer iterations (a d × d
  model each, over a working set of the active features); LAMM's passes are cheap.
- **threads**: one per ``work_per_thread`` of the batch's work, at least one and at most the
  cores; the work is measured in ``thread_work`` (:data:`THREAD_WORK`): elements (rows ×
  coefficients), bytes (elements × the item size), rows, or the Gram's flops (rows ×
  coefficients²). A thread's share of a pass must repay its hand-off; which measure of work
  says when is the store's to decide.
- **Gram strategy** and **chunk**: ``gram`` and ``chunk_kib``, the same for every workload.

:func:`.rule_search.search` finds the rule over a store (``rhuber tune train`` writes it beside
the models, ``rule.json``); without a readable file the built-in :data:`DEFAULT_RULE` (the
search's result on the shipped store) applies. This module is what a stream reads the rule
with, imported with the package (every stream of the default ``backend="auto"`` reads it: on its
first batch, the import cost the first stream of a process ~0.3 ms, a tenth of a small batch's
first fit); the search lives apart, so that importing this loads no store or model.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..engines.plans import Plan
from ..engines.workload import Workload
from .current import LOCK, loaded
from .paths import any_local_models, has_models, models_dir

RULE_FILE = "rule.json"
RULE_FORMAT = 1

#: A batch's work, by the measure the rule's threads follow. Bytes tell float32 from float64:
#: a pass over a float32 batch moves half the memory of a float64 one of as many elements.
THREAD_WORK: dict[str, Callable[[Workload], int]] = {
    "elements": lambda w: w.rows * w.dim,
    "bytes": lambda w: w.rows * w.dim * w.itemsize,
    "rows": lambda w: w.rows,
    "flops": lambda w: w.rows * w.dim * w.dim,
}
THREAD_WORK_WORDS = {"elements": "elements (rows × coefficients)",
                     "bytes": "bytes (rows × coefficients × item size)", "rows": "rows",
                     "flops": "Gram flops (rows × coefficients²)"}


@functools.lru_cache(maxsize=4096)
def _plan_id(threads: int, gram: str, chunk_kib: int, solver: str) -> str:
    return Plan("native_cpu", threads=threads, gram=gram, chunk_kib=chunk_kib,
                l1_solver=solver).id


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


class Rule:
    """One default plan per workload (module docstring). ``model_regions``: the regions where
    the model measured better than this rule on machines held out of its training (the advisor
    uses the model only there). Immutable; equal rules have equal fields.

    Not a dataclass: making a frozen dataclass (~0.5 ms of generated code compiled) would be
    paid by every process that imports rhuber."""

    FIELDS = ("prox_newton_max_bytes", "work_per_thread", "gram", "chunk_kib", "model_regions",
              "sparse_prox_newton_max_bytes", "thread_work")
    __slots__ = FIELDS

    prox_newton_max_bytes: int | None
    work_per_thread: int
    gram: str
    chunk_kib: int
    model_regions: tuple[str, ...]
    sparse_prox_newton_max_bytes: int | None
    thread_work: str

    def __init__(self, prox_newton_max_bytes: int | None = 4 << 20,
                 work_per_thread: int = 1 << 15, gram: str = "incremental",
                 chunk_kib: int = 256, model_regions: tuple[str, ...] = (),
                 sparse_prox_newton_max_bytes: int | None = 4 << 20,
                 thread_work: str = "elements") -> None:
        if thread_work not in THREAD_WORK:
            raise ValueError(f"thread_work {thread_work!r}: not one of {sorted(THREAD_WORK)}")
        if work_per_thread < 1:
            raise ValueError(f"work_per_thread {work_per_thread!r}: must be at least 1")
        for name, value in zip(self.FIELDS, (
                prox_newton_max_bytes, work_per_thread, gram, chunk_kib, tuple(model_regions),
                sparse_prox_newton_max_bytes, thread_work), strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a Rule is immutable: use rule.replace({name}=...)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("a Rule is immutable")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.FIELDS)

    def __eq__(self, other: object) -> bool:
        if type(other) is not Rule:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return "Rule(" + ", ".join(f"{n}={v!r}" for n, v in zip(self.FIELDS, self._values(),
                                                               strict=True)) + ")"

    def replace(self, **changes: Any) -> Rule:
        """This rule with ``changes`` (field names), validated as a new one."""
        unknown = set(changes) - set(self.FIELDS)
        if unknown:
            raise TypeError(f"unknown rule fields {sorted(unknown)}")
        return Rule(**{**dict(zip(self.FIELDS, self._values(), strict=True)), **changes})

    def solver(self, workload: Workload) -> str:
        """The L1 solver of ``workload`` (lamm for an unpenalized one: the engines ignore it)."""
        cut = (self.sparse_prox_newton_max_bytes if workload.sparse
               else self.prox_newton_max_bytes)
        return ("prox_newton" if workload.penalized and (
            cut is None or workload.rows * workload.features * workload.itemsize <= cut)
            else "lamm")

    def threads(self, workload: Workload, cores: int) -> int:
        """Threads for ``workload`` on ``cores`` cores: one per ``work_per_thread``, 1 … cores."""
        work = THREAD_WORK[self.thread_work](workload)
        return max(1, min(cores, work // self.work_per_thread))

    def plan(self, workload: Workload, cores: int, *, threads: int | None = None,
             l1_solver: str | None = None) -> Plan:
        """The rule's plan for ``workload`` on ``cores`` cores; ``threads`` / ``l1_solver``
        override what the user fixed."""
        if l1_solver is None:
            l1_solver = self.solver(workload)
        if threads is None:
            threads = self.threads(workload, cores)
        return Plan("native_cpu", threads=max(1, min(threads, cores)), gram=self.gram,
                    chunk_kib=self.chunk_kib, l1_solver=l1_solver)

    def plan_id(self, workload: Workload, cores: int) -> str:
        """``plan(workload, cores).id``, without building the plan (the search asks it of
        thousands of rules)."""
        return _plan_id(self.threads(workload, cores), self.gram, self.chunk_kib,
                        self.solver(workload))

    def describe(self) -> str:
        def solver(cut: int | None) -> str:
            return ("prox_newton" if cut is None else "lamm" if cut == 0 else
                    f"prox_newton up to {cut / 2**20:g} MiB batches, lamm above")

        dense, sparse = solver(self.prox_newton_max_bytes), solver(
            self.sparse_prox_newton_max_bytes)
        l1 = dense if dense == sparse else f"{dense} (sparse regime: {sparse})"
        return (f"L1: {l1}; {self.describe_threads()}; gram={self.gram}; "
                f"chunk={self.chunk_kib}k")

    def describe_threads(self) -> str:
        if self.work_per_thread >= 1 << 40:
            return "1 thread"
        if self.work_per_thread == 1:
            return "all cores"
        return (f"a thread per {self.work_per_thread:,} {THREAD_WORK_WORDS[self.thread_work]} "
                "of a batch, 1 … all cores")

    def as_dict(self) -> dict[str, Any]:
        return {**dict(zip(self.FIELDS, self._values(), strict=True)),
                "model_regions": list(self.model_regions)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rule:
        fields = set(cls.FIELDS)
        unknown = set(data) - fields - {"one_thread_below"}
        if unknown:
            raise ValueError(f"unknown rule fields {sorted(unknown)}")
        values = dict(data)
        # A rule written before threads followed work per thread gave one thread below
        # ``one_thread_below`` elements, else all cores: on the 2 cores of every machine it
        # was fitted on, that is a thread per half of it.
        if "one_thread_below" in values:
            below = int(values.pop("one_thread_below"))
            values.setdefault("work_per_thread", max(1, below // 2))
        # A rule written before the sparse regime had one cut-over for both regimes.
        values.setdefault("sparse_prox_newton_max_bytes",
                          values.get("prox_newton_max_bytes", cls.prox_newton_max_bytes))
        if "model_regions" in values:
            values["model_regions"] = tuple(values["model_regions"])
        return cls(**values)


#: The search's result on the shipped store, with the regions where the model beat it (the
#: shipped rule.json, which rhuber tune train rewrites; this applies when no file can be read).
DEFAULT_RULE = Rule(prox_newton_max_bytes=2 << 20, work_per_thread=2048, gram="incremental",
                    chunk_kib=1024, model_regions=(), sparse_prox_newton_max_bytes=None,
                    thread_work="rows")


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
    one (:data:`DEFAULT_RULE`) — read once per generation of the local models, loading no
    model (and, where no machine has local models, not the fingerprint's code either)."""
    with LOCK:
        shared = loaded()
        if "rule" not in shared:
            hw = None
            if any_local_models():  # else no machine was calibrated: no identity read
                from .hardware import peek_identity

                hw = peek_identity()
            # The shipped rule.json is DEFAULT_RULE (a test holds them equal): not read again.
            shared["rule"] = (load(models_dir(hw.hardware_id))
                              if hw is not None and has_models(hw.hardware_id) else DEFAULT_RULE)
        return shared["rule"]
