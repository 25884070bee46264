"""``rhuber tune recommend``: work in progress (issue 15)."""

from __future__ import annotations

import argparse
from typing import Any


def add_recommend(sub: Any) -> None:
    parser = sub.add_parser("recommend", help="(in progress)")
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    raise NotImplementedError("rhuber tune recommend is not built yet")
