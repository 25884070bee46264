"""The ``rhuber`` command line: stream a built-in demo or a data file through the estimator.

Each subcommand is a pair of small functions: ``_add_<name>`` declares its arguments and
``_run_<name>`` runs it and returns the exit status. Every error a user can cause (a bad file, a
bad checkpoint, a bad parameter, an engine that is not installed) ends as one line,
``rhuber: error: <message>``, and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from numpy.typing import NDArray
from sklearn.exceptions import ConvergenceWarning

from ._version import __version__
from .core import L1_SOLVERS
from .core.ladder import ill_conditioned, ill_conditioning_message
from .datasets import make_contaminated_stream
from .errors import IllConditionedWarning
from .io import DEFAULT_BATCH_SIZE, BatchReader, DataFileError, detect_format, read_batches
from .tracing.cli import add_trace
from .tuner.cli import add_tune

__all__ = ["main"]

_BACKENDS = ("auto", "numpy", "native_cpu", "cuda")
_DEMO_CHECKPOINT = "rhuber-demo.npz"
_FIT_CHECKPOINT = "model.npz"
_MAX_TABLE_ROWS = 20  # longer per-batch or coefficient tables show their head and tail


# ------------------------------------------------------------------------------ entry point


def main(argv: list[str] | None = None) -> int:
    """Run ``rhuber`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit status.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name.

    Returns
    -------
    int
        0 on success, 2 on a usage or data error (the message is on stderr), 130 when
        interrupted, 141 when stdout is closed early (a pipe into ``head``).
    """
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version and usage errors; stay callable in-process
        return exit_.code if isinstance(exit_.code, int) else 2
    if args.run is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.run(args)
    except (ValueError, ArithmeticError, ImportError) as exc:
        # DataFileError, CheckpointError and the estimator's parameter errors are ValueErrors,
        # NumericalError an ArithmeticError, EngineNotAvailableError an ImportError.
        return _fail(str(exc))
    except BrokenPipeError:
        # The reader of stdout went away (``rhuber predict ... | head``): stop quietly, as a
        # command killed by SIGPIPE would, and keep Python from complaining at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(f"{where}{exc.strerror or exc}")
    except KeyboardInterrupt:
        print("rhuber: interrupted", file=sys.stderr)
        return 130


def _fail(message: str) -> int:
    print(f"rhuber: error: {message}", file=sys.stderr)
    return 2


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rhuber",
        description="Streaming robust (Huber) regression, one batch at a time.",
    )
    parser.add_argument("--version", action="version", version=f"rhuber {__version__}")
    parser.set_defaults(run=None)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add in (_add_demo, _add_fit, _add_predict, _add_profile, _add_top, add_trace, add_tune):
        add(commands)
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value}")
    return value


def _add_engine_options(parser: argparse.ArgumentParser, batch_size: int) -> None:
    parser.add_argument(
        "--batch-size",
        type=_positive_int,
        default=batch_size,
        metavar="N",
        help=f"rows per batch (default {batch_size:,})",
    )
    parser.add_argument(
        "--backend",
        choices=_BACKENDS,
        default="auto",
        help="engine: auto picks native_cpu when installed, else numpy (default auto)",
    )


# ------------------------------------------------------------------------------------- demo


def _add_demo(commands: Any) -> None:
    parser = commands.add_parser(
        "demo",
        help="stream a seeded, contaminated data set and compare with least squares",
        description=(
            "Stream the built-in reference workload (Student-t noise, 5 % gross response "
            "outliers) through the estimator, then compare its coefficient error with a "
            "streaming least-squares fit of the same data."
        ),
    )
    parser.add_argument(
        "--rows", type=_positive_int, default=100_000, metavar="N", help="rows (default 100,000)"
    )
    parser.add_argument(
        "--features", type=_positive_int, default=90, metavar="P", help="features (default 90)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the coefficients and data (default 0)"
    )
    _add_engine_options(parser, DEFAULT_BATCH_SIZE)
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path(_DEMO_CHECKPOINT),
        metavar="CHECKPOINT",
        help=f"where to write the checkpoint (default ./{_DEMO_CHECKPOINT})",
    )
    parser.set_defaults(run=_run_demo)


def _run_demo(args: argparse.Namespace) -> int:
    from . import RenewableHuberRegressor

    _check_directory(args.output)
    stream = make_contaminated_stream(
        args.rows, args.features, batch_size=args.batch_size, seed=args.seed
    )
    estimator = RenewableHuberRegressor(batch_size=args.batch_size, backend=args.backend)
    ols = _NormalEquations(args.features)
    print(
        f"rhuber demo: {stream.n_samples:,} rows × {stream.n_features} features in "
        f"{stream.n_batches} batches of up to {stream.batch_size:,} rows; Student-t "
        f"(df={stream.df:g}) noise, {stream.outlier_fraction:.0%} gross outliers, "
        f"seed {stream.seed}"
    )
    stats = _stream(estimator, stream, total=stream.n_samples, observe=ols.add)
    estimator.save_checkpoint(args.output)

    print(f"backend: {estimator.backend_}")
    print(f"plan: {estimator.plan_}")
    _print_throughput(stats, excluded="data generation excluded")
    print()
    _print_diagnostics(estimator.diagnostics_, estimator.coef_.dtype)
    print()
    ols_coef, ols_intercept = ols.solve()
    reference = np.linalg.norm(stream.coef)
    print(f"coefficient error against the generating coefficients (‖β‖₂ = {reference:.4g}):")
    print(f"  {'':<24} {'‖β̂ − β‖₂':>11} {'relative':>10} {'|intercept error|':>18}")
    for name, coef, intercept in (
        ("renewable Huber", estimator.coef_, estimator.intercept_),
        ("least squares (OLS)", ols_coef, ols_intercept),
    ):
        error = float(np.linalg.norm(coef - stream.coef))
        print(
            f"  {name:<24} {error:>10.4g} {error / reference:>10.2%} "
            f"{abs(intercept - stream.intercept):>18.4g}"
        )
    print(f"checkpoint: {args.output.resolve()}")
    return 0


class _NormalEquations:
    """Least squares with an intercept, streamed: accumulate XᵀX and Xᵀy, solve once."""

    def __init__(self, n_features: int) -> None:
        self._gram = np.zeros((n_features + 1, n_features + 1))
        self._moment = np.zeros(n_features + 1)

    def add(self, X: NDArray, y: NDArray) -> None:
        Xt = np.column_stack([X, np.ones(len(X))])
        self._gram += Xt.T @ Xt
        self._moment += Xt.T @ y

    def solve(self) -> tuple[NDArray[np.float64], float]:
        """``(coef, intercept)``; minimum-norm when the design is rank deficient."""
        beta = np.linalg.lstsq(self._gram, self._moment, rcond=None)[0]
        return beta[:-1], float(beta[-1])


# -------------------------------------------------------------------------------------- fit


def _add_fit(commands: Any) -> None:
    parser = commands.add_parser(
        "fit",
        help="fit a model to a CSV, Parquet, .npy or .npz file, batch by batch",
        description=(
            "Stream FILE batch by batch through partial_fit and write a checkpoint. Feature "
            "columns are every column but the target, unless --features names them."
        ),
    )
    parser.add_argument(
        "file", type=Path, metavar="FILE", help="a .csv (.csv.gz, .tsv), .parquet, .npy or .npz"
    )
    _add_column_options(parser, target_help="the response column (a name, or an index for .npy)")
    _add_engine_options(parser, DEFAULT_BATCH_SIZE)
    _add_penalty_options(parser)
    parser.add_argument(
        "--epsilon",
        type=float,
        default=1.345,
        help="Huber threshold in robust scales (default 1.345, 95%% Gaussian efficiency)",
    )
    parser.add_argument("--no-intercept", action="store_true", help="fit without an intercept")
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path(_FIT_CHECKPOINT),
        metavar="CHECKPOINT",
        help=f"where to write the checkpoint (default {_FIT_CHECKPOINT})",
    )
    parser.set_defaults(run=_run_fit)


def _add_penalty_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--alpha", type=float, default=0.0, help="L1 strength per unit of weight (default 0)"
    )
    parser.add_argument(
        "--l1-solver", choices=L1_SOLVERS, default="lamm",
        help="solver of L1 batches: lamm (the contract's, default) or prox_newton (opt-in, "
             "native_cpu only: fewer passes over each batch)",
    )


def _add_column_options(parser: argparse.ArgumentParser, *, target_help: str) -> None:
    parser.add_argument("--target", metavar="COL", help=target_help)
    parser.add_argument(
        "--features",
        type=lambda text: [c.strip() for c in text.split(",") if c.strip()],
        metavar="A,B,C",
        help="the feature columns, in order (default: every column but the target)",
    )


def _run_fit(args: argparse.Namespace) -> int:
    from . import RenewableHuberRegressor

    _check_directory(args.output)
    reader = read_batches(
        args.file, target=args.target, features=args.features, batch_size=args.batch_size
    )
    if reader.target is None:
        raise DataFileError(args.file, "name the response column with --target")
    estimator = RenewableHuberRegressor(
        fit_intercept=not args.no_intercept,
        alpha=args.alpha,
        l1_solver=args.l1_solver,
        epsilon=args.epsilon,
        batch_size=args.batch_size,
        backend=args.backend,
    )
    stats = _stream(estimator, _labelled(reader, reader.feature_names), total=reader.n_rows)
    if stats.batches == 0:
        raise DataFileError(args.file, "the file has no data rows")
    estimator.save_checkpoint(args.output)

    print(
        f"rhuber fit: {args.file} ({reader.format}), target {reader.target!r}, "
        f"{len(reader.feature_columns)} features"
    )
    print(f"backend: {estimator.backend_}")
    print(f"plan: {estimator.plan_}")
    _print_throughput(stats, excluded="reading and checking excluded")
    print()
    _print_diagnostics(estimator.diagnostics_, estimator.coef_.dtype)
    print()
    print(f"robust scale: {estimator.scale_:.6g}")
    print(f"intercept: {float(estimator.intercept_):.6g}")
    names = reader.feature_columns
    _print_rows(
        [
            f"  {name!s:<20} {float(value):>14.6g}"
            for name, value in zip(names, estimator.coef_, strict=True)
        ],
        header="coefficients:",
    )
    print(f"checkpoint: {args.output.resolve()}")
    return 0


def _labelled(
    reader: BatchReader, names: tuple[str, ...] | None
) -> Iterator[tuple[Any, NDArray | None]]:
    """``(X, y)`` of every batch, X as a DataFrame with columns ``names`` unless None.

    Fitted on named columns, the estimator records ``feature_names_in_`` in the checkpoint,
    and ``predict`` can then take the same columns by name from a file that orders them
    differently.
    """
    if names is None:
        for X, y, _ in reader:
            yield X, y
        return
    import pandas as pd

    for X, y, _ in reader:
        yield pd.DataFrame(X, columns=list(names), copy=False), y


# ---------------------------------------------------------------------------------- predict


def _add_predict(commands: Any) -> None:
    parser = commands.add_parser(
        "predict",
        help="predict with a checkpoint, streaming a file to CSV",
        description=(
            "Stream FILE through the model of CHECKPOINT and write one column, 'prediction', "
            "as CSV. A model fitted on named columns takes them by name; otherwise every "
            "column but --target is a feature."
        ),
    )
    parser.add_argument("checkpoint", type=Path, metavar="CHECKPOINT", help="from rhuber fit")
    parser.add_argument("file", type=Path, metavar="FILE", help="the rows to predict")
    _add_column_options(parser, target_help="a response column to leave out, if present")
    parser.add_argument(
        "--batch-size",
        type=_positive_int,
        default=DEFAULT_BATCH_SIZE,
        metavar="N",
        help=f"rows per batch (default {DEFAULT_BATCH_SIZE:,})",
    )
    parser.add_argument(
        "-o", "--output", type=Path, metavar="OUT.csv", help="output file (default: stdout)"
    )
    parser.set_defaults(run=_run_predict)


def _run_predict(args: argparse.Namespace) -> int:
    from . import RenewableHuberRegressor

    model = RenewableHuberRegressor.load_checkpoint(args.checkpoint)
    features = args.features
    model_names = getattr(model, "feature_names_in_", None)
    if (
        features is None
        and model_names is not None
        and detect_format(args.file)
        in (
            "csv",
            "parquet",
        )
    ):
        features = [str(name) for name in model_names]
    reader = read_batches(
        args.file,
        target=args.target,
        features=features,
        batch_size=args.batch_size,
        target_required=False,
    )
    # Named columns for a model that knows names; bare arrays otherwise, so that scikit-learn
    # does not warn about names the model never saw.
    batches = _labelled(reader, None if model_names is None else reader.feature_names)
    with _output(args.output) as out:
        out.write("prediction\n")
        count = 0
        with _progress(reader.n_rows) as bar:
            for X, _ in batches:
                predictions = model.predict(X)
                out.write("".join(f"{value!r}\n" for value in predictions.tolist()))
                count += len(predictions)
                bar.update(len(predictions))
    where = "stdout" if args.output is None else args.output.resolve()
    print(f"rhuber predict: {count:,} predictions written to {where}", file=sys.stderr)
    return 0


@contextmanager
def _output(path: Path | None) -> Iterator[TextIO]:
    """stdout, or a file that appears only once it is complete (never half written)."""
    if path is None:
        yield sys.stdout
        sys.stdout.flush()
        return
    _check_directory(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="") as file:
            yield file
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _check_directory(path: Path) -> None:
    """Fail before a long run, not after it, when the output cannot be written."""
    if not path.parent.is_dir():
        raise FileNotFoundError(2, "no such directory for the output", str(path.parent))


# ---------------------------------------------------------------------------------- profile


def _add_stream_source(parser: argparse.ArgumentParser) -> None:
    """``[FILE | demo]`` with the demo's size options and a file's column options."""
    parser.add_argument(
        "source",
        nargs="?",
        default="demo",
        metavar="FILE | demo",
        help="a data file (as for fit), or 'demo' for the built-in workload (default demo)",
    )
    parser.add_argument(
        "--rows", type=_positive_int, default=100_000, metavar="N",
        help="demo rows (default 100,000)",
    )
    parser.add_argument(
        "--n-features", type=_positive_int, default=90, metavar="P",
        help="demo features (default 90)",
    )
    parser.add_argument("--seed", type=int, default=0, help="demo seed (default 0)")
    _add_column_options(parser, target_help="the response column of FILE")
    _add_engine_options(parser, DEFAULT_BATCH_SIZE)
    _add_penalty_options(parser)


def _open_source(args: argparse.Namespace, *, seed_offset: int = 0) -> tuple[str, Any, int | None]:
    """``(description, batches of (X, y), total rows)`` of the source."""
    if args.source == "demo":
        stream = make_contaminated_stream(
            args.rows, args.n_features, batch_size=args.batch_size, seed=args.seed + seed_offset
        )
        return (
            f"demo {stream.n_samples:,} rows × {stream.n_features} features", stream,
            stream.n_samples,
        )
    path = Path(args.source)
    reader = read_batches(
        path, target=args.target, features=args.features, batch_size=args.batch_size
    )
    if reader.target is None:
        raise DataFileError(path, "name the response column with --target")
    description = f"{path} ({reader.format}), {len(reader.feature_columns)} features"
    return description, ((X, y) for X, y, _ in reader), reader.n_rows


def _add_profile(commands: Any) -> None:
    parser = commands.add_parser(
        "profile",
        help="profile a stream brick by brick: table, breakdown, trace, graph",
        description=(
            "Stream FILE (or the demo) through partial_fit with the brick profiler on, "
            "predicting each batch before learning from it, then print the brick table, the "
            "performance breakdown and the critical path, and write the requested exports. "
            "Needs rhuber-native-cpu (its C++ profiler records every engine)."
        ),
    )
    _add_stream_source(parser)
    parser.add_argument(
        "--trace", type=Path, metavar="OUT.json",
        help="write a Chrome trace (open in https://ui.perfetto.dev)",
    )
    parser.add_argument("--dot", type=Path, metavar="OUT.dot", help="write the graph (Graphviz)")
    parser.add_argument(
        "--json", type=Path, metavar="OUT.json", help="write the versioned JSON report"
    )
    parser.add_argument(
        "--tree", action="store_true", help="also print the execution graph as an ASCII tree"
    )
    parser.add_argument(
        "--sync-mode", choices=("immediate", "per_batch", "deferred"), default="immediate",
        help="when the profiler resolves its clock (default immediate; the CPU clock is "
        "synchronous, so the modes give the same figures here)",
    )
    parser.set_defaults(run=_run_profile)


def _run_profile(args: argparse.Namespace) -> int:
    from . import RenewableHuberRegressor
    from .profiling import profile

    for path in (args.trace, args.dot, args.json):
        if path is not None:
            _check_directory(path)
    description, batches, total = _open_source(args)
    estimator = RenewableHuberRegressor(
        batch_size=args.batch_size, backend=args.backend, alpha=args.alpha,
        l1_solver=args.l1_solver,
    )
    with profile(sync_mode=args.sync_mode) as prof:
        stats = _stream(
            estimator, batches, total=total,
            observe=lambda X, y: estimator.predict(X) if hasattr(estimator, "coef_") else None,
        )
    if stats.batches == 0:
        raise ValueError(f"{args.source}: no data rows")
    prof.set_metadata("backend", estimator.backend_)
    prof.set_metadata("source", description)
    report = prof.report()
    breakdown = prof.breakdown()
    print(
        f"rhuber profile: {description}, {stats.batches} batches of up to "
        f"{args.batch_size:,} rows, backend {estimator.backend_}"
    )
    print()
    print(report)
    print(breakdown["text"])
    graph = prof.graph()
    path = graph.critical_path()
    ranks = graph.rank_bricks()
    print(
        f"execution graph: {len(graph):,} nodes; critical path {len(path)} nodes, "
        f"{path.length_ns / 1e6:.2f} ms"
    )
    if ranks:
        god = ranks[0]
        print(f"busiest brick: {god['brick']} ({god['time_share']:.0%} of brick self time)")
    if args.tree:
        print()
        print(graph.ascii())
    for flag, path_, write in (
        ("trace", args.trace, prof.to_chrome_trace),
        ("dot", args.dot, lambda p: _write_text(p, graph.to_dot())),
        ("json", args.json, prof.to_json),
    ):
        if path_ is not None:
            write(path_)
            note = " (open in https://ui.perfetto.dev)" if flag == "trace" else ""
            print(f"wrote {path_.resolve()}{note}")
    return 0


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# -------------------------------------------------------------------------------------- top


def _add_top(commands: Any) -> None:
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
    _add_stream_source(parser)
    parser.add_argument(
        "--duration", type=float, default=None, metavar="S", help="stop after S seconds"
    )
    parser.add_argument(
        "--batches", type=_positive_int, default=None, metavar="N", help="stop after N batches"
    )
    parser.add_argument(
        "--interval", type=float, default=0.5, metavar="S",
        help="seconds between refreshes (default 0.5)",
    )
    parser.set_defaults(run=_run_top)


def _run_top(args: argparse.Namespace) -> int:
    from . import RenewableHuberRegressor
    from .profiling import _top, profile

    out = sys.stdout
    live = out.isatty()
    width = shutil.get_terminal_size((100, 40)).columns
    peaks = _top.measure_peaks()
    estimator = RenewableHuberRegressor(
        batch_size=args.batch_size, backend=args.backend, alpha=args.alpha,
        l1_solver=args.l1_solver,
    )
    description, batches, _ = _open_source(args)
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
            tuner["workload"] = _top.workload_of(X, alpha=args.alpha,
                                                 fit_intercept=estimator.fit_intercept)
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
                    _, batches, _ = _open_source(args, seed_offset=round_)
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


# ------------------------------------------------------------------------ shared machinery


@dataclass
class _StreamStats:
    rows: int = 0
    batches: int = 0
    update_seconds: float = 0.0
    wall_seconds: float = 0.0


def _stream(
    estimator: Any,
    batches: Iterable[tuple[Any, NDArray]],
    *,
    total: int | None,
    observe: Callable[[Any, NDArray], None] | None = None,
) -> _StreamStats:
    """``partial_fit`` every batch, timing the updates alone.

    ``observe`` sees each batch before the update and outside the timing (the demo's least
    squares). Convergence and conditioning warnings are silenced here because the per-batch
    table reports them, once for the run.
    """
    stats = _StreamStats()
    start = time.perf_counter()
    with _progress(total) as bar, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", IllConditionedWarning)
        for X, y in batches:
            if observe is not None:
                observe(X, y)
            tick = time.perf_counter()
            estimator.partial_fit(X, y)
            stats.update_seconds += time.perf_counter() - tick
            stats.rows += len(y)
            stats.batches += 1
            bar.update(len(y))
    stats.wall_seconds = time.perf_counter() - start
    return stats


def _progress(total: int | None) -> Any:
    """A tqdm bar on stderr in rows; silent when stderr is not a terminal."""
    try:
        from tqdm import tqdm
    except ImportError as exc:
        raise ImportError(
            "the command line needs tqdm: pip install 'rhuber[cli]'"
        ) from exc
    return tqdm(
        total=total,
        unit="rows",
        unit_scale=True,
        file=sys.stderr,
        disable=not sys.stderr.isatty(),
        dynamic_ncols=True,
    )


def _print_throughput(stats: _StreamStats, *, excluded: str) -> None:
    rate = stats.rows / stats.update_seconds if stats.update_seconds > 0 else float("inf")
    print(
        f"update time: {stats.update_seconds:.3f} s for {stats.rows:,} rows in "
        f"{stats.batches} batches = {rate:,.0f} rows/s ({excluded}; "
        f"wall {stats.wall_seconds:.3f} s)"
    )


def _print_diagnostics(diagnostics: list[dict], dtype: np.dtype) -> None:
    """The per-batch table, then each kind of warning once for the whole run."""
    header = (
        f"{'batch':>5}  {'converged':>9}  {'n_iter':>6}  {'bandwidth':>10}  "
        f"{'solver':>11}  {'rcond':>8}  {'objective':>12}"
    )
    lines = [
        f"{k:>5}  {'yes' if d['converged'] else 'NO':>9}  {d['n_iter']:>6}  "
        f"{d['bandwidth']:>10.4g}  {d['solver']:>11}  {_format_rcond(d['rcond']):>8}  "
        f"{d['objective']:>12.6g}"
        for k, d in enumerate(diagnostics, start=1)
    ]
    _print_rows(lines, header=header)
    unconverged = sum(not d["converged"] for d in diagnostics)
    if unconverged:
        print(f"warning: {unconverged} of {len(diagnostics)} batches did not converge")
    ill = [k for k, d in enumerate(diagnostics, start=1) if ill_conditioned(d["rcond"], dtype)]
    if ill:
        first = ill_conditioning_message(ill[0], diagnostics[ill[0] - 1], dtype)
        print(f"warning: {len(ill)} of {len(diagnostics)} batches were ill-conditioned; {first}")


def _format_rcond(rcond: float | None) -> str:
    return "—" if rcond is None else f"{rcond:.1e}"


def _print_rows(lines: list[str], *, header: str) -> None:
    print(header)
    if len(lines) > _MAX_TABLE_ROWS:
        head, tail = _MAX_TABLE_ROWS // 2, _MAX_TABLE_ROWS // 4
        lines = [*lines[:head], f"  … {len(lines) - head - tail} more …", *lines[-tail:]]
    for line in lines:
        print(line)


if __name__ == "__main__":
    sys.exit(main())
