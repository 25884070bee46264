"""`rhuber top`: a live view of the bricks while a stream runs."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import warnings
from typing import Any

from sklearn.exceptions import ConvergenceWarning

from ..errors import IllConditionedWarning
from ..estimator import RenewableHuberRegressor
from ..profiling import profile
from . import _top
from ._common import (
    add_lambda_scale,
    add_stream_source,
    open_source,
    positive_int,
)


def add_top(commands: Any) -> None:
    parser = commands.add_parser(
        "top",
        help="a live view of a profiled stream: rows/s, bricks, convergence, bottleneck, "
        "recommendations",
        description=(
            "Stream FILE (or the demo, repeated with fresh seeds) through partial_fit with the "
            "brick profiler on, refreshing a terminal view: rows, batches, rows/s, per-brick "
            "time and share, convergence, a bottleneck hint from the roofline of this "
            "machine's measured peaks, and the tuner's recommendations for the workload (the "
            "plan running against the plan the advisor picks, and the top suggestion). Stops "
            "at --duration, --batches, the end of FILE, q or Ctrl-C."
        ),
    )
    add_stream_source(parser)
    add_lambda_scale(parser)
    parser.add_argument(
        "--duration", type=float, default=None, metavar="S", help="stop after S seconds"
    )
    parser.add_argument(
        "--batches", type=positive_int, default=None, metavar="N", help="stop after N batches"
    )
    parser.add_argument(
        "--interval", type=float, default=0.5, metavar="S",
        help="seconds between refreshes (default 0.5)",
    )
    parser.set_defaults(run=_run_top)


def _run_top(args: argparse.Namespace) -> int:
    out = sys.stdout
    live = out.isatty()
    width = shutil.get_terminal_size((100, 40)).columns
    peaks = _top.measure_peaks()
    estimator = RenewableHuberRegressor(
        batch_size=args.batch_size, backend=args.backend, alpha=args.alpha,
        lambda_scale=args.lambda_scale, l1_solver=args.l1_solver,
    )
    description, batches, _ = open_source(args)
    state = _top.TopState(source=description)
    prof = profile(trace_capacity=0)  # counters only: a long stream needs no trace
    deadline = None if args.duration is None else time.perf_counter() + args.duration
    last_frame = 0.0
    keys = _Keys() if live and sys.stdin.isatty() else None
    tuner: dict[str, Any] = {"workload": None, "running": None, "panel": None}

    def recommend(X: Any) -> None:
        """The tuner's panel: computed at the first batch, again when the plan running
        changes (auto's advisor reverting to the default)."""
        if tuner["workload"] is None:
            tuner["workload"] = _top.workload_of(X, estimator)
        running = _top.running_plan(estimator, args.l1_solver)
        if tuner["panel"] is None or running != tuner["running"]:
            tuner["running"] = running
            tuner["panel"] = _top.recommendations(tuner["workload"], running)

    def frame(final: bool = False) -> str:
        report = prof.report()
        breakdown = prof.breakdown()
        hint = _top.bottleneck_hint(report, peaks, prof.roofline(peaks.gb_per_s,
                                                                 peaks.gflop_per_s))
        panel = _top.recommendation_lines(tuner["panel"], state.measured_rows_per_s(),
                                          width - 2)
        return _top.render(state, report, breakdown, hint, width=width, final=final,
                           recommendations=panel)

    if live:
        out.write(_top.ALT_SCREEN_ON + _top.CURSOR_OFF)
    interrupted = False
    try:
        with warnings.catch_warnings(), prof:
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("ignore", IllConditionedWarning)
            round_ = 0
            while True:
                for X, y in batches:
                    tick = time.perf_counter()
                    estimator.partial_fit(X, y)
                    state.backend = estimator.backend_
                    state.add(len(y), time.perf_counter() - tick, estimator.diagnostics_[-1])
                    recommend(X)
                    now = time.perf_counter()
                    done = (args.batches is not None and state.batches >= args.batches) or (
                        deadline is not None and now >= deadline
                    )
                    if keys is not None and keys.quit_pressed():
                        done = True
                    if live and (now - last_frame >= args.interval or done):
                        out.write(_top.CLEAR + frame() + "\n")
                        out.flush()
                        last_frame = now
                    if done:
                        break
                else:
                    if args.source != "demo":
                        break  # the end of the file
                    round_ += 1
                    _, batches, _ = open_source(args, seed_offset=round_)
                    continue
                break
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if keys is not None:
            keys.restore()
        if live:
            out.write(_top.CURSOR_ON + _top.ALT_SCREEN_OFF)
            out.flush()
    if state.batches == 0:
        raise ValueError(f"{args.source}: no data rows")
    print(frame(final=True).replace(_top.BOLD, "").replace(_top.DIM, "").replace(_top.RESET, ""))
    return 130 if interrupted and args.duration is None and args.batches is None else 0


class _Keys:
    """Reads 'q' from a terminal without waiting (cbreak mode), restoring it afterwards."""

    def __init__(self) -> None:
        import termios
        import tty

        self._fd = sys.stdin.fileno()
        self._saved = termios.tcgetattr(self._fd)
        tty.setcbreak(self._fd)

    def quit_pressed(self) -> bool:
        import select

        while select.select([self._fd], [], [], 0)[0]:
            if os.read(self._fd, 1) in (b"q", b"Q"):
                return True
        return False

    def restore(self) -> None:
        import termios

        termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
