"""The checklist's types and registry: :class:`Outcome` (what a check measured), :class:`Item`
(a check or a not-applicable reason), :class:`Result` (an item run), the ``@check`` and
:func:`not_applicable` registrations, the comparisons checks build outcomes with, and running."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .context import Context

CATEGORIES = ("model accuracy", "feature engineering", "training data quality",
              "integration correctness", "generalization and robustness")

PASS, FAIL, NA = "pass", "fail", "na"


@dataclass(frozen=True)
class Outcome:
    """What a check measured, against what, and whether it passed."""

    passed: bool
    measured: str
    threshold: str
    reason: str = ""
    value: float | None = None


@dataclass(frozen=True)
class Item:
    """One entry of the checklist: a check function, or the reason it does not apply."""

    id: str
    title: str
    run: Callable[[Context], Outcome] | None = None
    not_applicable: str | None = None

    @property
    def category(self) -> str:
        return CATEGORIES[(int(self.id[1:]) - 1) // 20]


@dataclass(frozen=True)
class Result:
    id: str
    category: str
    title: str
    status: str  # PASS, FAIL or NA
    measured: str | None
    threshold: str | None
    reason: str
    value: float | None = None
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


#: Every item by id, in registration order (the category modules register F001 … F100).
REGISTRY: dict[str, Item] = {}


def check(item_id: str, title: str) -> Callable[[Callable[[Context], Outcome]],
                                                Callable[[Context], Outcome]]:
    def register(fn: Callable[[Context], Outcome]) -> Callable[[Context], Outcome]:
        _register(Item(item_id, title, run=fn))
        return fn
    return register


def not_applicable(item_id: str, title: str, reason: str) -> None:
    _register(Item(item_id, title, not_applicable=reason))


def _register(item: Item) -> None:
    if item.id in REGISTRY:
        raise ValueError(f"{item.id} registered twice")
    REGISTRY[item.id] = item


# ---------------------------------------------------------------------------- comparisons

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b}


def compare(value: float, op: str, bound: float, fmt: str = "{:.4g}", reason: str = ""
            ) -> Outcome:
    """``value op bound`` as an Outcome; a NaN value fails."""
    value = float(value)
    passed = not math.isnan(value) and _OPS[op](value, bound)
    return Outcome(passed, fmt.format(value), f"{op} {fmt.format(bound)}", reason, value)


def pct(value: float, op: str, bound: float, reason: str = "") -> Outcome:
    return compare(value, op, bound, "{:.1%}", reason)


def count(value: int, op: str, bound: int, what: str, reason: str = "") -> Outcome:
    return compare(value, op, bound, "{:.0f} " + what, reason)


def holds(ok: bool, measured: str, expected: str, reason: str = "") -> Outcome:
    """A yes/no property; ``measured`` says what was found."""
    return Outcome(bool(ok), measured, expected, reason, float(bool(ok)))


# ---------------------------------------------------------------------------- running


def ids() -> list[str]:
    return sorted(REGISTRY)


def run_item(item: Item, ctx: Context) -> Result:
    start = time.perf_counter()
    if item.run is None:
        return Result(item.id, item.category, item.title, NA, None, None,
                      item.not_applicable or "")
    try:
        outcome = item.run(ctx)
    except Exception as exc:  # a check that cannot run fails, saying why
        outcome = Outcome(False, "error", "runs", f"{type(exc).__name__}: {exc}")
    return Result(item.id, item.category, item.title, PASS if outcome.passed else FAIL,
                  outcome.measured, outcome.threshold, outcome.reason, outcome.value,
                  round(time.perf_counter() - start, 3))


def run(ctx: Context, only: Iterable[str] | None = None) -> list[Result]:
    """The results of the checklist's items (``only`` those ids), in id order."""
    chosen = ids() if only is None else sorted(set(only))
    unknown = [i for i in chosen if i not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown checklist ids {unknown}; expected F001 … F100")
    return [run_item(REGISTRY[i], ctx) for i in chosen]
