"""Checkpoint format version 2: a ``.npz`` of plain arrays (never pickled), written atomically.

A checkpoint holds the state of method.md plus what the estimator needs to resume: its dtype,
intercept flag, feature count and names, and its parameters as JSON.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .errors import CheckpointError

FORMAT_VERSION = 2
STATE_KEYS = (
    "coef",
    "information",
    "n_samples_seen",
    "effective_weight",
    "batch_count",
    "previous_lambda",
    "scale",
)
REQUIRED_KEYS = (
    "format_version",
    *STATE_KEYS,
    "dtype",
    "fit_intercept",
    "n_features_in",
    "params",
    "library_version",
)
OPTIONAL_KEYS = ("feature_names_in",)


def write_checkpoint(path: str | os.PathLike, payload: dict[str, Any]) -> None:
    """Write ``payload`` to ``path`` atomically: a crash leaves the old file or the new one."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **{k: np.asarray(v) for k, v in payload.items()})
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # make the rename itself durable
    finally:
        os.close(dir_fd)


def read_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """Read and check a checkpoint; raise CheckpointError naming what is wrong."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            raw = {k: archive[k] for k in archive.files}
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError) as exc:
        raise CheckpointError(
            f"{path} is not a readable checkpoint (truncated or corrupted .npz): {exc}"
        ) from exc
    return validate_payload(raw, source=str(path))


def _scalar(raw: dict, key: str, kind: str, source: str) -> Any:
    a = raw[key]
    if a.shape != () or a.dtype.kind not in kind:
        raise CheckpointError(f"{source}: '{key}' must be a scalar of kind {kind!r}, got "
                              f"shape {a.shape} dtype {a.dtype}")
    return a.item()


def validate_payload(raw: dict[str, Any], source: str = "state_dict") -> dict[str, Any]:
    """Check every key, shape, dtype and value of a checkpoint or state_dict."""
    raw = {k: np.asarray(v) for k, v in raw.items()}
    missing = [k for k in REQUIRED_KEYS if k not in raw]
    if missing:
        raise CheckpointError(f"{source} is missing key(s): {', '.join(missing)}")
    unknown = sorted(set(raw) - set(REQUIRED_KEYS) - set(OPTIONAL_KEYS))
    if unknown:
        raise CheckpointError(f"{source} has unknown key(s): {', '.join(unknown)}")

    version = _scalar(raw, "format_version", "iu", source)
    if version != FORMAT_VERSION:
        raise CheckpointError(f"{source} has format_version {version}; this library reads "
                              f"version {FORMAT_VERSION}")
    dtype = str(raw["dtype"].item()) if raw["dtype"].shape == () else None
    if dtype not in ("float32", "float64"):
        raise CheckpointError(
            f"{source}: 'dtype' must be 'float32' or 'float64', got {raw['dtype']!r}"
        )
    fit_intercept = _scalar(raw, "fit_intercept", "b", source)
    n_features = _scalar(raw, "n_features_in", "iu", source)
    if n_features < 1:
        raise CheckpointError(f"{source}: 'n_features_in' must be >= 1, got {n_features}")
    d = n_features + int(fit_intercept)

    out: dict[str, Any] = {"format_version": version, "dtype": dtype,
                           "fit_intercept": bool(fit_intercept), "n_features_in": int(n_features)}
    for key, shape in (("coef", (d,)), ("information", (d, d))):
        a = raw[key]
        if a.shape != shape:
            raise CheckpointError(f"{source}: '{key}' must have shape {shape} for {n_features} "
                                  f"features{' plus an intercept' if fit_intercept else ''}, "
                                  f"got {a.shape}")
        if a.dtype != np.dtype(dtype):
            raise CheckpointError(
                f"{source}: '{key}' has dtype {a.dtype}, but 'dtype' says {dtype}"
            )
        if not np.all(np.isfinite(a)):
            raise CheckpointError(f"{source}: '{key}' contains non-finite values")
        out[key] = np.array(a, copy=True)

    for key in ("n_samples_seen", "batch_count"):
        value = _scalar(raw, key, "iu", source)
        if value < 0:
            raise CheckpointError(f"{source}: '{key}' must be >= 0, got {value}")
        out[key] = int(value)
    for key in ("effective_weight", "previous_lambda", "scale"):
        value = float(_scalar(raw, key, "fiu", source))
        if not np.isfinite(value) or value < 0:
            raise CheckpointError(f"{source}: '{key}' must be a finite number >= 0, got {value}")
        out[key] = value
    if (out["batch_count"] == 0) != (out["n_samples_seen"] == 0):
        raise CheckpointError(f"{source}: batch_count {out['batch_count']} and n_samples_seen "
                              f"{out['n_samples_seen']} are inconsistent")

    try:
        params = json.loads(str(raw["params"].item()))
    except (json.JSONDecodeError, ValueError) as exc:
        raise CheckpointError(f"{source}: 'params' is not valid JSON: {exc}") from exc
    if not isinstance(params, dict):
        raise CheckpointError(f"{source}: 'params' must be a JSON object")
    out["params"] = params
    out["library_version"] = str(raw["library_version"].item())

    if "feature_names_in" in raw:
        names = raw["feature_names_in"]
        if names.dtype.kind != "U" or names.shape != (n_features,):
            raise CheckpointError(f"{source}: 'feature_names_in' must be {n_features} unicode "
                                  f"strings, got shape {names.shape} dtype {names.dtype}")
        out["feature_names_in"] = names.astype(object)
    return out
