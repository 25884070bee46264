"""Shared by the native CPU engine's tests: the module (or a skip), and conversions between the
reference engine's State/Config and the dicts the binding takes."""

from __future__ import annotations

import numpy as np

from helpers import require_module
from renewable_huber.core import Config, State

native = require_module("_renewable_huber_native_cpu", "renewable-huber-native-cpu")


def empty_state(d: int, dtype) -> dict:
    return state_dict(State.empty(d, dtype))


def state_dict(state: State) -> dict:
    return {
        "coef": np.ascontiguousarray(state.coef),
        "information": np.ascontiguousarray(state.information),
        "n_samples_seen": int(state.n_samples_seen),
        "effective_weight": float(state.effective_weight),
        "batch_count": int(state.batch_count),
        "previous_lambda": float(state.previous_lambda),
        "scale": float(state.scale),
    }


def config_dict(config: Config, dtype) -> dict:
    return {
        "fit_intercept": bool(config.fit_intercept),
        "epsilon": float(config.epsilon),
        "tau": None if config.tau is None else float(config.tau),
        "alpha": float(config.alpha),
        "ridge": float(config.ridge),
        "max_iter": int(config.max_iter),
        "tol": config.resolved_tol(np.dtype(dtype)),
        "l1_solver": config.l1_solver,
    }


def batch(seed: int, n: int, p: int, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ np.linspace(-1.0, 2.0, p) + 0.5 + rng.standard_t(3, size=n)
    return X.astype(dtype), y.astype(dtype), np.ones(n, dtype=dtype)
