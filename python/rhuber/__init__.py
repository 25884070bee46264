"""rhuber: streaming robust (Huber) regression, one batch at a time."""

from typing import Any

# scikit-learn first, as `import sklearn.base` alone would: it is most of this import, and a
# process that reaches it only from deep inside our modules, after NumPy, spends ~25 ms of CPU
# and ~40 ms of wall more on the same modules (docs/perf/experiments.jsonl,
# "import-rhuber-sklearn-first").
import sklearn.base  # noqa: F401

from ._version import __version__
from .errors import (
    CheckpointError,
    DriftWarning,
    EngineNotAvailableError,
    IllConditionedWarning,
    InterpolatedBatchWarning,
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
    "InterpolatedBatchWarning",
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
