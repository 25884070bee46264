"""Checkpoint format version 4: a ``.npz`` of plain arrays (never pickled), written atomically.

A checkpoint holds the state of method.md plus what the estimator needs to resume: its dtype,
intercept flag, feature count and names, and its parameters as JSON. Version 3 (contract v3)
adds the inference sums and, when the stream accumulates them, the matrices G and K; version 2
still loads, its inference sums zero: inference then covers only the batches after the load.
Version 4 (contract v4) adds the state's ``factorization``; a "qr" state also stores its
square-root information R̃ (``information_factor``) and z̃ (``information_vector``), and its
``information`` is R̃ᵀR̃. Versions 2 and 3 load as Cholesky-mode states.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from . import seed_checkpoint
from ._atomic import atomic_write
from .errors import CheckpointError

FORMAT_VERSION = 4
#: The versions this library reads (a version-2 checkpoint has no inference sums, versions 2
#: and 3 no factorization: they are Cholesky-mode states).
READABLE_VERSIONS = (2, 3, 4)
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
#: partitions_consumed: how many partitions of a Dask collection rhuber.dask.fit_stream
#: had fed into the state when it wrote the checkpoint (where resume=True continues).
OPTIONAL_KEYS = ("feature_names_in", "partitions_consumed")
#: Version 3: the inference sums (required) and matrices (optional, both or neither).
INFERENCE_KEYS = ("score_sq_sum", "curvature_sum", "curvature_sq_sum", "inference_weight",
                  "inference_batches")
INFERENCE_MATRIX_KEYS = ("gram", "score_gram")
#: Version 4: the factorization (required) and, for "qr", the square-root information. The
#: names are core.types.FACTORIZATIONS (this layer sits below core; a test keeps them equal).
FACTORIZATIONS = ("cholesky", "qr")
FACTOR_KEYS = ("information_factor", "information_vector")


def write_checkpoint(path: str | os.PathLike, payload: dict[str, Any]) -> None:
    """Write ``payload`` to ``path`` atomically (:mod:`rhuber._atomic`): a crash leaves the
    old file or the new one, and interrupted writes never pile up. A full disk raises an OSError
    saying so, with ``path`` as it was.
    """
    path = Path(path)
    try:
        with atomic_write(path, "wb") as f:
            np.savez(f, **{k: np.asarray(v) for k, v in payload.items()})
    except OSError as exc:
        if exc.errno in _DISK_FULL:
            raise OSError(exc.errno, f"cannot write the checkpoint {path}: the file system is "
                          f"full or the file size limit is reached ({os.strerror(exc.errno)}); "
                          "the previous checkpoint, if any, is intact") from exc
        raise


#: The errors of a write that found no room: no space, over RLIMIT_FSIZE, over quota.
_DISK_FULL = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}


def read_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """Read and check a checkpoint; raise CheckpointError naming what is wrong."""
    _require_archive(path)
    try:
        loaded = np.load(path, allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise CheckpointError(f"{path} holds a single .npy array, not a checkpoint (.npz)")
        with loaded as archive:
            raw = {k: archive[k] for k in archive.files}
    except (FileNotFoundError, CheckpointError):
        raise
    except Exception as exc:
        # NumPy's .npy header parser and zipfile raise a dozen kinds of error on damaged bytes
        # (ValueError, EOFError, zlib.error, TokenError, NotImplementedError, MemoryError for an
        # absurd shape, ...; fuzz/): each means the same thing here.
        raise CheckpointError(
            f"{path} is not a readable checkpoint (truncated or corrupted .npz): "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    if seed_checkpoint.is_seed_layout(raw):  # the seed system's format: converted, with a warning
        raw = seed_checkpoint.convert(raw, source=str(path))
    return validate_payload(raw, source=str(path))


#: How the files np.load reads begin: a zip archive (.npz) or a .npy array.
_MAGICS = (b"PK\x03\x04", b"PK\x05\x06", b"\x93NUMPY")


def _require_archive(path: str | os.PathLike) -> None:
    """Refuse a file that is no NumPy file at all before np.load reads it: np.load takes any
    other bytes for a pickle and answers with advice about allow_pickle."""
    if os.path.isdir(path):
        raise CheckpointError(f"{path} is a directory, not a checkpoint")
    with open(path, "rb") as f:  # a missing file: FileNotFoundError, as ever
        head = f.read(8)
    if not head.startswith(_MAGICS):
        raise CheckpointError(
            f"{path} is not a checkpoint: checkpoints are .npz archives (save_checkpoint, "
            f"rhuber fit -o), and this file begins {head!r}")


def _scalar(raw: dict, key: str, kind: str, source: str) -> Any:
    a = raw[key]
    if a.shape != () or a.dtype.kind not in kind:
        raise CheckpointError(f"{source}: '{key}' must be a scalar of kind {kind!r}, got "
                              f"shape {a.shape} dtype {a.dtype}")
    return a.item()


def _text(raw: dict, key: str, source: str) -> str:
    a = raw[key]
    if a.shape != () or a.dtype.kind != "U":
        raise CheckpointError(f"{source}: '{key}' must be a text scalar, got shape {a.shape} "
                              f"dtype {a.dtype}")
    return str(a.item())


def _inference_fields(raw: dict, version: int, dtype: str, d: int, batch_count: int,
                      source: str) -> dict[str, Any]:
    """The inference sums of a version-3 payload, checked; zero (covering no batch) for
    version 2."""
    out: dict[str, Any] = {k: 0.0 for k in INFERENCE_KEYS}
    out.update(inference_batches=0, gram=None, score_gram=None)
    if version < 3:
        return out
    for key in INFERENCE_KEYS[:-1]:
        value = float(_scalar(raw, key, "fiu", source))
        if not np.isfinite(value) or value < 0:
            raise CheckpointError(f"{source}: '{key}' must be a finite number >= 0, got {value}")
        out[key] = value
    covered = _scalar(raw, "inference_batches", "iu", source)
    if not 0 <= covered <= batch_count:
        raise CheckpointError(f"{source}: 'inference_batches' must be between 0 and "
                              f"batch_count {batch_count}, got {covered}")
    out["inference_batches"] = int(covered)
    present = [k for k in INFERENCE_MATRIX_KEYS if k in raw]
    if present and len(present) != len(INFERENCE_MATRIX_KEYS):
        raise CheckpointError(f"{source} has '{present[0]}' without "
                              f"'{(set(INFERENCE_MATRIX_KEYS) - set(present)).pop()}': the "
                              "inference matrices come as a pair")
    for key in present:
        a = raw[key]
        if a.shape != (d, d) or a.dtype != np.dtype(dtype):
            raise CheckpointError(f"{source}: '{key}' must be a ({d}, {d}) {dtype} array, got "
                                  f"shape {a.shape} dtype {a.dtype}")
        if not np.all(np.isfinite(a)):
            raise CheckpointError(f"{source}: '{key}' contains non-finite values")
        out[key] = np.array(a, copy=True)
    return out


def _factor_fields(raw: dict, version: int, dtype: str, d: int, source: str) -> dict[str, Any]:
    """The factorization of a version-4 payload and, for "qr", R̃ and z̃, checked (R̃ upper
    triangular with a diagonal ≥ 0, both finite); "cholesky" without them for versions 2–3."""
    out: dict[str, Any] = {"factorization": "cholesky", "information_factor": None,
                           "information_vector": None}
    if version < 4:
        return out
    factorization = _text(raw, "factorization", source)
    if factorization not in FACTORIZATIONS:
        raise CheckpointError(f"{source}: 'factorization' must be one of {FACTORIZATIONS}, got "
                              f"{factorization!r}")
    out["factorization"] = factorization
    present = [k for k in FACTOR_KEYS if k in raw]
    if factorization == "cholesky":
        if present:
            raise CheckpointError(f"{source} has '{present[0]}' but its factorization is "
                                  "'cholesky' (only a 'qr' state holds a factor)")
        return out
    missing = [k for k in FACTOR_KEYS if k not in raw]
    if missing:
        raise CheckpointError(f"{source} (factorization 'qr') is missing key(s): "
                              f"{', '.join(missing)}")
    for key, shape in zip(FACTOR_KEYS, ((d, d), (d,)), strict=True):
        a = raw[key]
        if a.shape != shape or a.dtype != np.dtype(dtype):
            raise CheckpointError(f"{source}: '{key}' must be a {shape} {dtype} array, got "
                                  f"shape {a.shape} dtype {a.dtype}")
        if not np.all(np.isfinite(a)):
            raise CheckpointError(f"{source}: '{key}' contains non-finite values")
    R = raw["information_factor"]
    if np.any(np.tril(R, -1)):
        raise CheckpointError(f"{source}: 'information_factor' is not upper triangular (a "
                              "nonzero entry below the diagonal)")
    if np.any(np.diagonal(R) < 0):
        raise CheckpointError(f"{source}: 'information_factor' has a negative diagonal entry "
                              "(the square-root information's diagonal is >= 0)")
    out["information_factor"] = np.array(raw["information_factor"], copy=True)
    out["information_vector"] = np.array(raw["information_vector"], copy=True)
    return out


def validate_payload(raw: dict[str, Any], source: str = "state_dict") -> dict[str, Any]:
    """Check every key, shape, dtype and value of a checkpoint or state_dict."""
    raw = {k: np.asarray(v) for k, v in raw.items()}
    missing = [k for k in REQUIRED_KEYS if k not in raw]
    if missing:
        raise CheckpointError(f"{source} is missing key(s): {', '.join(missing)}")
    version = _scalar(raw, "format_version", "iu", source)
    if version not in READABLE_VERSIONS:
        raise CheckpointError(f"{source} has format_version {version}; this library reads "
                              f"versions {', '.join(map(str, READABLE_VERSIONS))}")
    inference_keys = (*INFERENCE_KEYS, *INFERENCE_MATRIX_KEYS) if version >= 3 else ()
    if version >= 4:
        inference_keys = (*inference_keys, "factorization", *FACTOR_KEYS)
    required = INFERENCE_KEYS if version >= 3 else ()
    if version >= 4:
        required = (*required, "factorization")
    missing = [k for k in required if k not in raw]
    if missing:
        raise CheckpointError(f"{source} (format_version {version}) is missing key(s): "
                              f"{', '.join(missing)}")
    unknown = sorted(set(raw) - set(REQUIRED_KEYS) - set(OPTIONAL_KEYS) - set(inference_keys))
    if unknown:
        raise CheckpointError(f"{source} has unknown key(s): {', '.join(unknown)}")
    for key, a in raw.items():
        # Bytes read as text can hold code points beyond U+10FFFF, which no Python string can:
        # NumPy then fails with SystemError on any repr or item of the array (fuzz/).
        if a.dtype.kind == "U" and np.any(np.ascontiguousarray(a).reshape(-1).view(np.uint32)
                                          > sys.maxunicode):
            raise CheckpointError(f"{source}: '{key}' holds text that is not valid Unicode "
                                  f"(a code point beyond U+10FFFF)")

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
    out.update(_inference_fields(raw, version, dtype, d, out["batch_count"], source))
    out.update(_factor_fields(raw, version, dtype, d, source))
    if out["information_factor"] is not None:  # the factor is the state; J̃ is its product
        R = out["information_factor"]
        J = R.T @ R
        out["information"] = np.tril(J) + np.tril(J, -1).T  # as core.sqrt_info forms it

    try:
        params = json.loads(_text(raw, "params", source))
    except (json.JSONDecodeError, ValueError) as exc:
        raise CheckpointError(f"{source}: 'params' is not valid JSON: {exc}") from exc
    if not isinstance(params, dict):
        raise CheckpointError(f"{source}: 'params' must be a JSON object")
    if "fit_intercept" in params and params["fit_intercept"] is not bool(fit_intercept):
        state = "has an intercept coordinate" if fit_intercept else "has no intercept coordinate"
        raise CheckpointError(
            f"{source} contradicts itself: its 'params' say fit_intercept="
            f"{params['fit_intercept']!r}, but its state {state} ('fit_intercept' "
            f"{bool(fit_intercept)}, 'coef' of shape {out['coef'].shape} for {n_features} "
            "features)")
    out["params"] = params
    out["library_version"] = _text(raw, "library_version", source)

    if "feature_names_in" in raw:
        names = raw["feature_names_in"]
        if names.dtype.kind != "U" or names.shape != (n_features,):
            raise CheckpointError(f"{source}: 'feature_names_in' must be {n_features} unicode "
                                  f"strings, got shape {names.shape} dtype {names.dtype}")
        out["feature_names_in"] = names.astype(object)
    if "partitions_consumed" in raw:
        consumed = _scalar(raw, "partitions_consumed", "iu", source)
        if not 0 <= consumed <= out["batch_count"]:
            raise CheckpointError(f"{source}: 'partitions_consumed' must be between 0 and "
                                  f"batch_count {out['batch_count']} (one batch a partition), "
                                  f"got {consumed}")
        out["partitions_consumed"] = int(consumed)
    return out
