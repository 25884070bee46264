"""Trace.report()'s table and Trace.plot()'s PNG."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .records import TensorStats
    from .trace import Trace

_COLUMNS = (
    f"{'str':>3} {'batch':>5} {'phase':>5} {'it':>3} {'solver':>11} {'rcond':>8} "
    f"{'objective':>12} {'step':>9} {'t':>7} {'halv':>4} {'quad%':>6} "
    f"{'r.mean':>9} {'r.std':>9} {'score.l2':>9} {'Hdiag.min':>9} {'Hdiag.max':>9} {'nonfin':>6}"
)


def _g(value: float | None, width: int = 9) -> str:
    return f"{'—':>{width}}" if value is None else f"{value:>{width}.3g}"


def _non_finite(*stats: TensorStats | None) -> int:
    return sum(s.non_finite for s in stats if s is not None)


def format_report(trace: Trace, *, max_rows: int | None = 60) -> str:
    """One line per iteration (the first and last rows when there are more than ``max_rows``),
    one line per batch that raised, then the anomalies."""
    lines = []
    for batch in trace.batches:
        for it in batch.iterations:
            hd = it.hessian_diagonal
            lines.append(
                f"{batch.stream:>3} {batch.batch:>5} {it.phase:>5} {it.iteration:>3} "
                f"{it.solver:>11} {_g(it.rcond, 8)} {it.objective:>12.6g} "
                f"{_g(it.step_norm)} {it.step_scale:>7.3g} {it.halvings:>4} "
                f"{100 * it.quadratic_fraction:>6.1f} {_g(it.residual.mean)} "
                f"{_g(it.residual.std)} {_g(it.score.l2)} {_g(None if hd is None else hd.min)} "
                f"{_g(None if hd is None else hd.max)} "
                f"{_non_finite(it.residual, it.score, hd):>6}")
        if batch.error is not None:
            lines.append(f"{batch.stream:>3} {batch.batch:>5} raised {batch.error}")
    if max_rows is not None and len(lines) > max_rows:
        head, tail = max_rows // 2, max_rows - max_rows // 2
        lines = [*lines[:head], f"  … {len(lines) - head - tail} more iterations …",
                 *lines[-tail:]]
    iterations = sum(len(b.iterations) for b in trace.batches)
    out = [f"solver trace: {len(trace.batches)} batches, {iterations} iterations", _COLUMNS,
           *lines]
    anomalies = trace.anomalies()
    out.append(f"anomalies: {len(anomalies) or 'none'}")
    out.extend(f"  {a}" for a in anomalies)
    return "\n".join(out)


def plot_trace(trace: Trace, path: str | os.PathLike, *, dpi: int = 120) -> None:
    """Objective and step norm against the iteration count over the whole trace (log scale for
    the step), one line per solve, a dotted line at each batch's start."""
    try:
        # A bare Figure renders with Agg and touches no pyplot state (the user's backend).
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError("Trace.plot needs matplotlib: pip install 'rhuber[bench]'") \
            from exc
    x, objective, step, starts = [], [], [], []
    position = 0
    for batch in trace.batches:
        starts.append(position)
        for k, it in enumerate(batch.iterations):
            if k and it.iteration == 1:  # a new solve (pilot, then main): break the lines
                x.append(position - 0.5)
                objective.append(float("nan"))
                step.append(float("nan"))
            x.append(position)
            objective.append(it.objective)
            step.append(it.step_norm if it.step_norm > 0 else float("nan"))
            position += 1
        x.append(position - 0.5)  # no line into the next batch either
        objective.append(float("nan"))
        step.append(float("nan"))
    fig = Figure(figsize=(9, 5.5))
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.plot(x, objective, ".-", lw=1)
    top.set_ylabel("objective Q")
    bottom.semilogy(x, step, ".-", lw=1, color="tab:orange")
    bottom.set_ylabel("step norm ||s||_2")
    bottom.set_xlabel("iteration (all batches)")
    for position in starts:
        for axis in (top, bottom):
            axis.axvline(position - 0.5, color="0.7", ls=":", lw=0.8)
    top.set_title(f"solver trace: {len(trace.batches)} batches")
    fig.tight_layout()
    fig.savefig(os.fspath(path), dpi=dpi, format="png")
