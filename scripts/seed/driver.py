#!/usr/bin/env python
"""Drive the seed system (``renewable-huber`` 0.7.1 on PyPI) from its own venv, ``.venv-seed``.

rhuber's tests and benchmark never import the seed package: they run this script with
``.venv-seed/bin/python`` (``make seed-venv``) and exchange plain files with it. It imports
nothing of rhuber's, only the seed package and NumPy.

``driver.py stream REQUEST.json``
    Feed batches to ``RenewableHuberRegressor(**config)`` one ``partial_fit`` at a time and
    write, after every batch, its state and diagnostics, and at the end its predictions on
    probe rows (and, if asked, a checkpoint through its public ``save``). REQUEST names an
    ``.npz`` of inputs (``X0``, ``y0``, optional ``w0``, ``X1``, ...; ``probe``) and an output
    ``.npz`` (``coef<b>``, ``information<b>``, ``predictions`` and ``records``: JSON).

``driver.py serve``
    Line-delimited JSON commands on stdin, one answer a line on stdout, for the benchmark:
    ``load`` (batches from an ``.npz``), ``warm_up``, ``cold`` and ``steady`` (one timed pass
    over the loaded batches, the garbage collector off, the clock around the ``partial_fit``
    loop only; ``steady`` restores the primed state with the public ``load`` outside it), and
    ``quit``.
"""

from __future__ import annotations

import gc
import json
import sys
import tempfile
import time
import warnings
from typing import Any

import numpy as np
from renewable_huber import RenewableHuberRegressor


def _batches(archive: Any) -> list[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    out = []
    b = 0
    while f"X{b}" in archive:
        w = archive.get(f"w{b}", None)
        out.append((archive[f"X{b}"], archive[f"y{b}"], w))
        b += 1
    return out


def _state_record(model: RenewableHuberRegressor) -> dict[str, Any]:
    state = model.state_
    diag = model.diagnostics_
    return {
        "n_samples_seen": int(state.n_samples_seen),
        "batch_count": int(state.batch_count),
        "previous_lambda": float(state.previous_lambda),
        "weight_sum": float(state.effective_weight),
        "iterations": int(diag.iterations),
        "converged": bool(diag.converged),
        "objective": float(diag.objective),
        "lambda_value": float(diag.lambda_value),
        "bandwidth": float(diag.bandwidth),
    }


def stream(request_path: str) -> None:
    with open(request_path) as f:
        request = json.load(f)
    model = RenewableHuberRegressor(**request["config"])
    out: dict[str, Any] = {}
    records = []
    with np.load(request["inputs"], allow_pickle=False) as archive:
        batches = _batches(archive)
        probe = archive.get("probe", None)
    for b, (X, y, w) in enumerate(batches):
        model.partial_fit(X, y, sample_weight=w)
        state = model.state_
        out[f"coef{b}"] = np.asarray(state.coefficients)
        out[f"information{b}"] = np.asarray(state.information)
        records.append(_state_record(model))
    if probe is not None:
        out["predictions"] = np.asarray(model.predict(probe))
    if request.get("checkpoint"):
        model.save(request["checkpoint"])
    out["records"] = np.asarray(json.dumps({"batches": records, "backend": model.backend_}))
    np.savez(request["output"], **out)


class _Server:
    def __init__(self) -> None:
        self.batches: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
        self.primed: str | None = None
        self.folder = tempfile.mkdtemp(prefix="seed-driver-")

    def load(self, path: str) -> dict[str, Any]:
        with np.load(path, allow_pickle=False) as archive:
            self.batches = [(np.ascontiguousarray(X), np.ascontiguousarray(y), w)
                            for X, y, w in _batches(archive)]
        self.primed = None
        return {"batches": len(self.batches)}

    def _pass(self, model: RenewableHuberRegressor, batches: list) -> dict[str, Any]:
        diagnostics = []
        enabled = gc.isenabled()
        gc.disable()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                for X, y, _ in batches:
                    model.partial_fit(X, y)
                    diagnostics.append(model.diagnostics_)  # an attribute read: no copy
                seconds = time.perf_counter() - start
        finally:
            if enabled:
                gc.enable()
        coef = np.asarray(model.state_.coefficients, dtype=np.float64)
        return {"seconds": seconds, "coef": coef.tolist(),
                "iterations": [int(d.iterations) for d in diagnostics],
                "converged": [bool(d.converged) for d in diagnostics],
                "lambdas": [float(d.lambda_value) for d in diagnostics],
                "backend": model.backend_}

    def warm_up(self, config: dict[str, Any]) -> dict[str, Any]:
        rows = min(2048, self.batches[0][0].shape[0])
        head = [(X[:rows], y[:rows], None) for X, y, _ in self.batches[:2]]
        self._pass(RenewableHuberRegressor(**config), head)
        return {}

    def cold(self, config: dict[str, Any], prime: bool) -> dict[str, Any]:
        model = RenewableHuberRegressor(**config)
        result = self._pass(model, self.batches)
        if prime:
            self.primed = str(model.save(f"{self.folder}/primed.npz"))
        return result

    def steady(self, config: dict[str, Any]) -> dict[str, Any]:
        if self.primed is None:
            raise RuntimeError("steady before a priming cold pass")
        model = RenewableHuberRegressor.load(self.primed, backend=config["backend"])
        # A prediction builds the restored estimator's engine outside the clock, as ours is
        # kept across a restore; the state is unchanged.
        model.predict(self.batches[0][0][:1])
        return self._pass(model, self.batches)


def serve() -> None:
    server = _Server()
    for line in sys.stdin:
        command = json.loads(line)
        op = command.pop("op")
        if op == "quit":
            break
        try:
            answer = {"ok": True, **getattr(server, op)(**command)}
        except Exception as exc:  # reported to the caller, who records the subject as failed
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "stream":
        stream(argv[1])
        return 0
    if argv == ["serve"]:
        serve()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
