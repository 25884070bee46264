"""``rhuber tune falsify``: work in progress (issue 15)."""

from __future__ import annotations

import argparse
from typing import Any


def add_falsify(sub: Any) -> None:
    parser = sub.add_parser("falsify", help="(in progress)")
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    raise NotImplementedError("rhuber tune falsify is not built yet")
