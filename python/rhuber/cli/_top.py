"""``rhuber top``: a live terminal view of a profiled stream (plain ANSI escape codes).

One frame shows the stream's progress (rows, batches, rows/s), per-brick time and share with a
bar, convergence of the recent batches, and a bottleneck hint: the busiest brick placed on the
roofline of this machine's measured peaks (memory bandwidth from a large copy, flop rate from a
matrix product, both measured once at start), and the tuner's recommendations for the workload
being streamed (:func:`recommendations`, once the first batch has shown its shape).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import dispatch
from ..engines.plans import Plan, parse_plan
from ..engines.workload import Workload
from ..tuner import advisor as advising
from ..tuner.recommend import panel_lines, top_panel

CLEAR = "\x1b[H\x1b[2J"
ALT_SCREEN_ON, ALT_SCREEN_OFF = "\x1b[?1049h", "\x1b[?1049l"
CURSOR_OFF, CURSOR_ON = "\x1b[?25l", "\x1b[?25h"
BOLD, DIM, RESET = "\x1b[1m", "\x1b[2m", "\x1b[0m"


@dataclass
class Peaks:
    gb_per_s: float
    gflop_per_s: float


def measure_peaks() -> Peaks:
    """Best of five: a 64 MiB copy (read + write) and a 512 × 512 float64 product (after a
    warm-up that starts BLAS's threads)."""
    src = np.ones(8 << 20)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t)
    gb = 2 * src.nbytes / best / 1e9
    a = np.ones((512, 512))
    a @ a
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - t)
    return Peaks(gb, 2 * 512**3 / best / 1e9)


@dataclass
class TopState:
    source: str
    backend: str = ""
    rows: int = 0
    batches: int = 0
    update_seconds: float = 0.0
    started: float = field(default_factory=time.perf_counter)
    recent: list[dict[str, Any]] = field(default_factory=list)  # the last diagnostics
    first_rate: float | None = None  # rows/s of the stream's first partial_fit (cold)
    rates: list[float] = field(default_factory=list)  # rows/s of the last 20 after it

    def add(self, rows: int, seconds: float, diagnostics: dict[str, Any]) -> None:
        self.rows += rows
        self.batches += 1
        self.update_seconds += seconds
        self.recent = [*self.recent[-19:], diagnostics]
        rate = rows / seconds if seconds > 0 else None
        if self.batches == 1:
            self.first_rate = rate
        elif rate is not None:
            self.rates = [*self.rates[-19:], rate]

    def measured_rows_per_s(self) -> float | None:
        """Median rows/s of the last 20 partial_fit calls after the stream's first (engine
        start, cold memory), the first alone until there are others: the quantity the tuner's
        throughput model predicts (collected the same way, partial_fit timed)."""
        return float(np.median(self.rates)) if self.rates else self.first_rate


def _si(value: float, unit: str) -> str:
    for factor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.2f} {prefix}{unit}"
    return f"{value:.0f} {unit}"


def _ms(ns: float) -> str:
    return f"{ns / 1e6:,.1f} ms" if ns >= 1e5 else f"{ns / 1e3:,.1f} µs"


def bottleneck_hint(report: Any, peaks: Peaks, roofline: list[dict[str, Any]]) -> str:
    if not report.rows:
        return "no bricks recorded yet"
    top = report.rows[0]
    point = next((r for r in roofline if r["brick"] == top.brick), None)
    if point is None or point["bound"] == "none":
        return f"{top.brick} holds {top.share:.0%} of brick time (no work counted for it)"
    distance = point["distance"]
    if point["bound"] == "memory":
        where = (f"memory-bound (intensity {point['intensity']:.2f} flop/B): "
                 f"{point['achieved_gb_per_s']:.1f} of {peaks.gb_per_s:.1f} GB/s")
    else:
        where = (f"compute-bound (intensity {point['intensity']:.2f} flop/B): "
                 f"{point['achieved_gflop_per_s']:.1f} of {point['attainable_gflop_per_s']:.1f}"
                 " GFLOP/s attainable")
    if distance >= 0.5:
        advice = "near its roof: do less of it (fewer iterations, incremental Gram)"
    else:
        advice = "far below its roof: the kernel limits it (blocking, threads, fusion)"
    return f"{top.brick} holds {top.share:.0%} of brick time; {where}, {distance:.0%}; {advice}"


def running_plan(estimator: Any, l1_solver: str = "lamm") -> Any:
    """The plan an estimator ran its last batch with: its ``plan_`` report when it has one
    (``backend="auto"`` through the advisor), else its ``plan``, else its backend with the
    engine's defaults. None before the first batch."""

    for given in (getattr(getattr(estimator, "plan_", None), "plan", None),
                  getattr(estimator, "plan_", None), getattr(estimator, "plan", None)):
        if isinstance(given, (Plan, str)):
            try:
                return parse_plan(given)
            except ValueError:  # not a plan id: fall back to the backend
                break
    backend = getattr(estimator, "backend_", None)
    if backend is None:
        return None
    if backend == "native_cpu":
        return Plan("native_cpu", threads=estimator._threads(), l1_solver=l1_solver)
    return Plan(backend)


def workload_of(X: Any, estimator: Any) -> Any:
    """The tuner's Workload of a batch ``X`` of ``estimator``'s stream (rows per batch,
    features, dtype, intercept, and the penalty of ``alpha`` or the ``lambda_scale`` schedule,
    as auto's dispatch sees it)."""

    dtype = getattr(X, "dtype", None)
    name = np.dtype(dtype).name if dtype is not None else "float64"
    return Workload(rows=int(X.shape[0]), features=int(X.shape[1]),
                    dtype=name if name in ("float32", "float64") else "float64",
                    penalized=dispatch.penalized(estimator),
                    intercept=bool(estimator.fit_intercept))


def recommendations(workload: Any, running: Any) -> Any:
    """The tuner's panel for ``workload`` with ``running`` (a :class:`tuner.recommend.TopPanel`),
    or a one-line reason when no model loads or it fails."""

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        advisor = advising.shared()
    if advisor is None:
        return ("unavailable: " + str(caught[0].message)) if caught else "unavailable: no model"
    try:
        return top_panel(advisor, workload, running)
    except (ValueError, ArithmeticError) as exc:  # e.g. a machine the features cannot describe
        return f"unavailable: {exc}"


def recommendation_lines(panel: Any, measured_rows_per_s: float | None, width: int
                         ) -> list[str]:
    """The panel's lines (:func:`tuner.recommend.panel_lines`), or its one-line reason."""

    if panel is None:
        return ["waiting for the first batch"]
    if isinstance(panel, str):
        return [panel]
    return panel_lines(panel, measured_rows_per_s, width=width)


def render(state: TopState, report: Any, breakdown: dict[str, Any], hint: str,
           *, width: int = 100, final: bool = False,
           recommendations: Sequence[str] = ()) -> str:
    elapsed = time.perf_counter() - state.started
    rate = state.rows / state.update_seconds if state.update_seconds > 0 else 0.0
    steady = breakdown.get("steady_rows_per_s") or 0.0
    title = "rhuber top" + (" (finished)" if final else "")
    lines = [
        f"{BOLD}{title}{RESET} — {state.source}, backend {state.backend}   "
        f"elapsed {elapsed:6.1f} s",
        f"rows {state.rows:>12,}   batches {state.batches:>6,}   rows/s {_si(rate, 'rows/s')}"
        f"   steady {_si(steady, 'rows/s')}   iterations/batch "
        f"{breakdown.get('iterations_per_batch', 0.0):.2f}",
    ]
    batches = breakdown.get("batches") or []
    if batches:
        first = batches[0]
        lines.append(
            f"first batch {_ms(first['duration_ns'])} (cold, {first['minor_faults']} minor "
            f"faults)   steady median {_ms(breakdown.get('steady_median_ns') or 0.0)}"
        )
    lines.append("")
    lines.append(f"{BOLD}{'brick':<12} {'calls':>8} {'total':>11} {'share':>6}  "
                 f"{'':<24} {'GB/s':>7} {'GFLOP/s':>8}{RESET}")
    bar_width = 24
    for row in report.rows[:12]:
        bar = "█" * max(1, round(row.share * bar_width)) if row.share > 0 else ""
        lines.append(
            f"{row.brick:<12} {row.calls:>8,} {_ms(row.total_ns):>11} {row.share:>6.1%}  "
            f"{bar:<{bar_width}} {row.gb_per_s:>7.2f} {row.gflop_per_s:>8.2f}"
        )
    lines.append("")
    if state.recent:
        last = state.recent[-1]
        converged = sum(bool(d["converged"]) for d in state.recent)
        lines.append(
            f"convergence: last batch {'converged' if last['converged'] else 'NOT converged'}"
            f" in {last['n_iter']} iterations ({last['solver']}), objective "
            f"{last['objective']:.6g}; {converged}/{len(state.recent)} recent batches converged"
        )
    lines.append(f"bottleneck: {hint}")
    if recommendations:
        lines.append("")
        lines.append(f"{BOLD}recommendations{RESET} (rhuber tune recommend)")
        lines += [f"  {line}" for line in recommendations]
    if not final:
        lines.append(f"{DIM}q or Ctrl-C to stop{RESET}")
    return "\n".join(line[: width + 16] for line in lines)
