"""rhuber: streaming robust (Huber) regression, one batch at a time."""

from ._version import __version__
from .errors import (
    CheckpointError,
    DriftWarning,
    EngineNotAvailableError,
    IllConditionedWarning,
    NumericalError,
)
from .estimator import RenewableHuberRegressor
from .lab.precision import precision_report
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
