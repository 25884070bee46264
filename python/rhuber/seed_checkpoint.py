"""Checkpoints of the seed system (``renewable-huber`` on PyPI), read as ours.

The seed writes an ``.npz`` of three members, loaded without pickle: ``coefficients`` (d),
``information`` (d × d), both in the dtype it computed in, and ``metadata``, a JSON text scalar
with ``format_version`` (1 or 2), ``config`` (its estimator's parameters), ``n_samples_seen``,
``batch_count``, ``previous_lambda``, ``n_features_in``, ``fit_intercept`` and, in version 2,
``weight_sum`` and ``feature_names_in`` (a list, or null). Its state is ours less the scale:
the coefficients (intercept last, as ours), the information (a sum over rows, not a mean, as
ours), the counters and the previous λ. :func:`convert` checks every member and field, says
which one is wrong with a :class:`~rhuber.errors.CheckpointError`, and returns the payload of
a format-2 checkpoint of ours; what it had to assume is said once in a
:class:`SeedCheckpointWarning`. The parameter mapping is docs/coming-from-renewable-huber.md.
"""

from __future__ import annotations

import json
import math
import sys
import warnings
from typing import Any

import numpy as np

from .errors import CheckpointError

#: The members of a seed checkpoint, every version.
SEED_MEMBERS = frozenset({"coefficients", "information", "metadata"})
SEED_VERSIONS = (1, 2)
#: The parameters of the seed's estimator (renewable-huber 0.7.1), as its config records them.
SEED_CONFIG_KEYS = frozenset({
    "tau", "penalty", "lambda_scale", "bandwidth_scale", "fit_intercept", "max_iter", "tol",
    "ridge", "backend", "device", "dtype", "n_jobs", "cuda_graphs", "cuda_fast_math"})
#: Our epsilon (method.md's default): with the seed's fixed tau, scale = tau / epsilon.
EPSILON = 1.345
#: Our checkpoint format this module produces (method.md: a format-2 payload always loads).
PAYLOAD_VERSION = 2


class SeedCheckpointWarning(UserWarning):
    """A checkpoint of the seed system was converted; the message says what was assumed."""


def is_seed_layout(raw: dict[str, Any]) -> bool:
    """Whether an archive's members are the seed's (a ``metadata`` member, and none of ours)."""
    return "metadata" in raw and "format_version" not in raw


def _field(meta: dict, key: str, source: str, check: Any, expected: str) -> Any:
    if key not in meta:
        raise CheckpointError(f"{source}: the seed checkpoint's metadata lacks '{key}'")
    value = meta[key]
    if not check(value):
        raise CheckpointError(f"{source}: the seed checkpoint's metadata '{key}' must be "
                              f"{expected}, got {value!r:.80}")
    return value


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**63


def _number(v: Any) -> bool:
    return (isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            and v >= 0)


def _metadata(raw: dict[str, Any], source: str) -> dict[str, Any]:
    a = raw["metadata"]
    if a.shape != () or a.dtype.kind != "U":
        raise CheckpointError(f"{source}: the seed checkpoint's 'metadata' must be a text "
                              f"scalar, got shape {a.shape} dtype {a.dtype}")
    # Bytes read as text can hold code points no Python string can (checkpoint.py, fuzz/).
    if np.any(np.ascontiguousarray(a).reshape(-1).view(np.uint32) > sys.maxunicode):
        raise CheckpointError(f"{source}: the seed checkpoint's 'metadata' is not valid Unicode")
    try:
        meta = json.loads(str(a.item()))
    except (ValueError, RecursionError) as exc:
        raise CheckpointError(f"{source}: the seed checkpoint's 'metadata' is not valid JSON: "
                              f"{exc}") from exc
    if not isinstance(meta, dict):
        raise CheckpointError(f"{source}: the seed checkpoint's 'metadata' must be a JSON object")
    return meta


def convert(raw: dict[str, Any], source: str) -> dict[str, Any]:
    """The format-2 payload of ours for the seed checkpoint ``raw`` (its members as arrays).

    Raises
    ------
    CheckpointError
        A member or metadata field is missing, of the wrong type or shape, or not finite, or
        the format version is not 1 or 2; the message names it.

    Warns
    -----
    SeedCheckpointWarning
        Always, once: what was converted and what had to be assumed.
    """
    raw = {k: np.asarray(v) for k, v in raw.items()}
    missing = sorted(SEED_MEMBERS - set(raw))
    if missing:
        raise CheckpointError(f"{source} looks like a seed (renewable-huber) checkpoint but "
                              f"lacks member(s): {', '.join(missing)}")
    unknown = sorted(set(raw) - SEED_MEMBERS)
    if unknown:
        raise CheckpointError(f"{source}: a seed (renewable-huber) checkpoint has no member(s) "
                              f"{', '.join(unknown)}")
    meta = _metadata(raw, source)
    version = _field(meta, "format_version", source, lambda v: v in SEED_VERSIONS
                     and not isinstance(v, bool), "1 or 2 (the seed's formats)")
    config = _field(meta, "config", source, lambda v: isinstance(v, dict), "a JSON object")
    fit_intercept = _field(meta, "fit_intercept", source, lambda v: isinstance(v, bool),
                           "true or false")
    n_features = _field(meta, "n_features_in", source, lambda v: _count(v) and v >= 1,
                        "an integer >= 1")
    n_seen = _field(meta, "n_samples_seen", source, _count, "an integer in [0, 2**63)")
    batches = _field(meta, "batch_count", source, _count, "an integer in [0, 2**63)")
    previous_lambda = float(_field(meta, "previous_lambda", source, _number,
                                   "a finite number >= 0"))
    notes = []
    if version == 1:
        if "weight_sum" in meta:
            raise CheckpointError(f"{source}: a version-1 seed checkpoint has no 'weight_sum'")
        weight = float(n_seen)
        notes.append("format 1 predates sample weights: effective_weight = n_samples_seen "
                     f"({n_seen}), unit weights assumed")
    else:
        weight = float(_field(meta, "weight_sum", source, _number, "a finite number >= 0"))
    if n_seen > 0 and weight == 0:
        raise CheckpointError(f"{source}: the seed checkpoint's 'weight_sum' is 0 after "
                              f"{n_seen} samples")

    unknown = sorted(set(config) - SEED_CONFIG_KEYS)
    if unknown:
        raise CheckpointError(f"{source}: the seed checkpoint's config names "
                              f"{', '.join(map(repr, unknown))}, which the seed's estimator "
                              "does not have (a damaged checkpoint, or another library's)")
    if "fit_intercept" in config and config["fit_intercept"] is not fit_intercept:
        raise CheckpointError(
            f"{source}: the seed checkpoint contradicts itself: its config says fit_intercept="
            f"{config['fit_intercept']!r}, its metadata (which shapes the coefficients) "
            f"fit_intercept={fit_intercept!r}")
    dtype = _field(config, "dtype", source, lambda v: v in ("float32", "float64"),
                   "'float32' or 'float64'")
    tau = float(_field(config, "tau", source, lambda v: _number(v) and v > 0,
                       "a finite number > 0"))
    penalty = _field(config, "penalty", source, lambda v: v in ("none", "l1"),
                     "'none' or 'l1'")
    d = n_features + int(fit_intercept)
    arrays = {}
    for member, key, shape in (("coefficients", "coef", (d,)),
                               ("information", "information", (d, d))):
        a = raw[member]
        if a.shape != shape:
            raise CheckpointError(
                f"{source}: the seed checkpoint's '{member}' must have shape {shape} for "
                f"{n_features} features{' plus an intercept' if fit_intercept else ''}, got "
                f"{a.shape}")
        if a.dtype.kind != "f":
            raise CheckpointError(f"{source}: the seed checkpoint's '{member}' must hold "
                                  f"floating-point numbers, got dtype {a.dtype}")
        if not np.all(np.isfinite(a)):
            raise CheckpointError(f"{source}: the seed checkpoint's '{member}' contains "
                                  "non-finite values")
        if a.dtype != np.dtype(dtype):
            notes.append(f"'{member}' stored as {a.dtype}, converted to the stream's {dtype}")
        arrays[key] = np.array(a, dtype=dtype)

    optional = {key: _field(config, key, source, check, expected) if key in config else default
                for key, default, check, expected in (
                    ("max_iter", None, lambda v: _count(v) and v >= 1, "an integer >= 1"),
                    ("tol", None, lambda v: _number(v) and v > 0, "a finite number > 0"),
                    ("lambda_scale", 1.0, _number, "a finite number >= 0"),
                    ("bandwidth_scale", 1.0, lambda v: _number(v) and v > 0,
                     "a finite number > 0"))}
    params: dict[str, Any] = {"fit_intercept": fit_intercept, "epsilon": EPSILON, "tau": tau,
                              "ridge": 0.0, "backend": "auto"}
    params.update({k: optional[k] for k in ("max_iter", "tol") if optional[k] is not None})
    if penalty == "l1":
        params["lambda_scale"] = optional["lambda_scale"]
        notes.append(f"penalty='l1' continues as lambda_scale={params['lambda_scale']} (the "
                     "seed's λ schedule) where this rhuber has it, else unpenalized")
    # With tau fixed our bandwidth is in y's units, as the seed's (method.md, contract v3).
    params["curvature"] = "smoothed"
    params["bandwidth_scale"] = float(optional["bandwidth_scale"])
    notes.append(f"the seed's smoothed information continues as curvature='smoothed', "
                 f"bandwidth_scale={params['bandwidth_scale']!r} where this rhuber has them")
    notes.append(f"scale = tau / epsilon = {tau} / {EPSILON} (the seed fixes tau and keeps no "
                 f"scale); ridge {config.get('ridge')!r} (the seed's, per unit of weight) not "
                 f"carried: it damps steps only; backend {config.get('backend')!r} -> 'auto'")
    if batches == 0 and n_seen != 0:
        raise CheckpointError(f"{source}: the seed checkpoint's batch_count 0 and "
                              f"n_samples_seen {n_seen} are inconsistent")

    out: dict[str, Any] = {
        "format_version": np.int64(PAYLOAD_VERSION),
        **arrays,
        "n_samples_seen": np.int64(n_seen),
        "effective_weight": np.float64(weight),
        "batch_count": np.int64(batches),
        "previous_lambda": np.float64(previous_lambda),
        "scale": np.float64(tau / EPSILON),
        "dtype": np.str_(dtype),
        "fit_intercept": np.bool_(fit_intercept),
        "n_features_in": np.int64(n_features),
        "params": np.str_(json.dumps(params, sort_keys=True)),
        "library_version": np.str_(f"renewable-huber checkpoint format {version} (converted)"),
    }
    names = meta.get("feature_names_in")
    if names is not None:
        if (not isinstance(names, list) or len(names) != n_features
                or not all(isinstance(n, str) for n in names)):
            raise CheckpointError(f"{source}: the seed checkpoint's 'feature_names_in' must be "
                                  f"null or a list of {n_features} strings")
        out["feature_names_in"] = np.asarray(names, dtype=str)
    warnings.warn(f"{source} is a renewable-huber (seed) checkpoint, format {version}: "
                  f"converted; assumed: {'; '.join(notes)}", SeedCheckpointWarning, stacklevel=4)
    return out
