"""RenewableHuberRegressor: the public, scikit-learn compatible estimator."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import operator
import os
import threading
import time
import warnings
from contextlib import contextmanager, nullcontext
from numbers import Integral, Real
from typing import Any, ClassVar, NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from . import dispatch
from ._history import History, as_settings
from ._version import __version__
from .adapters import as_host_input, first_unusable_value, is_table_like, table_column_names
from .checkpoint import FORMAT_VERSION, read_checkpoint, validate_payload, write_checkpoint
from .core import L1_SOLVERS, Config, State
from .core import inference as _inference
from .core.ladder import ill_conditioned, ill_conditioning_message
from .core.merge import combine_states
from .core.sqrt_info import in_mode
from .core.types import CURVATURES, DEFAULT_BANDWIDTH_SCALE, FACTORIZATIONS
from .core.xp import to_host
from .engines import BACKENDS, make_engine, native_cpu_available, require_features
from .engines.dlpack import is_device_tensor
from .engines.plans import Plan
from .engines.predict import predict as _predict
from .errors import CheckpointError, DriftWarning, IllConditionedWarning, InterpolatedBatchWarning
from .profiling import _hooks as _prof
from .profiling import profile
from .tracing import Trace
from .tracing.recorder import traced_update
from .tracing.trace import active as _active_traces
from .tuner.session import PlanReport


class _Fitted(NamedTuple):
    """What a fitted stream publishes, all from one batch: made whole, then swapped in as one
    attribute at the end of an update, so a reader in another thread (predict, the fitted
    attributes) sees one batch's or the next's, never a mix."""

    state: State
    fit_intercept: bool
    coef: np.ndarray  # the features' coefficients, a host copy
    intercept: Any  # a scalar of the dtype
    information: np.ndarray  # a host copy
    backend: str
    history: History  # each batch's diagnostics since the last reset (the latest in full)


#: What the fitted attributes are read from, and what fit (a new stream) starts afresh.
_STREAM_ATTRIBUTES = ("_fitted", "n_features_in_", "feature_names_in_", "_session",
                      "_loaded_params")


#: Creates estimators' update locks, so that two threads never make two for one estimator.
_LOCK_FACTORY_LOCK = threading.Lock()


def _serialized(method):
    """Run an updating method under the estimator's own lock (docs/reliability.md): calls of
    fit, partial_fit and load_state_dict from several threads on one estimator take turns, each
    a whole transaction, so none sees or leaves a torn state (state_dict, and so
    save_checkpoint, takes it too: a snapshot is never half of an update). Readers do not: the
    fitted attributes and predict read one snapshot of the stream (``_Fitted``), which an update
    replaces whole at its end, so a predict next to another thread's partial_fit gives the
    predictions of one batch's coefficients or the next's, never a mix. The lock is made on first
    use (an estimator's __init__ sets only its parameters) and is not pickled; it costs ~0.5 µs a
    call (docs/perf/experiments.jsonl)."""

    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        lock = self.__dict__.get("_update_lock")
        if lock is None:
            with _LOCK_FACTORY_LOCK:
                lock = self.__dict__.setdefault("_update_lock", threading.RLock())
        with lock:
            return method(self, *args, **kwargs)

    return locked


class RenewableHuberRegressor(RegressorMixin, BaseEstimator):
    """Streaming Huber regression whose estimate matches a fit on all the data seen so far.

    Each batch is solved once, with the information of earlier batches carried as a quadratic
    term (the "renewable" update of ``docs/method.md``); the data of past batches is never
    revisited.

    An unpenalized stream also carries the sums of Huber's covariance estimates, renewed batch by
    batch: :meth:`summary`, :meth:`cov_params`, :meth:`bse`, :meth:`conf_int`, :meth:`tvalues`
    and :meth:`pvalues` give statsmodels' RLM statistics (H1, H2, H3) and the sandwich HC0
    (``docs/inference.md``).

    Parameters
    ----------
    fit_intercept : bool, default=True
        Fit an unpenalized intercept.
    epsilon : float, default=1.345
        Huber threshold in units of the running robust scale: τ = epsilon · scale.
    tau : float or None, default=None
        A fixed threshold for every batch instead of the adaptive one.
    alpha : float, default=0.0
        L1 strength per unit of sample weight; may change between batches.
    ridge : float, default=0.0
        Damping added to the Newton matrix only; it does not move the minimizer.
    max_iter : int, default=500
        Outer iterations per batch solve.
    tol : float or None, default=None
        Step tolerance; None means 1e-8 for float64 and 1e-5 for float32.
    l1_solver : {"lamm", "prox_newton"}, default="lamm"
        Solver of batches with alpha > 0. "lamm" is the contract's proximal gradient method;
        "prox_newton" an opt-in proximal Newton method for the same problem, in a few
        Newton-like iterations instead of tens (native_cpu only; docs/method.md).
    lambda_scale : float or None, default=None
        The paper's λ schedule (contract v3; docs/method-v3.md): each batch's L1 strength is
        λ_b = lambda_scale · τ_b · √(log(max(p, 2)) / N_b), N_b the effective weight including
        the batch. None: no schedule (``alpha`` decides). Setting it with ``alpha > 0`` raises
        ValueError. A positive schedule penalizes the stream, so it has no inference.
    curvature : {"indicator", "smoothed"}, default="indicator"
        The curvature of the information update: Huber's indicator 1{|r| ≤ τ}, or the paper's
        smoothed c_h with bandwidth h_b = min(bandwidth_scale · scale_ / (√N_b · log(max(p,
        2))), τ_b) (scale 1 when ``tau`` is fixed, as the seed system computes it).
    bandwidth_scale : float, default=1.0
        The constant of the smoothed curvature's bandwidth (the seed system's default).
    half_life : float or None, default=None
        Forgetting (contract v4; docs/drift.md): before each batch of weight Σw the history
        (information, effective weight, inference sums) is discounted by 2^(−Σw / half_life),
        so the estimate tracks coefficients that change. A weight: rows, for unit weights.
        None: no forgetting. The stream's ``effective_weight_`` is then the discounted weight
        the estimate rests on; streams with half_life do not :meth:`merge`.
    factorization : {"cholesky", "qr"}, default="cholesky"
        How the history's information is held and each Newton step solved (contract v4;
        docs/numerics.md): "cholesky", the information matrix and the equilibrated ladder on
        the Newton matrix; "qr", the square-root information (a triangular factor R̃ and its
        right-hand side z̃) and Householder QR of stacked rows, which keeps about twice the
        digits on designs whose normal equations lose them all (high-degree polynomials, NIST
        Filip) at a higher cost per batch. ``information_`` is R̃ᵀR̃ in the qr mode. A stream
        may switch between batches; only backends that implement the mode accept "qr".
    drift_alpha : float in (0, 1) or None, default=None
        Warn (``DriftWarning``) for each batch whose drift test's p-value is below it. The test
        itself runs on every unpenalized batch after the first (``diagnostics_``'s
        ``drift_statistic``, ``drift_df``, ``drift_pvalue``); None: no warning.
    inference_matrices : bool, default=False
        Also accumulate the d × d matrices G = Σ X̃ᵀdiag(w)X̃ and K = Σ X̃ᵀdiag(wψ²)X̃ that the
        H1, H3 and HC0 covariances need (two more Gram products per batch; docs/inference.md).
        The scalars behind H2 are always accumulated.
    batch_size : int or None, default=None
        Rows per batch in :meth:`fit`; None streams all of X as one batch.
    backend : {"auto", "numpy", "native_cpu", "cuda"}, default="auto"
        The engine. "auto" runs native_cpu with its defaults when installed (else the NumPy
        reference), unless the tuner's advisor predicts another plan at least 10 % faster for
        the stream's first batch, inside its training distribution; it reverts to the default
        if that plan's first batches measure slower than promised (``plan_``; docs/tuner.md,
        "The advisor"). The environment variable ``RH_PLAN=<plan id>`` pins a plan instead.
    device : int or None, default=None
        CUDA device ordinal for ``backend="cuda"``; with a host engine (numpy, native_cpu, or
        "auto" running one) fitting raises ValueError instead of computing on the host.
    n_jobs : int or None, default=None
        Threads of the native_cpu engine, the calling thread included. None uses all cores (the
        engine's default; unlike scikit-learn's None, which means 1), and so does -1; other
        negative values count back from the cores as in scikit-learn (-2: all but one). The
        numpy and cuda engines ignore it. Threads change speed only: the row partition, and so
        the result, does not depend on them.
    plan : Plan, str or None, default=None
        A tuner plan (``rhuber.engines.plans.Plan`` or its id, e.g.
        ``"native_cpu/t2/gram=full/chunk=256k/l1=lamm"``; docs/tuner.md) that decides the
        backend, threads, Gram strategy, row chunk size and L1 solver. ``backend``, ``n_jobs``
        and ``l1_solver`` at their defaults defer to it; set to anything else they must agree
        with it, or fitting raises ValueError. None: ``backend``, ``n_jobs`` and ``l1_solver``
        decide, with the engine's defaults for the rest. Checkpoints store the plan's id.
    precision : {"strict"}, default="strict"
        Numerical mode; only strict float32/float64 arithmetic exists.
    profile : bool, default=False
        Profile this estimator's updates and predictions brick by brick (``profile_``;
        docs/profiling.md). Needs rhuber-native-cpu, whose C++ profiler records them.
    trace : bool, default=False
        Record every solver iteration of every batch in ``trace_`` (objective, step, rung,
        quadratic-zone rows, residual/score/Hessian-diagonal statistics) and flag anomalies
        (docs/tracing.md). ``with rhuber.trace() as tr:`` records any estimator's
        batches without it. The numpy and native_cpu engines trace; with the cuda engine,
        fitting raises ValueError while tracing.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    scale_ : float
        Running robust scale of the residuals.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features,)
        Defined only when X had string column names.
    n_samples_seen_ : int
    n_batches_ : int
    effective_weight_ : float
        Σ sample weights seen.
    previous_lambda_ : float
        The L1 strength of the last batch.
    information_ : ndarray of shape (d, d)
        Accumulated curvature J̃ (d = n_features + fit_intercept; intercept last); R̃ᵀR̃ of
        the square-root information with ``factorization="qr"``.
    n_iter_ : int
        Solver iterations of the last batch.
    diagnostics_ : list of dict
        One dict per batch since the last reset (fit, or load_checkpoint), the latest 10,000
        of them (``rhuber._history.KEPT``; ``n_batches_`` counts them all): the solve's figures
        (with, for a batch LAMM solved, ``stationarity_step``: how far from the minimizer it
        stopped, in coefficient units; docs/numerics.md, "LAMM's step rule") and the
        ``epsilon``, ``tau``, ``curvature`` and ``inference_matrices`` it ran with. Of
        older batches the stream keeps what ``summary()`` and the inference refusal read.
    backend_ : str
        The engine that ran.
    plan_ : rhuber.tuner.session.PlanReport
        The plan that ran and why: ``plan``, ``reason`` (chosen by the model, a default's
        reason, reverted, pinned), ``detail``, ``predicted_rows_per_s``,
        ``measured_rows_per_s`` (median of the stream's first timed batches) and ``model_id``.
    profile_ : rhuber.profiling.Profile
        With ``profile=True``: the profile of every update since the last :meth:`fit` and of
        every prediction (``profile_.report()``, ``profile_.to_chrome_trace(path)``, ...).
    trace_ : rhuber.tracing.Trace
        With ``trace=True``: the solver trace of every batch since the last :meth:`fit`
        (``trace_.report()``, ``trace_.anomalies()``, ``trace_.to_json()``, ``trace_.plot()``).
        A batch that raises is recorded too, with its error, once a stream has started.
    """

    _parameter_constraints: ClassVar[dict] = {
        "fit_intercept": ["boolean"],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "tau": [Interval(Real, 0, None, closed="neither"), None],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "ridge": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither"), None],
        "l1_solver": [StrOptions(set(L1_SOLVERS))],
        "lambda_scale": [Interval(Real, 0, None, closed="left"), None],
        "curvature": [StrOptions(set(CURVATURES))],
        "bandwidth_scale": [Interval(Real, 0, None, closed="neither")],
        "inference_matrices": ["boolean"],
        "half_life": [Interval(Real, 0, None, closed="neither"), None],
        "factorization": [StrOptions(set(FACTORIZATIONS))],
        "drift_alpha": [Interval(Real, 0, 1, closed="neither"), None],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "backend": [StrOptions(set(BACKENDS))],
        "device": [Interval(Integral, 0, None, closed="left"), None],
        "n_jobs": [Interval(Integral, 1, None, closed="left"),
                   Interval(Integral, None, -1, closed="right"), None],
        "plan": [Plan, str, None],
        "precision": [StrOptions({"strict"})],
        "profile": ["boolean"],
        "trace": ["boolean"],
    }

    def __init__(
        self,
        *,
        fit_intercept: bool = True,
        epsilon: float = 1.345,
        tau: float | None = None,
        alpha: float = 0.0,
        ridge: float = 0.0,
        max_iter: int = 500,
        tol: float | None = None,
        l1_solver: str = "lamm",
        lambda_scale: float | None = None,
        curvature: str = "indicator",
        bandwidth_scale: float = DEFAULT_BANDWIDTH_SCALE,
        inference_matrices: bool = False,
        half_life: float | None = None,
        factorization: str = "cholesky",
        drift_alpha: float | None = None,
        batch_size: int | None = None,
        backend: str = "auto",
        device: int | None = None,
        n_jobs: int | None = None,
        plan: Plan | str | None = None,
        precision: str = "strict",
        profile: bool = False,
        trace: bool = False,
    ):
        self.fit_intercept = fit_intercept
        self.epsilon = epsilon
        self.tau = tau
        self.alpha = alpha
        self.ridge = ridge
        self.max_iter = max_iter
        self.tol = tol
        self.l1_solver = l1_solver
        self.lambda_scale = lambda_scale
        self.curvature = curvature
        self.bandwidth_scale = bandwidth_scale
        self.inference_matrices = inference_matrices
        self.half_life = half_life
        self.factorization = factorization
        self.drift_alpha = drift_alpha
        self.batch_size = batch_size
        self.backend = backend
        self.device = device
        self.n_jobs = n_jobs
        self.plan = plan
        self.precision = precision
        self.profile = profile
        self.trace = trace

    # ------------------------------------------------------------------ fitting

    @_serialized
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> RenewableHuberRegressor:
        """Forget any earlier state, then stream X in batches of ``batch_size`` rows: the same
        per-batch step as ``partial_fit`` (:meth:`_step`), committed once at the end."""
        with _Transaction(self), self._profiling(restart=True):
            self._reset()
            self._start_trace(restart=True)
            # Batched, a plain X would reach its bad row only after earlier batches had run;
            # traced, the refused batch would be recorded: validate_data checks all of X first.
            plain = (self.batch_size is None and self._plain_batch(X, y, sample_weight)
                     and not (self.trace or _active_traces()))
            X, y, w = self._validate_batch(X, y, sample_weight, reset=True, plain=plain)
            rows = X.shape[0] if self.batch_size is None else int(self.batch_size)
            self._start_session(X[:rows], y[:rows], -(-X.shape[0] // rows))
            state, diagnostics = None, []
            for start in range(0, X.shape[0], rows):
                batch = slice(start, start + rows)
                try:
                    state, record, backend = self._step(
                        state, X[batch], y[batch], None if w is None else w[batch],
                        began=time.perf_counter())
                except ValueError:
                    if plain:  # its values went unchecked: validate_data's error, as ever
                        self._raise_validation_error(X, y, reset=True)
                    raise
                diagnostics.append(record)
            self._commit(state, backend, history=diagnostics)
        self._warn_about(diagnostics)
        self._warn_if_interpolated(X[:rows], None if w is None else w[:rows])
        return self

    @_serialized
    def partial_fit(self, X: Any, y: Any, sample_weight: Any = None) -> RenewableHuberRegressor:
        """Advance the stream by exactly one batch."""
        # Not under _fit_context like fit: its is-fitted scan and configuration context cost
        # ~50 µs a batch, and its parameter validation would run only before the first batch.
        # Every batch pays what runs here (~0.6 ms batches on the latency shape): keep it lean
        # (docs/perf/experiments.jsonl, estimator-overhead-round-3).
        self._validate_changed_params()
        fitted = self.__dict__.get("_fitted")
        if fitted is not None and bool(self.fit_intercept) != fitted.fit_intercept:
            raise ValueError(
                f"fit_intercept is {self.fit_intercept}, but the stream was started with "
                f"fit_intercept={fitted.fit_intercept}; call fit to start a new stream"
            )
        with _Transaction(self), self._profiling(restart=False):
            began = time.perf_counter()
            # A traced stream records a batch the engine refuses once it has started; its first
            # batch is refused by validate_data before the engine, as it always was.
            plain = self._plain_batch(X, y, sample_weight) and (
                fitted is not None or not (self.trace or _active_traces()))
            X, y, w = self._validate_batch(X, y, sample_weight, reset=fitted is None,
                                           plain=plain)
            if fitted is None or self.__dict__.get("_session") is None:
                self._start_session(X, y)
            self._start_trace(restart=False)
            try:
                state, record, backend = self._step(None if fitted is None else fitted.state,
                                                    X, y, w, began=began)
            except ValueError:
                if plain:  # its values went unchecked: validate_data's error, as ever
                    self._raise_validation_error(X, y, reset=fitted is None)
                raise
            self._commit(state, backend, history=[] if fitted is None else None,
                         appended=record)
        self._warn_about([record], first_batch=self.n_batches_)
        if fitted is None:
            self._warn_if_interpolated(X, w)
        return self

    def _step(self, state: State | None, X: Any, y: Any, w: Any, *,
              began: float) -> tuple[State, dict[str, Any], str]:
        """One batch of the stream, validated already: the plan for it, the engine's update,
        the timing the plan's evidence needs. Nothing is committed here."""
        plan = self._plan()
        engine = self._engine(plan)
        config = self._config(plan)
        require_features(engine, config)
        if self.drift_alpha is not None and "drift_test" not in getattr(
                engine, "contract_features", ()):
            raise ValueError(f"drift_alpha={self.drift_alpha!r} needs the drift test, which the "
                             f"{engine.name} engine does not implement yet; use "
                             "backend='numpy' or 'native_cpu'")
        kept, dropped = _without_zero_weights(X, y, w)
        before = state
        state, diag = self._update(engine, state, *kept, dispatch.lamm_trial(
            self, self.__dict__.get("_session"), config))
        # Only auto re-solves a LAMM batch that stopped short (a user's solver warns, later).
        short = self.backend == "auto" and diag.converged and \
            not math.isnan(diag.stationarity_step) and \
            self._lamm_stopped_short(diag.stationarity_step, state.coef, config)
        if not diag.converged or short:
            stalled = dispatch.after_stalled_lamm(self, self.__dict__.get("_session"), X,
                                                  diag.n_iter, stopped_short=short)
            if stalled is not None:  # auto's LAMM stalled or stopped short: proximal Newton
                self._session = stalled
                plan = self._plan()
                engine, config = self._engine(plan), self._config(plan)
                state, diag = self._update(engine, before, *kept, config)
        if dropped:
            state = dataclasses.replace(state,
                                        n_samples_seen=state.n_samples_seen + dropped)
        self._observe(X, y, time.perf_counter() - began, engine.name)
        record = diag.as_dict()
        record.update(epsilon=self.epsilon, tau=self.tau, curvature=self.curvature,
                      inference_matrices=bool(self.inference_matrices))
        return state, record, engine.name

    # --------------------------------------------------------------- prediction

    def predict(self, X: Any) -> np.ndarray:
        """ŷ = X coef_ + intercept_, both of one batch (``_Fitted``)."""
        fitted = self.__dict__.get("_fitted")
        if fitted is None:
            check_is_fitted(self)  # raises NotFittedError
            fitted = self._fitted  # fitted since, by another thread
        if is_device_tensor(X):
            raise ValueError("predict takes host arrays; device-resident prediction is not "
                             "supported, and X is not copied to the host implicitly")
        names = table_column_names(X) if is_table_like(X) else None
        X = as_host_input(X, "X")
        with _named_columns(self, names, reset=False):
            try:
                X = validate_data(self, X, reset=False, dtype=[fitted.state.dtype, np.float64])
            except ValueError as exc:
                raise _located(exc, X, None, names) from None
        with self._profiling(restart=False):
            recorder = _prof.ACTIVE
            if recorder is None:
                return _predict(X, fitted.coef, fitted.intercept, self._threads())
            start = _prof.now()
            predictions = _predict(X, fitted.coef, fitted.intercept, self._threads())
            n, p = X.shape
            recorder.record(_prof.PREDICT, start, n * p, (n * p + p + n) * X.dtype.itemsize,
                            2 * n * p)
            return predictions

    # ---------------------------------------------------------------- inference

    def cov_params(self, cov_type: str | None = None) -> np.ndarray:
        """The covariance of the coefficients, (d, d) float64, in coef_'s order with the
        intercept last (docs/inference.md).

        ``cov_type``: "H1", "H2", "H3" (Huber's estimates as statsmodels' RLM computes them)
        or "HC0" (the heteroscedasticity-robust sandwich J⁻¹KJ⁻¹); None: "H1" when the stream
        accumulates ``inference_matrices``, else "H2". H1, H3 and HC0 need
        ``inference_matrices=True``. Raises ValueError (``InferenceError``) for an L1-penalized
        stream (the formulas do not hold after selection), a singular information matrix, or
        sums that cover no batch.
        """
        check_is_fitted(self)
        state = self._inference_state()
        if cov_type is None:
            cov_type = _inference.default_cov_type(state)
        return _inference.covariance(state, cov_type)

    def bse(self, cov_type: str | None = None) -> np.ndarray:
        """Standard errors: the square roots of :meth:`cov_params`'s diagonal."""
        return _inference.standard_errors(self.cov_params(cov_type))

    def tvalues(self, cov_type: str | None = None) -> np.ndarray:
        """z statistics coef / std err (statsmodels' RLM calls them tvalues; normal reference)."""
        return self._wald(cov_type, 0.05).z

    def pvalues(self, cov_type: str | None = None) -> np.ndarray:
        """Two-sided normal p-values of the z statistics."""
        return self._wald(cov_type, 0.05).pvalues

    def conf_int(self, alpha: float = 0.05, cov_type: str | None = None) -> Any:
        """(d, 2) normal confidence intervals [lower, upper] at level 1 − alpha. For a model
        fitted on named columns, a pandas DataFrame indexed by the names (the intercept last)
        with columns 0 and 1, as statsmodels returns for a DataFrame's model."""
        table = self._wald(cov_type, alpha)
        bounds = np.column_stack([table.lower, table.upper])
        if "feature_names_in_" not in self.__dict__:
            return bounds
        try:
            import pandas as pd
        except ImportError:  # names from Polars or a table-like object, and no pandas
            return bounds
        return pd.DataFrame(bounds, index=self._coefficient_names())

    def _coefficient_names(self) -> list[str]:
        """The rows of summary and conf_int: feature_names_in_ (x0, x1, ... without names),
        then "intercept"."""
        names = [str(n) for n in getattr(self, "feature_names_in_",
                                         [f"x{j}" for j in range(self.n_features_in_)])]
        return [*names, "intercept"] if self._fitted_intercept else names

    def summary(self, cov_type: str | None = None, alpha: float = 0.05) -> _inference.Summary:
        """statsmodels' familiar table (coef, std err, z, P>|z|, interval) under a header of
        counts, scale, covariance type and what the covariance covers. ``print(summary)``;
        ``.as_dict()`` for JSON, ``.frame()`` for a DataFrame. Rows are named by
        feature_names_in_ (x0, x1, ... without names), the intercept last."""
        check_is_fitted(self)
        state = self._inference_state()
        cov_type = cov_type or _inference.default_cov_type(state)
        table = self._wald(cov_type, alpha)
        names = self._coefficient_names()
        covered = _inference.coverage(state)
        threshold = (lambda d: f"{d['epsilon']:g}" if d["tau"] is None  # noqa: E731
                     else f"tau = {d['tau']:g}")
        header = (
            ("Model", "RenewableHuberRegressor (Huber's T)"),
            ("Epsilon", self._per_batch(threshold)),
            ("Observations", f"{state.n_samples_seen:,} rows, weight "
                             f"{state.effective_weight:,.6g}"),
            ("Batches", str(state.batch_count)),
            ("Effective weight", _effective_weight_line(state, self.half_life)),
            ("Scale", f"{state.scale:.6g}"),
            ("Curvature", self._per_batch(lambda d: d["curvature"])),
            ("Covariance type", cov_type),
            ("Covariance covers", covered.describe()),
        )
        matrices = self._per_batch(lambda d: "accumulated" if d["inference_matrices"]
                                   else "not accumulated")
        if matrices.startswith("differs"):  # else the covariance type says it
            header = (*header, ("Inference matrices", matrices))
        return _inference.Summary(tuple(names), table, cov_type, header, covered)

    def _per_batch(self, describe: Any) -> str:
        """``describe(parameters)`` of the stream's batches: one value when every batch ran
        with it, else each value with its batches ("1.345 (batches 1-5), 5 (batch 6)"). The
        parameters may change between batches; the batches before a load_checkpoint ran with
        the checkpoint's, which it does not record one by one."""
        history = self._published("diagnostics_").history
        first = self.n_batches_ - history.recorded + 1  # the batches since the last load
        runs: list[list] = []  # [value, first batch, last batch]
        k = first
        for settings, n in history.settings_runs():
            value = None if settings is None else describe(as_settings(settings))
            if runs and runs[-1][0] == value:
                runs[-1][2] = k + n - 1
            else:
                runs.append([value, k, k + n - 1])
            k += n
        if first > 1:
            loaded = self.__dict__.get("_loaded_params")
            value = None if loaded is None else describe({**_DEFAULTS, **loaded})
            if runs and runs[0][0] == value:
                runs[0][1] = 1
            else:
                runs.insert(0, [value, 1, first - 1])
        if not runs:
            return describe(self._json_params())
        if len(runs) == 1 and runs[0][0] is not None:
            return runs[0][0]
        return "differs by batch: " + ", ".join(
            f"{'not recorded' if value is None else value} "
            f"({f'batch {a}' if a == b else f'batches {a}-{b}'})" for value, a, b in runs)

    def _wald(self, cov_type: str | None, alpha: float) -> _inference.WaldTable:
        return _inference.wald_table(self._state.coef, self.cov_params(cov_type), alpha)

    def _inference_state(self) -> State:
        """The state, refused when the stream is L1-penalized now or was in a batch since the
        last reset (post-selection inference)."""
        largest = self._published("diagnostics_").history.largest_lambda()
        if self.alpha > 0 or (self.lambda_scale or 0) > 0 or largest > 0:
            raise _inference.InferenceError(
                f"inference is refused for an L1-penalized stream (alpha={self.alpha!r}, "
                f"lambda_scale={self.lambda_scale!r}, largest batch lambda "
                f"{largest:.3g}): the covariances assume an unpenalized "
                "M-estimator, and after L1 selection they are not valid (post-selection "
                "inference). Fit with alpha=0 and lambda_scale=None for standard errors")
        return self._state

    # -------------------------------------------------------- state and storage

    @_serialized
    def state_dict(self) -> dict[str, Any]:
        """The state and everything needed to resume, as plain arrays (checkpoint keys)."""
        check_is_fitted(self)
        s = self._state
        d = {
            "format_version": np.int64(FORMAT_VERSION),
            "coef": to_host(s.coef).copy(),
            "information": to_host(s.information).copy(),
            "n_samples_seen": np.int64(s.n_samples_seen),
            "effective_weight": np.float64(s.effective_weight),
            "batch_count": np.int64(s.batch_count),
            "previous_lambda": np.float64(s.previous_lambda),
            "scale": np.float64(s.scale),
            "score_sq_sum": np.float64(s.score_sq_sum),
            "curvature_sum": np.float64(s.curvature_sum),
            "curvature_sq_sum": np.float64(s.curvature_sq_sum),
            "inference_weight": np.float64(s.inference_weight),
            "inference_batches": np.int64(s.inference_batches),
            "dtype": np.str_(s.dtype.name),
            "fit_intercept": np.bool_(self._fitted_intercept),
            "n_features_in": np.int64(self.n_features_in_),
            "params": np.str_(json.dumps(self._json_params(), sort_keys=True)),
            "library_version": np.str_(__version__),
        }
        if hasattr(self, "feature_names_in_"):
            d["feature_names_in"] = np.asarray(self.feature_names_in_, dtype=str)
        if s.gram is not None and s.score_gram is not None:
            d["gram"] = to_host(s.gram).copy()
            d["score_gram"] = to_host(s.score_gram).copy()
        d["factorization"] = np.str_(s.factorization)
        if s.information_factor is not None:
            d["information_factor"] = to_host(s.information_factor).copy()
            d["information_vector"] = to_host(s.information_vector).copy()
        return d

    @_serialized
    def load_state_dict(self, state_dict: dict[str, Any]) -> RenewableHuberRegressor:
        """Adopt a state written by :meth:`state_dict` (by any engine or device)."""
        payload = validate_payload(state_dict)
        self._adopt(payload)
        return self

    def save_checkpoint(self, path: str | os.PathLike) -> None:
        """Write a format-4 ``.npz`` checkpoint atomically (old file or new, never torn)."""
        write_checkpoint(path, self.state_dict())

    @classmethod
    def load_checkpoint(cls, path: str | os.PathLike, *, dtype: Any = None,
                        **overrides: Any) -> RenewableHuberRegressor:
        """An estimator with the parameters and state of a checkpoint; ``overrides`` replace
        parameters (``backend="numpy"``, say) before the state is loaded. ``dtype``
        ("float32" or "float64") converts the state, and so the stream, to that dtype.
        A checkpoint whose parameters name one this estimator does not have is refused."""
        payload = read_checkpoint(path)
        known = cls().get_params()
        unknown = sorted(set(payload["params"]) - set(known))
        if unknown:
            raise CheckpointError(
                f"{path}: its parameters name {', '.join(map(repr, unknown))}, which "
                f"{cls.__name__} {__version__} does not have (a checkpoint of another version, "
                "or a damaged one)")
        if dtype is not None:
            payload = _converted(payload, dtype)
        estimator = cls(**{**payload["params"], **overrides})
        try:
            estimator._validate_params()  # a hostile 'params' must not surface later, or oddly
            estimator._adopt(payload)
        except (ValueError, TypeError) as exc:
            raise CheckpointError(f"{path}: its parameters (with the overrides {overrides}) do "
                                  f"not make an estimator: {exc}") from exc
        return estimator

    @_serialized
    def merge(self, *others: RenewableHuberRegressor) -> RenewableHuberRegressor:
        """Combine streams fitted independently on other data into this one, in place.

        The information-weighted combination of docs/scale-out.md: information_ = Σ J_k,
        coef = (Σ J_k)⁻¹ Σ J_k β_k, counts and effective weights summed, scale_ their
        effective-weight average, previous_lambda_ 0 (``core.merge.combine_states``). It
        approximates the stream of all the data without equalling it;
        ``rhuber.dask.fit_parallel`` runs it over a Dask cluster. Streams of another
        dtype, intercept setting, feature count or names, epsilon or tau, and L1-penalized ones
        (previous_lambda_ > 0), are refused with a ValueError naming the difference, and the
        state is left untouched.
        """

        check_is_fitted(self)
        if not others:
            raise TypeError("merge takes at least one other fitted RenewableHuberRegressor")
        for k, stream in enumerate((self, *others)):
            if getattr(stream, "half_life", None) is not None:
                raise ValueError(
                    f"cannot merge: {'this stream' if k == 0 else f'stream {k - 1}'} forgets "
                    f"(half_life={stream.half_life!r}), and a merge has no order to discount "
                    "by; stream the data in order instead (rhuber.dask.fit_stream)")
        mine = (self._state.dtype, self._fitted_intercept, self.n_features_in_,
                self.epsilon, self.tau)
        for k, other in enumerate(others):
            if not isinstance(other, RenewableHuberRegressor):
                raise TypeError(f"merge takes RenewableHuberRegressor streams, got "
                                f"{type(other).__name__} (argument {k})")
            check_is_fitted(other)
            theirs = (other._state.dtype, other._fitted_intercept, other.n_features_in_,
                      other.epsilon, other.tau)
            names = [getattr(e, "feature_names_in_", None) for e in (self, other)]
            differ = [f"{what} {a!r} here, {b!r} there" for what, a, b in zip(
                ("dtype", "fit_intercept", "n_features_in_", "epsilon", "tau"), mine, theirs,
                strict=True) if a != b]
            if (names[0] is None) != (names[1] is None) or (
                    names[0] is not None and not np.array_equal(names[0], names[1])):
                differ.append(f"feature_names_in_ {names[0]!r} here, {names[1]!r} there")
            if differ:
                raise ValueError(f"cannot merge stream {k}: it is another model ("
                                 f"{'; '.join(differ)})")
        state, solved = combine_states([self._state, *(o._state for o in others)])
        with _Transaction(self):
            history = History.joined([e._published("diagnostics_").history
                                      for e in (self, *others)])
            self._commit(state, self._engine().name, history=history)
        if ill_conditioned(solved.rcond, state.dtype):
            warnings.warn(
                f"merge: the combined information Σ J_k is ill-conditioned even after "
                f"equilibration (rcond {solved.rcond:.2g}, solver '{solved.rung}'); the merged "
                "coefficients may have lost digits, or (solver 'svd') are the minimum-norm "
                "solution. Collinear or constant columns are the usual cause.",
                IllConditionedWarning, stacklevel=2)
        return self

    # ----------------------------------------------------------------- plumbing

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = False
        return tags

    def __getstate__(self) -> dict:
        # A copy: BaseEstimator's is the live __dict__ itself, and the pops below must not take
        # the engine, the lock (another thread may hold it) or the profile from this estimator.
        state = dict(super().__getstate__())
        state.pop("_engine_cache", None)  # native engines hold threads and handles
        state.pop("_update_lock", None)  # a lock is per process; _serialized makes a new one
        state.pop("profile_", None)  # a live C++ profiler
        return state

    def _profiling(self, *, restart: bool):
        """With ``profile=True``, activate ``profile_`` (a new one when ``restart``)."""
        if not self.profile:
            return _NOT_PROFILING

        if restart or getattr(self, "profile_", None) is None:
            self.profile_ = profile()
        return self.profile_

    def _start_trace(self, *, restart: bool) -> None:
        """With ``trace=True``, the ``trace_`` to record into (a new one when ``restart``)."""
        if not self.trace:
            if restart:
                self.__dict__.pop("trace_", None)
            return
        if restart or self.__dict__.get("trace_") is None:
            self.trace_ = Trace()

    def _update(self, engine, state, X, y, w, config):
        """``engine.update``, traced with ``trace=True`` or inside ``rhuber.trace()``
        (docs/tracing.md); otherwise the call alone."""
        sinks = _active_traces()
        if self.trace:
            sinks = (self.trace_, *sinks)
        if not sinks:
            return engine.update(state, X, y, w, config)

        return traced_update(engine, state, X, y, w, config, sinks, owner=self)

    def _json_params(self) -> dict[str, Any]:
        """get_params() as JSON takes it: a Plan as its id (the estimator takes either)."""
        params = self.get_params()
        if isinstance(params["plan"], Plan):
            params["plan"] = params["plan"].id
        return params

    def _threads(self) -> int | None:
        """n_jobs as a thread count; None: all cores."""
        return dispatch.threads(self.n_jobs)

    def _plan(self) -> Plan | None:
        """The plan of the next batch (:func:`dispatch.plan_for`); None: ``backend`` and
        ``n_jobs`` decide."""
        return dispatch.plan_for(self, self.__dict__.get("_session"))

    def _start_session(self, X: Any, y: Any, batches: int | None = None) -> None:
        """Decide this stream's plan from its first batch ``X``, ``y`` (``plan_``)."""
        self._session = dispatch.start(self, X, batches, y)

    def _observe(self, X: Any, y: Any, seconds: float, backend: str) -> None:
        """Time one batch ``X``, ``y`` that ran on ``backend``: the advisor's evidence (which may
        change the plan of the next batch), and online learning's data."""
        if self.profile and _online().enabled():
            plan = self._plan() or Plan(backend, **({"threads": self._threads(),
                                                     "l1_solver": self._config().l1_solver}
                                                    if backend == "native_cpu" else {}))
            workload = dispatch.batch_workload(self, X, self.__dict__.get("_session"))
            _online().record_batch(workload, plan.resolved(), seconds, self.profile_)
        self._session = dispatch.observe(self, self._session, X, y, seconds)

    @property
    def plan_(self) -> PlanReport:
        """The session's report, made when asked for rather than after every batch (a few µs
        that the first batches of every stream would pay); undefined before the first batch."""
        session = self.__dict__.get("_session")
        if session is None or "_fitted" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute 'plan_'")
        return session.report()

    def _engine_settings(self, plan: Plan | None) -> tuple[str, int | None, int | None,
                                                           str | None, int | None]:
        """What the engine is built from under ``plan``: backend, device, threads, gram,
        chunk_kib."""
        if plan is None:
            return (self.backend, self.device, self._threads(), None, None)
        return (plan.backend, self.device, plan.threads, plan.gram, plan.chunk_kib)

    def _config(self, plan: Plan | None = ...) -> Config:
        """The Config of the next batch under ``plan`` (default, ``...``: :meth:`_plan`'s).
        Remembered while its inputs are the very same objects: building the frozen dataclass
        costs ~3 µs a batch."""
        if plan is ...:
            plan = self._plan()
        key = (*_config_values(self.__dict__),
               self.l1_solver if plan is None else plan.l1_solver)
        cached = self.__dict__.get("_config_cache")
        if cached is None or not all(map(operator.is_, key, cached[0])):
            (fit_intercept, epsilon, tau, alpha, ridge, max_iter, tol, lambda_scale, curvature,
             bandwidth_scale, inference_matrices, half_life, factorization, l1_solver) = key
            cached = self._config_cache = (key, Config(
                fit_intercept=bool(fit_intercept), epsilon=epsilon, tau=tau, alpha=alpha,
                ridge=ridge, max_iter=max_iter, tol=tol, l1_solver=l1_solver,
                lambda_scale=lambda_scale, curvature=curvature,
                bandwidth_scale=bandwidth_scale, inference_matrices=bool(inference_matrices),
                half_life=half_life, factorization=factorization))
        return cached[1]

    def _engine(self, plan: Plan | None = ...):
        """The engine under ``plan`` (default, ``...``: :meth:`_plan`'s), made once per
        settings."""
        key = self._engine_settings(self._plan() if plan is ... else plan)
        cached = self.__dict__.get("_engine_cache")
        if cached is None or cached[0] != key:
            backend, device, threads, gram, chunk_kib = key
            _check_device(self.backend, backend, device)
            self._engine_cache = (key, make_engine(backend, device, threads=threads, gram=gram,
                                                   chunk_kib=chunk_kib))
        return self._engine_cache[1]

    def _validate_params(self) -> None:
        """scikit-learn's validation, after refusing booleans for numbers: its intervals take
        True for 1 (bool is an Integral), which would reach the engines as a number. Parameter
        values (with their types) that passed are remembered per class: every fresh estimator
        would otherwise pay ~0.35 ms (inspect.signature, the constraints) on its first call."""
        key = _validation_key(self)
        passed = _VALID_PARAMETERS.setdefault(type(self), set())
        if key is not None and key in passed:
            return
        for name in _NUMERIC_PARAMETERS:
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)):
                raise InvalidParameterError(
                    f"The {name!r} parameter of {type(self).__name__} must be a number, not "
                    f"the boolean {value!r}")
        super()._validate_params()
        if key is not None:
            if len(passed) >= _MAX_VALID_PARAMETERS:
                passed.clear()
            passed.add(key)

    def _validate_changed_params(self) -> None:
        """_validate_params, skipped while the parameters are the ones last validated: they
        may change between batches, but scikit-learn's validation costs ~0.2 ms, a quarter of
        a small batch. Unchanged means the very same objects, or equal values of the same
        types (1, 1.0 and True are equal but not equally valid)."""
        try:
            values = _parameter_values(type(self))(self.__dict__)
        except KeyError:  # a parameter attribute deleted: get_params' error, as ever
            values = None
        validated = self.__dict__.get("_validated_parameters")
        if values is not None and validated is not None and (
                all(map(operator.is_, values, validated)) or (
                    values == validated
                    and tuple(map(type, values)) == tuple(map(type, validated)))):
            return
        self._validate_params()
        self._validated_parameters = values

    def _validate_batch(self, X, y, sample_weight, *, reset: bool, plain: bool = False):
        """The batch checked and converted once — shape, dtype, layout, feature names and
        ``n_features_in_`` (set on ``reset``) — its values left to the engine's scan when
        ``plain`` (:meth:`_plain_batch`), else validate_data's, which checks them too."""
        if plain:
            if reset:
                self.n_features_in_ = X.shape[1]
                self.__dict__.pop("feature_names_in_", None)
            return X, y, _checked_weight(sample_weight, X)
        if self._engine_settings(self._plan())[0] == "cuda" and \
                any(map(is_device_tensor, (X, y, sample_weight))):
            return self._validate_device_batch(X, y, sample_weight, reset=reset)
        names = table_column_names(X) if is_table_like(X) else None
        X = as_host_input(X, "X")
        y = as_host_input(y, "y")
        sample_weight = as_host_input(sample_weight, "sample_weight")
        dtype = [np.float64, np.float32] if reset else self._state.dtype
        with _named_columns(self, names, reset=reset):
            try:
                X, y = validate_data(self, X, y, reset=reset, dtype=dtype, y_numeric=True)
            except ValueError as exc:
                raise _located(exc, X, y, names) from None
        return X, y, _checked_weight(sample_weight, X)

    def _plain_batch(self, X: Any, y: Any, sample_weight: Any) -> bool:
        """Whether a batch is the common case that validate_data would pass unchanged if its
        values are finite: C-contiguous ndarrays of the stream's dtype and width (a stream's
        first batch: float64 or float32, any width), y 1-D of matching length, no feature names
        expected. Such a batch skips validate_data's ~0.5 ms of generality (dataframe probes,
        two check_arrays; ~70 ms of plugin discovery on a process's first call); the engines
        scan its values in their first pass (they refuse NaN and infinity themselves), and
        should one refuse the batch, validate_data runs to give its own error
        (:meth:`_raise_validation_error`). Anything else takes validate_data's path, so every
        bad input keeps its error."""
        if type(X) is not np.ndarray or type(y) is not np.ndarray or X.ndim != 2:
            return False
        fitted = self.__dict__.get("_fitted")
        if fitted is None:
            dtype, width = X.dtype, X.shape[1]
            if dtype not in _STREAM_DTYPES:
                return False
        elif "feature_names_in_" in self.__dict__:
            return False
        else:
            dtype, width = fitted.state.dtype, self.n_features_in_
        return (y.ndim == 1 and X.dtype == dtype and y.dtype == dtype
                and X.flags.c_contiguous and 0 < X.shape[0] == y.shape[0]
                and 0 < X.shape[1] == width
                and (sample_weight is None or type(sample_weight) is np.ndarray))

    def _raise_validation_error(self, X: Any, y: Any, *, reset: bool) -> None:
        """Raise validate_data's error for a plain batch an engine refused, if it has one."""
        dtype = [np.float64, np.float32] if reset else self._state.dtype
        try:
            validate_data(self, X, y, reset=reset, dtype=dtype, y_numeric=True)
        except ValueError as exc:
            raise _located(exc, X, y, None) from None

    def _validate_device_batch(self, X, y, sample_weight, *, reset: bool):
        """Device tensors go to the CUDA engine untouched (it checks values on the device and
        refuses a wrong dtype, layout or device); only the feature count is checked here."""
        if len(getattr(X, "shape", ())) != 2:
            raise ValueError(f"X must be a 2-D tensor (n_samples, n_features), got {X!r:.80}")
        n_features = int(X.shape[1])
        if reset:
            self.n_features_in_ = n_features
            self.__dict__.pop("feature_names_in_", None)
        elif n_features != self.n_features_in_:
            raise ValueError(f"X has {n_features} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input.")
        return X, y, sample_weight

    def _reset(self) -> None:
        for name in _STREAM_ATTRIBUTES:
            self.__dict__.pop(name, None)

    def _commit(self, state: State, backend: str, *,
                history: list[dict] | History | None = None,
                appended: dict | None = None) -> None:
        """Publish ``state`` as the stream's one snapshot (``_Fitted``), made whole before it
        replaces the last. ``history``: the diagnostics it publishes (a new one); None goes on
        with the current snapshot's, ``appended`` (a batch's diagnostics) last."""
        if history is None:
            history = self.__dict__["_fitted"].history
        elif not isinstance(history, History):
            history = History.of(history)
        fit_intercept = bool(self.fit_intercept)
        coef = to_host(state.coef)
        p = self.n_features_in_
        features, information = coef[:p].copy(), to_host(state.information).copy()
        if appended is not None:  # nothing can fail any more: older snapshots keep their count
            history = history.appended(appended)
        self._fitted = _Fitted(state, fit_intercept, features,
                               coef[p] if fit_intercept else 0.0,  # a scalar of the dtype
                               information, backend, history)

    def _published(self, name: str) -> _Fitted:
        """The snapshot a fitted attribute ``name`` is read from; AttributeError before fit."""
        fitted = self.__dict__.get("_fitted")
        if fitted is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return fitted

    def __sklearn_is_fitted__(self) -> bool:
        return "_fitted" in self.__dict__

    @property
    def coef_(self) -> np.ndarray:
        return self._published("coef_").coef

    @property
    def intercept_(self) -> Any:
        return self._published("intercept_").intercept

    @property
    def scale_(self) -> float:
        return float(self._published("scale_").state.scale)

    @property
    def n_samples_seen_(self) -> int:
        return int(self._published("n_samples_seen_").state.n_samples_seen)

    @property
    def n_batches_(self) -> int:
        return int(self._published("n_batches_").state.batch_count)

    @property
    def effective_weight_(self) -> float:
        return float(self._published("effective_weight_").state.effective_weight)

    @property
    def previous_lambda_(self) -> float:
        return float(self._published("previous_lambda_").state.previous_lambda)

    @property
    def information_(self) -> np.ndarray:
        return self._published("information_").information

    @property
    def n_iter_(self) -> int:
        last = self._published("n_iter_").history.last()
        return 0 if last is None else int(last["n_iter"])

    @property
    def diagnostics_(self) -> list[dict]:
        return self._published("diagnostics_").history.latest()

    @diagnostics_.setter
    def diagnostics_(self, history: list[dict]) -> None:
        # rhuber.dask hands each task a copy whose history starts empty, and joins theirs.
        self._fitted = self._published("diagnostics_")._replace(history=History.of(history))

    @property
    def backend_(self) -> str:
        return self._published("backend_").backend

    @property
    def _state(self) -> State:
        return self._published("_state").state

    @property
    def _fitted_intercept(self) -> bool:
        return self._published("_fitted_intercept").fit_intercept

    def _adopt(self, payload: dict[str, Any]) -> None:
        self._reset()
        self.fit_intercept = payload["fit_intercept"]
        self.n_features_in_ = payload["n_features_in"]
        if "feature_names_in" in payload:
            self.feature_names_in_ = payload["feature_names_in"]
        state = State(**{k: payload[k] for k in (
            "coef", "information", "n_samples_seen", "effective_weight", "batch_count",
            "previous_lambda", "scale", "score_sq_sum", "curvature_sum", "curvature_sq_sum",
            "inference_weight", "inference_batches", "gram", "score_gram",
            "information_factor", "information_vector")})
        # The stream continues in this estimator's factorization: a Cholesky-mode state as
        # R̃ = chol(J̃) (a ValueError when J̃ has none), a qr state as J̃ = R̃ᵀR̃.
        state = in_mode(state, self.factorization)
        self._commit(state, self._engine().name, history=[])
        self._loaded_params = dict(payload["params"])  # what the loaded batches ran with

    def _warn_if_interpolated(self, X: Any, w: Any) -> None:
        """An :class:`InterpolatedBatchWarning` where the stream's first batch ``X`` (weights
        ``w``) had no more rows of positive weight than coefficients and τ adapts: the fit
        interpolates them, so the scale is rounding (~1e-16 of y's) or, residuals exactly 0,
        the pilot's scale of y — either way not the noise's, and nothing else says so."""
        if self.tau is not None:
            return
        rows = X.shape[0] if w is None else int((w > 0).sum())
        coefficients = X.shape[1] + int(bool(self.fit_intercept))
        if rows <= coefficients:
            warnings.warn(
                f"batch 1 has {rows} row{'s' * (rows != 1)} of positive weight for "
                f"{coefficients} coefficients: its fit passes through them, so its residuals "
                "are zero up to rounding and say nothing of the noise; the scale and tau taken "
                "from them are not the noise's, and which rows count as inside tau is arbitrary. "
                "Start the stream with a batch of more rows than coefficients, or fix tau.",
                InterpolatedBatchWarning, stacklevel=3)

    def _coefficient_size(self) -> float:
        """‖β‖∞ of the fitted coefficients, the intercept's included."""
        return coefficient_size(np.append(to_host(self.coef_), float(self.intercept_)))

    @staticmethod
    def _lamm_stopped_short(stationarity_step: float, beta: Any, config: Config) -> bool:
        """lamm_stopped_short for a batch's new coefficients ``beta`` (the intercept's among
        them) and the tolerance ``config`` resolves for their dtype."""
        beta = np.asarray(to_host(beta))
        return lamm_stopped_short(stationarity_step, coefficient_size(beta),
                                  config.resolved_tol(beta.dtype))

    def _warn_about(self, diagnostics: list[dict], first_batch: int = 1) -> None:
        """At most one warning of each kind per batch: not converged (or LAMM stopped short of
        the minimizer), ill-conditioned, drift (below ``drift_alpha``)."""
        dtype = self.coef_.dtype
        for k, diag in enumerate(diagnostics, start=first_batch):
            if self.drift_alpha is not None and diag.get("drift_pvalue", math.nan) < \
                    self.drift_alpha:
                warnings.warn(drift_message(k, diag, self.drift_alpha), DriftWarning,
                              stacklevel=3)
            if ill_conditioned(diag["rcond"], dtype):
                warnings.warn(ill_conditioning_message(k, diag, dtype, self.factorization),
                              IllConditionedWarning, stacklevel=3)
            step = diag.get("stationarity_step", math.nan)
            if diag["converged"] and not math.isnan(step):  # LAMM's: read only then
                config = self._config()
                tol, size = config.resolved_tol(dtype), self._coefficient_size()
                if lamm_stopped_short(step, size, tol):
                    warnings.warn(stopped_short_message(k, diag, tol, size,
                                                        config.l1_solver == "prox_newton"),
                                  ConvergenceWarning, stacklevel=3)
            if not diag["converged"]:
                lamm = diag["lambda"] > 0 and self._config().l1_solver == "lamm"
                warnings.warn(not_converged_message(k, diag, self.max_iter, lamm, dtype),
                              ConvergenceWarning, stacklevel=3)


#: How far past tol (times max(1, ‖β‖∞)) LAMM's stationarity step may be at a converged batch
#: before the estimate is said not to be the minimizer. Measured (native_cpu, 20,000 × 10, four
#: batches, alpha=0.01): on standardized columns it is 0.3-1 times that bound (φ is about every
#: coefficient's own curvature); with column scales 1 … 4 about 15 (the estimate 4-7 tols off
#: proximal Newton's), 1 … 10 50-2,000 (15-500 tols off), 1 … 30 2,000-3.5e7. It overstates the
#: error 2-10 times there; at 100 the estimate is off by more than an order of magnitude of tol.
STOPPED_SHORT_FACTOR = 100.0


def coefficient_size(beta: Any) -> float:
    """‖β‖∞ of host coefficients (0 for none): the scale of the step rule's bound."""
    # Python's max over the list: a third of NumPy's reduction's cost on a few coefficients.
    return max(map(abs, np.asarray(beta, dtype=np.float64).ravel().tolist()), default=0.0)


def lamm_stopped_short(stationarity_step: float, beta_size: float, tol: float) -> bool:
    """Whether a LAMM solve that met the contract's step rule stopped away from the minimizer:
    its stationarity step (Diagnostics.stationarity_step: a Newton step along each coefficient
    on its last gradient mapping) is over STOPPED_SHORT_FACTOR · tol · max(1, ``beta_size``),
    ``beta_size`` = ‖β‖∞ with the intercept. False where there is none (NaN: not LAMM)."""
    return bool(stationarity_step > STOPPED_SHORT_FACTOR * tol * max(1.0, beta_size))


def not_converged_message(batch: int, diag: dict, max_iter: int, lamm: bool,
                          dtype: Any) -> str:
    """What a ConvergenceWarning says of a batch that did not converge: it ran out of
    ``max_iter``, or (fewer iterations than that over all its solves) its search found no step
    that lowers the objective, which the contract also reports as not converged."""
    objective = f"objective {diag['objective']:.6g}"
    if diag["n_iter"] < max_iter:
        return (f"batch {batch} stopped after {diag['n_iter']} iterations without meeting tol "
                f"({objective}): the {'majorization' if lamm else 'line search'} found no step "
                "that lowers the objective measurably, so the last steps were at the objective's "
                "rounding; the last iterate was kept. An ill-conditioned design (see any "
                "IllConditionedWarning) is the usual cause" + (
                    ": float32 reaches that rounding long before tol, and float64 input "
                    "resolves more" if np.dtype(dtype) == np.float32 else "") + ".")
    return (f"batch {batch} did not converge within max_iter={max_iter} iterations ({objective}); "
            "the last iterate was kept. Increase max_iter or tol" + (
                ", or solve it with l1_solver='prox_newton' (backend='native_cpu'): LAMM's rate "
                "follows the design's conditioning, and columns of very different scales or far "
                "from centred can need many times max_iter (backend='auto' switches by itself)"
                if lamm else "") + ".")


def stopped_short_message(batch: int, diag: dict, tol: float, beta_size: float,
                          after_prox_newton: bool = False) -> str:
    """What a ConvergenceWarning says of a LAMM batch that stopped short (lamm_stopped_short);
    ``after_prox_newton``: l1_solver='prox_newton' was asked for, whose model gave no descending
    step, so LAMM finished the batch from there."""
    head = f"batch {batch}: " + ("proximal Newton's model gave no step that lowers the objective "
                                 "(a direction without curvature, or the objective's rounding), "
                                 "so LAMM went on from there; it " if after_prox_newton else
                                 "LAMM ")
    advice = ("Standardize X (LAMM's step then suits every column), and look for columns whose "
              "nonzero rows all lie outside tau: they give the Newton model no curvature"
              if after_prox_newton else
              "Standardize X, or solve with l1_solver='prox_newton' (backend='native_cpu'); "
              "backend='auto' switches by itself")
    return (head + "met its step rule (the last step within tol="
            f"{tol:g} of the coefficients' size) but did not reach the minimizer: a Newton step "
            "along each coefficient would still move one by "
            f"{diag['stationarity_step']:.3g}, "
            f"{diag['stationarity_step'] / (tol * max(1.0, beta_size)):.3g} times that bound. "
            "LAMM's step is set for the largest columns, so on columns of very different "
            f"scales it becomes negligible long before the estimate converges. {advice}.")


def drift_message(batch: int, diag: dict, drift_alpha: float) -> str:
    """What a DriftWarning says about one batch."""
    return (f"batch {batch}: the drift test rejects the history's model (p = "
            f"{diag['drift_pvalue']:.3g} < drift_alpha = {drift_alpha:g}; T = "
            f"{diag['drift_statistic']:.4g} on {diag['drift_df']:g} df): the coefficients may "
            "have changed. Consider half_life to track them (docs/drift.md).")


def _effective_weight_line(state: State, half_life: float | None) -> str:
    """What the summary says of the weight the estimate rests on."""
    weight = f"{float(state.effective_weight):,.6g}"
    if half_life is None:
        return f"{weight} (no forgetting)"
    return f"{weight} (forgetting, half_life = {half_life:g})"


@functools.cache
def _parameter_values(cls: type) -> Any:
    """The parameter values of an estimator of ``cls``, from its __dict__: what
    _validate_changed_params compares and _validate_params remembers."""
    return operator.itemgetter(*cls._get_param_names())


def _validation_key(estimator: Any) -> tuple | None:
    """The parameters of ``estimator`` as _validate_params remembers them: values and types
    (1, 1.0 and True are equal but not equally valid); None when one is missing or unhashable."""
    try:
        values = _parameter_values(type(estimator))(estimator.__dict__)
        key = (values, tuple(map(type, values)))
        hash(key)
    except (KeyError, TypeError):
        return None
    return key


#: Parameter values that passed _validate_params, per class (_validation_key).
_VALID_PARAMETERS: dict[type, set] = {}
_MAX_VALID_PARAMETERS = 1024

#: The dtypes a stream computes in; a first batch of another takes validate_data's path.
_STREAM_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))

#: The parameters a Config is made of (what _config compares).
_config_values = operator.itemgetter("fit_intercept", "epsilon", "tau", "alpha", "ridge",
                                     "max_iter", "tol", "lambda_scale", "curvature",
                                     "bandwidth_scale", "inference_matrices", "half_life",
                                     "factorization")

#: The parameters' defaults.
_DEFAULTS = RenewableHuberRegressor().get_params()

#: The parameters that take numbers, where a boolean is refused (_validate_params).
_NUMERIC_PARAMETERS = tuple(
    name for name, constraints in RenewableHuberRegressor._parameter_constraints.items()
    if any(isinstance(c, Interval) for c in constraints))

#: What _profiling returns without profile=True (a nullcontext holds no state: one serves all).
_NOT_PROFILING = nullcontext()


class _Transaction:
    """On any error restore every attribute of ``estimator``: an update either happens whole or
    not at all. A class rather than a @contextmanager generator, which costs a few µs more a
    batch."""

    __slots__ = ("_estimator", "_saved")

    def __init__(self, estimator: Any) -> None:
        self._estimator = estimator
        self._saved = estimator.__dict__.copy()

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> bool:
        if kind is not None:
            attributes = self._estimator.__dict__
            attributes.clear()
            attributes.update(self._saved)
        return False


@contextmanager
def _named_columns(estimator: RenewableHuberRegressor, names: np.ndarray | None, *,
                   reset: bool):
    """Feature names for a table-like X (adapters.is_table_like), which reaches validate_data as
    a bare array: checked against ``feature_names_in_`` as scikit-learn checks a DataFrame's,
    and kept on ``reset``. Nothing to do without names."""
    if names is None:
        yield
        return
    fitted = estimator.__dict__.get("feature_names_in_")
    if not reset:
        if fitted is None:
            warnings.warn(f"X has feature names, but {type(estimator).__name__} was fitted "
                          "without feature names", UserWarning, stacklevel=4)
        elif len(fitted) != len(names) or not np.array_equal(fitted, names):
            raise ValueError(f"The feature names should match those that were passed during "
                             f"fit: X has {list(names)}, the model was fitted with "
                             f"{list(fitted)}")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="X does not have valid feature names")
        yield
    if reset:
        estimator.feature_names_in_ = names


#: Words of validate_data's errors about values that are not finite real numbers.
_VALUE_ERRORS = ("NaN", "infinity", "could not convert", "too large")


def _located(exc: ValueError, X: Any, y: Any, names: np.ndarray | None, *,
             weight: Any = None) -> ValueError:
    """validate_data's error about a NaN, an infinity or a string, replaced by one that names
    the row and the column of the first such value (rows and columns from 0); any other error
    as it is."""
    if not any(word in str(exc) for word in _VALUE_ERRORS):
        return exc
    for label, values, columns in (("X", X, names), ("y", y, None),
                                   ("sample_weight", weight, None)):
        if values is None:
            continue
        where = first_unusable_value(values, _column_names(values) if columns is None
                                     and label == "X" else columns)
        if where is not None:
            return ValueError(f"{label} must hold finite real numbers (no NaN, infinity or "
                              f"text): {where}. Drop or impute such rows before fitting or "
                              "predicting")
    return exc


def _column_names(X: Any) -> list[str] | None:
    """A DataFrame's column names, for error messages."""
    columns = getattr(X, "columns", None)
    try:
        return None if columns is None else [str(c) for c in columns]
    except TypeError:
        return None


def _without_zero_weights(X: Any, y: Any, w: Any) -> tuple[tuple[Any, Any, Any], int]:
    """The batch without its rows of weight 0, and how many those were. Such a row adds exact
    zeros to every sum, but where it stands changes how BLAS and NumPy group the other rows'
    terms, and so their rounding; on rank-deficient data with ridge > 0 the Newton system
    multiplies that rounding by 1/ridge in the directions no row determines, which is where
    predictions at other rows look. Removed, the rows give exactly what leaving them out gives
    (scikit-learn's check_sample_weight_equivalence). Host arrays only; a batch with a
    negative or non-finite weight, or none positive, goes to the engine whole, which names the
    bad entry by its index in the batch."""
    if type(w) is not np.ndarray or w.all():
        return (X, y, w), 0
    keep = w != 0
    if not keep.any() or not np.isfinite(w).all() or w.min() < 0:
        return (X, y, w), 0
    return (X[keep], y[keep], w[keep]), int(w.shape[0] - np.count_nonzero(keep))


def _converted(payload: dict[str, Any], dtype: Any) -> dict[str, Any]:
    """A checked checkpoint payload with its state in ``dtype`` (float32 or float64)."""
    try:
        target = np.dtype(dtype)
    except TypeError as exc:
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}") from exc
    if target not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    out = dict(payload, dtype=target.name)
    for key in ("coef", "information", "gram", "score_gram", "information_factor",
                "information_vector"):
        if out.get(key) is not None:
            with np.errstate(over="ignore"):
                out[key] = out[key].astype(target)
            if not np.all(np.isfinite(out[key])):
                raise CheckpointError(f"the checkpoint's '{key}' does not fit in {target.name} "
                                      "(it overflows); keep the stream in float64")
    return out


def _check_device(asked: str, backend: str, device: int | None) -> None:
    """A CUDA device ordinal is meaningful only to the cuda engine: a host engine given one
    would fit on the host while the caller expects the device."""
    if device is None or backend == "cuda":
        return
    host = "native_cpu" if backend == "auto" and native_cpu_available() else backend
    chose = f"backend={asked!r} runs {host}" if asked != host else f"backend={host!r}"
    raise ValueError(f"device={device} names a CUDA device, but {chose}, which computes on the "
                     "host: use backend='cuda' for the device, or device=None")


def _checked_weight(sample_weight: Any, X: np.ndarray) -> Any:
    """sample_weight as X's dtype; a NaN, infinity or text in it named by its row. Signs are
    the engines' to check, in their first pass, alike on every engine."""
    if sample_weight is None:
        return None
    try:
        return _check_sample_weight(sample_weight, X, dtype=X.dtype)
    except ValueError as exc:
        raise _located(exc, None, None, None, weight=sample_weight) from None


def _online() -> Any:
    """The tuner's online learning (its store and models), imported by a profiled stream only."""
    from .tuner import online

    return online
