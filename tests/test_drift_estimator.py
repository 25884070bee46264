"""Contract v4 through the estimator: half_life and drift_alpha, their validation, DriftWarning,
checkpoints, merge, Dask, and `rhuber fit --drift-alpha --plot`."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from helpers import NATIVE_CPU, require_module, state_dicts_equal
from rhuber import DriftWarning, RenewableHuberRegressor
from rhuber.cli import main as cli_main


def _batches(seed=0, n=400, count=8, jump_at=None, p=3):
    rng = np.random.default_rng(seed)
    out = []
    for b in range(count):
        beta = np.arange(1.0, p + 1)
        if jump_at is not None and b >= jump_at:
            beta = beta + np.eye(p)[0] * 1.0
        X = rng.normal(size=(n, p))
        out.append((X, X @ beta + 0.5 + rng.standard_t(3, size=n)))
    return out


def _stream(est, batches):
    for X, y in batches:
        est.partial_fit(X, y)
    return est


@pytest.mark.parametrize("params,match", [
    ({"half_life": 0.0}, "half_life"), ({"half_life": -3.0}, "half_life"),
    ({"half_life": math.nan}, "half_life"), ({"half_life": math.inf}, "half_life"),
    ({"drift_alpha": 0.0}, "drift_alpha"), ({"drift_alpha": 1.0}, "drift_alpha"),
    ({"drift_alpha": 1.5}, "drift_alpha"), ({"drift_alpha": math.nan}, "drift_alpha"),
])
def test_bad_parameters_are_clear_errors_and_the_state_is_untouched(params, match):
    batches = _batches(count=2)
    est = RenewableHuberRegressor(backend="numpy").partial_fit(*batches[0])
    before = est.state_dict()
    est.set_params(**params)
    with pytest.raises(ValueError, match=match):
        est.partial_fit(*batches[1])
    assert state_dicts_equal(est.state_dict(), before)
    with pytest.raises(ValueError, match=match):
        RenewableHuberRegressor(backend="numpy", **params).fit(*batches[0])


def test_drift_warning_names_the_batch_and_only_below_drift_alpha():
    est = RenewableHuberRegressor(backend="numpy", tau=1.345, drift_alpha=0.001)
    flagged = []
    for k, (X, y) in enumerate(_batches(jump_at=5), start=1):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.partial_fit(X, y)
        drift = [w for w in caught if issubclass(w.category, DriftWarning)]
        assert len(drift) <= 1
        if drift:
            assert f"batch {k}:" in str(drift[0].message)
            flagged.append(k)
        p = est.diagnostics_[-1]["drift_pvalue"]
        assert bool(drift) == (p < 0.001)
    assert 6 in flagged and not any(k < 6 for k in flagged)
    quiet = RenewableHuberRegressor(backend="numpy", tau=1.345)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DriftWarning)
        _stream(quiet, _batches(jump_at=5))  # drift_alpha None: the test runs, nothing warns
    assert quiet.diagnostics_[5]["drift_pvalue"] < 1e-6


def test_summary_says_the_effective_weight():
    est = _stream(RenewableHuberRegressor(backend="numpy", half_life=500.0), _batches(count=4))
    text = str(est.summary())
    assert "Effective weight" in text and "half_life = 500" in text
    assert est.effective_weight_ < 4 * 400
    assert f"{est.effective_weight_:,.6g}" in text
    plain = _stream(RenewableHuberRegressor(backend="numpy"), _batches(count=2))
    assert "no forgetting" in str(plain.summary())


@pytest.mark.parametrize("backend", ["numpy", "native_cpu"])
def test_a_resumed_stream_discounts_like_the_uninterrupted_one(tmp_path, backend):
    if backend == "native_cpu":
        require_module(*NATIVE_CPU)
    batches = _batches(count=5, jump_at=3)
    whole = _stream(RenewableHuberRegressor(backend=backend, half_life=600.0), batches)
    first = _stream(RenewableHuberRegressor(backend=backend, half_life=600.0), batches[:2])
    first.save_checkpoint(tmp_path / "m.npz")
    resumed = RenewableHuberRegressor.load_checkpoint(tmp_path / "m.npz")
    assert resumed.half_life == 600.0
    _stream(resumed, batches[2:])
    assert state_dicts_equal(resumed.state_dict(), whole.state_dict())


def test_merge_refuses_a_stream_with_half_life():
    batches = _batches(count=4)
    a = _stream(RenewableHuberRegressor(backend="numpy", half_life=800.0), batches[:2])
    b = _stream(RenewableHuberRegressor(backend="numpy"), batches[2:])
    before = a.state_dict()
    with pytest.raises(ValueError, match=r"half_life=800\.0.*no order"):
        a.merge(b)
    with pytest.raises(ValueError, match="stream 0 forgets"):
        b.merge(a)
    assert state_dicts_equal(a.state_dict(), before)


def test_dask_in_order_with_forgetting_and_parallel_refuses_it():
    da = pytest.importorskip("dask.array", reason="the [dask] extra is not installed")
    dask = pytest.importorskip("dask", reason="the [dask] extra is not installed")
    from rhuber.dask import fit_parallel, fit_stream

    batches = _batches(count=5, jump_at=3)
    X = np.vstack([b[0] for b in batches])
    y = np.concatenate([b[1] for b in batches])
    Xd, yd = da.from_array(X, chunks=(400, 3)), da.from_array(y, chunks=(400,))
    params = {"backend": "numpy", "half_life": 700.0, "drift_alpha": 0.01}
    with dask.config.set(scheduler="threads"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DriftWarning)
        streamed = fit_stream(RenewableHuberRegressor(**params), Xd, yd)
        sequential = _stream(RenewableHuberRegressor(**params), batches)
        assert state_dicts_equal(streamed.state_dict(), sequential.state_dict())
        assert [d["drift_pvalue"] for d in streamed.diagnostics_][1:] == pytest.approx(
            [d["drift_pvalue"] for d in sequential.diagnostics_][1:])
        with pytest.raises(ValueError, match="half_life"):
            fit_parallel(RenewableHuberRegressor(**params), Xd, yd)


def _csv(path, jump=True):
    rng = np.random.default_rng(4)
    n = 3000
    X = rng.normal(size=(n, 2))
    slope = np.where(np.arange(n) < 1500, 1.0, 2.0 if jump else 1.0)
    y = slope * X[:, 0] + 2 * X[:, 1] + rng.standard_normal(n)
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="a,b,y", comments="")


def test_cli_fit_drift_column_closing_line_and_plot(tmp_path, capsys):
    data = tmp_path / "d.csv"
    _csv(data)
    plot = tmp_path / "paths.png"
    code = cli_main(["fit", str(data), "--target", "y", "--batch-size", "300", "--backend",
                     "numpy", "--drift-alpha", "0.01", "--half-life", "900", "--plot", str(plot),
                     "-o", str(tmp_path / "m.npz")])
    out = capsys.readouterr().out
    assert code == 0
    assert "drift p" in out
    closing = [line for line in out.splitlines() if line.startswith("drift:")]
    assert len(closing) == 1 and "batch 6" in closing[0], closing
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    est = RenewableHuberRegressor.load_checkpoint(tmp_path / "m.npz")
    assert est.half_life == 900.0 and est.drift_alpha == 0.01


def test_cli_fit_json_lists_the_flagged_batches(tmp_path, capsys):
    data = tmp_path / "d.csv"
    _csv(data, jump=False)
    code = cli_main(["fit", str(data), "--target", "y", "--batch-size", "500", "--backend",
                     "numpy", "--drift-alpha", "0.0001", "--json", "-o", str(tmp_path / "m.npz")])
    out = capsys.readouterr().out
    assert "NaN" not in out  # strict JSON: a batch without a test says null
    report = json.loads(out)
    assert code == 0 and report["drift_flagged"] == []
    assert report["diagnostics"][0]["drift_pvalue"] is None
    assert all(0 <= d["drift_pvalue"] <= 1 for d in report["diagnostics"][1:])


def test_drift_study_smoke(tmp_path):
    """scripts/studies/drift.py end to end on tiny settings (the full study: docs/drift.md)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "studies" / "drift.py"
    spec = importlib.util.spec_from_file_location("drift_study", path)
    study = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study)
    code = study.main(["--streams", "3", "--batches", "3", "--sizes", "100", "--power-streams",
                       "3", "--power-sizes", "200", "--tracking-streams", "2", "--out",
                       str(tmp_path)])
    assert code == 0
    report = json.loads((tmp_path / "drift.json").read_text())
    assert {r["law"] for r in report["size"]} == {"gaussian", "t3", "contaminated"}
    assert len(report["tracking"]["median_error"]["half_life"]) == 30
    assert (tmp_path / "drift.png").stat().st_size > 0
