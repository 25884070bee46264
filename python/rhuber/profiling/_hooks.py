"""The switch the engines read: ``ACTIVE`` is the recorder of the innermost active profile, or None.

Dependency-free so the reference engine (core/) can import it. An instrumented site reads
``ACTIVE`` once; with no profile active that is one ``is None`` branch and nothing else.
"""

from __future__ import annotations

from time import perf_counter_ns as now  # CLOCK_MONOTONIC: the C++ profiler's steady_clock
from typing import Any

__all__ = ["ACTIVE", "BRICKS", "now"]

# The brick table of rh/engine_bricks.hpp, in id order.
BRICKS = (
    "validate", "stage", "residual", "huber", "score", "gram", "solve", "line_search", "prox",
    "info_update", "transfer", "predict",
)
VALIDATE, STAGE, RESIDUAL, HUBER, SCORE, GRAM, SOLVE, LINE_SEARCH, PROX, INFO_UPDATE, \
    TRANSFER, PREDICT = range(len(BRICKS))

ACTIVE: Any = None  # a _session.Recorder while a profile is active


def itemsize(a: Any) -> int:
    return int(getattr(getattr(a, "dtype", None), "itemsize", 8))
