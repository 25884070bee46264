"""`rhuber fit`: stream a data file into a model and save its checkpoint."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..estimator import RenewableHuberRegressor
from ..io import DEFAULT_BATCH_SIZE, DataFileError, read_batches
from ._common import (
    add_column_options,
    add_engine_options,
    add_penalty_options,
    check_directory,
    labelled,
    print_diagnostics,
    print_rows,
    print_throughput,
    stream_batches,
)

_FIT_CHECKPOINT = "model.npz"


def add_fit(commands: Any) -> None:
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
    add_column_options(parser, target_help="the response column (a name, or an index for .npy)")
    add_engine_options(parser, DEFAULT_BATCH_SIZE)
    add_penalty_options(parser)
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


def _run_fit(args: argparse.Namespace) -> int:
    check_directory(args.output)
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
    stats = stream_batches(estimator, labelled(reader, reader.feature_names), total=reader.n_rows)
    if stats.batches == 0:
        raise DataFileError(args.file, "the file has no data rows")
    estimator.save_checkpoint(args.output)

    print(
        f"rhuber fit: {args.file} ({reader.format}), target {reader.target!r}, "
        f"{len(reader.feature_columns)} features"
    )
    print(f"backend: {estimator.backend_}")
    print(f"plan: {estimator.plan_}")
    print_throughput(stats, excluded="reading and checking excluded")
    print()
    print_diagnostics(estimator.diagnostics_, estimator.coef_.dtype)
    print()
    print(f"robust scale: {estimator.scale_:.6g}")
    print(f"intercept: {float(estimator.intercept_):.6g}")
    names = reader.feature_columns
    print_rows(
        [
            f"  {name!s:<20} {float(value):>14.6g}"
            for name, value in zip(names, estimator.coef_, strict=True)
        ],
        header="coefficients:",
    )
    print(f"checkpoint: {args.output.resolve()}")
    return 0
