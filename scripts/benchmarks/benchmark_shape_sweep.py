#!/usr/bin/env python
"""Shape sweep of the renewable Huber engines and their peers (RFC 0001, "Benchmark protocol").

Each engine is timed twice, as separate records: on the engine path (``engine.update`` on the
batches) and on the estimator path (``RenewableHuberRegressor(backend=<engine>).partial_fit``,
what users run); the scikit-learn peers through their public ``partial_fit`` / ``fit``.
Run a profile and write the schema v2 JSON and PNG plots::

    .venv/bin/python scripts/benchmarks/benchmark_shape_sweep.py --profile smoke \\
        --out docs/perf/results/

Compare two runs (exit status 1 when a record got slower than ``--threshold``)::

    benchmark_shape_sweep.py --compare old.json new.json

Apply the promotion gate (native at least as fast as its paired reference for a shape;
the advisor asks for 10 %), to a saved run or, after ``--profile``, to the run just made::

    benchmark_shape_sweep.py --gate docs/perf/results/standard-2026-11-29.json

Print the Markdown tables of a run::

    benchmark_shape_sweep.py --tables docs/perf/results/standard-2026-11-29.json
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rhbench.race import plot as plot_race
from rhbench.report import compare, format_comparison, format_gate, gate, markdown_tables, plot
from rhbench.schema import validate_document
from rhbench.sweep import ENGINES, PATHS, PEERS, PROFILES, Sweep


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--profile", choices=sorted(PROFILES),
                        help="run this profile (smoke: local validation; standard: baseline)")
    parser.add_argument("--out", type=Path, default=Path("docs/perf/results"),
                        help="a directory (writes <profile>-<date>.json and PNGs) or a .json "
                             "path (default: docs/perf/results)")
    parser.add_argument("--engines", nargs="+", choices=ENGINES,
                        help="engines to run (default: all; absent ones are recorded skipped)")
    parser.add_argument("--peers", nargs="*", choices=PEERS,
                        help="scikit-learn peers to run (default: all; none with no value)")
    parser.add_argument("--paths", nargs="+", choices=PATHS,
                        help="what to time for each engine: engine (engine.update) and/or "
                             "estimator (RenewableHuberRegressor(backend=...).partial_fit); "
                             "default: both. Peers always run through their estimators")
    parser.add_argument("--dtypes", nargs="+", choices=("float64", "float32"))
    parser.add_argument("--shapes", nargs="+",
                        help="shape classes to run (default: the profile's four)")
    parser.add_argument("--threads", type=int,
                        help="limit BLAS and the native engine to N threads (default: all)")
    parser.add_argument("--no-plots", action="store_true", help="write the JSON only")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"),
                        help="print new/old ratios of two runs and flag regressions")
    parser.add_argument("--threshold", type=float, default=0.05,
                        help="--compare: a ratio above 1 + threshold is a regression "
                             "(default 0.05)")
    parser.add_argument("--gate", nargs="?", const="-", type=str, metavar="RUN",
                        help="apply the promotion gate to RUN (a JSON file), or to the run "
                             "just made with --profile")
    parser.add_argument("--tables", type=Path, metavar="RUN",
                        help="print the Markdown tables of a run")
    return parser


def _load(path: Path) -> dict[str, Any]:
    document = json.loads(path.read_text())
    validate_document(document)
    return document


def _output_paths(out: Path, profile: str) -> Path:
    if out.suffix == ".json":
        out.parent.mkdir(parents=True, exist_ok=True)
        return out
    out.mkdir(parents=True, exist_ok=True)
    return out / f"{profile}-{_dt.date.today().isoformat()}.json"


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status.

    Returns
    -------
    int
        0 on success; 1 when ``--compare`` finds a regression or ``--gate`` does not promote
        a native engine for some shape; 2 on a usage error.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    if not (args.profile or args.compare or args.gate or args.tables):
        parser.error("give --profile, --compare, --gate or --tables")
    if args.gate == "-" and not args.profile:
        parser.error("--gate without a file needs --profile")
    status = 0
    document = None
    if args.profile:
        profile = PROFILES[args.profile]
        changes: dict[str, Any] = {}
        if args.engines:
            changes["engines"] = tuple(args.engines)
        if args.peers is not None:
            changes["peers"] = tuple(args.peers)
        if args.paths:
            changes["paths"] = tuple(args.paths)
        if args.threads:
            changes["threads"] = args.threads
        if args.dtypes:
            changes["dtypes"] = tuple(args.dtypes)
        if args.shapes:
            unknown = set(args.shapes) - {s.name for s in profile.shapes}
            if unknown:
                parser.error(f"unknown shape class(es) {sorted(unknown)}")
            changes["shapes"] = tuple(s for s in profile.shapes if s.name in args.shapes)
        profile = replace(profile, **changes)
        document = Sweep(profile, progress=not args.quiet).run(
            command=[sys.executable, *sys.argv] if argv is None else ["main", *argv]
        )
        path = _output_paths(args.out, profile.name)
        # Written before validation: a long run is never lost to a schema error.
        path.write_text(json.dumps(document, indent=1) + "\n")
        print(f"wrote {path}")
        validate_document(document)
        if not args.no_plots:
            for png in [*plot(document, path.with_suffix("")),
                        *plot_race(document, path.with_suffix(""))]:
                print(f"wrote {png}")
    if args.tables:
        print(markdown_tables(_load(args.tables)))
    if args.compare:
        pairs, warnings = compare(_load(args.compare[0]), _load(args.compare[1]))
        print(format_comparison(pairs, warnings, args.threshold))
        if any(p.is_regression(args.threshold) for p in pairs):
            status = 1
    if args.gate:
        target = document if args.gate == "-" else _load(Path(args.gate))
        assert target is not None
        pairs, verdicts = gate(target)
        print(format_gate(pairs, verdicts))
        if not all(v["promoted"] for v in verdicts.values()):
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
