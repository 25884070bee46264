"""Solver tracing (docs/tracing.md): what happened inside each batch's solve, iteration by
iteration, the anomalies in it, and what float32 costs in accuracy.

- ``RenewableHuberRegressor(trace=True)`` records its batches in ``trace_``;
  ``with rhuber.trace() as tr:`` records every estimator's inside the block.
- ``Trace.report()``, ``Trace.to_json()``, ``Trace.plot(path)``, ``Trace.anomalies()``.
- ``rhuber.precision_report(X, y, batch_size=...)`` (rhuber.lab.precision): float32 against
  float64, batch by batch; it runs estimators, so it lives in the lab layer above this one.
"""

from .anomalies import RULES, Anomaly, find_anomalies
from .records import BatchTrace, IterationRecord, TensorStats
from .trace import Trace, active, trace

__all__ = [
    "RULES", "Anomaly", "BatchTrace", "IterationRecord", "TensorStats", "Trace", "active",
    "find_anomalies", "trace",
]
