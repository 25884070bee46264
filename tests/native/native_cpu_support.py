"""Shared by the native CPU engine's tests: the binding (or a skip), and a dict face over
NativeCpuEngine (the C ABI underneath) for the tests that compare states key by key."""

from __future__ import annotations

import dataclasses

import numpy as np

from helpers import NATIVE_CPU, require_module
from rhuber.core import Config, State
from rhuber.engines import NativeCpuEngine

native = require_module(*NATIVE_CPU)


def state_dict(state: State) -> dict:
    """A state's fields as a dict, arrays in the state's own dtype."""
    return {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}


def empty_state(d: int, dtype) -> dict:
    return state_dict(State.empty(d, dtype))


def diagnostics_dict(diag) -> dict:
    out = {f.name: getattr(diag, f.name) for f in dataclasses.fields(diag) if f.name != "extra"}
    out["lambda"] = out.pop("lambda_")
    return out


class Engine:
    """update(state dict, X, y, w, config dict or Config) -> (state dict, diagnostics dict)."""

    def __init__(self, threads: int = 0, gram: str = "incremental", chunk_bytes: int = 0):
        self.engine = NativeCpuEngine(native, threads=threads, gram=gram,
                                      chunk_bytes=chunk_bytes)

    def update(self, state: dict, X, y, w, config) -> tuple[dict, dict]:
        if isinstance(config, dict):
            config = Config(**config)
        out, diag = self.engine.update(State(**state), X, y, w, config)
        return state_dict(out), diagnostics_dict(diag)


def batch(seed: int, n: int, p: int, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ np.linspace(-1.0, 2.0, p) + 0.5 + rng.standard_t(3, size=n)
    return X.astype(dtype), y.astype(dtype), np.ones(n, dtype=dtype)
