"""``rhuber trace FILE --target y``: stream a data file through a traced estimator and print
the solver trace, its anomalies and, with --precision, the float32 precision report
(docs/tracing.md). Files are read exactly as ``rhuber fit`` reads them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from ..estimator import RenewableHuberRegressor
from ..io import DEFAULT_BATCH_SIZE, DataFileError, read_batches
from ..lab.precision import precision_report
from ._common import (
    add_column_options,
    add_engine_options,
    add_penalty_options,
    labelled,
    positive_int,
    stream_batches,
)


def add_trace(commands: Any) -> None:
    # The shared option groups and readers of rhuber's other commands (imported here: cli.py
    # imports this module).

    parser = commands.add_parser(
        "trace",
        help="trace every solver iteration of a file's batches and flag anomalies",
        description=(
            "Stream FILE batch by batch through a traced estimator (trace=True) and print one "
            "line per solver iteration, then the anomalies found (docs/tracing.md)."),
    )
    parser.add_argument(
        "file", type=Path, metavar="FILE", help="a .csv (.csv.gz, .tsv), .parquet, .npy or .npz"
    )
    add_column_options(parser, target_help="the response column (a name, or an index for .npy)")
    add_engine_options(parser, DEFAULT_BATCH_SIZE)
    add_penalty_options(parser)
    parser.add_argument("--epsilon", type=float, default=1.345,
                        help="Huber threshold in robust scales (default 1.345)")
    parser.add_argument("--max-iter", type=positive_int, default=500, metavar="N",
                        help="outer iterations per batch solve (default 500)")
    parser.add_argument("--no-intercept", action="store_true", help="fit without an intercept")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the trace as JSON")
    parser.add_argument("--plot", type=Path, metavar="PNG",
                        help="also draw objective and step norm per iteration (matplotlib)")
    parser.add_argument("--precision", action="store_true",
                        help="also run the stream in float32 and float64 and compare them")
    parser.add_argument("--rows", type=positive_int, default=60, metavar="N",
                        help="iteration lines to print at most (head and tail; default 60)")
    parser.set_defaults(run=_run_trace)


def _run_trace(args: argparse.Namespace) -> int:
    reader = read_batches(
        args.file, target=args.target, features=args.features, batch_size=args.batch_size
    )
    if reader.target is None:
        raise DataFileError(args.file, "name the response column with --target")
    params = dict(fit_intercept=not args.no_intercept, alpha=args.alpha,
                  l1_solver=args.l1_solver, epsilon=args.epsilon, max_iter=args.max_iter,
                  backend=args.backend)
    estimator = RenewableHuberRegressor(trace=True, **params)
    kept: list[tuple[Any, Any]] = []

    def keep(X: Any, y: Any) -> None:
        if args.precision:
            kept.append((np.asarray(X), np.asarray(y)))

    stats = stream_batches(estimator, labelled(reader, named=True), total=reader.n_rows,
                    observe=keep)
    if stats.batches == 0:
        raise DataFileError(args.file, "the file has no data rows")
    print(f"rhuber trace: {args.file} ({reader.format}), target {reader.target!r}, "
          f"{len(reader.feature_columns)} features, backend {estimator.backend_}")
    print(estimator.trace_.report(max_rows=args.rows))
    if args.json is not None:
        estimator.trace_.to_json(args.json)
        print(f"trace JSON: {args.json.resolve()}")
    if args.plot is not None:
        estimator.trace_.plot(args.plot)
        print(f"trace plot: {args.plot.resolve()}")
    if args.precision:
        X = np.concatenate([X for X, _ in kept])
        y = np.concatenate([y for _, y in kept])
        print()
        print("precision: float32 against float64, coefficients after each batch")
        print(precision_report(X, y, batch_size=args.batch_size, **params).report())
    return 0
