"""rhuber: streaming robust (Huber) regression, one batch at a time."""

from typing import Any

from ._version import __version__
from .errors import (
    CheckpointError,
    DriftWarning,
    EngineNotAvailableError,
    IllConditionedWarning,
    NumericalError,
)
from .estimator import RenewableHuberRegressor
from .profiling import profile
from .tracing import trace

__all__ = [
    "CheckpointError",
    "DriftWarning",
    "EngineNotAvailableError",
    "IllConditionedWarning",
    "NumericalError",
    "RenewableHuberRegressor",
    "__version__",
    "precision_report",
    "profile",
    "trace",
]


def __getattr__(name: str) -> Any:
    # precision_report belongs to the lab: imported when asked for, not with every fit.
    if name == "precision_report":
        from .lab.precision import precision_report

        return precision_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
