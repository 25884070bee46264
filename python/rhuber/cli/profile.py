"""`rhuber profile`: the engine's bricks over a stream, as a table and a trace."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .._atomic import write_text
from ..estimator import RenewableHuberRegressor
from ..profiling import profile
from ._common import (
    add_stream_source,
    batch_count_text,
    check_directory,
    open_source,
    stream_batches,
)


def add_profile(commands: Any) -> None:
    parser = commands.add_parser(
        "profile",
        help="profile a stream brick by brick: table, breakdown, trace, graph",
        description=(
            "Stream FILE (or the demo) through partial_fit with the brick profiler on, "
            "predicting each batch before learning from it, then print the brick table, the "
            "performance breakdown and the critical path, and write the requested exports. "
            "Needs rhuber-native-cpu (its C++ profiler records every engine)."
        ),
    )
    add_stream_source(parser)
    parser.add_argument(
        "--trace", type=Path, metavar="OUT.json",
        help="write a Chrome trace (open in https://ui.perfetto.dev)",
    )
    parser.add_argument("--dot", type=Path, metavar="OUT.dot", help="write the graph (Graphviz)")
    parser.add_argument(
        "--json", type=Path, metavar="OUT.json", help="write the versioned JSON report"
    )
    parser.add_argument(
        "--tree", action="store_true", help="also print the execution graph as an ASCII tree"
    )
    parser.add_argument(
        "--sync-mode", choices=("immediate", "per_batch", "deferred"), default="immediate",
        help="when the profiler resolves its clock (default immediate; the CPU clock is "
        "synchronous, so the modes give the same figures here)",
    )
    parser.set_defaults(run=_run_profile)


def _run_profile(args: argparse.Namespace) -> int:
    for path in (args.trace, args.dot, args.json):
        if path is not None:
            check_directory(path)
    description, batches, total = open_source(args)
    estimator = RenewableHuberRegressor(
        batch_size=args.batch_size, backend=args.backend, alpha=args.alpha,
        l1_solver=args.l1_solver,
    )
    with profile(sync_mode=args.sync_mode) as prof:
        stats = stream_batches(
            estimator, batches, total=total,
            observe=lambda X, y: estimator.predict(X) if hasattr(estimator, "coef_") else None,
        )
    if stats.batches == 0:
        raise ValueError(f"{args.source}: no data rows")
    prof.set_metadata("backend", estimator.backend_)
    prof.set_metadata("source", description)
    report = prof.report()
    breakdown = prof.breakdown()
    print(
        f"rhuber profile: {description}, {batch_count_text(stats.batches)} of up to "
        f"{args.batch_size:,} rows, backend {estimator.backend_}"
    )
    print()
    print(report)
    print(breakdown["text"])
    graph = prof.graph()
    path = graph.critical_path()
    ranks = graph.rank_bricks()
    print(
        f"execution graph: {len(graph):,} nodes; critical path {len(path)} nodes, "
        f"{path.length_ns / 1e6:.2f} ms"
    )
    if ranks:
        god = ranks[0]
        print(f"busiest brick: {god['brick']} ({god['time_share']:.0%} of brick self time)")
    if args.tree:
        print()
        print(graph.ascii())
    for flag, path_, write in (
        ("trace", args.trace, prof.to_chrome_trace),
        ("dot", args.dot, lambda p: write_text(p, graph.to_dot())),
        ("json", args.json, prof.to_json),
    ):
        if path_ is not None:
            write(path_)
            note = " (open in https://ui.perfetto.dev)" if flag == "trace" else ""
            print(f"wrote {path_.resolve()}{note}")
    return 0
