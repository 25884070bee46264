"""`rhuber demo`: the built-in seeded, contaminated stream, with a progress bar."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..datasets import make_contaminated_stream
from ..estimator import RenewableHuberRegressor
from ..io import DEFAULT_BATCH_SIZE
from ._common import (
    add_engine_options,
    batch_count_text,
    check_directory,
    positive_int,
    print_diagnostics,
    print_throughput,
    stream_batches,
)

_DEMO_CHECKPOINT = "rhuber-demo.npz"


def add_demo(commands: Any) -> None:
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
        "--rows", type=positive_int, default=100_000, metavar="N", help="rows (default 100,000)"
    )
    parser.add_argument(
        "--n-features", type=positive_int, default=90, metavar="P", help="features (default 90)"
    )
    # --features names a file's columns in every other command: here it says so, rather than
    # argparse's "unrecognized arguments".
    parser.add_argument("--features", type=_count_is_n_features, help=argparse.SUPPRESS)
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the coefficients and data (default 0)"
    )
    add_engine_options(parser, DEFAULT_BATCH_SIZE)
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path(_DEMO_CHECKPOINT),
        metavar="CHECKPOINT",
        help=f"where to write the checkpoint (default ./{_DEMO_CHECKPOINT})",
    )
    parser.set_defaults(run=_run_demo)


def _count_is_n_features(text: str) -> None:
    raise argparse.ArgumentTypeError(f"the demo's feature count is --n-features {text} "
                                     "(--features lists a data file's columns)")


def _run_demo(args: argparse.Namespace) -> int:
    check_directory(args.output)
    stream = make_contaminated_stream(
        args.rows, args.n_features, batch_size=args.batch_size, seed=args.seed
    )
    estimator = RenewableHuberRegressor(batch_size=args.batch_size, backend=args.backend)
    ols = _NormalEquations(args.n_features)
    stats = stream_batches(estimator, stream, total=stream.n_samples, observe=ols.add)
    estimator.save_checkpoint(args.output)

    # Printed once the stream has run: an error exit leaves nothing on stdout.
    print(
        f"rhuber demo: {stream.n_samples:,} rows × {stream.n_features} features in "
        f"{batch_count_text(stream.n_batches)} of up to {stream.batch_size:,} rows; Student-t "
        f"(df={stream.df:g}) noise, {stream.outlier_fraction:.0%} gross outliers, "
        f"seed {stream.seed}"
    )
    print(f"backend: {estimator.backend_}")
    print(f"plan: {estimator.plan_}")
    print_throughput(stats, excluded="data generation excluded")
    print()
    print_diagnostics(estimator.diagnostics_, estimator.coef_.dtype)
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
