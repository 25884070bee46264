#!/usr/bin/env python3
"""How noisy is a measurement store? An A/A control found inside it: native_cpu plans that differ
only in their chunk size, where every chunk size covers a whole row block, run the same
computation (the engine cuts a batch into row blocks of at least 2,048 rows, at most 64 blocks,
and a chunk never spans two blocks: native/cpu/row_blocks.hpp, mirrored here), so their measured
times should be equal. Per machine: how many such groups, and the spread of each (its slowest
plan's time over its fastest's) as a geomean, p90 and max. A collection whose spread is large
labels noise as the best plan, and the rule's search and the models learn it.

    .venv/bin/python scripts/benchmarks/store_noise.py [STORE ...]
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path

from rhuber.engines.plans import Plan
from rhuber.engines.workload import Workload
from rhuber.tuner.labels import throughput
from rhuber.tuner.store import Store

SHIPPED = Path(__file__).resolve().parents[2] / "python/rhuber/tuner/data/corpus.sqlite"

# native/cpu/row_blocks.hpp: RowBlocks::min_rows, RowBlocks::max_blocks, chunk_rows' minimum.
MIN_BLOCK_ROWS, MAX_BLOCKS, MIN_CHUNK_ROWS = 2048, 64, 16


def block_rows(rows: int) -> int:
    """The most rows a row block of a batch of ``rows`` holds."""
    count = min(max(rows // MIN_BLOCK_ROWS, 1), MAX_BLOCKS)
    return -(-rows // count)


def twin_spreads(store: Store, *, unstable: bool = False) -> dict[str, list[float]]:
    """Hardware id → the spread of each group of same-computation plans of a workload, over
    the good measurements (the labels' rows), or with ``unstable`` those stored unstable too."""
    groups: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for m in store.measurements():
        rate = m.rows_per_s if unstable and m.status == "unstable" else throughput(m)
        if not rate or not m.plan_id.startswith("native_cpu/"):
            continue
        w, plan = Workload.from_id(m.workload_id), Plan.from_id(m.plan_id)
        chunk = max(MIN_CHUNK_ROWS, plan.chunk_kib * 1024 // (w.dim * w.itemsize))
        if chunk < block_rows(w.rows):
            continue  # this chunk size cuts the blocks: another computation
        rest = m.plan_id.replace(f"/chunk={plan.chunk_kib}k", "")
        groups[(m.hardware_id, m.workload_id, rest)].append(1.0 / rate)
    out: dict[str, list[float]] = defaultdict(list)
    for (hardware, *_), times in groups.items():
        if len(times) >= 2:
            out[hardware].append(max(times) / min(times))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stores", nargs="*", type=Path, default=[SHIPPED])
    parser.add_argument("--unstable", action="store_true",
                        help="count the measurements stored unstable too")
    args = parser.parse_args()
    for path in args.stores:
        print(path)
        with Store(path, read_only=True) as store:
            spreads = twin_spreads(store, unstable=args.unstable)
        for hardware, values in sorted(spreads.items()):
            values.sort()
            geomean = math.exp(sum(map(math.log, values)) / len(values))
            print(f"  {hardware}  {len(values):5d} groups  spread geomean {geomean:.3f}  "
                  f"p90 {values[int(0.9 * len(values))]:.3f}  max {values[-1]:.3f}")


if __name__ == "__main__":
    main()
