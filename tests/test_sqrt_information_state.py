"""factorization="qr" beyond the least-squares anchors: it agrees with the Cholesky mode where both
keep their digits (Huber, L1, ridge, smoothed curvature, forgetting, drift, inference, merge), its
state's invariants, checkpoint format 4 and the refusals (contract v4, "Square-root
information")."""

import warnings

import numpy as np
import pytest

from helpers import make_problem
from rhuber import IllConditionedWarning, RenewableHuberRegressor
from rhuber.checkpoint import FACTORIZATIONS as CHECKPOINT_FACTORIZATIONS
from rhuber.core import Config, update
from rhuber.core.merge import combine_states
from rhuber.core.types import CONTRACT_FEATURES, FACTORIZATIONS
from rhuber.engines import require_features
from rhuber.errors import CheckpointError


def stream(config, batches, state=None):
    for X, y, w in batches:
        state, diag = update(state, X, y, w, config)
    return state, diag


def batches(seed, k=3, n=150, p=5, weights=False):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        X, y, _ = make_problem(rng, n, p)
        w = rng.choice([0.0, 0.5, 1.0, 2.0], size=n) if weights else None
        out.append((X, y, w))
    return out


def assert_modes_agree(a, b, rtol=1e-9):
    scale = max(1.0, float(np.max(np.abs(b.coef))))
    assert np.max(np.abs(a.coef - b.coef)) <= rtol * scale
    J = np.max(np.abs(b.information))
    assert np.max(np.abs(a.information - b.information)) <= 1e-9 * J
    assert a.scale == pytest.approx(b.scale, rel=1e-9)
    assert a.effective_weight == b.effective_weight


CASES = {
    "huber": {},
    "weighted_fixed_tau": {"tau": 1.0},
    "ridge": {"ridge": 3.0},
    "smoothed_curvature": {"curvature": "smoothed"},
    "l1": {"alpha": 0.02},
    "lambda_schedule": {"lambda_scale": 0.5},
    "forgetting": {"half_life": 200.0},
    "inference_matrices": {"inference_matrices": True},
    "no_intercept": {"fit_intercept": False},
}


@pytest.mark.parametrize("case", CASES)
def test_both_modes_agree_on_well_conditioned_data(case):
    data = batches(7, weights=case == "weighted_fixed_tau")
    cholesky, d_chol = stream(Config(**CASES[case]), data)
    qr, d_qr = stream(Config(factorization="qr", **CASES[case]), data)
    assert_modes_agree(qr, cholesky)
    assert d_qr.objective == pytest.approx(d_chol.objective, rel=1e-9)
    assert d_qr.solver == ("lamm" if d_chol.solver == "lamm" else "qr")
    if d_chol.rcond is not None:  # the Newton matrix's condition, estimated from R_H
        assert d_qr.rcond == pytest.approx(d_chol.rcond, rel=2.0)
    assert qr.factorization == "qr" and cholesky.factorization == "cholesky"


def test_the_qr_state_is_a_square_root_of_the_information():
    state, _ = stream(Config(factorization="qr"), batches(3))
    R, z = state.information_factor, state.information_vector
    assert R.shape == (6, 6) and z.shape == (6,)
    assert np.array_equal(R, np.triu(R)) and np.all(np.diagonal(R) >= 0)
    np.testing.assert_allclose(state.information, R.T @ R, rtol=1e-12)
    assert np.array_equal(state.information, state.information.T)
    # z̃ is kept, not R̃β̃: its difference is the gradient left at the tolerance.
    assert not np.array_equal(z, R @ state.coef)
    np.testing.assert_allclose(z, R @ state.coef, rtol=1e-6, atol=1e-6 * np.abs(z).max())


def test_drift_statistics_agree_between_the_modes():
    data = batches(11)
    X, y, _ = data[-1]
    data[-1] = (X, y + 3 * X[:, 0], None)  # a change the test should see
    _, d_chol = stream(Config(), data)
    _, d_qr = stream(Config(factorization="qr"), data)
    assert d_qr.drift_statistic == pytest.approx(d_chol.drift_statistic, rel=1e-8)
    assert d_qr.drift_pvalue < 1e-6


def test_inference_goes_through_the_factor():
    X = np.concatenate([b[0] for b in batches(5)])
    y = np.concatenate([b[1] for b in batches(5)])
    fits = [RenewableHuberRegressor(backend="numpy", batch_size=150, factorization=f,
                                    inference_matrices=True).fit(X, y)
            for f in ("cholesky", "qr")]
    for cov_type in ("H1", "H2", "H3", "HC0"):
        np.testing.assert_allclose(fits[1].cov_params(cov_type), fits[0].cov_params(cov_type),
                                   rtol=1e-8)
    np.testing.assert_allclose(fits[1].information_, fits[0].information_, rtol=1e-10)


def test_a_duplicated_column_takes_the_svd_rung_and_predicts_as_the_cholesky_mode():
    rng = np.random.default_rng(4)
    data = []
    for _ in range(2):
        X, y, _ = make_problem(rng, 120, 3)
        data.append((np.column_stack([X, X[:, 1]]), y, None))
    cholesky, d_chol = stream(Config(), data)
    qr, d_qr = stream(Config(factorization="qr"), data)
    assert d_chol.solver == "svd" and d_qr.solver == "svd" and d_qr.rcond == 0.0
    probe = np.column_stack([rng.standard_normal((20, 4)), np.ones(20)])
    probe[:, 3] = probe[:, 1]
    np.testing.assert_allclose(probe @ qr.coef, probe @ cholesky.coef, rtol=1e-7, atol=1e-7)
    with pytest.raises(Exception, match="rank-deficient"):
        from rhuber.core.inference import covariance
        covariance(qr, "H2")


def test_merge_of_least_squares_streams_is_the_least_squares_fit_of_all_rows():
    data = batches(21, k=4)
    config = Config(tau=1e9, factorization="qr")
    parts = [stream(config, data[:2])[0], stream(config, data[2:])[0]]
    merged, solved = combine_states(parts)
    whole, _ = stream(config, data)
    X = np.concatenate([np.column_stack([b[0], np.ones(len(b[1]))]) for b in data])
    y = np.concatenate([b[1] for b in data])
    np.testing.assert_allclose(merged.coef, np.linalg.lstsq(X, y, rcond=None)[0], rtol=1e-10)
    np.testing.assert_allclose(merged.coef, whole.coef, rtol=1e-10)
    assert solved.rung == "qr" and merged.factorization == "qr"
    R = merged.information_factor
    assert np.array_equal(R, np.triu(R)) and np.all(np.diagonal(R) >= 0)
    np.testing.assert_allclose(merged.information, X.T @ X, rtol=1e-10)


def test_merge_agrees_with_the_cholesky_modes_and_refuses_mixed_modes():
    data = batches(22, k=4)
    chol = [stream(Config(), data[:2])[0], stream(Config(), data[2:])[0]]
    qr = [stream(Config(factorization="qr"), data[:2])[0],
          stream(Config(factorization="qr"), data[2:])[0]]
    assert_modes_agree(combine_states(qr)[0], combine_states(chol)[0])
    with pytest.raises(ValueError, match="different factorizations"):
        combine_states([chol[0], qr[1]])


def test_the_estimator_merges_qr_streams():
    data = batches(23, k=2)
    streams = [RenewableHuberRegressor(backend="numpy", factorization="qr").partial_fit(X, y)
               for X, y, _ in data]
    streams[0].merge(streams[1])
    assert streams[0]._state.factorization == "qr"
    R = streams[0]._state.information_factor
    np.testing.assert_allclose(streams[0].information_, R.T @ R, rtol=1e-12)


def test_forgetting_scales_the_factor_by_the_root_of_gamma():
    data = batches(9, k=2)
    config = Config(factorization="qr", half_life=100.0)
    first, _ = update(None, *data[0], config)
    from rhuber.core.drift import discount
    gamma = config.discount(150.0)
    discounted = discount(first, gamma)
    np.testing.assert_allclose(discounted.information_factor,
                               first.information_factor * np.sqrt(gamma), rtol=1e-15)
    np.testing.assert_allclose(discounted.information_vector,
                               first.information_vector * np.sqrt(gamma), rtol=1e-15)
    np.testing.assert_allclose(discounted.information, first.information * gamma, rtol=1e-12)


# ------------------------------------------------------------------ modes and refusals

def test_an_unknown_factorization_is_a_clear_error():
    with pytest.raises(ValueError, match=r"factorization must be one of \('cholesky', 'qr'\)"):
        Config(factorization="lu").validate()
    with pytest.raises(ValueError, match="factorization"):
        RenewableHuberRegressor(factorization="householder").fit(np.ones((3, 1)), np.ones(3))
    assert RenewableHuberRegressor(factorization="qr").get_params()["factorization"] == "qr"
    assert RenewableHuberRegressor().set_params(factorization="qr").factorization == "qr"


def test_engines_without_the_mode_refuse_it_by_name():
    class Engine:
        name = "somewhere"
        contract_features = frozenset(CONTRACT_FEATURES) - {"qr"}

    assert "qr" in CONTRACT_FEATURES and Config(factorization="qr").features() == ("qr",)
    assert Config().features() == ()
    require_features(Engine(), Config())
    with pytest.raises(ValueError, match="somewhere engine does not implement qr"):
        require_features(Engine(), Config(factorization="qr"))
    assert CHECKPOINT_FACTORIZATIONS == FACTORIZATIONS


def test_a_stream_switches_modes_between_batches():
    data = batches(13)
    cholesky, _ = stream(Config(), data)
    switched, _ = stream(Config(), data[:2])
    switched, _ = stream(Config(factorization="qr"), data[2:], switched)
    assert switched.factorization == "qr"
    assert_modes_agree(switched, cholesky)
    back, _ = stream(Config(factorization="qr"), data[:2])
    back, _ = stream(Config(), data[2:], back)
    assert back.factorization == "cholesky" and back.information_factor is None
    assert_modes_agree(back, cholesky)


def test_a_cholesky_history_without_a_square_root_is_refused_and_the_state_kept():
    rng = np.random.default_rng(2)
    X, y, _ = make_problem(rng, 50, 3)
    X[:, 2] = 0.0  # J̃ singular
    state, _ = update(None, X, y, None, Config())
    with pytest.raises(ValueError, match="not positive definite"):
        update(state, X, y, None, Config(factorization="qr"))
    assert state.factorization == "cholesky"


# ------------------------------------------------------------------ checkpoint format 4

def fitted(factorization="qr", **params):
    data = batches(17, k=2)
    model = RenewableHuberRegressor(backend="numpy", factorization=factorization, **params)
    for X, y, _ in data:
        model.partial_fit(X, y)
    return model


def test_a_qr_checkpoint_round_trips_its_factor(tmp_path):
    model = fitted()
    model.save_checkpoint(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as raw:
        assert int(raw["format_version"]) == 4 and str(raw["factorization"]) == "qr"
        assert {"information_factor", "information_vector"} <= set(raw.files)
    loaded = RenewableHuberRegressor.load_checkpoint(tmp_path / "m.npz")
    a, b = model._state, loaded._state
    assert np.array_equal(a.information_factor, b.information_factor)
    assert np.array_equal(a.information_vector, b.information_vector)
    assert np.array_equal(a.information, b.information)
    X, y, _ = batches(18, k=1)[0]
    model.partial_fit(X, y)
    loaded.partial_fit(X, y)
    assert np.array_equal(model.coef_, loaded.coef_)


def test_a_cholesky_checkpoint_has_no_factor_and_continues_in_qr(tmp_path):
    model = fitted("cholesky")
    model.save_checkpoint(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as raw:
        assert str(raw["factorization"]) == "cholesky"
        assert "information_factor" not in raw.files
    loaded = RenewableHuberRegressor.load_checkpoint(tmp_path / "m.npz", factorization="qr")
    R = loaded._state.information_factor
    np.testing.assert_allclose(R.T @ R, model.information_, rtol=1e-12)
    np.testing.assert_allclose(loaded._state.information_vector, R @ loaded._state.coef)
    X, y, _ = batches(18, k=1)[0]
    model.partial_fit(X, y)
    loaded.partial_fit(X, y)
    np.testing.assert_allclose(loaded.coef_, model.coef_, rtol=1e-9)


def test_a_qr_checkpoint_continues_in_the_cholesky_mode(tmp_path):
    model = fitted()
    model.save_checkpoint(tmp_path / "m.npz")
    loaded = RenewableHuberRegressor.load_checkpoint(tmp_path / "m.npz",
                                                     factorization="cholesky")
    assert loaded._state.information_factor is None
    assert np.array_equal(loaded.information_, model.information_)


@pytest.mark.parametrize("version", [2, 3])
def test_older_formats_load_into_the_qr_mode(tmp_path, version):
    model = fitted("cholesky")
    payload = model.state_dict()
    payload.pop("factorization")
    if version == 2:
        for key in ("score_sq_sum", "curvature_sum", "curvature_sq_sum", "inference_weight",
                    "inference_batches"):
            payload.pop(key)
    payload["format_version"] = np.int64(version)
    np.savez(tmp_path / "old.npz", **payload)
    loaded = RenewableHuberRegressor.load_checkpoint(tmp_path / "old.npz", factorization="qr")
    assert loaded._state.factorization == "qr"
    np.testing.assert_allclose(loaded.information_, model.information_, rtol=1e-12)


def test_a_singular_cholesky_checkpoint_is_refused_in_qr_mode(tmp_path):
    rng = np.random.default_rng(3)
    X, y, _ = make_problem(rng, 60, 3)
    X[:, 2] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IllConditionedWarning)
        model = RenewableHuberRegressor(backend="numpy").fit(X, y)
    model.save_checkpoint(tmp_path / "m.npz")
    with pytest.raises(CheckpointError, match="not positive definite"):
        RenewableHuberRegressor.load_checkpoint(tmp_path / "m.npz", factorization="qr")


def tampered(tmp_path, change):
    payload = fitted().state_dict()
    change(payload)
    np.savez(tmp_path / "bad.npz", **payload)
    return tmp_path / "bad.npz"


def _set(key, index, value):
    def change(payload):
        payload[key] = payload[key].copy()
        payload[key][index] = value
    return change


@pytest.mark.parametrize(("change", "message"), [
    (_set("information_factor", (3, 1), 1e-3), "not upper triangular"),
    (_set("information_factor", (2, 2), -1.0), "negative diagonal"),
    (_set("information_factor", (0, 4), np.nan), "'information_factor' contains non-finite"),
    (_set("information_vector", 1, np.inf), "'information_vector' contains non-finite"),
    (lambda p: p.pop("information_vector"), "missing key.*information_vector"),
    (lambda p: p.update(factorization=np.str_("lu")), "'factorization' must be one of"),
    (lambda p: p.update(factorization=np.str_("cholesky")), "its factorization is 'cholesky'"),
    (lambda p: p.update(information_factor=p["information_factor"][:3, :3]),
     r"'information_factor' must be a \(6, 6\)"),
    (lambda p: p.update(information_factor=p["information_factor"].astype(np.float32)),
     "'information_factor' must be a .* float64 array"),
], ids=["lower", "negative", "nan", "vector_inf", "missing", "unknown", "cholesky_with_factor",
        "shape", "dtype"])
def test_a_bad_factor_is_refused_by_name(tmp_path, change, message):
    with pytest.raises(CheckpointError, match=message):
        RenewableHuberRegressor.load_checkpoint(tampered(tmp_path, change))


def test_the_estimator_refuses_a_switch_it_cannot_make_and_keeps_its_state():
    rng = np.random.default_rng(3)
    X, y, _ = make_problem(rng, 60, 3)
    X[:, 2] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IllConditionedWarning)
        model = RenewableHuberRegressor(backend="numpy").fit(X, y)
    before = model.state_dict()
    model.set_params(factorization="qr")
    with pytest.raises(ValueError, match="not positive definite"):
        model.partial_fit(X, y)
    after = model.state_dict()
    assert after.keys() == before.keys()
    assert all(np.array_equal(after[k], before[k]) for k in before if k != "params")
    assert model.n_batches_ == 1


def test_float32_is_computed_in_float32_and_agrees_with_the_cholesky_mode():
    rng = np.random.default_rng(1)
    data = []
    for _ in range(3):
        X, y, _ = make_problem(rng, 200, 4, dtype=np.float32)
        data.append((X, y, None))
    cholesky, _ = stream(Config(), data)
    qr, diag = stream(Config(factorization="qr"), data)
    for a in (qr.coef, qr.information, qr.information_factor, qr.information_vector):
        assert a.dtype == np.float32
    assert diag.solver == "qr"
    np.testing.assert_allclose(qr.coef, cholesky.coef, rtol=2e-3, atol=2e-3)
