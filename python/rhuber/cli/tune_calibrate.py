"""``rhuber tune calibrate [--reset] [--budget SECONDS]``: measure this machine and train its
local models (lab/calibrate.py), or remove them."""

from __future__ import annotations

import argparse
from typing import Any

from ..lab import calibrate
from ..lab.calibrate import BUDGET_S
from ..tuner import hardware, local
from ._common import parse_duration


def add_calibrate(sub: Any) -> None:
    parser = sub.add_parser(
        "calibrate", help="measure this machine (< 30 s) and train its local models",
        description="Measure a designed subset of workloads x plans on this machine into the "
                    "local store and train local models keyed by the hardware id, which the "
                    "tuner then uses instead of the shipped ones (docs/tuner.md, 'Calibration "
                    "and online learning').")
    parser.add_argument("--budget", type=parse_duration, default=BUDGET_S, metavar="SECONDS",
                        help=f"the wall time of the whole, training included (default "
                             f"{BUDGET_S:.0f}s)")
    parser.add_argument("--reset", action="store_true",
                        help="remove this machine's local models (the shipped ones apply "
                             "again) and stop; the local measurements are kept")
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    if args.reset:
        hardware_id = hardware.identify().hardware_id
        removed = local.remove_models(hardware_id)
        if not removed:
            print(f"rhuber tune calibrate --reset: no local models for {hardware_id} "
                  f"(nothing in {local.models_dir(hardware_id)}); the shipped models apply")
        for path in removed:
            print(f"removed {path}")
        if removed:
            print(f"rhuber tune calibrate --reset: the shipped models apply to {hardware_id} "
                  f"again; the local measurements stay in {local.store_path()}")
        return 0
    if not args.budget > 0:
        raise ValueError(f"--budget must be positive, got {args.budget}")
    result = calibrate.calibrate(budget_s=args.budget)
    print(f"rhuber tune calibrate: local models in {result.models_dir} from "
          f"{result.training_measurements} measurements ({len(result.measured)} measured now; "
          f"{result.local_measurements} from the local store) in {result.seconds:.1f} s")
    return 0
