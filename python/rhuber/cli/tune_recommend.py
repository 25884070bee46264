"""``rhuber tune recommend``: the tuner's recommendations box for one workload on this machine
(docs/tuner.md, "Recommendations"); the content is built by :mod:`.recommend`."""

from __future__ import annotations

import argparse
import json
import math
import shutil
from pathlib import Path
from typing import Any

from ..engines.workload import Workload
from ..tuner import hardware as machine
from ..tuner.advisor import Advisor
from ..tuner.recommend import recommend, render_box


def _rows(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be finite and >= 0, got {text!r}")
    return value


def add_recommend(sub: Any) -> None:
    parser = sub.add_parser(
        "recommend", help="the tuner's recommendations for one workload on this machine",
        description="Every valid plan for the workload with its predicted rows/s and "
                    "uncertainty, the plan backend='auto' runs and why, the predicted "
                    "bottleneck with its roofline evidence and the action for it, and the "
                    "measurements that would reduce the uncertainty most (docs/tuner.md, "
                    "\"Recommendations\").")
    parser.add_argument("--rows", type=_rows, required=True, metavar="N",
                        help="rows per batch (partial_fit call)")
    parser.add_argument("--features", type=_rows, required=True, metavar="P",
                        help="features (columns of X)")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                        help="the dtype of X (default float64)")
    parser.add_argument("--alpha", type=_alpha, default=0.0, metavar="A",
                        help="the L1 strength; > 0 makes the workload penalized (default 0)")
    parser.add_argument("--no-intercept", action="store_true",
                        help="the model fits no intercept")
    parser.add_argument("--json", action="store_true", help="print the same content as JSON")
    parser.add_argument("--no-measure", action="store_true",
                        help="never probe this machine: use its cached bandwidth and peak only, "
                             "as backend='auto' does")
    parser.add_argument("--models", type=Path, default=None, metavar="DIR",
                        help="the model files (default: this machine's local models, else the "
                             "shipped ones)")
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    workload = Workload(rows=args.rows, features=args.features, dtype=args.dtype,
                        penalized=args.alpha > 0, intercept=not args.no_intercept)
    hardware = None
    if not args.no_measure:
        hardware = machine.fingerprint(measure=True)  # cached per machine: probes once
    advisor = Advisor.load(hardware=hardware, models_dir=args.models)
    rec = recommend(workload, advisor)
    if args.json:
        print(json.dumps(rec.as_dict(), indent=2))
    else:
        print(render_box(rec, width=min(80, shutil.get_terminal_size((80, 24)).columns)))
    return 0
