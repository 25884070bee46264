"""``rhuber tune falsify``: the seed's F001–F100 as checks against this product, printed as a
scorecard (docs/tuner.md, "Falsification scorecard"; the checks live in :mod:`.falsify`)."""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path
from typing import Any

from ..lab import falsify
from . import _top

_ID = re.compile(r"^F(\d{1,3})$")
#: The shipped corpus (falsify.CORPUS; not imported here so that `rhuber` starts light).
_CORPUS = Path(__file__).resolve().parents[1] / "tuner" / "data" / "corpus.sqlite"


def _ids(text: str) -> list[str]:
    """'F001,F7,f100' → ['F001', 'F007', 'F100']."""
    out = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        match = _ID.match(part.upper())
        if not match or not 1 <= int(match.group(1)) <= 100:
            raise argparse.ArgumentTypeError(f"expected ids F001 … F100, got {part!r}")
        out.append(f"F{int(match.group(1)):03d}")
    if not out:
        raise argparse.ArgumentTypeError("expected at least one id, e.g. F001,F002")
    return out


def add_falsify(sub: Any) -> None:
    parser = sub.add_parser(
        "falsify", help="the seed's 100-point falsification checklist, checked: a scorecard",
        description="Run the seed's F001–F100 against the tuner: each item is a check that "
                    "measures a figure from the store, the models, the features, the plans, the "
                    "native reader or the advisor and compares it with a threshold, or is not "
                    "applicable with its reason. Exit 0 when every applicable check passes, "
                    "1 otherwise.")
    parser.add_argument("--store", type=Path, default=_CORPUS, metavar="FILE",
                        help="the measurement store (default: the shipped corpus)")
    parser.add_argument("--models", type=Path, default=None, metavar="DIR",
                        help="the model files (default: the shipped models)")
    parser.add_argument("--only", type=_ids, default=None, metavar="F001,F002,...",
                        help="run these items only")
    parser.add_argument("--json", action="store_true",
                        help="print the results as a JSON list (id, category, title, status, "
                             "measured, threshold, reason, value, seconds)")
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    if not args.store.exists():
        raise ValueError(f"{args.store}: no such store")
    start = time.perf_counter()
    results = falsify.run(falsify.Context(args.store, args.models, top=_top), args.only)
    seconds = time.perf_counter() - start
    if args.json:
        print(falsify.to_json(results))
    else:
        print(falsify.scorecard(results, seconds), end="")
    return 0 if all(r.status != falsify.FAIL for r in results) else 1
