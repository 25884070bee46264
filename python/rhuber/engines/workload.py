"""What a tuner decision is about: the shape of one batch update, not its data."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LOCATIONS = ("host", "device")


@dataclass(frozen=True)
class Workload:
    """One batch update's shape: rows per batch, features, dtype, penalty, intercept, and where
    the input lives (``"host"`` memory or already on the GPU, ``"device"``)."""

    rows: int
    features: int
    dtype: str = "float64"
    penalized: bool = False
    intercept: bool = True
    location: str = "host"

    def __post_init__(self) -> None:
        if int(self.rows) < 1 or int(self.features) < 1:
            raise ValueError(f"a workload needs rows >= 1 and features >= 1, got rows="
                             f"{self.rows}, features={self.features}")
        if np.dtype(self.dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {self.dtype!r}")
        if self.location not in LOCATIONS:
            raise ValueError(f"location must be one of {LOCATIONS}, got {self.location!r}")
        object.__setattr__(self, "dtype", np.dtype(self.dtype).name)

    @property
    def dim(self) -> int:
        """Coefficients per batch: features plus the intercept."""
        return self.features + int(self.intercept)

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def id(self) -> str:
        """A stable key, e.g. ``"n65536/p32/float64/l1=0/icpt=1/host"``."""
        return (f"n{self.rows}/p{self.features}/{self.dtype}/l1={int(self.penalized)}/"
                f"icpt={int(self.intercept)}/{self.location}")

    @classmethod
    def from_id(cls, key: str) -> Workload:
        try:
            rows, features, dtype, l1, icpt, location = key.split("/")
            return cls(rows=int(rows.removeprefix("n")), features=int(features.removeprefix("p")),
                       dtype=dtype, penalized=l1 == "l1=1", intercept=icpt == "icpt=1",
                       location=location)
        except ValueError as exc:
            raise ValueError(f"not a workload id: {key!r} ({exc}); expected e.g. "
                             "'n65536/p32/float64/l1=0/icpt=1/host'") from exc
