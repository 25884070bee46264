"""Plans: the configurations a tuner chooses between (shared/spec/bricks-and-tuner.md, "Plan").

Every plan meets the numerical contract; only speed differs. Each dimension reaches the engine
through a public parameter of the estimator (``backend``, ``n_jobs``, ``plan``). docs/tuner.md
("Plans") gives the id grammar.
"""

from __future__ import annotations

import functools
import numbers
import os
from dataclasses import dataclass
from typing import Any

from .. import _native
from . import make_engine, native_cpu_available
from .workload import Workload

BACKENDS = ("numpy", "native_cpu", "cuda")
GRAM_STRATEGIES = ("incremental", "full")
L1_SOLVERS = ("lamm", "prox_newton")
#: Row chunk sizes plans_for tries, in KiB (the engine's default is 256).
CHUNK_KIB = (64, 256, 1024)
#: The largest row chunk the native engine takes (1 GiB).
MAX_CHUNK_KIB = 1 << 20
_ID_EXAMPLE = "'native_cpu/t2/gram=incremental/chunk=256k/l1=lamm'"


def _check_count(name: str, value: Any, low: int, high: int | None = None) -> int | None:
    if value is None:
        return None
    if type(value) is int and value >= low and (high is None or value <= high):
        return value  # the common case, without the ABC check below (a first plan's ~1 µs each)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"Plan.{name} must be an integer or None, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"Plan.{name} must be {bound} or None, got {value}")
    return int(value)


@dataclass(frozen=True)
class Plan:
    """One configuration. ``None`` means "the engine's default" for that dimension.

    backend : "numpy", "native_cpu" or "cuda"
    threads : native_cpu worker threads (the caller's included); None = all cores
    gram : native_cpu Gram strategy, "incremental" (rank-k corrections over curvature flips, the
        engine's default) or "full" (every Newton iteration)
    chunk_kib : native_cpu row chunk, in KiB of a chunk's rows; None = the engine's 256 KiB
    l1_solver : "lamm" or "prox_newton" (native_cpu only); matters for penalized workloads only

    The knobs other than ``backend`` and ``l1_solver`` belong to native_cpu: a plan that sets
    them on another backend is refused, as is anything the engines do not have.
    """

    backend: str
    threads: int | None = None
    gram: str | None = None
    chunk_kib: int | None = None
    l1_solver: str = "lamm"

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            hint = (" ('auto' is the estimator's choice, not a plan: see default_plan)"
                    if self.backend == "auto" else "")
            raise ValueError(f"Plan.backend must be one of {BACKENDS}, got {self.backend!r}{hint}")
        object.__setattr__(self, "threads", _check_count("threads", self.threads, 1))
        object.__setattr__(self, "chunk_kib",
                           _check_count("chunk_kib", self.chunk_kib, 1, MAX_CHUNK_KIB))
        if self.gram is not None and self.gram not in GRAM_STRATEGIES:
            raise ValueError(f"Plan.gram must be one of {GRAM_STRATEGIES} or None, got "
                             f"{self.gram!r}")
        if self.l1_solver not in L1_SOLVERS:
            raise ValueError(f"Plan.l1_solver must be one of {L1_SOLVERS}, got "
                             f"{self.l1_solver!r}")
        if self.backend != "native_cpu":
            native_only = {k: v for k, v in (("threads", self.threads), ("gram", self.gram),
                                             ("chunk_kib", self.chunk_kib)) if v is not None}
            if self.l1_solver != "lamm":
                native_only["l1_solver"] = self.l1_solver
            if native_only:
                settings = ", ".join(f"{k}={v!r}" for k, v in native_only.items())
                raise ValueError(f"{settings}: only native_cpu has "
                                 f"{'this setting' if len(native_only) == 1 else 'these settings'}"
                                 f", and the plan's backend is {self.backend!r}; leave "
                                 f"{'it' if len(native_only) == 1 else 'them'} at the default")

    @property
    def id(self) -> str:
        """The plan's stable string, e.g. ``"native_cpu/t2/gram=full/chunk=256k/l1=lamm"``,
        ``"native_cpu/t*/gram=*/chunk=*/l1=lamm"`` (engine defaults) or ``"numpy/l1=lamm"``."""
        parts = [self.backend]
        if self.backend == "native_cpu":
            parts += [f"t{'*' if self.threads is None else self.threads}",
                      f"gram={'*' if self.gram is None else self.gram}",
                      f"chunk={'*' if self.chunk_kib is None else f'{self.chunk_kib}k'}"]
        parts.append(f"l1={self.l1_solver}")
        return "/".join(parts)

    def __str__(self) -> str:
        return self.id

    @classmethod
    def from_id(cls, key: str) -> Plan:
        """The plan of an id written by :attr:`id`. Segments after the backend may be left out
        (they take their defaults), never repeated or reordered; anything else is a ValueError
        that names the offending segment."""
        if not isinstance(key, str):
            raise TypeError(f"a plan id is a string, got {type(key).__name__}")
        backend, *segments = key.split("/")

        def bad(why: str) -> ValueError:
            return ValueError(f"not a plan id: {key!r}: {why}; expected e.g. {_ID_EXAMPLE}, "
                              "'numpy/l1=lamm' or 'cuda/l1=lamm'")

        if backend not in BACKENDS:
            raise bad(f"unknown backend {backend!r} (one of {', '.join(BACKENDS)})")
        fields: dict[str, Any] = {}
        order = ("threads", "gram", "chunk_kib", "l1_solver")
        position = 0
        for segment in segments:
            name, value = _parse_segment(segment, bad)
            if name in fields:
                raise bad(f"{segment!r} repeats {name}")
            if order.index(name) < position:
                raise bad(f"{segment!r} is out of order (backend/t/gram/chunk/l1)")
            position = order.index(name)
            fields[name] = value
        try:
            return cls(backend, **fields)
        except (TypeError, ValueError) as exc:
            raise bad(str(exc)) from exc

    def resolved(self, cores: int | None = None) -> Plan:
        """The same configuration with the engine's defaults written out (threads = ``cores``,
        default :func:`machine_cores`; gram incremental; chunk 256 KiB) — the member of
        :func:`plans_for` that runs exactly as this plan does."""
        if self.backend != "native_cpu":
            return self
        return Plan(self.backend, threads=self.threads or cores or machine_cores(),
                    gram=self.gram or "incremental", chunk_kib=self.chunk_kib or 256,
                    l1_solver=self.l1_solver)

    def make_engine(self, device: int | None = None) -> Any:
        """An engine configured by this plan (:func:`rhuber.engines.make_engine`)."""

        return make_engine(self.backend, device, threads=self.threads, gram=self.gram,
                           chunk_kib=self.chunk_kib)


def _parse_segment(segment: str, bad: Any) -> tuple[str, Any]:
    if segment.startswith("t") and "=" not in segment:
        text = segment[1:]
        if text == "*":
            return "threads", None
        if text.isdigit():
            return "threads", int(text)
        raise bad(f"{segment!r}: threads are 't<count>' or 't*'")
    name, sep, value = segment.partition("=")
    if not sep:
        raise bad(f"unknown segment {segment!r}")
    if name == "gram":
        return "gram", None if value == "*" else value
    if name == "chunk":
        if value == "*":
            return "chunk_kib", None
        if value.endswith("k") and value[:-1].isdigit():
            return "chunk_kib", int(value[:-1])
        raise bad(f"{segment!r}: chunks are 'chunk=<KiB>k' or 'chunk=*'")
    if name == "l1":
        return "l1_solver", value
    raise bad(f"unknown segment {segment!r} (t, gram=, chunk=, l1=)")


def parse_plan(plan: Plan | str) -> Plan:
    """A Plan from a Plan or its id."""
    if isinstance(plan, Plan):
        return plan
    if isinstance(plan, str):
        return _parsed(plan)
    raise TypeError(f"plan must be a Plan, a plan id or None, got {type(plan).__name__}")


@functools.lru_cache(maxsize=256)
def _parsed(key: str) -> Plan:
    """Plan.from_id, remembered: the estimator reads its ``plan`` id on every batch, and
    parsing costs ~10 µs (a tenth of a small batch's update)."""
    return Plan.from_id(key)


def usable_cores() -> int:
    """The cores this process may run on — its affinity mask, which is what "all cores" means
    (a process confined with ``taskset`` or a container's cpuset gets no more threads than it
    has cores). The mask is one system call, where ``os.cpu_count()`` opens a file in /sys
    (~8 µs against ~20 µs of a fresh process's first ``backend="auto"`` batch, on the 2-core
    Xeon)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # no affinity masks (macOS, Windows)
        return os.cpu_count() or 1


@functools.cache
def machine_cores() -> int:
    """:func:`usable_cores`, read once: a planned stream's start asks it several times."""
    return usable_cores()


def _thread_counts(cores: int) -> list[int]:
    counts = [1]
    while counts[-1] * 2 <= cores:
        counts.append(counts[-1] * 2)
    if counts[-1] != cores:
        counts.append(cores)
    return counts


def cuda_usable() -> bool:
    """Whether the CUDA engine's module imports and sees at least one device."""

    try:
        return int(_native.load("cuda").device_count()) > 0
    except Exception:  # no module, no driver, no device: whatever the cause, cuda cannot run
        return False


def installed_backends() -> tuple[str, ...]:
    """The backends this process can run: numpy always, native_cpu if its module imports, cuda
    if a device is usable."""

    return ("numpy",
            *(("native_cpu",) if native_cpu_available() else ()),
            *(("cuda",) if cuda_usable() else ()))


def plans_for(workload: Workload, hardware: Any = None, *, cuda: bool | None = None
              ) -> list[Plan]:
    """The valid plans for ``workload`` on this machine, every knob written out.

    Installed backends only (:func:`installed_backends`); a device-resident workload runs on
    cuda only. ``cuda=False`` leaves cuda out of a host workload's plans without asking whether
    a device is usable — asking loads the CUDA engine and NVIDIA's libraries (~70 ms), which
    planning a host stream must not pay (``backend="auto"``: dispatch.auto_plans).
    native_cpu varies threads (1, 2, 4, ... and the core count), the Gram strategy, the row
    chunk (:data:`CHUNK_KIB`) and, for a penalized workload, the L1 solver.
    ``hardware`` bounds the threads by its ``cores`` attribute (a fingerprint of
    :mod:`rhuber.tuner.hardware`); None means :func:`machine_cores`.
    """
    cores = getattr(hardware, "cores", None) or machine_cores()
    if workload.location == "device":
        return [Plan("cuda")] if cuda is not False and cuda_usable() else []
    plans = [Plan("numpy")]
    if native_cpu_available():
        solvers = L1_SOLVERS if workload.penalized else ("lamm",)
        plans += [Plan("native_cpu", threads=t, gram=g, chunk_kib=c, l1_solver=s)
                  for t in _thread_counts(int(cores)) for g in GRAM_STRATEGIES
                  for c in CHUNK_KIB for s in solvers]
    if cuda is not False and cuda_usable():
        plans.append(Plan("cuda"))
    return plans


def offers(plan: Plan, workload: Workload, cores: int | None = None) -> bool:
    """Whether ``plans_for(workload, cuda=False)`` (``cores``: the hardware's) has ``plan``,
    answered without building the list: a planned stream's first batch asks it of its rule's
    plan alone."""
    if workload.location == "device":
        return False
    if plan.backend == "numpy":
        return True
    if plan.backend != "native_cpu" or not native_cpu_available():
        return False
    return (plan.threads in _thread_counts(int(cores or machine_cores()))
            and plan.gram in GRAM_STRATEGIES and plan.chunk_kib in CHUNK_KIB
            and plan.l1_solver in (L1_SOLVERS if workload.penalized else ("lamm",)))


def default_plan(workload: Workload) -> Plan:
    """The safe default plan ``backend="auto"`` runs unless the advisor (advisor.py) picks another:
    native_cpu with the engine's defaults when it is
    installed, else the NumPy reference; a device-resident workload runs on cuda."""

    if workload.location == "device":
        return Plan("cuda")
    return Plan("native_cpu") if native_cpu_available() else Plan("numpy")
