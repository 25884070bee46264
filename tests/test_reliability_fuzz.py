"""The fuzz targets' inputs in the ordinary test run: every committed seed and every input a
fuzzer once crashed on (fuzz/regressions/<target>/) goes through its target again, and each
crash found has a named test of the error it now gives. scripts/fuzz.sh does the fuzzing
itself (docs/reliability.md)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import NATIVE_CPU, require_module
from rhuber.errors import CheckpointError
from rhuber.io import DataFileError, read_batches

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
sys.path.insert(0, str(FUZZ))
import targets  # noqa: E402  (fuzz/targets.py, found through the path above)

PYTHON_TARGETS = ["checkpoint", "checkpoint_fields", "csv", "parquet", "npy", "npz"]


def _inputs(names: list[str]) -> list:
    return [pytest.param(name, path, id=f"{name}/{path.parent.name}/{path.name}")
            for name in names
            for path in sorted([*(FUZZ / "corpus" / name).iterdir(),
                                *(FUZZ / "regressions" / name).glob("*")])]


@pytest.mark.parametrize(("target", "path"), _inputs(PYTHON_TARGETS))
def test_every_seed_and_regression_input_passes_its_target(target, path):
    targets.replay(target, path.read_bytes())


@pytest.mark.parametrize(("target", "path"), _inputs(["safetensors"]))
def test_every_safetensors_input_loads_or_is_refused(target, path):
    """The C++ reader through the module (the fuzzer runs it under ASan and UBSan)."""
    model_class = require_module(*NATIVE_CPU).tuner.Model
    try:
        model = model_class.from_bytes(path.read_bytes())
    except ValueError as exc:
        assert str(exc).startswith("model file")
        return
    assert model.predict(np.zeros(model.n_features)).shape == (model.n_outputs,)


def test_the_regression_directories_hold_inputs():
    found = {name: len(list((FUZZ / "regressions" / name).glob("*"))) for name in PYTHON_TARGETS}
    assert sum(found.values()) >= 6, found


def _regression(target: str, name: str) -> bytes:
    return (FUZZ / "regressions" / target / name).read_bytes()


def _body(data: bytes, suffix: str, tmp_path: Path) -> Path:
    path = tmp_path / f"input{suffix}"
    path.write_bytes(data[1:])  # the first byte chose the options (fuzz/targets.py)
    return path


# Each crash the fuzzers found, with the error it now gives instead.


def test_checkpoint_that_is_a_single_npy_array(tmp_path):
    path = tmp_path / "m.npz"
    path.write_bytes(_regression("checkpoint", "single_npy_array"))
    from rhuber.checkpoint import read_checkpoint

    with pytest.raises(CheckpointError, match=r"holds a single \.npy array, not a checkpoint"):
        read_checkpoint(path)


@pytest.mark.parametrize(("target", "name", "suffix", "message"), [
    ("npy", "header_token_error", ".npy", "cannot be read as a .npy array: TokenError"),
    ("npy", "no_rows_too_many_columns", ".npy", "has 111,111,112 columns; at most 1,048,576"),
    ("npz", "unknown_compression", ".npz",
     "cannot be read as a .npz archive: NotImplementedError: That compression method"),
    ("npz", "member_not_npy", ".npz", "of the archive is not a .npy array"),
    ("parquet", "damaged_page_header", ".parquet", "the file is damaged from here on"),
    ("parquet", "column_name_not_utf8", ".parquet", "cannot be read as Parquet: 'utf-8' codec"),
    ("parquet", "duplicate_column_names", ".parquet", "has more than one column named"),
])
def test_damaged_files_found_by_fuzzing_are_data_file_errors(tmp_path, target, name, suffix,
                                                             message):
    path = _body(_regression(target, name), suffix, tmp_path)
    with pytest.raises(DataFileError, match=message):
        for _ in read_batches(path):
            pass


def test_parquet_integers_beyond_2_to_the_53_round_like_numpy(tmp_path):
    """pyarrow's safe cast refused them (ArrowInvalid); they now round as astype does."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    big = [2**60 + 1, -(2**62) - 3, 5]
    path = tmp_path / "big.parquet"
    pq.write_table(pa.table({"x": pa.array(big, pa.int64()), "y": [1.0, 2.0, 3.0]}), path)
    (X, _, _), = read_batches(path, target="y")
    np.testing.assert_array_equal(X[:, 0], np.array(big, dtype=np.int64).astype(np.float64))


def test_a_checkpoint_member_declaring_an_absurd_shape_is_refused_without_allocating(tmp_path):
    """A member of a few bytes may declare 10**15 float64s (8 PB): reading it fails cleanly."""
    import zipfile

    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        member, {"descr": "<f8", "fortran_order": False, "shape": (10**15,)})
    member.write(bytes(16))
    path = tmp_path / "m.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("coef.npy", member.getvalue())
    from rhuber.checkpoint import read_checkpoint

    with pytest.raises(CheckpointError, match="truncated or corrupted"):
        read_checkpoint(path)


def test_checkpoint_text_field_that_is_not_a_scalar(tmp_path):
    """library_version (or params) as an array crashed validate_payload with ValueError."""
    from rhuber import RenewableHuberRegressor

    model = RenewableHuberRegressor(backend="numpy").fit(np.eye(3)[:, :2], np.arange(3.0))
    for key in ("library_version", "params"):
        payload = {**model.state_dict(), key: np.array(["0.1", "0.2"])}
        with pytest.raises(CheckpointError, match=f"'{key}' must be a text scalar"):
            model.load_state_dict(payload)


@pytest.mark.parametrize("key", ["dtype", "params", "library_version", "feature_names_in"])
def test_checkpoint_text_beyond_unicode_is_refused(tmp_path, key):
    """Bytes read as text with a code point beyond U+10FFFF made NumPy raise SystemError in
    the error message's repr of the field (checkpoint_fields fuzzing, 7,675th input)."""
    from rhuber import RenewableHuberRegressor

    model = RenewableHuberRegressor(backend="numpy").fit(np.eye(3)[:, :2], np.arange(3.0))
    text = np.frombuffer(b"a\0\0\0" + b"\x5f\x5f\x5f\x5f", dtype="<U1")  # 'a', U+5F5F5F5F
    path = tmp_path / "hostile.npz"
    np.savez(path, **{**model.state_dict(), key: text})
    with pytest.raises(CheckpointError, match=f"'{key}' holds text that is not valid Unicode"):
        RenewableHuberRegressor.load_checkpoint(path)


@pytest.mark.parametrize("params", [{"plan": 5}, {"plan": "bogus"}, {"n_jobs": "abc"},
                                    {"epsilon": -1.0}, {"device": "x"}])
def test_checkpoint_with_hostile_parameters_is_refused_when_loaded(tmp_path, params):
    """A checkpoint's 'params' made a TypeError deep in the plan code, or an estimator that
    failed only at its next partial_fit; loading now checks them and names the checkpoint."""
    import json

    from rhuber import RenewableHuberRegressor

    model = RenewableHuberRegressor(backend="numpy").fit(np.eye(3)[:, :2], np.arange(3.0))
    path = tmp_path / "m.npz"
    np.savez(path, **{**model.state_dict(), "params": np.str_(json.dumps(params))})
    with pytest.raises(CheckpointError, match=r"its parameters .* do not make an estimator"):
        RenewableHuberRegressor.load_checkpoint(path, backend="numpy")
