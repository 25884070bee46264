"""`rhuber predict`: a checkpoint's predictions for a data file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..estimator import RenewableHuberRegressor
from ..io import DEFAULT_BATCH_SIZE, DataFileError, detect_format, read_batches
from ._common import (
    add_column_options,
    labelled,
    output,
    positive_int,
    progress,
)


def add_predict(commands: Any) -> None:
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
    add_column_options(parser, target_help="a response column to leave out, if present")
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=DEFAULT_BATCH_SIZE,
        metavar="N",
        help=f"rows per batch (default {DEFAULT_BATCH_SIZE:,})",
    )
    parser.add_argument(
        "-o", "--output", type=Path, metavar="OUT.csv", help="output file (default: stdout)"
    )
    parser.set_defaults(run=_run_predict)


def _run_predict(args: argparse.Namespace) -> int:
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
    _check_width(args, reader, model)
    # Named columns for a model that knows names; bare arrays otherwise, so that scikit-learn
    # does not warn about names the model never saw.
    batches = labelled(reader, named=model_names is not None)
    with output(args.output) as out:
        count = 0
        with progress(reader.n_rows) as bar:
            for X, _ in batches:
                predictions = model.predict(X)
                if count == 0:  # after the first batch's checks: no output before an error
                    out.write("prediction\n")
                out.write("".join(f"{value!r}\n" for value in predictions.tolist()))
                count += len(predictions)
                bar.update(len(predictions))
    if count == 0:
        raise DataFileError(args.file, "the file has no data rows")
    where = "stdout" if args.output is None else args.output.resolve()
    print(f"rhuber predict: {count:,} predictions written to {where}", file=sys.stderr)
    return 0


def _check_width(args: argparse.Namespace, reader: Any, model: RenewableHuberRegressor) -> None:
    """The file's feature columns against the model's, before anything is written."""
    have, need = len(reader.feature_columns), model.n_features_in_
    if have == need:
        return
    hint = ""
    if have == need + 1 and reader.target is None:
        hint = ("; if one of them is the response, leave it out with --target "
                f"(the columns are {', '.join(map(repr, reader.feature_columns))})")
    raise DataFileError(args.file, f"has {have} feature column(s), but the model of "
                                   f"{args.checkpoint} takes {need}{hint}")
