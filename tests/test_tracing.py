"""Solver tracing (docs/tracing.md): the engines' records, the estimator and ``trace()`` block
that collect them, the outputs, the precision report and ``rhuber trace``."""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

from helpers import NATIVE_CPU, make_problem, require_module
from rhuber import NumericalError, RenewableHuberRegressor, precision_report, trace
from rhuber.cli import main
from rhuber.core import Config
from rhuber.engines import make_engine
from rhuber.lab.precision import FLOAT32_RTOL, compare_coefficients
from rhuber.tracing import Trace
from rhuber.tracing.recorder import traced_update

INTEGER_KEYS = ("phase", "iteration", "solver", "halvings", "search_exhausted", "rows",
                "quadratic_rows")
FLOAT_KEYS = ("rcond", "objective", "coef_norm", "step_norm", "step_scale")
STATS = ("residual", "score", "hessian_diagonal")


def _close(a: float, b: float, rtol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= rtol * max(1.0, abs(b))


def _traced_stream(engine, batches, config):
    state, traces, diags = None, [], []
    for X, y in batches:
        records = []
        state, diag = engine.update(state, X, y, None, config, trace=records)
        traces.append(records)
        diags.append(diag)
    return state, traces, diags


def _mismatches(got: list[dict], want: list[dict], rtol: float) -> list[str]:
    problems = []
    if len(got) != len(want):
        return [f"{len(got)} records, expected {len(want)}"]
    for k, (a, b) in enumerate(zip(got, want, strict=True)):
        problems += [f"record {k} {key}: {a[key]!r} != {b[key]!r}"
                     for key in INTEGER_KEYS if a[key] != b[key]]
        problems += [f"record {k} {key}: {a[key]} vs {b[key]}"
                     for key in FLOAT_KEYS if not _close(a[key], b[key], rtol)]
        for name in STATS:
            if (a[name] is None) != (b[name] is None):
                problems.append(f"record {k} {name}: {a[name]} vs {b[name]}")
                continue
            if a[name] is None:
                continue
            problems += [f"record {k} {name}.{key}: {a[name][key]} != {b[name][key]}"
                         for key in ("count", "nan", "inf") if a[name][key] != b[name][key]]
            problems += [f"record {k} {name}.{key}: {a[name][key]} vs {b[name][key]}"
                         for key in ("min", "max", "mean", "std", "l2")
                         if not _close(a[name][key], b[name][key], rtol)]
    return problems


@pytest.mark.parametrize("dtype,alpha", [(np.float64, 0.0), (np.float64, 0.02),
                                         (np.float32, 0.0)])
def test_native_cpu_records_what_the_reference_records(dtype, alpha):
    require_module(*NATIVE_CPU)
    rng = np.random.default_rng(3)
    batches = [make_problem(rng, 1500, 4, dtype=dtype)[:2] for _ in range(3)]
    config = Config(alpha=alpha)
    _, want, want_diags = _traced_stream(make_engine("numpy"), batches, config)
    _, got, got_diags = _traced_stream(make_engine("native_cpu"), batches, config)
    rtol = 1e-7 if dtype == np.float64 else 2e-3  # method.md's cross-engine tolerances
    for k in range(len(batches)):
        assert not _mismatches(got[k], want[k], rtol), f"batch {k + 1}"
        assert len(got[k]) == got_diags[k].n_iter == want_diags[k].n_iter


@pytest.mark.parametrize("backend", ["numpy", "native_cpu"])
def test_tracing_changes_no_result_and_records_every_iteration(backend):
    if backend == "native_cpu":
        require_module(*NATIVE_CPU)
    X, y, _ = make_problem(np.random.default_rng(5), 1200, 3)
    plain = RenewableHuberRegressor(backend=backend, batch_size=400).fit(X, y)
    traced = RenewableHuberRegressor(backend=backend, batch_size=400, trace=True).fit(X, y)
    assert np.array_equal(plain.coef_, traced.coef_)
    assert np.array_equal(plain.information_, traced.information_)
    assert not hasattr(plain, "trace_")
    batches = traced.trace_.batches
    assert [b.batch for b in batches] == [1, 2, 3]
    for batch, diag in zip(batches, traced.diagnostics_, strict=True):
        assert len(batch.iterations) == batch.n_iter == diag["n_iter"]
        assert sum(it.halvings for it in batch.iterations) == diag["line_search_halvings"]
        assert batch.converged and batch.engine == backend and batch.n_coef == 4
        assert all(it.residual.count == 400 and it.hessian_diagonal.count == 4
                   for it in batch.iterations)
    # The first batch's pilot solve comes first, each solve numbered from 1.
    first = batches[0].iterations
    assert first[0].phase == "pilot" and first[-1].phase == "main"
    assert next(it.iteration for it in first if it.phase == "main") == 1


def test_fit_restarts_the_trace_and_partial_fit_extends_it():
    X, y, _ = make_problem(np.random.default_rng(6), 600, 2)
    est = RenewableHuberRegressor(backend="numpy", trace=True).fit(X, y)
    first = est.trace_
    est.partial_fit(X, y)
    assert est.trace_ is first and [b.batch for b in first.batches] == [1, 2]
    est.fit(X, y)
    assert est.trace_ is not first and len(est.trace_.batches) == 1
    est.set_params(trace=False).fit(X, y)
    assert not hasattr(est, "trace_")


def test_trace_block_records_every_estimator_inside_it_only():
    X, y, _ = make_problem(np.random.default_rng(7), 500, 2)
    a = RenewableHuberRegressor(backend="numpy")
    b = RenewableHuberRegressor(backend="numpy", alpha=0.01)
    a.partial_fit(X, y)  # before the block: not recorded
    with trace() as outer:
        a.partial_fit(X, y)
        with trace() as inner:
            b.partial_fit(X, y)
    a.partial_fit(X, y)  # after it: not recorded
    assert [(t.stream, t.batch) for t in outer.batches] == [(0, 2), (1, 1)]
    assert [(t.stream, t.batch) for t in inner.batches] == [(0, 1)]
    assert inner.batches[0].iterations[0].solver == "lamm"
    assert not hasattr(a, "trace_")


def test_a_failing_batch_is_recorded_with_its_error():
    # Responses at float32's limit: residuals overflow to infinity and the update fails.
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 2)).astype(np.float32)
    y = np.where(rng.random(50) < 0.5, 3e38, -3e38).astype(np.float32)
    with trace() as tr, pytest.raises(NumericalError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        RenewableHuberRegressor(backend="numpy").fit(X, y)
    (batch,) = tr.batches
    assert batch.error.startswith("NumericalError") and batch.converged is None
    assert batch.iterations[0].residual.inf == 25
    assert "non_finite" in {a.rule for a in tr.anomalies()}


def test_a_stream_keeps_its_failing_batch_in_trace_():
    X, y, _ = make_problem(np.random.default_rng(12), 60, 2)
    est = RenewableHuberRegressor(backend="numpy", trace=True).partial_fit(X, y)
    coef = est.coef_.copy()
    X[3, 1] = np.nan  # a plain batch: the engine finds the NaN and refuses the batch
    with pytest.raises(ValueError, match="NaN"):
        est.partial_fit(X, y)
    assert np.array_equal(est.coef_, coef) and est.n_batches_ == 1  # the state is untouched
    failed = est.trace_.batches[1]
    assert (failed.batch, failed.iterations) == (2, [])
    assert failed.error.startswith("ValueError") and "non-finite" in failed.error


def test_engines_that_record_no_iterations_are_refused_clearly():
    class DeviceEngine:
        name = "cuda"

        def update(self, *args, **kwargs):
            raise AssertionError("must not run")

    X, y, _ = make_problem(np.random.default_rng(2), 20, 2)
    with pytest.raises(ValueError, match="numpy or native_cpu engine; the cuda engine"):
        traced_update(DeviceEngine(), None, X, y, None, Config(), (Trace(),), owner=object())


def test_json_round_trips_with_nan_as_null(tmp_path):
    X, y, _ = make_problem(np.random.default_rng(8), 400, 2)
    est = RenewableHuberRegressor(backend="numpy", alpha=0.01, trace=True).fit(X, y)
    text = est.trace_.to_json(tmp_path / "t.json")
    data = json.loads((tmp_path / "t.json").read_text())
    assert data["version"] == 1 and data["anomalies"] == []
    assert data["batches"][0]["iterations"][0]["rcond"] is None  # LAMM: no Newton system
    back = Trace.from_json(text)
    assert back.batches == est.trace_.batches
    with pytest.raises(ValueError, match="version"):
        Trace.from_json(json.dumps({"version": 99, "batches": []}))


def test_report_and_plot(tmp_path):
    pytest.importorskip("matplotlib", reason="Trace.plot draws with matplotlib (bench extra)")
    X, y, _ = make_problem(np.random.default_rng(9), 400, 2)
    with pytest.warns(ConvergenceWarning):
        est = RenewableHuberRegressor(backend="numpy", trace=True, max_iter=1).fit(X, y)
    report = est.trace_.report()
    assert report.splitlines()[0] == "solver trace: 1 batches, 2 iterations"
    assert "not_converged" in report and "objective" in report.splitlines()[1]
    est.trace_.plot(tmp_path / "t.png")
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_coefficients_figures():
    b64 = np.array([3.0, 4.0])
    got = compare_coefficients(1, 10, b64 + np.array([0.0, 1e-3]), b64)
    assert got.coef_mse == pytest.approx(0.5e-6)
    assert got.max_abs_error == pytest.approx(1e-3)
    assert got.snr_db == pytest.approx(10 * math.log10(25 / 1e-6))
    assert got.max_scaled_error == pytest.approx(1e-3 / 4)
    assert got.within_tolerance
    assert compare_coefficients(1, 10, b64, b64).snr_db == math.inf
    assert not compare_coefficients(1, 10, b64 * (1 + 2 * FLOAT32_RTOL), b64).within_tolerance


def test_precision_report_passes_plain_data_and_fails_collinear_data():
    rng = np.random.default_rng(4)
    X, y, _ = make_problem(rng, 800, 3)
    good = precision_report(X, y, batch_size=400, backend="numpy")
    assert [b.batch for b in good.batches] == [1, 2] and good.within_tolerance
    assert all(b.cosine_similarity > 0.999999 and b.snr_db > 80 for b in good.batches)
    x1 = rng.normal(size=800)
    collinear = np.c_[x1, x1 + 1e-4 * rng.normal(size=800), rng.normal(size=800)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bad = precision_report(collinear, collinear @ [1.0, 2.0, 3.0] + rng.normal(size=800),
                               batch_size=400, backend="numpy")
    assert not bad.within_tolerance and "exceeds" in bad.verdict
    assert "verdict" in bad.report()
    with pytest.raises(ValueError, match="batch_size"):
        precision_report(X, y, batch_size=0)


def test_cli_trace(tmp_path, capsys):
    X, y, _ = make_problem(np.random.default_rng(10), 900, 2)
    path = tmp_path / "data.csv"
    pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "y": y}).to_csv(path, index=False)
    status = main(["trace", str(path), "--target", "y", "--batch-size", "300", "--backend",
                   "numpy", "--json", str(tmp_path / "t.json"), "--precision"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "solver trace: 3 batches" in out and "anomalies: none" in out
    assert "verdict: float32 is within" in out
    assert len(json.loads((tmp_path / "t.json").read_text())["batches"]) == 3
    assert main(["trace", str(path)]) == 2
    assert "--target" in capsys.readouterr().err


def test_trace_parameter_is_validated():
    X, y, _ = make_problem(np.random.default_rng(11), 50, 2)
    with pytest.raises(ValueError, match="trace"):
        RenewableHuberRegressor(trace="yes").fit(X, y)
    assert dataclasses.is_dataclass(
        RenewableHuberRegressor(backend="numpy", trace=True).fit(X, y).trace_.batches[0])
