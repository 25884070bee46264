"""What a tuner decision is about: the shape of one batch update, not its data."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LOCATIONS = ("host", "device")

#: The dtypes a workload may have, by the spellings a batch gives (its ``X.dtype``) and the names
#: stored: looked up first, since ``np.dtype(...).name`` costs a planned stream's first batch
#: ~10 µs; any other spelling of the two is normalized by NumPy.
_DTYPE_NAMES = {np.dtype(np.float64): "float64", np.dtype(np.float32): "float32",
                "float64": "float64", "float32": "float32"}


@dataclass(frozen=True)
class Workload:
    """One batch update's shape: rows per batch, features, dtype, penalty, intercept, and where
    the input lives (``"host"`` memory or already on the GPU, ``"device"``). ``sparse``: the
    penalty's regime, set when the first batch's screen expects it to zero most features
    (:mod:`.regime`); only a penalized workload can be sparse."""

    rows: int
    features: int
    dtype: str = "float64"
    penalized: bool = False
    intercept: bool = True
    location: str = "host"
    sparse: bool = False

    def __post_init__(self) -> None:
        if int(self.rows) < 1 or int(self.features) < 1:
            raise ValueError(f"a workload needs rows >= 1 and features >= 1, got rows="
                             f"{self.rows}, features={self.features}")
        name = _dtype_name(self.dtype)
        if self.location not in LOCATIONS:
            raise ValueError(f"location must be one of {LOCATIONS}, got {self.location!r}")
        if self.sparse and not self.penalized:
            raise ValueError("a sparse workload must be penalized: sparse names the L1 "
                             "penalty's regime")
        object.__setattr__(self, "dtype", name)

    @property
    def dim(self) -> int:
        """Coefficients per batch: features plus the intercept."""
        return self.features + int(self.intercept)

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def id(self) -> str:
        """A stable key, e.g. ``"n65536/p32/float64/l1=0/icpt=1/host"``; ``l1=2`` is the sparse
        regime of a penalized workload."""
        return (f"n{self.rows}/p{self.features}/{self.dtype}/l1={self.l1}/"
                f"icpt={int(self.intercept)}/{self.location}")

    @property
    def l1(self) -> int:
        """0 unpenalized, 1 penalized, 2 penalized in the sparse regime."""
        return int(self.penalized) + int(self.sparse)

    @classmethod
    def from_id(cls, key: str) -> Workload:
        try:
            rows, features, dtype, l1, icpt, location = key.split("/")
            if l1 not in ("l1=0", "l1=1", "l1=2"):
                raise ValueError(f"unknown penalty segment {l1!r}")
            return cls(rows=int(rows.removeprefix("n")), features=int(features.removeprefix("p")),
                       dtype=dtype, penalized=l1 != "l1=0", intercept=icpt == "icpt=1",
                       location=location, sparse=l1 == "l1=2")
        except ValueError as exc:
            raise ValueError(f"not a workload id: {key!r} ({exc}); expected e.g. "
                             "'n65536/p32/float64/l1=0/icpt=1/host'") from exc


def _dtype_name(dtype: object) -> str:
    try:
        known = _DTYPE_NAMES.get(dtype)  # type: ignore[call-overload]
    except TypeError:  # unhashable: not a dtype
        known = None
    if known is not None:
        return known
    try:
        name = np.dtype(dtype).name  # type: ignore[call-overload]
    except TypeError:
        name = None
    if name not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    return name
