#!/usr/bin/env python3
"""Write tests/golden/native_core_v2.json from the NumPy reference, or --check it.

--check regenerates the corpus in memory and fails when the committed file differs by more than
1e-12 relative in any number (or at all in any string, flag or count).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from renewable_huber.golden import CORPUS_FILE, build_corpus, max_relative_difference

DEFAULT = Path(__file__).resolve().parent.parent / "tests" / "golden" / CORPUS_FILE
CHECK_RTOL = 1e-12


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--path", type=Path, default=DEFAULT)
    args = parser.parse_args(argv)
    corpus = build_corpus()
    if args.check:
        committed = json.loads(args.path.read_text())
        diff = max_relative_difference(committed, corpus)
        if diff > CHECK_RTOL:
            print(f"{args.path}: differs from the regenerated corpus (max relative difference "
                  f"{diff:.3g} > {CHECK_RTOL})", file=sys.stderr)
            return 1
        print(f"{args.path}: up to date (max relative difference {diff:.3g})")
        return 0
    args.path.parent.mkdir(parents=True, exist_ok=True)
    args.path.write_text(json.dumps(corpus, indent=1) + "\n")
    print(f"wrote {args.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
