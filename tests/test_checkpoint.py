"""Checkpoints: round trips, atomic writes, and refusal of anything corrupted."""

import io
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import clone

from helpers import make_problem, state_dicts_equal
from rhuber import CheckpointError, RenewableHuberRegressor


def fitted_model(seed=0, dtype=np.float64, alpha=0.0, intercept=True, batches=2):
    rng = np.random.default_rng(seed)
    m = RenewableHuberRegressor(backend="numpy", alpha=alpha, fit_intercept=intercept)
    for _ in range(batches):
        X, y, _ = make_problem(rng, 80, 3, dtype=dtype)
        m.partial_fit(X, y)
    return m


@given(seed=st.integers(0, 1000), dtype=st.sampled_from([np.float32, np.float64]),
       alpha=st.sampled_from([0.0, 0.05]), intercept=st.booleans())
def test_checkpoint_round_trip_then_continue_equals_uninterrupted(tmp_path_factory, seed, dtype,
                                                                  alpha, intercept):
    path = tmp_path_factory.mktemp("ckpt") / "model.npz"
    m = fitted_model(seed, dtype, alpha, intercept)
    m.save_checkpoint(path)
    loaded = RenewableHuberRegressor.load_checkpoint(path)
    assert state_dicts_equal(m.state_dict(), loaded.state_dict(), ignore=())
    assert loaded.coef_.dtype == np.dtype(dtype)
    rng = np.random.default_rng(seed + 1)
    X, y, _ = make_problem(rng, 80, 3, dtype=dtype)
    m.partial_fit(X, y)
    loaded.partial_fit(X, y)
    assert state_dicts_equal(m.state_dict(), loaded.state_dict(), ignore=())


def test_state_dict_round_trip_and_keys():
    m = fitted_model()
    d = m.state_dict()
    assert set(d) >= {"format_version", "coef", "information", "n_samples_seen",
                      "effective_weight", "batch_count", "previous_lambda", "scale", "dtype",
                      "fit_intercept", "n_features_in", "params", "library_version"}
    other = RenewableHuberRegressor(backend="numpy").load_state_dict(d)
    np.testing.assert_array_equal(other.coef_, m.coef_)
    assert other.n_batches_ == 2


def test_feature_names_survive_a_checkpoint(tmp_path):
    rng = np.random.default_rng(1)
    X, y, _ = make_problem(rng, 60, 3)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    m = RenewableHuberRegressor(backend="numpy").fit(df, y)
    m.save_checkpoint(tmp_path / "m.npz")
    loaded = RenewableHuberRegressor.load_checkpoint(tmp_path / "m.npz")
    assert list(loaded.feature_names_in_) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="feature names"):
        loaded.partial_fit(df.rename(columns={"a": "z"}), y)


def test_pickle_and_clone():
    m = fitted_model()
    again = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(again.predict(np.ones((2, 3))), m.predict(np.ones((2, 3))))
    c = clone(m)
    assert c.get_params() == m.get_params() and not hasattr(c, "coef_")


def test_crash_during_save_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "m.npz"
    old = fitted_model(0)
    old.save_checkpoint(path)
    before = path.read_bytes()

    def torn_savez(f, **arrays):
        f.write(b"PK\x03\x04 half a zip")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", torn_savez)
    with pytest.raises(OSError, match="disk full"):
        fitted_model(1).save_checkpoint(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.npz"]  # no temporary left behind


def _write_npz(path, arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    path.write_bytes(buf.getvalue())


def _mutations():
    good = fitted_model().state_dict()

    def without(key):
        d = dict(good)
        del d[key]
        return d

    def with_(key, value):
        return {**good, key: value}

    return [
        ("missing key", without("information"), "missing key.*information"),
        ("bad version", with_("format_version", np.int64(1)), "format_version 1"),
        ("wrong coef shape", with_("coef", good["coef"][:-1]), "'coef' must have shape"),
        ("wrong dtype", with_("information", good["information"].astype(np.float32)),
         "'information' has dtype float32"),
        ("non-finite", with_("coef", np.full_like(good["coef"], np.nan)), "non-finite"),
        ("negative count", with_("n_samples_seen", np.int64(-3)), "n_samples_seen"),
        ("bad dtype name", with_("dtype", np.str_("float16")), "'dtype'"),
        ("bad params", with_("params", np.str_("{not json")), "params"),
        ("unknown key", with_("extra", np.int64(1)), "unknown key"),
        ("inconsistent counters", with_("batch_count", np.int64(0)), "inconsistent"),
    ]


@pytest.mark.parametrize("name,payload,pattern", _mutations(), ids=[m[0] for m in _mutations()])
def test_inconsistent_checkpoint_is_refused_naming_the_problem(tmp_path, name, payload, pattern):
    path = tmp_path / "bad.npz"
    _write_npz(path, payload)
    with pytest.raises(CheckpointError, match=pattern):
        RenewableHuberRegressor.load_checkpoint(path)


@pytest.mark.parametrize("cut", [10, 100, 0.5, 0.9])
def test_truncated_checkpoint_is_refused(tmp_path, cut):
    path = tmp_path / "m.npz"
    fitted_model().save_checkpoint(path)
    data = path.read_bytes()
    n = cut if isinstance(cut, int) else int(len(data) * cut)
    path.write_bytes(data[:n])
    with pytest.raises(CheckpointError, match="truncated or corrupted"):
        RenewableHuberRegressor.load_checkpoint(path)


def test_pickled_member_is_refused(tmp_path):
    path = tmp_path / "evil.npz"
    payload = fitted_model().state_dict()
    payload["params"] = np.array([{"a": 1}], dtype=object)
    buf = io.BytesIO()
    np.savez(buf, **payload)
    path.write_bytes(buf.getvalue())
    with pytest.raises(CheckpointError):
        RenewableHuberRegressor.load_checkpoint(path)


def test_corrupted_bytes_are_refused(tmp_path):
    path = tmp_path / "m.npz"
    fitted_model().save_checkpoint(path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2: len(data) // 2 + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError):
        RenewableHuberRegressor.load_checkpoint(path)


def test_a_checkpoint_written_before_the_rename_loads():
    # Written by the last commit that was still called renewable_huber (1eb1471): 300 rows of
    # X @ [1, -2, 0.5] + 1 + t3 noise (default_rng(7)), numpy backend, batches of 100.
    path = Path(__file__).parent / "fixtures" / "checkpoint_v2_before_rename.npz"
    model = RenewableHuberRegressor.load_checkpoint(path)
    X = np.random.default_rng(7).normal(size=(300, 3))[:5]
    np.testing.assert_allclose(
        model.predict(X), [0.28120497, 0.49218265, -1.73635553, -0.38512359, 2.82611108],
        rtol=1e-7)
    assert model.n_batches_ == 3 and model.n_samples_seen_ == 300
