"""How an estimator's batch update gets traced: the engine fills a list of iteration dicts, and
the batch's BatchTrace goes to every trace that wants it (the estimator's ``trace_``, the active
``with trace():`` blocks)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..core.validation import computation_dtype
from .records import BatchTrace, IterationRecord
from .trace import Trace

#: The engines that record solver iterations. The CUDA engine does not: its solves run on the
#: device through rh::renewable_update without a trace sink, and tracing it would need the
#: per-row statistics reduced on the device (docs/tracing.md, "Engines").
TRACEABLE_ENGINES = ("numpy", "native_cpu")


def traced_update(engine: Any, state: Any, X: Any, y: Any, w: Any, config: Any,
                  sinks: tuple[Trace, ...], owner: object) -> tuple[Any, Any]:
    """``engine.update`` with tracing: the batch's trace goes to every one of ``sinks``, also
    when the update raises (with the error's message; the exception propagates)."""
    if engine.name not in TRACEABLE_ENGINES:
        raise ValueError(
            f"solver tracing needs the numpy or native_cpu engine; the {engine.name} engine "
            "records no solver iterations (docs/tracing.md). Use backend='native_cpu' or "
            "'numpy' while tracing, or trace=False outside a rhuber.trace() block")
    records: list[dict] = []
    batch = BatchTrace(
        stream=0, batch=1 + (0 if state is None else int(state.batch_count)),
        engine=engine.name, dtype=computation_dtype(X, state).name,
        rows=int(X.shape[0]), n_coef=int(X.shape[1]) + int(config.fit_intercept),
        converged=None, n_iter=None)
    try:
        new_state, diag = engine.update(state, X, y, w, config, trace=records)
    except Exception as exc:
        batch.error = f"{type(exc).__name__}: {exc}"
        _publish(batch, records, sinks, owner)
        raise
    batch.converged, batch.n_iter = bool(diag.converged), int(diag.n_iter)
    _publish(batch, records, sinks, owner)
    return new_state, diag


def _publish(batch: BatchTrace, records: list[dict], sinks: tuple[Trace, ...],
             owner: object) -> None:
    batch.iterations = [IterationRecord.from_dict(r) for r in records]
    for sink in sinks:
        sink.add(replace(batch, stream=sink.stream_of(owner)))
