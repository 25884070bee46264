"""Shared by the native CPU engine's tests: the module (or a skip), and conversions between the
reference engine's State/Config and the dicts the binding takes."""

from __future__ import annotations

import numpy as np

from helpers import NATIVE_CPU, require_module
from rhuber.core import State
from rhuber.engines import native_state

native = require_module(*NATIVE_CPU)


def empty_state(d: int, dtype) -> dict:
    return state_dict(State.empty(d, dtype))


def state_dict(state: State) -> dict:
    """The binding's state dict, in the state's own dtype."""
    return native_state(state, state.coef.dtype)


def batch(seed: int, n: int, p: int, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ np.linspace(-1.0, 2.0, p) + 0.5 + rng.standard_t(3, size=n)
    return X.astype(dtype), y.astype(dtype), np.ones(n, dtype=dtype)
