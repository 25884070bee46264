"""Exceptions raised by rhuber beyond the built-in ValueError / TypeError."""

from __future__ import annotations


class NumericalError(ArithmeticError):
    """A batch update produced a non-finite result; the state was left as it was."""


class EngineNotAvailableError(ImportError):
    """An engine asked for by name is not installed or cannot run on this machine."""


class NativeVersionError(RuntimeError):
    """A native engine's module was built for another version of rhuber."""


class ModelFormatError(ValueError):
    """A tuner model file is corrupt, truncated or of another format (the native reader's
    verdict)."""


class CheckpointError(ValueError):
    """A checkpoint is corrupted, truncated, or inconsistent."""


class DriftWarning(UserWarning):
    """A batch's drift test (contract v4) gave a p-value below the estimator's ``drift_alpha``:
    the batch does not follow the model of the history (docs/drift.md)."""


class InterpolatedBatchWarning(UserWarning):
    """A stream's first batch had no more rows of positive weight than coefficients while τ
    adapts to the residuals (``tau=None``): its fit passes through every row, so its residuals
    are zero up to rounding, and the scale and τ taken from them are not the noise's
    (docs/method.md)."""


class IllConditionedWarning(UserWarning):
    """A batch's Newton system was ill-conditioned even after equilibration: digits of the
    estimate may be lost, or (svd rung) the estimate is not unique. Collinear or constant
    columns are the usual cause."""
