"""Peak resident memory of a timed pass over what it started with (Linux: /proc/self)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_bytes(field: str) -> int | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def peak_over(fn: Callable[[], Any], data_bytes: int) -> tuple[Any, dict[str, Any] | None]:
    """Run ``fn``; return its result and the peak RSS it added over the RSS before it (the
    batches already resident), in bytes and as a fraction of ``data_bytes`` (the largest batch's
    X). None where the kernel cannot reset the peak (writing 5 to /proc/self/clear_refs)."""
    before = _status_bytes("VmRSS")
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return fn(), None
    out = fn()
    peak = _status_bytes("VmHWM")
    if before is None or peak is None:
        return out, None
    added = max(0, peak - before)
    return out, {"peak_rss_over_start_bytes": added, "largest_batch_X_bytes": data_bytes,
                 "over_X_bytes": added / data_bytes if data_bytes else None}
