"""Checkpoints of the seed system (renewable-huber 0.7.1) load, converted with a warning.

The fixtures in tests/fixtures/seed/ were written by the seed itself
(scripts/seed/make_fixtures.py, run once with .venv-seed); expected.json holds the seed's own
predictions on probe rows. Damaged variants are refused with a CheckpointError naming the
member or field, and random damage never escapes as another exception.
"""

import contextlib
import json
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rhuber import CheckpointError, RenewableHuberRegressor
from rhuber.cli import main
from rhuber.seed_checkpoint import SeedCheckpointWarning

FIXTURES = Path(__file__).parent / "fixtures" / "seed"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
NAMES = ("v2_weighted_f64", "v2_l1_f32_no_intercept", "v2_feature_names_f64", "v1_f64")


def members(name: str) -> dict[str, np.ndarray]:
    with np.load(FIXTURES / f"{name}.npz", allow_pickle=False) as archive:
        return {k: archive[k] for k in archive.files}


def metadata(name: str) -> dict:
    return json.loads(str(members(name)["metadata"]))


def write(path: Path, arrays: dict, meta: dict | None = None) -> Path:
    arrays = dict(arrays)
    if meta is not None:
        arrays["metadata"] = np.asarray(json.dumps(meta))
    np.savez_compressed(path, **arrays)
    return path


@pytest.mark.parametrize("name", NAMES)
def test_seed_checkpoint_predicts_as_the_seed_did(name):
    expected = EXPECTED[name]
    with pytest.warns(SeedCheckpointWarning, match="renewable-huber \\(seed\\) checkpoint") as w:
        model = RenewableHuberRegressor.load_checkpoint(FIXTURES / f"{name}.npz")
    assert "scale = tau / epsilon" in str(w[0].message)
    config = expected["config"]
    assert model.tau == config["tau"] and model.fit_intercept == config["fit_intercept"]
    assert model.coef_.dtype == np.dtype(config["dtype"])
    probe = np.asarray(expected["probe"], dtype=config["dtype"])
    if "feature_names" in expected:
        probe = pd.DataFrame(probe, columns=expected["feature_names"])
    rtol = 1e-6 if config["dtype"] == "float32" else 1e-14
    np.testing.assert_allclose(model.predict(probe), expected["predictions"], rtol=rtol,
                               atol=rtol)
    meta = metadata(name)
    assert model.n_samples_seen_ == meta["n_samples_seen"]
    assert model.n_batches_ == meta["batch_count"]
    assert model.previous_lambda_ == pytest.approx(meta["previous_lambda"])
    assert model.effective_weight_ == meta.get("weight_sum", meta["n_samples_seen"])
    if "feature_names" in expected:
        assert list(model.feature_names_in_) == expected["feature_names"]


def test_version_1_says_it_assumed_unit_weights():
    with pytest.warns(SeedCheckpointWarning, match="predates sample weights") as w:
        model = RenewableHuberRegressor.load_checkpoint(FIXTURES / "v1_f64.npz")
    assert "unit weights assumed" in str(w[0].message)
    assert model.effective_weight_ == model.n_samples_seen_ == 60


def test_l1_checkpoint_says_how_its_penalty_continues():
    with pytest.warns(SeedCheckpointWarning, match="lambda_scale=0.5"):
        RenewableHuberRegressor.load_checkpoint(FIXTURES / "v2_l1_f32_no_intercept.npz")


def test_a_converted_stream_continues_and_saves_as_ours(tmp_path):
    # The NumPy reference: it has every contract-v3 feature the converted parameters ask for.
    with pytest.warns(SeedCheckpointWarning):
        model = RenewableHuberRegressor.load_checkpoint(FIXTURES / "v2_weighted_f64.npz",
                                                        backend="numpy")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 3))
    model.partial_fit(X, X @ [1.0, 0.0, -1.0] + rng.normal(size=50))
    assert model.n_batches_ == 3
    model.save_checkpoint(tmp_path / "ours.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeedCheckpointWarning)  # ours now: no conversion note
        again = RenewableHuberRegressor.load_checkpoint(tmp_path / "ours.npz")
    np.testing.assert_array_equal(again.coef_, model.coef_)


def test_rhuber_predict_reads_a_seed_checkpoint(capsys, tmp_path):
    expected = EXPECTED["v2_weighted_f64"]
    pd.DataFrame(expected["probe"], columns=["a", "b", "c"]).to_csv(tmp_path / "rows.csv",
                                                                    index=False)
    status = main(["predict", str(FIXTURES / "v2_weighted_f64.npz"),
                   str(tmp_path / "rows.csv"), "-o", str(tmp_path / "out.csv")])
    assert status == 0
    # The conversion's note, as the command's own one line.
    err = capsys.readouterr().err
    assert err.startswith("rhuber: warning: ") and "(seed) checkpoint, format 2" in err
    np.testing.assert_allclose(pd.read_csv(tmp_path / "out.csv")["prediction"],
                               expected["predictions"], rtol=1e-12)


def _corrupt(name: str, change) -> tuple[dict, dict]:
    arrays, meta = members(name), metadata(name)
    change(arrays, meta)
    return {k: v for k, v in arrays.items() if k != "metadata"}, meta


CORRUPT = {
    "no information": (lambda a, m: a.pop("information"), "lacks member\\(s\\): information"),
    "extra member": (lambda a, m: a.update(extra=np.zeros(2)), "has no member\\(s\\) extra"),
    "coefficients shape": (lambda a, m: a.update(coefficients=np.zeros(7)),
                           "'coefficients' must have shape \\(4,\\)"),
    "information shape": (lambda a, m: a.update(information=np.zeros((4, 3))),
                          "'information' must have shape \\(4, 4\\)"),
    "integer information": (lambda a, m: a.update(information=np.zeros((4, 4), int)),
                            "'information' must hold floating-point"),
    "NaN coefficients": (lambda a, m: a["coefficients"].__setitem__(0, np.nan),
                         "'coefficients' contains non-finite"),
    "format 3": (lambda a, m: m.update(format_version=3), "'format_version' must be 1 or 2"),
    "no weight_sum in format 2": (lambda a, m: m.pop("weight_sum"), "lacks 'weight_sum'"),
    "weight_sum in format 1": (lambda a, m: m.update(format_version=1),
                               "version-1 seed checkpoint has no 'weight_sum'"),
    "negative count": (lambda a, m: m.update(n_samples_seen=-1),
                       "'n_samples_seen' must be an integer in \\[0, 2\\*\\*63\\)"),
    "count beyond int64": (lambda a, m: m.update(batch_count=2**63), "'batch_count' must be"),
    "boolean count": (lambda a, m: m.update(batch_count=True), "'batch_count' must be"),
    "infinite lambda": (lambda a, m: m.update(previous_lambda=1e999),
                        "'previous_lambda' must be a finite number"),
    "string intercept flag": (lambda a, m: m.update(fit_intercept="yes"),
                              "'fit_intercept' must be true or false"),
    "no config": (lambda a, m: m.pop("config"), "lacks 'config'"),
    "bad dtype": (lambda a, m: m["config"].update(dtype="float16"), "'dtype' must be"),
    "zero tau": (lambda a, m: m["config"].update(tau=0), "'tau' must be a finite number > 0"),
    "names of the wrong length": (lambda a, m: m.update(feature_names_in=["a"]),
                                  "'feature_names_in' must be null or a list of 3 strings"),
    "zero weight after samples": (lambda a, m: m.update(weight_sum=0.0),
                                  "'weight_sum' is 0 after"),
    "samples without batches": (lambda a, m: m.update(batch_count=0), "are inconsistent"),
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_corrupt_seed_checkpoints_are_refused_by_name(tmp_path, case):
    change, message = CORRUPT[case]
    arrays, meta = _corrupt("v2_weighted_f64", change)
    path = write(tmp_path / "bad.npz", arrays, meta)
    with pytest.raises(CheckpointError, match=message):
        RenewableHuberRegressor.load_checkpoint(path)


@pytest.mark.parametrize("metadata_member, message", [
    (np.asarray("{not json"), "'metadata' is not valid JSON"),
    (np.asarray("[1, 2]"), "'metadata' must be a JSON object"),
    (np.asarray(["a", "b"]), "'metadata' must be a text scalar"),
    (np.asarray(3.0), "'metadata' must be a text scalar"),
])
def test_unreadable_metadata_is_refused_by_name(tmp_path, metadata_member, message):
    arrays = members("v1_f64")
    arrays["metadata"] = metadata_member
    path = write(tmp_path / "bad.npz", arrays)
    with pytest.raises(CheckpointError, match=message):
        RenewableHuberRegressor.load_checkpoint(path)


def test_a_truncated_seed_checkpoint_is_refused(tmp_path):
    data = (FIXTURES / "v2_weighted_f64.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="not a readable checkpoint"):
        RenewableHuberRegressor.load_checkpoint(tmp_path / "cut.npz")


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**20) | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(NAMES), key=st.sampled_from(
    ["format_version", "config", "n_samples_seen", "batch_count", "previous_lambda",
     "n_features_in", "fit_intercept", "weight_sum", "feature_names_in", "tau", "dtype",
     "penalty", "max_iter", "tol", "lambda_scale", "bandwidth_scale"]), value=_json)
def test_fuzzed_metadata_never_crashes(tmp_path, name, key, value):
    arrays, meta = members(name), metadata(name)
    (meta["config"] if key in meta["config"] and key not in meta else meta)[key] = value
    path = write(tmp_path / "fuzz.npz", {k: v for k, v in arrays.items() if k != "metadata"},
                 meta)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.suppress(CheckpointError):
            RenewableHuberRegressor.load_checkpoint(path)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(NAMES), data=st.data())
def test_fuzzed_bytes_never_crash(tmp_path, name, data):
    raw = bytearray((FIXTURES / f"{name}.npz").read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    (tmp_path / "fuzz.npz").write_bytes(bytes(raw))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.suppress(CheckpointError):
            RenewableHuberRegressor.load_checkpoint(tmp_path / "fuzz.npz")


def test_fixtures_are_the_seed_format():
    for name in NAMES:
        with zipfile.ZipFile(FIXTURES / f"{name}.npz") as z:
            assert sorted(z.namelist()) == ["coefficients.npy", "information.npy",
                                            "metadata.npy"]
