"""Trace: the batches a traced estimator (``trace=True``) or a ``with trace():`` block recorded,
and what was anomalous in them."""

from __future__ import annotations

import contextvars
import json
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .anomalies import Anomaly, find_anomalies
from .records import BatchTrace, IterationRecord
from .report import format_report, plot_trace

#: Version of the JSON layout written by Trace.to_json.
JSON_VERSION = 1

#: The traces of the active ``with trace():`` blocks, outermost first.
_ACTIVE: contextvars.ContextVar[tuple[Trace, ...]] = contextvars.ContextVar(
    "rhuber_trace", default=())


class Trace:
    """Per-iteration records of batch solves (docs/tracing.md).

    ``batches`` lists BatchTrace objects in the order they ran; ``anomalies()`` applies the
    rules of rhuber.tracing.anomalies; ``report()``, ``to_json()`` and ``plot()`` show
    them.
    """

    def __init__(self) -> None:
        self.batches: list[BatchTrace] = []
        self._streams: dict[int, int] = {}  # id(estimator) -> its stream number here

    def __len__(self) -> int:
        return len(self.batches)

    def __repr__(self) -> str:
        iterations = sum(len(b.iterations) for b in self.batches)
        return (f"<Trace: {len(self.batches)} batches, {iterations} iterations, "
                f"{len(self.anomalies())} anomalies>")

    def __getstate__(self) -> dict:
        return {"batches": self.batches}  # ids of estimators mean nothing elsewhere

    def __setstate__(self, state: dict) -> None:
        self.batches = state["batches"]
        self._streams = {}

    def stream_of(self, owner: object) -> int:
        """The stream number of ``owner`` (an estimator) in this trace, assigned on first use."""
        return self._streams.setdefault(id(owner), len(self._streams))

    def add(self, batch: BatchTrace) -> None:
        self.batches.append(batch)

    @property
    def iterations(self) -> list[tuple[BatchTrace, IterationRecord]]:
        return [(b, it) for b in self.batches for it in b.iterations]

    def anomalies(self) -> list[Anomaly]:
        return [a for b in self.batches for a in find_anomalies(b)]

    def report(self, *, max_rows: int | None = 60) -> str:
        return format_report(self, max_rows=max_rows)

    def to_dict(self) -> dict[str, Any]:
        return {"version": JSON_VERSION, "batches": [b.as_dict() for b in self.batches],
                "anomalies": [a.as_dict() for a in self.anomalies()]}

    def to_json(self, path: str | os.PathLike | None = None, *, indent: int | None = 1) -> str:
        """The trace as JSON (NaN and infinities as null); written to ``path`` when given."""
        text = json.dumps(_json_safe(self.to_dict()), indent=indent, allow_nan=False)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        return text

    @classmethod
    def from_json(cls, text: str) -> Trace:
        data = json.loads(text)
        if data.get("version") != JSON_VERSION:
            raise ValueError(f"trace JSON version {data.get('version')!r} is not "
                             f"{JSON_VERSION}, the one this library reads")
        out = cls()
        out.batches = [BatchTrace.from_dict(b) for b in data["batches"]]
        return out

    def plot(self, path: str | os.PathLike, *, dpi: int = 120) -> None:
        """A PNG of the objective and the step norm per iteration, batch by batch."""

        plot_trace(self, path, dpi=dpi)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def active() -> tuple[Trace, ...]:
    """The traces of the active ``with trace():`` blocks in this context, outermost first."""
    return _ACTIVE.get()


@contextmanager
def trace() -> Iterator[Trace]:
    """Record every estimator's batch updates inside the block::

        with rhuber.trace() as tr:
            est.partial_fit(X, y)
        print(tr.report())

    The active blocks are a context variable: threads started with a copied context and asyncio
    tasks created inside see them. Nested blocks each record what runs inside them.
    """
    recorded = Trace()
    token = _ACTIVE.set((*_ACTIVE.get(), recorded))
    try:
        yield recorded
    finally:
        _ACTIVE.reset(token)
