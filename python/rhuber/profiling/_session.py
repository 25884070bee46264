"""Profiles: a native brick profiler, activated for the engines, and its exports."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import _native
from .._atomic import write_text
from ..errors import EngineNotAvailableError
from . import _hooks

_DISTRIBUTION = "rhuber-native-cpu"
SYNC_MODES = ("immediate", "per_batch", "deferred", "off")


def _native_bricks() -> Any:
    try:
        module = _native.load("native_cpu")
    except EngineNotAvailableError as exc:
        raise EngineNotAvailableError(
            f"rhuber.profile() needs the package {_DISTRIBUTION} (pip install "
            f"{_DISTRIBUTION}; `make install` builds it), whose C++ profiler produces every "
            f"report, trace and graph; it could not be imported: {exc}"
        ) from exc
    if not hasattr(module, "bricks"):
        raise EngineNotAvailableError(
            f"the installed {_DISTRIBUTION} was built without the profiler; reinstall it "
            "(bash scripts/build_native_cpu.sh)"
        )
    return module.bricks


class Recorder:
    """What an instrumented engine talks to while a profile is active (``_hooks.ACTIVE``)."""

    __slots__ = ("_in_batch", "_iteration", "native")

    def __init__(self, native: Any) -> None:
        self.native = native
        self._iteration = -1
        self._in_batch = False

    def begin_batch(self, rows: int) -> bool:
        """Start a batch unless one is open (a reference update inside another); True if started."""
        if self._in_batch:
            return False
        self.native.begin_batch(int(rows))
        self._in_batch = True
        self._iteration = -1
        return True

    def next_iteration(self) -> None:
        self._iteration += 1
        self.native.set_iteration(self._iteration)

    def end_batch(self, iterations: int) -> None:
        if iterations > 0:
            self.native.set_iteration(int(iterations) - 1)
        self.native.end_batch()
        self._in_batch = False

    def record(self, brick: int, start_ns: int, elements: int = 0, nbytes: int = 0,
               flops: int = 0) -> None:
        """A brick that ran from ``start_ns`` (``_hooks.now()``) until now."""
        self.native.record(brick, start_ns, _hooks.now() - start_ns, int(elements), int(nbytes),
                           int(flops))


@dataclass(frozen=True)
class BrickRow:
    """One row of the brick table."""

    brick: str
    category: str
    calls: int
    total_ns: int
    share: float  # of the time of all bricks
    min_ns: int
    max_ns: int
    elements_per_s: float
    gb_per_s: float
    gflop_per_s: float

    @property
    def mean_ns(self) -> float:
        return self.total_ns / self.calls if self.calls else 0.0


class Report:
    """The brick table of a profile. ``print(report)`` shows the cbtop panel (busiest first);
    ``rows`` holds the called bricks busiest first, ``data`` the versioned JSON report."""

    def __init__(self, data: dict[str, Any], text: str, breakdown: dict[str, Any]) -> None:
        self.data = data
        self.text = text
        self.breakdown = breakdown
        total = sum(b["total_ns"] for b in data["bricks"])
        rows = []
        for b in data["bricks"]:
            if b["count"] == 0:
                continue
            seconds = b["total_ns"] / 1e9
            rate = (lambda v, s=seconds: v / s if s > 0 else 0.0)  # noqa: E731
            rows.append(BrickRow(
                brick=b["name"], category=b["category"], calls=b["count"],
                total_ns=b["total_ns"], share=b["total_ns"] / total if total else 0.0,
                min_ns=b["min_ns"], max_ns=b["max_ns"], elements_per_s=rate(b["elements"]),
                gb_per_s=rate(b["bytes"]) / 1e9, gflop_per_s=rate(b["flops"]) / 1e9,
            ))
        self.rows = sorted(rows, key=lambda r: -r.total_ns)

    @property
    def metadata(self) -> dict[str, Any]:
        return self.data["metadata"]

    def __getitem__(self, brick: str) -> BrickRow:
        for row in self.rows:
            if row.brick == brick:
                return row
        raise KeyError(f"brick {brick!r} did not run")

    def __contains__(self, brick: object) -> bool:
        return any(row.brick == brick for row in self.rows)

    def __iter__(self) -> Iterator[BrickRow]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"<Report: {len(self.rows)} bricks>\n{self.text}"


class CriticalPath:
    """The longest chain of top-level work in the graph: ``nodes`` (dicts), ``length_ns``."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.nodes: list[dict[str, Any]] = data["path"]
        self.length_ns: int = data["length_ns"]
        self.text: str = data["text"]

    def __len__(self) -> int:
        return len(self.nodes)

    def __str__(self) -> str:
        return self.text


class Graph:
    """The execution graph (batch → iteration → brick nodes) of the traced events."""

    def __init__(self, native: Any) -> None:
        self._native = native

    def __len__(self) -> int:
        return int(self._native.size)

    def to_dot(self) -> str:
        return self._native.to_dot()

    def ascii(self) -> str:
        return self._native.ascii()

    def critical_path(self) -> CriticalPath:
        return CriticalPath(self._native.critical_path())

    def nodes(self) -> list[dict[str, Any]]:
        return self._native.nodes()

    def edges(self) -> list[tuple[int, int, str]]:
        return self._native.edges()

    def rank_bricks(self) -> list[dict[str, Any]]:
        return self._native.rank_bricks()


class Profile:
    """A profiling session; use ``rhuber.profile()``.

    While active (inside ``with``), every engine update in this process records its bricks here:
    native_cpu in C++ on all its threads, the NumPy reference timed in Python, predictions by the
    estimator. Exports all come from the C++ profiler: :meth:`report`, :meth:`to_json`,
    :meth:`to_chrome_trace`, :meth:`graph`, :meth:`breakdown`.
    """

    def __init__(self, *, sync_mode: str = "immediate", trace_capacity: int = 1 << 16,
                 track_page_faults: bool = True, clock: str = "cpu") -> None:
        if sync_mode not in SYNC_MODES:
            raise ValueError(f"sync_mode must be one of {SYNC_MODES}, got {sync_mode!r}")
        bricks = _native_bricks()
        self.native = bricks.Profiler(sync_mode=sync_mode, trace_capacity=int(trace_capacity),
                                      track_page_faults=bool(track_page_faults), clock=clock)
        self.native.name_thread("python")
        self._recorder = Recorder(self.native)
        self._previous: list[Any] = []

    # -- activation

    def start(self) -> Profile:
        self._previous.append(_hooks.ACTIVE)
        _hooks.ACTIVE = self._recorder
        return self

    def stop(self) -> None:
        if not self._previous:
            raise RuntimeError("this profile is not active")
        _hooks.ACTIVE = self._previous.pop()

    @property
    def active(self) -> bool:
        return _hooks.ACTIVE is self._recorder

    def __enter__(self) -> Profile:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- reads and exports

    def set_metadata(self, key: str, value: object) -> None:
        self.native.set_metadata(str(key), str(value))

    def report(self) -> Report:
        return Report(json.loads(self.native.report_json()), self.native.table(),
                      self.native.breakdown())

    def breakdown(self) -> dict[str, Any]:
        """Setup, the cold first batch, steady batches, rows/s, iterations per batch, page faults
        (``['text']`` prints it in the manner of llama.cpp)."""
        return self.native.breakdown()

    def to_json(self, path: str | os.PathLike) -> Path:
        return _write(path, self.native.report_json())

    def to_chrome_trace(self, path: str | os.PathLike) -> Path:
        """Trace-event JSON; open it in https://ui.perfetto.dev or chrome://tracing."""
        return _write(path, self.native.chrome_trace())

    def graph(self) -> Graph:
        return Graph(self.native.graph())

    def roofline(self, gb_per_s: float, gflop_per_s: float) -> list[dict[str, Any]]:
        return self.native.roofline(float(gb_per_s), float(gflop_per_s))

    def reset(self) -> None:
        self.native.reset()


def _write(path: str | os.PathLike, text: str) -> Path:
    return write_text(path, text)


def profile(*, sync_mode: str = "immediate", trace_capacity: int = 1 << 16,
            track_page_faults: bool = True, clock: str = "cpu") -> Profile:
    """A profile of every engine update inside ``with``::

        with rhuber.profile() as prof:
            est.partial_fit(X, y)
        print(prof.report())
        prof.to_chrome_trace("trace.json")

    sync_mode: immediate, per_batch, deferred or off (off records nothing: one branch per brick);
    trace_capacity: events kept per thread for the trace and the graph (0: counters only);
    clock: "cpu" (the TSC) or "steady" (steady_clock behind the asynchronous interface, to run
    the deferred path without a device). Raises EngineNotAvailableError without
    rhuber-native-cpu.
    """
    return Profile(sync_mode=sync_mode, trace_capacity=trace_capacity,
                   track_page_faults=track_page_faults, clock=clock)
