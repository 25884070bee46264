#!/usr/bin/env python3
"""Write tests/golden/native_core_v2.json from the NumPy reference, or --check it.

--check regenerates the corpus in memory and fails when the committed file differs by more than
1e-12 (float64 cases) or 1e-5 (float32 cases) relative in any number (or at all in any string,
flag or count). The float32 reference rounds through NumPy's BLAS, whose summation order changes
between NumPy releases (numpy 2.4.6 moved a float32 scale by 1.1e-6): 1e-5 still catches any
change of the reference's arithmetic, 200 times inside the contract's float32 tolerance (2e-3).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rhuber.lab.golden import CORPUS_FILE, build_corpus, max_relative_difference

DEFAULT = Path(__file__).resolve().parent.parent / "tests" / "golden" / CORPUS_FILE
CHECK_RTOL = {"float64": 1e-12, "float32": 1e-5}


def _excess(committed: dict, corpus: dict) -> tuple[float, str]:
    """The largest difference over its case's tolerance (> 1: out of tolerance), with a
    description of it."""
    if len(committed["cases"]) != len(corpus["cases"]) or committed.keys() != corpus.keys():
        return float("inf"), "the cases or top-level keys differ"
    top = {k: v for k, v in corpus.items() if k != "cases"}
    worst = (max_relative_difference({k: committed[k] for k in top}, top)
             / CHECK_RTOL["float64"], "top-level entries")
    for old, new in zip(committed["cases"], corpus["cases"], strict=True):
        rtol = CHECK_RTOL.get(new.get("dtype"), CHECK_RTOL["float64"])
        diff = max_relative_difference(old, new)
        worst = max(worst, (diff / rtol, f"case {new.get('name')!r}: {diff:.3g} > {rtol:g}"))
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--path", type=Path, default=DEFAULT)
    args = parser.parse_args(argv)
    corpus = build_corpus()
    if args.check:
        committed = json.loads(args.path.read_text())
        excess, where = _excess(committed, corpus)
        if excess > 1:
            print(f"{args.path}: differs from the regenerated corpus ({where})", file=sys.stderr)
            return 1
        print(f"{args.path}: up to date (largest difference {excess:.3g} of its tolerance)")
        return 0
    args.path.parent.mkdir(parents=True, exist_ok=True)
    args.path.write_text(json.dumps(corpus, indent=1) + "\n")
    print(f"wrote {args.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
