"""``rhuber tune calibrate``: work in progress (issue 15)."""

from __future__ import annotations

import argparse
from typing import Any


def add_calibrate(sub: Any) -> None:
    parser = sub.add_parser("calibrate", help="(in progress)")
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    raise NotImplementedError("rhuber tune calibrate is not built yet")
