"""Seeded synthetic streams for demonstrations, tests and benchmarks.

The reference shape of the project (RFC 0001) is 100,000 rows, 90 features, batches of 32,768,
Student-t noise and 5 % gross outliers; :func:`make_contaminated_stream` builds it by default.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import DTypeLike, NDArray

__all__ = ["ContaminatedStream", "make_contaminated_stream"]

NoiseKind = Literal["student_t", "gaussian"]

# Independent random streams are keyed by (seed, purpose[, batch index]) so that every batch can
# be regenerated on its own and the coefficients never depend on how the stream is batched.
_COEF_STREAM = 0
_BATCH_STREAM = 1


@dataclass(frozen=True)
class ContaminatedStream:
    """A linear model with heavy-tailed noise and gross response outliers, batch by batch.

    Row ``i`` is ``y = x @ coef + intercept + noise (+ shift when an outlier)`` with ``x``
    standard normal. Each batch is drawn when asked for, from a generator seeded by
    ``(seed, batch index)`` alone: iterating never holds more than one batch, and
    :meth:`batch` regenerates any batch bit for bit. Build it with
    :func:`make_contaminated_stream`.

    Attributes
    ----------
    coef : ndarray of shape (n_features,)
        The generating slope coefficients, float64.
    intercept : float
        The generating intercept.
    """

    n_samples: int
    n_features: int
    batch_size: int
    noise: NoiseKind
    df: float
    outlier_fraction: float
    outlier_scale: float
    seed: int
    dtype: np.dtype
    coef: NDArray[np.float64] = field(repr=False)
    intercept: float

    @property
    def n_batches(self) -> int:
        """Number of batches; the last one holds the remainder of ``n_samples``."""
        return -(-self.n_samples // self.batch_size)

    def __len__(self) -> int:
        return self.n_batches

    def __iter__(self) -> Iterator[tuple[NDArray, NDArray]]:
        for index in range(self.n_batches):
            yield self.batch(index)

    def batch_rows(self, index: int) -> int:
        """Number of rows in batch ``index``."""
        self._check_index(index)
        return min(self.batch_size, self.n_samples - index * self.batch_size)

    def batch(self, index: int) -> tuple[NDArray, NDArray]:
        """Generate batch ``index`` (0-based): ``(X, y)`` in the stream's dtype."""
        X, y, _ = self._generate(index)
        return X, y

    def outlier_mask(self, index: int) -> NDArray[np.bool_]:
        """Which rows of batch ``index`` carry a gross outlier (for tests and plots)."""
        return self._generate(index)[2]

    def materialize(self) -> tuple[NDArray, NDArray]:
        """Concatenate every batch into ``(X, y)``; meant for small streams only."""
        Xs, ys = zip(*self, strict=True)
        return np.concatenate(Xs), np.concatenate(ys)

    def _check_index(self, index: int) -> None:
        if not 0 <= index < self.n_batches:
            raise IndexError(f"batch index {index} is out of range for {self.n_batches} batches")

    def _generate(self, index: int) -> tuple[NDArray, NDArray, NDArray[np.bool_]]:
        n = self.batch_rows(index)
        rng = np.random.default_rng([self.seed, _BATCH_STREAM, index])
        X = rng.standard_normal((n, self.n_features))
        if self.noise == "student_t":
            noise = rng.standard_t(self.df, size=n)
        else:
            noise = rng.standard_normal(n)
        # An exact count per batch (not a Bernoulli draw) so that every batch, however small,
        # is contaminated at the stated rate.
        n_outliers = round(self.outlier_fraction * n)
        mask = np.zeros(n, dtype=bool)
        mask[rng.choice(n, size=n_outliers, replace=False)] = True
        magnitude = self.outlier_scale * rng.uniform(1.0, 2.0, size=n_outliers)
        signs = rng.choice(np.array([-1.0, 1.0]), size=n_outliers)
        y = X @ self.coef + self.intercept + noise
        y[mask] += signs * magnitude
        return X.astype(self.dtype, copy=False), y.astype(self.dtype, copy=False), mask


def make_contaminated_stream(
    n_samples: int = 100_000,
    n_features: int = 90,
    *,
    batch_size: int = 32_768,
    noise: NoiseKind = "student_t",
    df: float = 3.0,
    outlier_fraction: float = 0.05,
    outlier_scale: float = 50.0,
    seed: int = 0,
    dtype: DTypeLike = np.float64,
) -> ContaminatedStream:
    """Make a seeded, contaminated regression stream; by default the RFC's reference shape.

    Parameters
    ----------
    n_samples : int, default=100_000
        Total number of rows.
    n_features : int, default=90
        Number of features (the intercept is not counted).
    batch_size : int, default=32_768
        Rows per batch; the last batch holds the remainder.
    noise : {"student_t", "gaussian"}, default="student_t"
        Distribution of the regression noise (unit scale).
    df : float, default=3.0
        Degrees of freedom of the Student-t noise; ignored for Gaussian noise.
    outlier_fraction : float, default=0.05
        Fraction of the rows of every batch (rounded to the nearest row) whose response is
        shifted by a gross outlier.
    outlier_scale : float, default=50.0
        An outlier shifts ``y`` by ``± outlier_scale × U(1, 2)``, random sign: about 50 to 100
        noise scales, far outside the Huber threshold.
    seed : int, default=0
        Seed of everything: the coefficients and every batch.
    dtype : dtype, default=np.float64
        Dtype of the generated ``X`` and ``y`` (float32 or float64).

    Returns
    -------
    ContaminatedStream
        Iterable over ``(X, y)`` batches, with the generating ``coef`` and ``intercept``.

    Examples
    --------
    >>> stream = make_contaminated_stream(1000, 3, batch_size=400, seed=1)
    >>> [X.shape for X, y in stream]
    [(400, 3), (400, 3), (200, 3)]
    """
    if n_samples < 1 or n_features < 1 or batch_size < 1:
        raise ValueError(
            "n_samples, n_features and batch_size must be positive, got "
            f"{n_samples}, {n_features} and {batch_size}"
        )
    if noise not in ("student_t", "gaussian"):
        raise ValueError(f"noise must be 'student_t' or 'gaussian', got {noise!r}")
    if noise == "student_t" and not df > 0:
        raise ValueError(f"df must be positive, got {df}")
    if not 0.0 <= outlier_fraction < 1.0:
        raise ValueError(f"outlier_fraction must be in [0, 1), got {outlier_fraction}")
    if not outlier_scale >= 0:
        raise ValueError(f"outlier_scale must be non-negative, got {outlier_scale}")
    resolved_dtype = np.dtype(dtype)
    if resolved_dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be float32 or float64, got {resolved_dtype}")

    rng = np.random.default_rng([seed, _COEF_STREAM])
    coef = rng.standard_normal(n_features)
    intercept = float(rng.standard_normal())
    coef.flags.writeable = False  # shared by every batch: a caller must not change the model
    return ContaminatedStream(
        n_samples=n_samples,
        n_features=n_features,
        batch_size=batch_size,
        noise=noise,
        df=float(df),
        outlier_fraction=float(outlier_fraction),
        outlier_scale=float(outlier_scale),
        seed=seed,
        dtype=resolved_dtype,
        coef=coef,
        intercept=intercept,
    )
