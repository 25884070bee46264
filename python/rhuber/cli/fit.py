"""`rhuber fit`: stream a data file into a model and save its checkpoint."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from ..core.inference import COV_TYPES, NEEDS_MATRICES, InferenceError
from ..core.types import CURVATURES, DEFAULT_BANDWIDTH_SCALE, FACTORIZATIONS
from ..estimator import RenewableHuberRegressor
from ..io import DEFAULT_BATCH_SIZE, DataFileError, read_batches
from ._common import (
    add_column_options,
    add_engine_options,
    add_lambda_scale,
    add_penalty_options,
    check_directory,
    labelled,
    print_diagnostics,
    print_rows,
    print_throughput,
    stream_batches,
)
from .drift_plot import closing_line, flagged_batches, plot_paths

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
    add_lambda_scale(parser)
    parser.add_argument(
        "--curvature", choices=CURVATURES, default="indicator",
        help="curvature of the information update (default indicator; smoothed: the paper's c_h)",
    )
    parser.add_argument(
        "--bandwidth-scale", type=float, default=DEFAULT_BANDWIDTH_SCALE, metavar="B",
        help="constant of the smoothed curvature's bandwidth "
             f"(default {DEFAULT_BANDWIDTH_SCALE:g})",
    )
    parser.add_argument(
        "--inference-matrices", action="store_true",
        help="also accumulate the matrices of the H1, H3 and HC0 covariances (the summary "
             "then uses H1; without them H2)",
    )
    parser.add_argument(
        "--cov-type", choices=COV_TYPES, default=None,
        help="covariance of the summary table (default H1 with --inference-matrices, else H2)",
    )
    parser.add_argument(
        "--half-life", type=float, default=None, metavar="W",
        help="forget: discount the history by 2^(-batch weight / W) before each batch, to track "
             "coefficients that change (a weight: rows, for unit weights; docs/drift.md)",
    )
    parser.add_argument(
        "--factorization", choices=FACTORIZATIONS, default="cholesky",
        help="cholesky (default): the information matrix and the normal equations; qr: the "
             "square-root information and QR of the rows, for ill-conditioned designs such as "
             "high-degree polynomials (about twice the digits, a higher cost; docs/numerics.md)",
    )
    parser.add_argument(
        "--drift-alpha", type=float, default=None, metavar="A",
        help="name the batches whose drift test's p-value is below A (in (0, 1)) in a closing "
             "line and mark them in --plot",
    )
    parser.add_argument(
        "--plot", type=Path, default=None, metavar="FILE.png",
        help="draw the coefficient paths over the batches (matplotlib), batches below "
             "--drift-alpha marked",
    )
    parser.add_argument(
        "--json", action="store_true",
        help="print one JSON object (diagnostics, coefficients, summary) instead of text",
    )
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
    if args.cov_type in NEEDS_MATRICES and not args.inference_matrices:
        raise ValueError(f"--cov-type {args.cov_type} needs the matrix "
                         f"{NEEDS_MATRICES[args.cov_type]}, accumulated only with "
                         "--inference-matrices (from the first batch on): add that flag, or "
                         "use --cov-type H2")
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
        lambda_scale=args.lambda_scale,
        curvature=args.curvature,
        bandwidth_scale=args.bandwidth_scale,
        inference_matrices=args.inference_matrices,
        half_life=args.half_life,
        factorization=args.factorization,
        drift_alpha=args.drift_alpha,
        batch_size=args.batch_size,
        backend=args.backend,
    )
    if args.plot is not None:
        check_directory(args.plot)
    paths: list[Any] = []  # the coefficients (intercept last) after each batch, for --plot

    def record_path(fitted: RenewableHuberRegressor) -> None:
        paths.append([*map(float, fitted.coef_), float(fitted.intercept_)])

    stats = stream_batches(estimator, labelled(reader, named=True), total=reader.n_rows,
                           after=None if args.plot is None else record_path)
    if stats.batches == 0:
        raise DataFileError(args.file, "the file has no data rows")
    estimator.save_checkpoint(args.output)
    flagged = flagged_batches(estimator.diagnostics_, args.drift_alpha)
    if args.plot is not None:
        names = [str(n) for n in reader.feature_columns]
        names += ["intercept"] if estimator.fit_intercept else []
        columns = len(names)
        plot_paths(args.plot, np.asarray(paths)[:, :columns], names, flagged, args.drift_alpha,
                   f"rhuber fit {args.file.name}: coefficient paths")
    summary, refused = _summary(estimator, args.cov_type)
    if args.json:
        report = _report(args, reader, estimator, stats, summary, refused)
        report["drift_flagged"] = flagged if args.drift_alpha is not None else None
        # JSON has no NaN: a batch without a drift test reports null.
        report["diagnostics"] = [{k: None if isinstance(v, float) and v != v else v
                                  for k, v in d.items()} for d in report["diagnostics"]]
        print(json.dumps(report, indent=1))
        return 0

    print(
        f"rhuber fit: {args.file} ({reader.format}), target {reader.target!r}, "
        f"{len(reader.feature_columns)} features"
    )
    print(f"backend: {estimator.backend_}")
    print(f"plan: {estimator.plan_}")
    print_throughput(stats, excluded="reading and checking excluded")
    print()
    print_diagnostics(estimator.diagnostics_, estimator.coef_.dtype, drift=True,
                      factorization=estimator.factorization)
    print()
    if summary is not None:
        print(summary)
    else:
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
        print(f"no standard errors: {refused}")
    if args.drift_alpha is not None:
        print(closing_line(flagged, args.drift_alpha, stats.batches))
    if args.plot is not None:
        print(f"plot: {args.plot.resolve()}")
    print(f"checkpoint: {args.output.resolve()}")
    return 0


def _summary(estimator: RenewableHuberRegressor, cov_type: str | None) -> tuple[Any, str | None]:
    """The inference summary, or None and why not (a penalized stream, a singular J, ...)."""
    try:
        return estimator.summary(cov_type=cov_type), None
    except InferenceError as exc:
        return None, str(exc)


def _report(args: argparse.Namespace, reader: Any, estimator: RenewableHuberRegressor,
            stats: Any, summary: Any, refused: str | None) -> dict[str, Any]:
    """What the text output says, as one JSON object."""
    return {
        "file": str(args.file),
        "format": reader.format,
        "target": reader.target,
        "features": [str(n) for n in reader.feature_columns],
        "backend": estimator.backend_,
        "plan": str(estimator.plan_),
        "rows": stats.rows,
        "batches": stats.batches,
        "update_seconds": stats.update_seconds,
        "scale": estimator.scale_,
        "intercept": float(estimator.intercept_),
        "coef": [float(v) for v in estimator.coef_],
        "diagnostics": estimator.diagnostics_,
        "summary": None if summary is None else summary.as_dict(),
        "summary_refused": refused,
        "checkpoint": str(args.output.resolve()),
    }
