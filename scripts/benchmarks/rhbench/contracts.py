"""The subjects a sweep times, and the cold, steady-state and full-fit timing contracts.

Cold
    The first full pass over the stream from the empty state, on an engine object built for
    it. Building the engine, generating the data and converting its dtype happen before the
    clock starts; so does the warm-up (:meth:`Subject.warm_up`), run once per subject and
    configuration on a throwaway object.
Steady state
    A full pass starting from the state one full pass left behind (the prime). The first cold
    pass is the prime; each steady repetition restores a copy of the primed state outside the
    timed interval, then times the batch loop on the engine object that did the prime.
Full fit
    One ``fit`` on all the data at once (scikit-learn's HuberRegressor), a fresh estimator per
    repetition; the concatenation of the batches happens before the clock starts.

Each contract is timed on one of two paths. The *engine* path times ``engine.update`` on the
batches (:class:`EngineSubject`); the *estimator* path times a public estimator called as users
call it, on the same C-contiguous ndarrays: ``RenewableHuberRegressor(backend=...)
.partial_fit`` (:class:`EstimatorSubject`), ``SGDRegressor.partial_fit``
(:class:`SGDHuberSubject`), ``HuberRegressor.fit`` (:class:`HuberRegressorSubject`). Estimators
are built outside the clock; what their calls do inside it (input validation, dtype
conversion, publishing fitted attributes) is timed.

The garbage collector is disabled during every timed interval (NumPy arrays are freed by
reference counting; the sweep runs a full collection before each subject and workload).
"""

from __future__ import annotations

import copy
import gc
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

Batch = tuple[Any, Any]


@dataclass
class PassResult:
    """What one timed pass over the stream did."""

    seconds: float
    state: Any
    iterations: list[int] | None = None
    solvers: list[str] = field(default_factory=list)
    converged: list[bool] = field(default_factory=list)
    # Our engines' rcond of each batch's last Newton step (None where no Newton system was
    # solved); None for peers, which report no such thing.
    rconds: list[float | None] | None = None


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Run ``fn`` with the cyclic garbage collector disabled.

    Returns
    -------
    (float, object)
        Wall-clock seconds (``time.perf_counter``) and what ``fn`` returned.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        out = fn()
        seconds = time.perf_counter() - start
    finally:
        if enabled:
            gc.enable()
    return seconds, out


class Subject:
    """Something whose pass over a stream is timed: an engine or a scikit-learn peer.

    Attributes
    ----------
    name : str
        Engine name in the records ("numpy", "native_cpu", "native_cpu_prox_newton", "cuda",
        "sgd_huber", "huber_regressor").
    kind : {"reference", "native", "peer"}
        Its role in the comparison.
    path : {"engine", "estimator"}
        What the clock covers: the engine's ``update`` on the batches, or a public estimator
        (ours or a peer) called as users call it.
    operation : str
        The call that is timed ("update", "partial_fit", "fit").
    residency : {"host", "host_fed", "device_resident"}
        Where the input lives when the clock starts.
    contracts : tuple of str
        The contracts that apply to it.
    """

    name: str = ""
    kind: str = "peer"
    path: str = "estimator"
    operation: str = ""
    residency: str = "host"
    contracts: tuple[str, ...] = ("cold", "steady")

    @property
    def transfer_in_timed_interval(self) -> bool:
        """Whether moving the input to the device is inside the measured interval."""
        return self.residency == "host_fed"

    def parameters(self) -> dict[str, Any]:
        """The subject's settings, recorded next to its timings."""
        return {}

    def prepare(self, batches: Sequence[Batch]) -> Sequence[Batch]:
        """Place the batches where the subject expects them (outside timing)."""
        return batches

    def make(self) -> Any:
        """A fresh engine or estimator object (outside timing)."""
        raise NotImplementedError

    def start(self, obj: Any) -> Any:
        """The empty state a cold pass starts from (outside timing)."""
        return None

    def restore(self, primed: Any) -> Any:
        """A copy of the primed state for one steady repetition (outside timing)."""
        raise NotImplementedError

    def run(self, obj: Any, state: Any, batches: Sequence[Batch]) -> PassResult:
        """Time one pass over ``batches``, starting from ``state``."""
        raise NotImplementedError

    def warm_up(self, batches: Sequence[Batch]) -> None:
        """Exercise the code paths once on a throwaway object: first and later batches."""
        rows = min(2048, batches[0][0].shape[0])
        head = [(X[:rows], y[:rows]) for X, y in batches[:2]]
        obj = self.make()
        self.run(obj, self.start(obj), head)

    def coefficients(self, state: Any) -> tuple[NDArray[np.float64], float]:
        """Slopes and intercept of a final state, as float64 host values."""
        raise NotImplementedError


class _RenewableSubject(Subject):
    """One of our engines (``name``: numpy, native_cpu and its solver variants, cuda) with a
    core Config, on host or device-resident batches."""

    def __init__(self, name: str, config: Any, residency: str = "host",
                 threads: int | None = None):
        self.name = name
        self.kind = "reference" if name == "numpy" else "native"
        self.residency = residency
        self.config = config
        self.threads = threads

    def prepare(self, batches: Sequence[Batch]) -> Sequence[Batch]:
        return _place(batches, self.residency)


class EngineSubject(_RenewableSubject):
    """A renewable Huber engine from :func:`rhuber.engines.make_engine`."""

    path = "engine"
    operation = "update"

    def parameters(self) -> dict[str, Any]:
        c = self.config
        return {"epsilon": c.epsilon, "alpha": c.alpha, "fit_intercept": c.fit_intercept,
                "max_iter": c.max_iter, "tol": c.tol, "threads": self.threads,
                "l1_solver": c.l1_solver}

    def make(self) -> Any:
        from rhuber import _native
        from rhuber.engines import NativeCpuEngine, make_engine

        if self.name.startswith("native_cpu"):  # the variants differ in config only
            if self.threads:
                module = _native.load("native_cpu")
                return NativeCpuEngine(module, threads=self.threads)
            return make_engine("native_cpu")
        return make_engine(self.name)

    def restore(self, primed: Any) -> Any:
        return primed.replace(coef=primed.coef.copy(), information=primed.information.copy())

    def run(self, obj: Any, state: Any, batches: Sequence[Batch]) -> PassResult:
        config = self.config
        sync = _device_sync() if self.name == "cuda" else None
        diags: list[Any] = []

        def loop() -> Any:
            s = state
            for X, y in batches:
                s, diag = obj.update(s, X, y, None, config)
                diags.append(diag)
            if sync is not None:
                sync()
            return s

        seconds, final = timed(loop)
        return PassResult(
            seconds=seconds,
            state=final,
            iterations=[int(d.n_iter) for d in diags],
            solvers=[str(d.solver) for d in diags],
            converged=[bool(d.converged) for d in diags],
            rconds=[d.rcond for d in diags],
        )

    def coefficients(self, state: Any) -> tuple[NDArray[np.float64], float]:
        coef = np.asarray(_to_host(state.coef), dtype=np.float64)
        return coef[:-1], float(coef[-1])


class EstimatorSubject(_RenewableSubject):
    """The public ``RenewableHuberRegressor(backend=<engine>)`` fed batch by batch with
    ``partial_fit``: what users run, validation, bookkeeping and all.

    It times the same calls a user's loop makes, on the same C-contiguous ndarrays as the
    engine rows (CuPy arrays for the device-resident CUDA path, which the estimator accepts as
    they are): input validation, the engine's ``update``, publishing ``coef_``,
    ``information_`` and the other fitted attributes, the per-batch diagnostics and warnings,
    and the stream's plan bookkeeping. The backend is fixed, so the tuner's advisor is not
    consulted.

    Cold: a fresh estimator per repetition, built outside the clock; its first ``partial_fit``
    starts the stream (and builds its engine) inside the clock, as a user's does. Steady: the
    estimator of the last cold pass, its state replaced outside the clock by the primed one
    through the public ``load_state_dict`` (it keeps its engine); the clock covers the batches.
    """

    operation = "partial_fit"

    @property
    def backend(self) -> str:
        """The estimator's ``backend``: the engine, without the solver variant's suffix."""
        return "native_cpu" if self.name.startswith("native_cpu") else self.name

    def parameters(self) -> dict[str, Any]:
        c = self.config
        return {"estimator": "RenewableHuberRegressor", "backend": self.backend,
                "epsilon": c.epsilon, "alpha": c.alpha, "fit_intercept": c.fit_intercept,
                "max_iter": c.max_iter, "tol": c.tol, "l1_solver": c.l1_solver,
                "n_jobs": self.threads if self.backend == "native_cpu" else None}

    def make(self) -> Any:
        from rhuber import RenewableHuberRegressor

        p = self.parameters()
        return RenewableHuberRegressor(
            backend=p["backend"], epsilon=p["epsilon"], alpha=p["alpha"],
            fit_intercept=p["fit_intercept"], max_iter=p["max_iter"], tol=p["tol"],
            l1_solver=p["l1_solver"], n_jobs=p["n_jobs"])

    def restore(self, primed: Any) -> Any:
        return copy.deepcopy(primed)  # a state_dict: plain arrays

    def run(self, obj: Any, state: Any, batches: Sequence[Batch]) -> PassResult:
        if state is not None:  # steady: the primed state, adopted outside the clock
            obj.load_state_dict(state)
        sync = _device_sync() if self.name == "cuda" else None
        first = len(getattr(obj, "diagnostics_", ()))  # this pass's batches come after

        def loop() -> Any:
            # Warnings are ignored rather than printed (the engine rows print none); the
            # estimator still raises and filters them inside the clock.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for X, y in batches:
                    obj.partial_fit(X, y)
            if sync is not None:
                sync()
            return obj

        seconds, fitted = timed(loop)
        diags = fitted.diagnostics_[first:]
        # The state after the pass, as plain arrays: restore() copies it, coefficients() reads it.
        return PassResult(
            seconds=seconds,
            state=fitted.state_dict(),
            iterations=[int(d["n_iter"]) for d in diags],
            solvers=[str(d["solver"]) for d in diags],
            converged=[bool(d["converged"]) for d in diags],
            rconds=[d["rcond"] for d in diags],
        )

    def coefficients(self, state: Any) -> tuple[NDArray[np.float64], float]:
        coef = np.asarray(state["coef"], dtype=np.float64)
        p = int(state["n_features_in"])
        return coef[:p], float(coef[p]) if bool(state["fit_intercept"]) else 0.0


class SGDHuberSubject(Subject):
    """scikit-learn's ``SGDRegressor(loss="huber")`` fed batch by batch with ``partial_fit``.

    Its ``epsilon`` is the Huber threshold in the units of ``y``; the streams have unit noise
    scale, so the engines' 1.345 is used. ``alpha = 0`` runs without a penalty; ``alpha > 0``
    runs ``penalty="l1"`` with the same alpha (scikit-learn scales it per sample, as the
    engines do per unit of weight).
    """

    name = "sgd_huber"
    kind = "peer"
    operation = "partial_fit"

    def __init__(self, alpha: float, epsilon: float, seed: int):
        self.alpha = alpha
        self.epsilon = epsilon
        self.seed = seed

    def parameters(self) -> dict[str, Any]:
        return {"loss": "huber", "epsilon": self.epsilon,
                "penalty": "l1" if self.alpha > 0 else None, "alpha": self.alpha,
                "learning_rate": "invscaling", "eta0": 0.01, "random_state": self.seed}

    def make(self) -> Any:
        from sklearn.linear_model import SGDRegressor

        p = self.parameters()
        return SGDRegressor(loss="huber", epsilon=p["epsilon"], penalty=p["penalty"],
                            alpha=p["alpha"], learning_rate=p["learning_rate"], eta0=p["eta0"],
                            random_state=p["random_state"])

    def start(self, obj: Any) -> Any:
        return obj

    def restore(self, primed: Any) -> Any:
        return copy.deepcopy(primed)

    def run(self, obj: Any, state: Any, batches: Sequence[Batch]) -> PassResult:
        def loop() -> Any:
            for X, y in batches:
                state.partial_fit(X, y)
            return state

        seconds, final = timed(loop)
        # One epoch per partial_fit call: the "iterations" of SGD are its batches.
        return PassResult(seconds=seconds, state=final, iterations=[1] * len(batches),
                          solvers=["sgd"] * len(batches), converged=[])

    def coefficients(self, state: Any) -> tuple[NDArray[np.float64], float]:
        return np.asarray(state.coef_, dtype=np.float64), float(np.ravel(state.intercept_)[0])


class HuberRegressorSubject(Subject):
    """scikit-learn's ``HuberRegressor`` fitted once on all the data (L-BFGS).

    It has an L2 penalty only; it runs for ``alpha = 0`` (``alpha=0`` there too) and is
    skipped for the L1 penalty.
    """

    name = "huber_regressor"
    kind = "peer"
    operation = "fit"
    contracts = ("full_fit",)

    def __init__(self, epsilon: float, max_iter: int):
        self.epsilon = epsilon
        self.max_iter = max_iter

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "alpha": 0.0, "max_iter": self.max_iter,
                "solver": "lbfgs"}

    def make(self) -> Any:
        from sklearn.linear_model import HuberRegressor

        return HuberRegressor(epsilon=self.epsilon, alpha=0.0, max_iter=self.max_iter)

    def run(self, obj: Any, state: Any, batches: Sequence[Batch]) -> PassResult:
        X, y = state  # the concatenated data, built outside timing

        def fit() -> Any:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a ConvergenceWarning is recorded, not shown
                return obj.fit(X, y)

        seconds, fitted = timed(fit)
        n_iter = int(fitted.n_iter_)
        return PassResult(seconds=seconds, state=fitted, iterations=[n_iter],
                          solvers=["lbfgs"], converged=[n_iter < self.max_iter])

    def warm_up(self, batches: Sequence[Batch]) -> None:
        X, y = batches[0]
        rows = min(512, X.shape[0])
        self.run(self.make(), (X[:rows], y[:rows]), batches[:1])

    def coefficients(self, state: Any) -> tuple[NDArray[np.float64], float]:
        return np.asarray(state.coef_, dtype=np.float64), float(state.intercept_)


def _place(batches: Sequence[Batch], residency: str) -> Sequence[Batch]:
    """The batches as the subject takes them: the host arrays, or CuPy copies placed on the
    device (and synchronized) for the device-resident path."""
    if residency != "device_resident":
        return batches
    import cupy  # type: ignore[import-not-found]

    out = [(cupy.asarray(X), cupy.asarray(y)) for X, y in batches]
    cupy.cuda.Device().synchronize()
    return out


def _to_host(a: Any) -> Any:
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else a


def _device_sync() -> Callable[[], None]:
    import cupy  # type: ignore[import-not-found]

    return cupy.cuda.Device().synchronize
