"""The measurement-quality rules every timing obeys, the collector's and online learning's alike
(the seed's §5.3): warm-up, rounds, outlier rejection, the coefficient of variation that decides
another round, and the provenance a stored measurement carries."""

from __future__ import annotations

import math
import statistics
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_REVISION: list[str | None] = []


@dataclass(frozen=True)
class Quality:
    """The seed's data-quality rules (§5.3), as knobs."""

    warmup: int = 1
    runs: int = 3
    max_cv: float = 0.15
    max_remeasure: int = 2
    outlier_sigma: float = 3.0
    batches_per_run: int = 3
    profile: bool = True


def reject_outliers(runs: Sequence[float], sigma: float) -> tuple[list[float], int]:
    """The runs within ``sigma`` standard deviations of the mean, and how many were rejected."""
    if len(runs) < 3:
        return list(runs), 0
    mean, sd = statistics.fmean(runs), statistics.stdev(runs)
    kept = [t for t in runs if sd == 0 or abs(t - mean) <= sigma * sd]
    return kept, len(runs) - len(kept)


def coefficient_of_variation(runs: Sequence[float]) -> float:
    if len(runs) < 2:
        return math.inf
    return statistics.stdev(runs) / statistics.fmean(runs)


def rounded_fractions(fractions: dict[str, float]) -> dict[str, float]:
    """Shares to 1e-5: finer than one profiled run resolves, and it keeps a store small."""
    return {brick: round(share, 5) for brick, share in fractions.items()}


def git_revision() -> str | None:
    """The checkout's commit when the library runs from one (None for an installed wheel)."""
    if not _REVISION:
        try:
            out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent,
                                 capture_output=True, text=True, timeout=5, check=True)
            _REVISION.append(out.stdout.strip() or None)
        except (OSError, subprocess.SubprocessError):
            _REVISION.append(None)
    return _REVISION[0]
