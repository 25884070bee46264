"""Profiles and the shape sweep: every subject, shape, penalty and dtype, fed the same batches."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import gc
import hashlib
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from . import SCHEMA_MINOR, SCHEMA_NAME, SCHEMA_VERSION
from .contracts import (
    Batch,
    EngineSubject,
    EstimatorSubject,
    HuberRegressorSubject,
    PassResult,
    SGDHuberSubject,
    Subject,
)
from .environment import collect_environment, hardware_fingerprint
from .limits import measure_machine_limits, roofline_bound
from .memory import peak_over
from .race import HELD_OUT_SEED_OFFSET, race
from .seed import MATCHED, SEED_PEERS, MatchedSubject, SeedSubject, seed_unavailable

#: Engines of the project and peers from scikit-learn, in table order.
#: native_cpu_prox_newton: native_cpu with the opt-in proximal Newton L1 solver (L1 rows only).
ENGINES = ("numpy", "native_cpu", "native_cpu_prox_newton", "cuda")
#: The seed system's peers (rhbench.seed) bring our rows in its configuration with them.
PEERS = ("sgd_huber", "huber_regressor", *SEED_PEERS)
#: What the clock covers: "engine" (engine.update on the batches) or "estimator" (a public
#: estimator's partial_fit or fit, called as users call it). Peers have the estimator path only.
PATHS = ("engine", "estimator")
#: What each (contract, path) leaves outside the timed interval.
EXCLUDED = {
    ("cold", "engine"): ["data generation", "dtype conversion", "engine construction",
                         "CUDA context creation", "warm-up"],
    ("steady", "engine"): ["data generation", "dtype conversion", "engine construction",
                           "CUDA context creation", "warm-up",
                           "one-time prime (first full pass)", "primed-state restore"],
    ("cold", "estimator"): ["data generation", "dtype conversion", "estimator construction",
                            "CUDA context creation", "warm-up"],
    ("steady", "estimator"): ["data generation", "dtype conversion", "estimator construction",
                              "CUDA context creation", "warm-up",
                              "one-time prime (first full pass)", "primed-state restore"],
    ("full_fit", "estimator"): ["data generation", "dtype conversion",
                                "concatenation of the batches", "estimator construction",
                                "warm-up"],
}
LIFECYCLE = {
    ("cold", "engine"): "fresh engine object, empty state, one full pass",
    ("steady", "engine"): "engine object that did the prime; state primed by one full pass; "
                          "one full pass",
    ("cold", "estimator"): "fresh estimator, unfitted, one partial_fit per batch (the first "
                           "starts the stream and builds the engine, inside the clock)",
    ("steady", "estimator"): "estimator fitted on one full pass (primed), one partial_fit per "
                             "batch",
    ("full_fit", "estimator"): "fresh estimator, one fit on all rows",
}
RESET_POLICY = {
    ("cold", "engine"): "new engine object per repetition, built outside the timed interval",
    ("steady", "engine"): "primed state copied back before each repetition, outside the timed "
                          "interval",
    ("cold", "estimator"): "new estimator per repetition, built outside the timed interval",
    ("steady", "estimator"): "primed state restored before each repetition, outside the timed "
                             "interval: RenewableHuberRegressor.load_state_dict(primed) on the "
                             "estimator of the last cold pass; peers: a deepcopy of the "
                             "primed estimator",
    ("full_fit", "estimator"): "new estimator per repetition, built outside the timed interval",
}


@dataclass(frozen=True)
class Shape:
    """One shape class of RFC 0001 at the size a profile runs it."""

    name: str
    n_samples: int
    n_features: int
    batch_size: int
    purpose: str

    @property
    def n_batches(self) -> int:
        return -(-self.n_samples // self.batch_size)

    def scaled(self, factor: int) -> Shape:
        """Shrink rows and batch size by ``factor``, keeping features and the batch count."""
        return replace(self, n_samples=max(1, self.n_samples // factor),
                       batch_size=max(1, self.batch_size // factor))


#: The shape classes of RFC 0001 at their full size.
RFC_SHAPES = (
    Shape("latency", 4_096, 16, 4_096, "launch and dispatch overhead"),
    Shape("reference", 100_000, 90, 32_768, "current project workload"),
    Shape("wide", 16_384, 256, 4_096, "weighted Gram and solve pressure"),
    Shape("streaming", 1_000_000, 32, 65_536, "sustained device throughput"),
)


@dataclass(frozen=True)
class Profile:
    """What a sweep runs and how often.

    Attributes
    ----------
    name : str
        Profile name, recorded in the document.
    shapes : tuple of Shape
        Shapes at the size this profile runs them.
    dtypes : tuple of str
        "float64" and/or "float32".
    alphas : tuple of float
        Penalties: 0.0 (none) and an L1 strength.
    engines, peers : tuple of str
        Subjects to time; absent engines are recorded as skipped with the reason.
    paths : tuple of str
        For each engine, what is timed: "engine" (``engine.update``) and/or "estimator"
        (``RenewableHuberRegressor(backend=<engine>).partial_fit``). Peers are always timed
        through their public estimator.
    reference_estimator_shapes : tuple of str, optional
        Shape classes on which the NumPy reference also runs through the estimator; None: all.
        Its estimator rows cost as much as its engine rows, the bulk of a sweep; elsewhere they
        are recorded as skipped with the reason.
    cold_repeats, steady_repeats : int
        Repetitions of each contract.
    min_repeats : int
        Repetitions never dropped below this when the time budget is short.
    budget_s : float
        Time a (subject, shape, penalty, dtype) should take at most; repetitions above
        ``min_repeats`` are dropped to meet it, and the reduction is recorded.
    full_fit_budget_s : float
        HuberRegressor runs only when its fit on all rows, extrapolated from a fit on a
        tenth of them, takes less than this; otherwise it is skipped with the estimate.
    seed : int
        Seed of every stream.
    epsilon, max_iter, tol
        Engine configuration (``tol=None``: the dtype's default).
    bandwidth_elements, gemm_n, probe_repeats : int
        Sizes of the machine-limit probes.
    threads : int, optional
        Limit NumPy's BLAS (threadpoolctl) and the native engine to this many threads during
        the engine runs; None leaves every library at its default (all cores). The machine
        probes always measure one thread and all cores.
    """

    name: str
    shapes: tuple[Shape, ...]
    dtypes: tuple[str, ...] = ("float64", "float32")
    alphas: tuple[float, ...] = (0.0, 0.01)
    engines: tuple[str, ...] = ENGINES
    peers: tuple[str, ...] = PEERS
    paths: tuple[str, ...] = PATHS
    reference_estimator_shapes: tuple[str, ...] | None = None
    cold_repeats: int = 3
    steady_repeats: int = 5
    min_repeats: int = 3
    budget_s: float = 120.0
    full_fit_budget_s: float = 60.0
    seed: int = 0
    epsilon: float = 1.345
    max_iter: int = 500
    tol: float | None = None
    bandwidth_elements: int = 1 << 25
    gemm_n: int = 2048
    probe_repeats: int = 5
    threads: int | None = None


PROFILES: dict[str, Profile] = {
    # Fewer rows and smaller batches, the same features and batch count per class: latency as
    # is (one small batch), reference ÷8, wide ÷4 (a batch keeps 4× more rows than
    # coefficients), streaming ÷16. The whole matrix runs in about two minutes on two cores.
    # The NumPy reference runs through the estimator on the latency shape only: everywhere it
    # would double the profile's time, and its overhead (per call, not per row) shows there.
    "smoke": Profile(
        name="smoke",
        shapes=tuple(s.scaled(f) for s, f in zip(RFC_SHAPES, (1, 8, 4, 16), strict=True)),
        reference_estimator_shapes=("latency",),
        cold_repeats=1,
        steady_repeats=2,
        min_repeats=1,
        budget_s=10.0,
        full_fit_budget_s=5.0,
        bandwidth_elements=1 << 23,
        gemm_n=1024,
        probe_repeats=3,
    ),
    "standard": Profile(name="standard", shapes=RFC_SHAPES),
}


@dataclass
class _Data:
    """The batches of one (shape, dtype), generated once and shared by every subject."""

    batches: list[Batch]
    coef: np.ndarray
    intercept: float
    sha256: str
    generation_s: float
    data_seed: int
    stream_parameters: dict[str, Any] = field(default_factory=dict)


def make_data(shape: Shape, dtype: str, seed: int) -> _Data:
    """Generate the batches of a shape in ``dtype`` and fingerprint them (outside timing)."""
    from rhuber.datasets import make_contaminated_stream

    start = time.perf_counter()
    stream = make_contaminated_stream(shape.n_samples, shape.n_features,
                                      batch_size=shape.batch_size, seed=seed, dtype=dtype)
    batches = [(np.ascontiguousarray(X), np.ascontiguousarray(y)) for X, y in stream]
    digest = hashlib.sha256()
    digest.update(f"{shape.n_samples}x{shape.n_features}/{shape.batch_size}/{dtype}".encode())
    for X, y in batches:
        digest.update(X.tobytes())
        digest.update(y.tobytes())
    return _Data(
        batches=batches,
        coef=np.asarray(stream.coef, dtype=np.float64),
        intercept=float(stream.intercept),
        sha256=digest.hexdigest(),
        generation_s=time.perf_counter() - start,
        data_seed=seed,
        stream_parameters={"generator": "rhuber.datasets.make_contaminated_stream",
                           "noise": stream.noise, "df": stream.df,
                           "outlier_fraction": stream.outlier_fraction,
                           "outlier_scale": stream.outlier_scale},
    )


def coef_error(subject: Subject, state: Any, data: _Data) -> dict[str, float]:
    """Error of a final state against the generating coefficients."""
    slopes, intercept = subject.coefficients(state)
    diff = slopes - data.coef
    return {
        "rel_l2": float(np.linalg.norm(diff) / np.linalg.norm(data.coef)),
        "max_abs": float(np.max(np.abs(diff))),
        "intercept_abs": float(abs(intercept - data.intercept)),
    }


Planned = tuple[str, str, str, Subject | None, str]


def _subjects(profile: Profile, alpha: float) -> list[Planned]:
    """(engine, path, residency, subject or None, skip reason) for one penalty.

    Each engine comes with a subject per path of the profile (engine first, then estimator);
    peers come once, on the estimator path.
    """
    from rhuber.core import Config
    from rhuber.engines import native_cpu_available

    config = Config(epsilon=profile.epsilon, alpha=alpha, max_iter=profile.max_iter,
                    tol=profile.tol)
    threads = profile.threads
    unknown = set(profile.paths) - set(PATHS)
    if unknown:
        raise ValueError(f"unknown path(s) {sorted(unknown)}; expected some of {PATHS}")
    paths = [p for p in PATHS if p in profile.paths]

    def both(name: str, residency: str, cfg: Any, reason: str,
             engine_threads: int | None) -> list[Planned]:
        out: list[Planned] = []
        for path in paths:
            subject: Subject | None = None
            if not reason:
                cls = EngineSubject if path == "engine" else EstimatorSubject
                subject = cls(name, cfg, residency, threads=engine_threads)
            out.append((name, path, residency, subject, reason))
        return out

    out: list[Planned] = []
    for name in profile.engines:
        if name == "numpy":
            out += both(name, "host", config, "", threads)
        elif name in ("native_cpu", "native_cpu_prox_newton"):
            variant = name == "native_cpu_prox_newton"
            reason = ""
            if not native_cpu_available():
                reason = ("native_cpu engine not installed "
                          "(librhuber_cpu.so cannot be loaded)")
            elif variant and alpha == 0:
                reason = ("l1_solver='prox_newton' solves L1 batches only; without a penalty "
                          "it is native_cpu")
            solver = "prox_newton" if variant else "lamm"
            out += both(name, "host", dataclasses.replace(config, l1_solver=solver), reason,
                        threads)
        elif name == "cuda":
            reason = _cuda_unavailable()
            for residency in ("host_fed", "device_resident"):
                out += both(name, residency, config, reason, None)
        else:
            raise ValueError(f"unknown engine {name!r}; expected one of {ENGINES}")
    for name in profile.peers:
        if name == "sgd_huber":
            out.append((name, "estimator", "host",
                        SGDHuberSubject(alpha, profile.epsilon, profile.seed), ""))
        elif name == "huber_regressor":
            if alpha > 0:
                out.append((name, "estimator", "host", None, "HuberRegressor has an L2 penalty "
                            "only; it has no L1 counterpart"))
            else:
                out.append((name, "estimator", "host",
                            HuberRegressorSubject(profile.epsilon, profile.max_iter), ""))
        elif name in SEED_PEERS:
            reason = seed_unavailable()
            out.append((name, "estimator", "host",
                        None if reason else SeedSubject(name, alpha, threads), reason))
        else:
            raise ValueError(f"unknown peer {name!r}; expected one of {PEERS}")
    if set(SEED_PEERS) & set(profile.peers) and "estimator" in paths:
        for name in MATCHED:
            reason = ""
            if not native_cpu_available():
                reason = ("native_cpu engine not installed "
                          "(librhuber_cpu.so cannot be loaded)")
            out.append((name, "estimator", "host",
                        None if reason else MatchedSubject(name, config, threads), reason))
    return out


def _cuda_unavailable() -> str:
    """Why the CUDA engine cannot run here, or "" when it can."""
    from rhuber import _native
    from rhuber.errors import EngineNotAvailableError

    try:
        _native.load("cuda")
    except EngineNotAvailableError as exc:
        return f"CUDA engine not installed ({exc})"
    try:
        import cupy  # type: ignore[import-not-found]

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device"
    except Exception as exc:
        return f"CuPy or the CUDA runtime is unavailable: {type(exc).__name__}: {exc}"
    return ""


def _contract_plan(subject: Subject | None, engine: str) -> tuple[str, ...]:
    if subject is not None:
        return subject.contracts
    return ("full_fit",) if engine == "huber_regressor" else ("cold", "steady")


class Sweep:
    """Run a profile and build the schema v2 document.

    Parameters
    ----------
    profile : Profile
        What to run.
    progress : bool, default=True
        Show a tqdm progress bar on stderr.
    limits : dict, optional
        Machine limits measured earlier (tests pass small ones); measured when omitted.
    """

    def __init__(self, profile: Profile, progress: bool = True,
                 limits: dict[str, Any] | None = None):
        self.profile = profile
        self.progress = progress
        self.limits = limits
        self.environment: dict[str, Any] = {}
        self.races: list[dict[str, Any]] = []

    def run(self, command: Sequence[str] | None = None) -> dict[str, Any]:
        """Measure the machine, then every subject on every shape, penalty and dtype.

        Returns
        -------
        dict
            The document: ``schema``, ``schema_version``, run metadata, ``machine_limits``,
            the profile and ``records``.
        """
        from tqdm.auto import tqdm

        p = self.profile
        started = _dt.datetime.now(_dt.UTC)
        if self.limits is None:
            self._log("measuring memory bandwidth and GEMM peak")
            self.limits = measure_machine_limits(p.bandwidth_elements, p.gemm_n,
                                                 p.probe_repeats)
        tasks = [(shape, dtype, alpha) for shape in p.shapes for dtype in p.dtypes
                 for alpha in p.alphas]
        n_subjects = len(_subjects(p, 0.0))
        load_before = _load_average()
        limiter = (threadpool_limits(limits=p.threads, user_api="blas") if p.threads
                   else contextlib.nullcontext())
        bar = tqdm(total=len(tasks) * n_subjects, file=sys.stderr, disable=not self.progress,
                   unit="run", dynamic_ncols=True)
        with limiter:
            # Inside the limit, so that the recorded BLAS thread counts are those in force.
            self.environment = collect_environment()
            records = self._loop(tasks, bar)
        bar.close()
        return {
            "schema": SCHEMA_NAME,
            "schema_version": SCHEMA_VERSION,
            "schema_minor": SCHEMA_MINOR,
            "created_utc": started.isoformat(timespec="seconds"),
            "duration_s": (_dt.datetime.now(_dt.UTC) - started).total_seconds(),
            "command": list(command) if command is not None else list(sys.argv),
            "profile": _profile_dict(p),
            "hardware": hardware_fingerprint(self.environment),
            "load_average": {"before": load_before, "after": _load_average()},
            "environment": self.environment,
            "machine_limits": self.limits,
            "records": records,
            "sgd_race": self.races,
        }

    def _loop(self, tasks: list[tuple[Shape, str, float]], bar: Any) -> list[dict[str, Any]]:
        p = self.profile
        records: list[dict[str, Any]] = []
        data_key = None
        data: _Data | None = None
        for shape, dtype, alpha in tasks:
            if data_key != (shape, dtype):
                data = None  # free the previous shape's batches first
                data = make_data(shape, dtype, p.seed)
                data_key = (shape, dtype)
            assert data is not None
            for engine, path, residency, planned, why in _subjects(p, alpha):
                subject, reason = planned, why
                if (engine == "numpy" and path == "estimator" and subject is not None
                        and p.reference_estimator_shapes is not None
                        and shape.name not in p.reference_estimator_shapes):
                    subject, reason = None, (
                        f"profile {p.name!r} runs the NumPy reference through the estimator "
                        f"on {', '.join(p.reference_estimator_shapes) or 'no shape'} only "
                        "(reference_estimator_shapes)")
                bar.set_description(f"{shape.name} {dtype} a={alpha:g} {engine}/{path}")
                records.extend(self._measure(shape, dtype, alpha, engine, path, residency,
                                             subject, reason, data))
                bar.update()
            self._race(shape, dtype, alpha, data, records)
        return records

    def _race(self, shape: Shape, dtype: str, alpha: float, data: _Data,
              records: list[dict[str, Any]]) -> None:
        """SGD pass after pass to the native estimator's error (rhbench.race), when both ran."""
        ours = next((r for r in records if r["engine"] == "native_cpu"
                     and r["path"] == "estimator" and r["contract"] == "cold"
                     and r["status"] == "ok" and r["shape_class"] == shape.name
                     and r["dtype"] == dtype and r["penalty"]["alpha"] == alpha), None)
        if ours is None or "sgd_huber" not in self.profile.peers:
            return
        self._log(f"SGD race on {shape.name} {dtype} alpha={alpha:g}")
        held_out = make_data(shape, dtype, self.profile.seed + HELD_OUT_SEED_OFFSET).batches
        result = race(data.batches, held_out, data.coef, data.intercept, alpha,
                      self.profile.epsilon, self.profile.seed, ours["coef_error"]["rel_l2"],
                      ours["median_s"])
        self.races.append({"shape_class": shape.name, "dtype": dtype, "alpha": alpha,
                           "ours_record": ours["id"], **result})

    def _log(self, message: str) -> None:
        if self.progress:
            print(f"[bench] {message}", file=sys.stderr, flush=True)

    def _measure(self, shape: Shape, dtype: str, alpha: float, engine: str, path: str,
                 residency: str, subject: Subject | None, reason: str,
                 data: _Data) -> list[dict[str, Any]]:
        contracts = _contract_plan(subject, engine)
        base = self._base(shape, dtype, alpha, engine, path, residency, subject, data)
        if subject is None:
            return [self._skipped(base, c, reason) for c in contracts]
        gc.collect()
        try:
            batches = subject.prepare(data.batches)
            base["parameters"] = subject.parameters()  # some depend on the batches (the seed's)
            if "full_fit" in contracts:
                return [self._full_fit(base, subject, batches, data)]
            return self._streamed(base, subject, batches, data)
        except Exception as exc:  # recorded: one failing subject does not end the sweep
            return [self._skipped(base, c, f"{type(exc).__name__}: {exc}", status="failed")
                    for c in contracts]

    def _streamed(self, base: dict[str, Any], subject: Subject, batches: Sequence[Batch],
                  data: _Data) -> list[dict[str, Any]]:
        p = self.profile
        subject.warm_up(batches)
        cold: list[PassResult] = []
        obj = None
        notes: dict[str, str] = {}
        cold_target = p.cold_repeats
        cold_share = p.budget_s * p.cold_repeats / (p.cold_repeats + p.steady_repeats)
        memory = None
        while len(cold) < cold_target:
            obj = subject.make()
            if not cold:  # the first pass: peak memory over the resident batches
                result, memory = peak_over(lambda o=obj: subject.run(o, subject.start(o), batches),
                                           max(b[0].nbytes for b in data.batches))
                cold.append(result)
            else:
                cold.append(subject.run(obj, subject.start(obj), batches))
            if len(cold) == 1:
                cold_target = self._affordable(cold[0].seconds, p.cold_repeats, cold_share,
                                               notes, "cold")
        primed = cold[0].state
        steady_target = self._affordable(float(np.median([r.seconds for r in cold])),
                                         p.steady_repeats,
                                         p.budget_s - sum(r.seconds for r in cold),
                                         notes, "steady")
        steady = [subject.run(obj, subject.restore(primed), batches)
                  for _ in range(steady_target)]
        return [
            self._record(base, "cold", subject, cold, data, notes.get("cold")) | {
                "peak_memory": memory},
            self._record(base, "steady", subject, steady, data, notes.get("steady")),
        ]

    def _affordable(self, one_s: float, wanted: int, remaining_s: float,
                    notes: dict[str, str], contract: str) -> int:
        """Repetitions of ``contract`` that fit in ``remaining_s``, never below min_repeats."""
        p = self.profile
        if wanted * one_s <= remaining_s or wanted <= p.min_repeats:
            return wanted
        fit = max(p.min_repeats, min(wanted, math.floor(remaining_s / max(one_s, 1e-9))))
        if fit < wanted:
            notes[contract] = (f"repetitions reduced from {wanted} to {fit}: one pass takes "
                               f"{one_s:.3g} s and the budget is {p.budget_s:g} s")
        return fit

    def _full_fit(self, base: dict[str, Any], subject: Subject, batches: Sequence[Batch],
                  data: _Data) -> dict[str, Any]:
        p = self.profile
        X = np.concatenate([b[0] for b in batches])
        y = np.concatenate([b[1] for b in batches])
        subject.warm_up(batches)
        tenth = max(1, X.shape[0] // 10)
        probe = subject.run(subject.make(), (X[:tenth], y[:tenth]), batches)
        estimate = probe.seconds * X.shape[0] / tenth
        if estimate > p.full_fit_budget_s:
            return self._skipped(base, "full_fit",
                                 f"a fit on all {X.shape[0]} rows would take about "
                                 f"{estimate:.0f} s (extrapolated from a fit on {tenth} rows "
                                 f"in {probe.seconds:.2f} s), over the "
                                 f"{p.full_fit_budget_s:g} s budget")
        runs = [subject.run(subject.make(), (X, y), batches)]
        notes: dict[str, str] = {}
        target = self._affordable(runs[0].seconds, p.cold_repeats, p.full_fit_budget_s, notes,
                                  "full_fit")
        runs += [subject.run(subject.make(), (X, y), batches) for _ in range(target - 1)]
        return self._record(base, "full_fit", subject, runs, data, notes.get("full_fit"))

    def _base(self, shape: Shape, dtype: str, alpha: float, engine: str, path: str,
              residency: str, subject: Subject | None, data: _Data) -> dict[str, Any]:
        p = self.profile
        from rhuber.core.types import default_tol

        kind = ("reference" if engine == "numpy" else "native"
                if engine in ENGINES or engine in MATCHED else "peer")
        operation = ("fit" if engine == "huber_regressor" else
                     "update" if path == "engine" else "partial_fit")
        return {
            "engine": engine,
            "engine_kind": kind,
            "path": path,
            "timed_call": _timed_call(engine, path, operation),
            "residency": residency,
            "transfer_in_timed_interval": residency == "host_fed",
            "operation": operation,
            "shape_class": shape.name,
            "shape_purpose": shape.purpose,
            "n_samples": shape.n_samples,
            "n_features": shape.n_features,
            "batch_size": shape.batch_size,
            "n_batches": shape.n_batches,
            "penalty": {"kind": "l1" if alpha > 0 else "none", "alpha": alpha},
            "dtype": dtype,
            "seed": p.seed,
            "data_seed": data.data_seed,
            "input_sha256": data.sha256,
            "stream": data.stream_parameters,
            "max_iter": p.max_iter,
            "tol": p.tol if p.tol is not None else default_tol(np.dtype(dtype)),
            "parameters": subject.parameters() if subject is not None else {},
        }

    def _skipped(self, base: dict[str, Any], contract: str, reason: str,
                 status: str = "skipped") -> dict[str, Any]:
        return self._finish(base, contract, {
            "status": status,
            "reason": reason,
            "repetitions": 0,
            "timings_s": [],
            "median_s": None,
            "min_s": None,
            "throughput_rows_per_s": None,
            "throughput_rows_per_s_best": None,
            "solver_iterations": None,
            "coef_error": None,
            "roofline": None,
        })

    def _record(self, base: dict[str, Any], contract: str, subject: Subject,
                runs: list[PassResult], data: _Data, note: str | None) -> dict[str, Any]:
        times = [r.seconds for r in runs]
        median = float(np.median(times))
        best = float(min(times))
        rows = base["n_samples"]
        last = runs[-1]
        bound = roofline_bound(rows, base["n_features"], base["batch_size"],
                               np.dtype(base["dtype"]), self.limits,
                               gram=base["engine_kind"] != "peer")
        bound["achieved_fraction"] = bound["bound_s"] / median
        bound["achieved_flops_per_s"] = bound["flops"] / median
        iterations = None
        if last.iterations is not None:
            iterations = {
                "total": int(sum(last.iterations)),
                "per_batch": last.iterations,
                "solvers": sorted(set(last.solvers)),
                "converged_batches": int(sum(last.converged)),
                "rcond_per_batch": last.rconds,
                "unit": {"sgd_huber": "epochs", "huber_regressor": "lbfgs iterations"}.get(
                    base["engine"], "solver iterations"),
            }
        return self._finish(base, contract, {
            "status": "ok",
            "reason": note,
            "repetitions": len(times),
            "timings_s": times,
            "median_s": median,
            "min_s": best,
            "throughput_rows_per_s": rows / median,
            "throughput_rows_per_s_best": rows / best,
            "solver_iterations": iterations,
            "coef_error": coef_error(subject, last.state, data),
            "roofline": bound,
        })

    def _finish(self, base: dict[str, Any], contract: str,
                result: dict[str, Any]) -> dict[str, Any]:
        penalty = f"l1={base['penalty']['alpha']:g}" if base["penalty"]["alpha"] else "none"
        key = (contract, base["path"])
        record = {
            "id": "/".join((contract, base["engine"], base["path"], base["residency"],
                            base["shape_class"], penalty, base["dtype"])),
            "contract": contract,
            "lifecycle": LIFECYCLE[key],
            "reset_timing_policy": RESET_POLICY[key],
            "excluded_from_timing": EXCLUDED[key],
            "gc_disabled_in_timed_interval": True,
            **base,
            **result,
            "load_average": _load_average(),
            "environment": self.environment,
        }
        return record


def _timed_call(engine: str, path: str, operation: str) -> str:
    """The call the clock covers, once per batch (``fit``: once on all rows)."""
    if engine in SEED_PEERS:
        return (f"renewable_huber.RenewableHuberRegressor(backend="
                f"{engine.removeprefix('seed_')!r}, tau=1.345).partial_fit(X, y)")
    if engine in MATCHED:
        tau = ", tau=1.345" if engine == "native_cpu_tau" else ""
        return (f"RenewableHuberRegressor(backend='native_cpu'{tau}, curvature='smoothed')"
                ".partial_fit(X, y) (L1: the seed's λ schedule, as lambda_scale; rhbench/seed.py)")
    if engine == "sgd_huber":
        return "SGDRegressor(loss='huber').partial_fit(X, y)"
    if engine == "huber_regressor":
        return "HuberRegressor().fit(X_all, y_all)"
    if path == "engine":
        return (f"make_engine({engine.removesuffix('_prox_newton')!r})"
                ".update(state, X, y, None, config)")
    solver = ", l1_solver='prox_newton'" if engine.endswith("_prox_newton") else ""
    return (f"RenewableHuberRegressor(backend={engine.removesuffix('_prox_newton')!r}"
            f"{solver}).{operation}(X, y)")


def _load_average() -> list[float] | None:
    """1, 5 and 15 minute load averages: other work on the machine shows here."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def _profile_dict(profile: Profile) -> dict[str, Any]:
    d = asdict(profile)
    d["shapes"] = [asdict(s) | {"n_batches": s.n_batches} for s in profile.shapes]
    return d
