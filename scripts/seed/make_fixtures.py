#!/usr/bin/env python
"""Write the seed checkpoints of tests/fixtures/seed/ with the seed system itself.

Run once with the seed's venv (``make seed-venv``)::

    .venv-seed/bin/python scripts/seed/make_fixtures.py tests/fixtures/seed

Each checkpoint is written by renewable-huber 0.7.1's own code: ``RenewableHuberRegressor.save``
(format 2), its ``write_checkpoint`` for a model with feature names (its estimator takes names
from pandas frames only, and pandas is not in that venv), and, for format 1, which no release on
PyPI writes any more (0.5.0, the last to, is not there), the members and metadata of 0.5.0's
``save_model`` written with NumPy, then read back by 0.7.1's ``load`` to prove it a seed
checkpoint. ``expected.json`` holds each one's probe rows and the seed's predictions on them.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
from renewable_huber import RenewableHuberRegressor, __version__
from renewable_huber.serialization import read_checkpoint, write_checkpoint


def _stream(rng: np.random.Generator, n: int, p: int, dtype: str, weighted: bool):
    X = rng.normal(size=(n, p)).astype(dtype)
    y = (X @ np.linspace(1.0, -1.0, p) + 0.5 + rng.standard_t(3, size=n)).astype(dtype)
    w = rng.integers(0, 4, size=n).astype(dtype) if weighted else None
    return X, y, w


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261201)
    expected = {"seed_version": __version__}
    cases = {
        "v2_weighted_f64": dict(tau=1.2, backend="numpy", dtype="float64"),
        "v2_l1_f32_no_intercept": dict(tau=1.345, penalty="l1", lambda_scale=0.5,
                                       fit_intercept=False, backend="native_cpu",
                                       dtype="float32"),
    }
    for name, config in cases.items():
        model = RenewableHuberRegressor(**config)
        dtype = config["dtype"]
        for _ in range(2):
            X, y, w = _stream(rng, 40, 3, dtype, name.startswith("v2_weighted"))
            model.partial_fit(X, y, sample_weight=w)
        model.save(out / f"{name}.npz")
        probe = rng.normal(size=(5, 3)).astype(dtype)
        expected[name] = {"probe": probe.tolist(),
                          "predictions": np.asarray(model.predict(probe)).tolist(),
                          "config": model.get_params()}

    # Feature names through the seed's own writer.
    source = read_checkpoint(out / "v2_weighted_f64.npz")
    named = dataclasses.replace(source, feature_names=["age", "dose", "weight"])
    write_checkpoint(named, out / "v2_feature_names_f64.npz")
    loaded = RenewableHuberRegressor.load(out / "v2_feature_names_f64.npz")
    assert list(loaded.feature_names_in_) == ["age", "dose", "weight"]
    expected["v2_feature_names_f64"] = {**expected["v2_weighted_f64"],
                                        "feature_names": ["age", "dose", "weight"]}

    # Format 1: 0.5.0's save_model members and metadata (no weight_sum, no feature names).
    model = RenewableHuberRegressor(tau=1.5, backend="numpy")
    X, y, _ = _stream(rng, 60, 4, "float64", False)
    model.partial_fit(X, y)
    state = model.state_
    metadata = {"format_version": 1, "config": model.get_params(),
                "n_samples_seen": state.n_samples_seen, "batch_count": state.batch_count,
                "previous_lambda": state.previous_lambda, "n_features_in": state.n_features_in,
                "fit_intercept": state.fit_intercept}
    with open(out / "v1_f64.npz", "wb") as f:
        np.savez_compressed(f, coefficients=state.coefficients, information=state.information,
                            metadata=np.asarray(json.dumps(metadata)))
    reread = RenewableHuberRegressor.load(out / "v1_f64.npz")
    assert reread.state_.effective_weight == 60.0
    probe = rng.normal(size=(5, 4))
    expected["v1_f64"] = {"probe": probe.tolist(),
                          "predictions": np.asarray(reread.predict(probe)).tolist(),
                          "config": model.get_params()}
    (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
