"""The fuzz targets: one function per parser of outside data, taking the raw bytes of a file.

Each returns normally when the bytes are refused with the parser's documented error
(CheckpointError, DataFileError) or accepted; any other exception, a crash or a hang is a
finding. ``fuzz/run.py`` drives them with atheris (coverage-guided, libFuzzer's engine);
tests/test_reliability_fuzz.py replays the committed corpora and every regression input through
them in the ordinary test run. docs/reliability.md has the figures.
"""

from __future__ import annotations

import atexit
import io
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np

from rhuber import RenewableHuberRegressor
from rhuber.errors import CheckpointError
from rhuber.io import DataFileError, read_batches

# The readers take paths (.npy is memory-mapped): each input is written to one scratch file,
# in memory where Linux offers it.
_SCRATCH = Path(tempfile.mkdtemp(prefix="rh-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm")
                                 else None))
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)


def _file(data: bytes, suffix: str) -> Path:
    path = _SCRATCH / f"input{suffix}"
    path.write_bytes(data)
    return path


def checkpoint(data: bytes) -> None:
    """read_checkpoint, then, for a checkpoint it accepts, loading it and predicting."""
    path = _file(data, ".npz")
    try:
        model = RenewableHuberRegressor.load_checkpoint(path, backend="numpy")
    except CheckpointError:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prediction = model.predict(np.zeros((1, model.n_features_in_)))
    assert prediction.shape == (1,)


class _Reader:
    """Reads small choices out of the fuzzer's bytes (zeros once they run out), so that one
    input describes a structured edit; written here so that the targets need no atheris."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def byte(self) -> int:
        self.at += 1
        return self.data[self.at - 1] if self.at <= len(self.data) else 0

    def pick(self, options):
        return options[self.byte() % len(options)]

    def chunk(self) -> bytes:
        n = self.byte() % 64
        out = self.data[self.at:self.at + n]
        self.at += n
        return out


_KEYS = ("format_version", "coef", "information", "n_samples_seen", "effective_weight",
         "batch_count", "previous_lambda", "scale", "dtype", "fit_intercept", "n_features_in",
         "params", "library_version", "feature_names_in", "partitions_consumed", "extra")
_DTYPES = ("<f8", "<f4", "<i8", "<i4", "|b1", "<U3", "<f2", "<c16", "|u1")
_BASE: dict[str, np.ndarray] = {}


def _value(r: _Reader, key: str) -> np.ndarray:
    """A replacement value for ``key``: arbitrary JSON-ish text for params, a scalar, or an
    array of a fuzzed dtype and shape filled from the input's bytes."""
    kind = r.byte() % 4
    if kind == 0 or key == "params":
        text = r.chunk().decode("utf-8", "replace")
        if key == "params" and r.byte() % 2:  # a JSON object of one known parameter
            name = r.pick(sorted(RenewableHuberRegressor().get_params()))
            text = json.dumps({name: r.pick([text, -1, 0, 1.5, None, True, [1], {"a": 1}])})
        return np.str_(text)
    dtype = np.dtype(r.pick(_DTYPES))
    shape = tuple(r.byte() % 4 for _ in range(r.byte() % 3))
    count = int(np.prod(shape)) if shape else 1
    raw = r.chunk().ljust(count * dtype.itemsize, b"\0")[: count * dtype.itemsize]
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def checkpoint_fields(data: bytes) -> None:
    """A valid checkpoint with up to 4 fields replaced, removed or added, written with NumPy
    (so that zip checksums hold and the fuzzer reaches validate_payload and the estimator),
    then loaded and used for a prediction like ``checkpoint``."""
    if not _BASE:
        model = RenewableHuberRegressor(backend="numpy").fit(np.eye(3)[:, :2] + 1.0,
                                                              np.arange(3.0))
        _BASE.update(model.state_dict())
    r = _Reader(data)
    payload = dict(_BASE)
    for _ in range(1 + r.byte() % 4):
        key = r.pick(_KEYS)
        if r.byte() % 5 == 0:
            payload.pop(key, None)
        else:
            payload[key] = _value(r, key)
    buf = io.BytesIO()
    np.savez(buf, **payload)
    checkpoint(buf.getvalue())


def _options(data: bytes) -> tuple[bytes, dict]:
    """The first byte chooses the reader's options; the rest is the file."""
    choice, body = (data[0], data[1:]) if data else (0, b"")
    return body, {"batch_size": 1 + (choice & 0x0F) * 7,
                  "target_required": bool(choice & 0x10)}


def _read_all(path: Path, target, **options) -> None:
    try:
        reader = read_batches(path, target=target, **options)
        for X, y, row in reader:
            assert X.dtype == np.float64 and X.ndim == 2 and np.isfinite(X).all()
            assert y is None or (y.shape == (X.shape[0],) and np.isfinite(y).all())
            assert row >= 0
    except DataFileError:
        return


def csv(data: bytes) -> None:
    body, options = _options(data)
    target = "y" if data and data[0] & 0x20 else None
    suffix = ".tsv" if data and data[0] & 0x40 else ".csv"
    _read_all(_file(body, suffix), target, **options)


def parquet(data: bytes) -> None:
    body, options = _options(data)
    _read_all(_file(body, ".parquet"), "y" if data and data[0] & 0x20 else None, **options)


def npy(data: bytes) -> None:
    body, options = _options(data)
    _read_all(_file(body, ".npy"), -1 if data and data[0] & 0x20 else None, **options)


def npz(data: bytes) -> None:
    body, options = _options(data)
    _read_all(_file(body, ".npz"), 0 if data and data[0] & 0x20 else None, **options)


TARGETS = {"checkpoint": checkpoint, "checkpoint_fields": checkpoint_fields, "csv": csv,
           "parquet": parquet, "npy": npy, "npz": npz}


def replay(name: str, data: bytes) -> None:
    """Run one input through a target, as the fuzzer does (the tests' entry point)."""
    TARGETS[name](data)
