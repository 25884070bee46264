"""The seed system (renewable-huber 0.7.1) as a benchmark peer, and our rows matched to it.

The seed runs in its own venv (``make seed-venv``), never imported here: one server process,
``.venv-seed/bin/python scripts/seed/driver.py serve``, takes line-delimited JSON commands and
times its public ``RenewableHuberRegressor(backend=...).partial_fit`` loop itself, the garbage
collector off, the clock around the loop only. The batches reach it as an ``.npz`` written
outside timing (the same arrays, fingerprinted as every subject's).

Matched configuration. The seed fixes τ (``tau=1.345``: the streams have unit noise scale, so
this is our default ``epsilon`` times the true scale) and, with L1, runs the paper's schedule
λ_b = lambda_scale · τ · √(log max(p, 2) / N_b); its ``lambda_scale`` is chosen so that λ_1
equals the profile's alpha. Our matched rows run the same λ_b (our ``lambda_scale`` where the
engine implements the schedule, else ``alpha`` set to λ_b before each batch, inside the clock,
as a user would) and the seed's smoothed information (``curvature="smoothed"``, the same
``bandwidth_scale``, where the engine implements it): ``native_cpu_tau`` with the same fixed
``tau``, ``native_cpu_sched`` with our default MAD scale. Both sides leave ``max_iter`` and
``tol`` at their defaults (the seed
1e-6 on ‖Δ‖₂ / (1 + ‖β‖₂); ours 1e-8 / 1e-5 on ‖Δ‖∞ / max(1, ‖β‖∞), tighter).
"""

from __future__ import annotations

import atexit
import json
import math
import subprocess
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .contracts import Batch, EstimatorSubject, PassResult, Subject, timed

ROOT = Path(__file__).resolve().parents[3]
SEED_PYTHON = ROOT / ".venv-seed" / "bin" / "python"
DRIVER = ROOT / "scripts" / "seed" / "driver.py"
SEED_VERSION = "0.7.1"
#: The seed peers: its native CPU engine and its NumPy backend, through its estimator.
SEED_PEERS = ("seed_native_cpu", "seed_numpy")
#: Our estimator rows in the seed's configuration (module docstring).
MATCHED = ("native_cpu_tau", "native_cpu_sched")
#: The fixed τ of the matched configuration.
TAU = 1.345


def seed_unavailable() -> str:
    """Why the seed cannot run here, or "" when it can."""
    if not SEED_PYTHON.exists():
        return (f"the seed system's venv is missing ({SEED_PYTHON.parent.parent}): "
                "`make seed-venv` builds it")
    return ""


def lambda_scale_for(alpha: float, n_first: int, n_features: int) -> float:
    """The seed's ``lambda_scale`` that makes its first batch's λ equal ``alpha``."""
    return alpha / (TAU * math.sqrt(math.log(max(n_features, 2)) / n_first))


def schedule(lambda_scale: float, batch_rows: Sequence[int], n_features: int,
             start: float = 0.0) -> list[float]:
    """λ_b = lambda_scale · τ · √(log max(p, 2) / N_b) for unit weights, after ``start``."""
    q = math.log(max(n_features, 2))
    out, total = [], start
    for n in batch_rows:
        total += n
        out.append(lambda_scale * TAU * math.sqrt(q / total))
    return out


class _Server:
    """The one seed process of a sweep, started when first needed and closed at exit."""

    process: subprocess.Popen | None = None
    #: The batches the server holds: their fingerprint and count.
    loaded: tuple | None = None
    loaded_batches = 0

    @classmethod
    def call(cls, op: str, **arguments: Any) -> dict[str, Any]:
        if cls.process is None or cls.process.poll() is not None:
            cls.process = subprocess.Popen([str(SEED_PYTHON), str(DRIVER), "serve"],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                           text=True, bufsize=1)
            cls.loaded = None
            atexit.register(cls.close)
        assert cls.process.stdin is not None and cls.process.stdout is not None
        cls.process.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        line = cls.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the seed driver exited ({cls.process.poll()})")
        answer = json.loads(line)
        if not answer.pop("ok"):
            raise RuntimeError(f"the seed driver: {answer['error']}")
        return answer

    @classmethod
    def load(cls, batches: Sequence[Batch]) -> None:
        """Hand the server ``batches`` through an .npz (outside timing), unless it has them."""
        key = (len(batches), *(id(X) for X, _ in batches))
        if cls.process is not None and cls.process.poll() is None and cls.loaded == key:
            return
        with tempfile.TemporaryDirectory(prefix="rhbench-seed-") as folder:
            inputs = {}
            for b, (X, y) in enumerate(batches):
                inputs[f"X{b}"], inputs[f"y{b}"] = X, y
            np.savez(Path(folder) / "batches.npz", **inputs)
            cls.call("load", path=str(Path(folder) / "batches.npz"))
        cls.loaded, cls.loaded_batches = key, len(batches)

    @classmethod
    def close(cls) -> None:
        if cls.process is not None and cls.process.poll() is None:
            assert cls.process.stdin is not None
            cls.process.stdin.write('{"op": "quit"}\n')
            cls.process.stdin.close()
            cls.process.wait(timeout=30)
        cls.process = None


class SeedSubject(Subject):
    """The seed's ``RenewableHuberRegressor(backend="native_cpu" | "numpy")`` fed batch by
    batch with ``partial_fit``, timed inside its own process (module docstring).

    Cold: a fresh estimator per repetition, built outside the clock. Steady: the state of the
    last cold pass, saved with its public ``save`` and restored with ``load`` outside the
    clock (a new estimator object: the seed has no way to put a state into an existing one).
    """

    kind = "peer"
    operation = "partial_fit"

    def __init__(self, name: str, alpha: float, threads: int | None):
        self.name = name
        self.alpha = alpha
        self.threads = threads
        self.backend = name.removeprefix("seed_")
        self.lambda_scale: float | None = None
        self.batch_key: tuple | None = None

    def parameters(self) -> dict[str, Any]:
        p: dict[str, Any] = {"estimator": f"renewable_huber {SEED_VERSION} "
                             "RenewableHuberRegressor", "backend": self.backend, "tau": TAU,
                             "penalty": "l1" if self.alpha else "none",
                             "n_jobs": self.threads if self.backend == "native_cpu" else None}
        if self.alpha:
            p["lambda_scale"] = self.lambda_scale
            p["lambda_schedule"] = ("lambda_scale · tau · sqrt(log(max(p, 2)) / N_b), "
                                    "lambda_scale chosen so that λ_1 = alpha")
        return p

    def _config(self) -> dict[str, Any]:
        p = self.parameters()
        config = {"backend": p["backend"], "tau": TAU, "penalty": p["penalty"],
                  "n_jobs": p["n_jobs"], "dtype": self.dtype}
        if self.alpha:
            config["lambda_scale"] = self.lambda_scale
        return config

    def prepare(self, batches: Sequence[Batch]) -> Sequence[Batch]:
        X0 = batches[0][0]
        self.dtype = str(X0.dtype)
        self.lambda_scale = lambda_scale_for(self.alpha, X0.shape[0], X0.shape[1])
        _Server.load(batches)
        return batches

    def make(self) -> Any:
        return self._config()

    def restore(self, primed: Any) -> Any:
        return "primed"  # the server keeps the state of the last cold pass

    def run(self, obj: Any, state: Any, batches: Sequence[Batch]) -> PassResult:
        if state == "primed":
            answer = _Server.call("steady", config=obj)
        elif len(batches) == _Server.loaded_batches:
            answer = _Server.call("cold", config=obj, prime=True)
        else:
            raise ValueError("the seed server times the batches prepare() loaded, not others")
        if answer["backend"] != self.backend:
            raise RuntimeError(f"the seed ran on {answer['backend']!r}, not {self.backend!r}")
        return PassResult(seconds=answer["seconds"], state=np.asarray(answer["coef"]),
                          iterations=answer["iterations"],
                          solvers=["lamm" if self.alpha else "newton"] * len(batches),
                          converged=answer["converged"])

    def warm_up(self, batches: Sequence[Batch]) -> None:
        _Server.call("warm_up", config=self._config())

    def coefficients(self, state: Any) -> tuple[NDArray[np.float64], float]:
        coef = np.asarray(state, dtype=np.float64)
        return coef[:-1], float(coef[-1])


class MatchedSubject(EstimatorSubject):
    """Our ``RenewableHuberRegressor(backend="native_cpu")`` in the seed's configuration:
    ``native_cpu_tau`` (tau fixed) or ``native_cpu_sched`` (our default MAD scale), with the
    seed's λ schedule on L1 rows (module docstring)."""

    def __init__(self, name: str, config: Any, threads: int | None):
        super().__init__(name, config, "host", threads=threads)
        self.tau = TAU if name == "native_cpu_tau" else None
        self.lambdas: list[float] = []
        self.by_hand = True
        self.curvature = "indicator"

    @property
    def backend(self) -> str:
        return "native_cpu"

    def parameters(self) -> dict[str, Any]:
        p = super().parameters()
        p.update(tau=self.tau, alpha=None if self.config.alpha else 0.0,
                 curvature=self.curvature, bandwidth_scale=1.0,
                 lambda_schedule=(None if not self.config.alpha else
                                  "the seed's, lambda_scale · 1.345 · sqrt(log(max(p, 2)) / "
                                  "N_b), " + ("set per batch as alpha inside the clock"
                                              if self.by_hand else "as lambda_scale")),
                 lambda_scale=getattr(self, "lambda_scale", None), lambdas=self.lambdas or None)
        return p

    def prepare(self, batches: Sequence[Batch]) -> Sequence[Batch]:
        from rhuber.engines import make_engine

        X0 = batches[0][0]
        features = make_engine("native_cpu", threads=self.threads).contract_features
        self.curvature = "smoothed" if "smoothed_curvature" in features else "indicator"
        if self.config.alpha:
            scale = lambda_scale_for(self.config.alpha, X0.shape[0], X0.shape[1])
            self.lambda_scale = scale
            self.lambdas = schedule(scale, [X.shape[0] for X, _ in batches], X0.shape[1])[:4]
            self.by_hand = "lambda_schedule" not in features
        return batches

    def make(self) -> Any:
        from rhuber import RenewableHuberRegressor

        c = self.config
        extra: dict[str, Any] = {"curvature": self.curvature}
        if c.alpha and not self.by_hand:
            extra["lambda_scale"] = self.lambda_scale
        return RenewableHuberRegressor(backend="native_cpu", tau=self.tau, epsilon=c.epsilon,
                                       fit_intercept=c.fit_intercept, max_iter=c.max_iter,
                                       tol=c.tol, n_jobs=self.threads, **extra)

    def run(self, obj: Any, state: Any, batches: Sequence[Batch]) -> PassResult:
        if not (self.config.alpha and self.by_hand):
            return super().run(obj, state, batches)
        if state is not None:
            obj.load_state_dict(state)
        first = len(getattr(obj, "diagnostics_", ()))
        start = float(getattr(obj, "effective_weight_", 0.0))  # steady: the primed weight
        lambdas = schedule(self.lambda_scale, [X.shape[0] for X, _ in batches],
                           batches[0][0].shape[1], start)

        def loop() -> Any:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for (X, y), lam in zip(batches, lambdas, strict=True):
                    obj.set_params(alpha=lam)
                    obj.partial_fit(X, y)
            return obj

        seconds, fitted = timed(loop)
        diags = fitted.diagnostics_[first:]
        return PassResult(seconds=seconds, state=fitted.state_dict(),
                          iterations=[int(d["n_iter"]) for d in diags],
                          solvers=[str(d["solver"]) for d in diags],
                          converged=[bool(d["converged"]) for d in diags],
                          rconds=[d["rcond"] for d in diags])
