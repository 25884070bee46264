"""Opt-in online learning (issue 15, part 5): work in progress."""

from __future__ import annotations

from typing import Any

_ENABLED = False


def learn_online(enabled: bool = True) -> None:
    """Turn online learning from profiled batches on or off (off by default)."""
    global _ENABLED
    _ENABLED = bool(enabled)


def enabled() -> bool:
    return _ENABLED


def record_batch(workload: Any, plan: Any, seconds: float, profile: Any) -> None:
    """Called by the estimator after each committed batch when ``profile=True`` and online
    learning is on."""
