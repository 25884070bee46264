"""`rhuber fit --plot FILE.png`: the coefficient paths over the batches, with the batches whose
drift test fell below --drift-alpha marked (docs/drift.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def flagged_batches(diagnostics: list[dict], drift_alpha: float | None) -> list[int]:
    """The 1-based batches whose drift p-value is below ``drift_alpha`` (none without it)."""
    if drift_alpha is None:
        return []
    return [k for k, d in enumerate(diagnostics, start=1)
            if d.get("drift_pvalue", float("nan")) < drift_alpha]


def plot_paths(path: Path, paths: np.ndarray, names: list[str], flagged: list[int],
               drift_alpha: float | None, title: str) -> None:
    """One line per coefficient (``paths``: batches × coefficients), a red band per flagged
    batch. Written with matplotlib's object API (no global pyplot state)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError("rhuber fit --plot needs matplotlib: pip install 'rhuber[bench]'") \
            from exc
    batches = np.arange(1, paths.shape[0] + 1)
    fig = Figure(figsize=(9, 4.8), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for j, name in enumerate(names):
        ax.plot(batches, paths[:, j], marker="." if len(batches) <= 60 else None, label=name)
    for k, batch in enumerate(flagged):
        label = f"drift p < {drift_alpha:g}" if k == 0 else None
        ax.axvspan(batch - 0.5, batch + 0.5, color="tab:red", alpha=0.18, lw=0, label=label)
    ax.set_xlabel("batch")
    ax.set_ylabel("coefficient after the batch")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small", ncol=2 if len(names) > 6 else 1)
    fig.savefig(path, dpi=110)


def closing_line(flagged: list[int], drift_alpha: float, batches: int) -> str:
    """The fit's last word on drift: which batches fell below --drift-alpha."""
    if not flagged:
        return f"drift: no batch of {batches} below --drift-alpha {drift_alpha:g}"
    shown = ", ".join(str(k) for k in flagged[:20])
    more = f" (and {len(flagged) - 20} more)" if len(flagged) > 20 else ""
    return (f"drift: {len(flagged)} of {batches} batches below --drift-alpha {drift_alpha:g}: "
            f"batch {shown}{more}")
