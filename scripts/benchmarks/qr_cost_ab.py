#!/usr/bin/env python3
"""qr_cost.py for two builds of the CPU engine side by side: rounds of child processes, each
round running qr_cost.py once with each library (RH_NATIVE_CPU_LIBRARY), the order alternating
between rounds, so that both see the same machine load. Reports each library's medians over the
rounds of qr_cost.py's qr/cholesky ratio and of its A/A control (docs/perf/benchmark-protocol.md:
ratios only, before and after in one interleaved run).

    cp .venv/lib/python3.11/site-packages/rhuber_native_cpu/librhuber_cpu.so /tmp/before.so
    (change, make native)
    .venv/bin/python scripts/benchmarks/qr_cost_ab.py /tmp/before.so \\
        .venv/lib/python3.11/site-packages/rhuber_native_cpu/librhuber_cpu.so --rounds 8
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

QR_COST = Path(__file__).resolve().parent / "qr_cost.py"


def run_once(library: Path, reps: int) -> dict:
    env = dict(os.environ, RH_NATIVE_CPU_LIBRARY=str(library))
    done = subprocess.run([sys.executable, str(QR_COST), "--backend", "native_cpu",
                           "--reps", str(reps)], env=env, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"qr_cost.py failed with {library}:\n{done.stderr}")
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("libraries", nargs=2, type=Path, metavar="LIBRARY",
                        help="two librhuber_cpu.so builds: before, after")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--reps", type=int, default=11, help="qr_cost.py --reps")
    args = parser.parse_args(argv)
    for library in args.libraries:
        if not library.is_file():
            parser.error(f"no library at {library}")
    runs: dict[str, list[dict]] = {str(lib): [] for lib in args.libraries}
    for round_ in range(args.rounds):
        order = args.libraries if round_ % 2 == 0 else args.libraries[::-1]
        for library in order:
            runs[str(library)].append(run_once(library, args.reps))

    def median(library: str, key: str) -> float:
        return float(np.median([run[key] for run in runs[library]]))

    report = {
        "rounds": args.rounds,
        "reps": args.reps,
        "libraries": {
            library: {
                "qr_over_cholesky": median(library, "qr_over_cholesky_median_ratio"),
                "control_cholesky_again_over_cholesky":
                    median(library, "control_cholesky_again_over_cholesky"),
                "qr_ms": float(np.median([run["median_ms"]["qr"] for run in runs[library]])),
                "cholesky_ms":
                    float(np.median([run["median_ms"]["cholesky"] for run in runs[library]])),
                "per_round_qr_over_cholesky":
                    [round(run["qr_over_cholesky_median_ratio"], 3) for run in runs[library]],
                "max_abs_coef_difference":
                    max(run["max_abs_coef_difference"] for run in runs[library]),
            }
            for library in runs
        },
        "load_average_per_round": [run["load_average"][0] for run in runs[str(args.libraries[0])]],
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
