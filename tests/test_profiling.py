"""rhuber.profile(): both engines report the same bricks through the C++ profiler."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import rhuber as rh
from helpers import NATIVE_CPU, require_module
from rhuber.core import Config, update
from rhuber.datasets import make_contaminated_stream
from rhuber.profiling import _hooks

native = require_module(*NATIVE_CPU)

SCHEMA = Path(__file__).parents[1] / "native" / "bricks" / "schema" / "report.schema.json"
# Every brick a plain (alpha = 0) stream with predictions runs, per engine. The reference has no
# transfer (nothing leaves a device); prox runs only with an L1 penalty.
EXPECTED = {
    "native_cpu": {"validate", "stage", "residual", "huber", "score", "gram", "solve",
                   "line_search", "info_update", "transfer", "predict"},
    "numpy": {"validate", "stage", "residual", "huber", "score", "gram", "solve", "line_search",
              "info_update", "predict"},
}


def _stream(backend: str, alpha: float = 0.0, **kwargs):
    stream = make_contaminated_stream(6_000, 8, batch_size=2_000, seed=3)
    est = rh.RenewableHuberRegressor(backend=backend, alpha=alpha, **kwargs)
    for X, y in stream:
        est.partial_fit(X, y)
    est.predict(X)
    return est


@pytest.fixture(scope="module", params=["native_cpu", "numpy"])
def profiled(request):
    with rh.profile() as prof:
        est = _stream(request.param)
    return request.param, prof, est


def test_report_rows_for_every_brick_that_ran(profiled):
    backend, prof, _ = profiled
    report = prof.report()
    assert {row.brick for row in report} == EXPECTED[backend]
    assert abs(sum(row.share for row in report) - 1.0) < 1e-9
    assert [row.total_ns for row in report] == sorted((r.total_ns for r in report), reverse=True)
    gram = report["gram"]
    assert gram.calls > 0 and gram.total_ns > 0 and gram.gflop_per_s > 0 and gram.gb_per_s > 0
    # Once per batch (native_cpu: the checks before the update, then X's values in its first
    # pass over X, one record per chunk).
    assert report["validate"].calls >= 3 and report["predict"].calls == 1
    assert report.metadata["batches"] == 3
    text = str(report)
    assert text.splitlines()[1].split()[:5] == ["brick", "category", "calls", "total", "share"]
    assert "gram" in text and "GFLOP/s" in text


def test_breakdown_counts_batches_rows_and_iterations(profiled):
    _, prof, est = profiled
    b = prof.breakdown()
    assert [s["rows"] for s in b["batches"]] == [2_000, 2_000, 2_000]
    assert [s["iterations"] for s in b["batches"]] == [d["n_iter"] for d in est.diagnostics_]
    assert b["steady_rows_per_s"] > 0 and "first batch" in b["text"]


def test_json_validates_against_the_schema(profiled, tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    _, prof, _ = profiled
    path = prof.to_json(tmp_path / "report.json")
    data = json.loads(path.read_text())
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    assert [b["name"] for b in data["bricks"]][: len(_hooks.BRICKS)] == list(_hooks.BRICKS)


def test_chrome_trace_parses_and_nests_per_thread(profiled, tmp_path):
    _, prof, _ = profiled
    trace = json.loads(prof.to_chrome_trace(tmp_path / "trace.json").read_text())
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert events and {e["name"] for e in events} >= {"gram", "solve", "residual"}
    by_thread: dict[int, list] = {}
    for e in events:
        by_thread.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_thread.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
        open_ends: list[float] = []
        for start, end in spans:
            # ends and starts are microseconds with 3 decimals: edge-to-edge spans (the
            # engine's back-to-back phases) compare equal only up to float rounding
            while open_ends and open_ends[-1] <= start + 1e-6:
                open_ends.pop()
            # disjoint from, or nested in, every open span
            assert not open_ends or end <= open_ends[-1] + 1e-9
            open_ends.append(end)


def test_graph_exports_and_critical_path(profiled):
    _, prof, _ = profiled
    graph = prof.graph()
    assert len(graph) > 0
    path = graph.critical_path()
    assert len(path) > 0 and path.length_ns > 0
    assert all(node["kind"] in ("brick", "kernel", "transfer") for node in path.nodes)
    assert graph.to_dot().startswith("digraph")
    tree = graph.ascii()
    assert tree.splitlines()[0] == "run" and "batch 0" in tree and "iteration 0" in tree
    assert graph.rank_bricks()[0]["time_share"] > 0


def test_lamm_runs_prox():
    for backend in ("native_cpu", "numpy"):
        with rh.profile(trace_capacity=0) as prof:
            _stream(backend, alpha=0.01)
        assert "prox" in prof.report(), backend


def test_estimator_profile_parameter():
    est = _stream("native_cpu", profile=True)
    report = est.profile_.report()
    assert report.metadata["batches"] == 3 and report["predict"].calls == 1
    assert _hooks.ACTIVE is None  # deactivated after every call
    est.fit(*make_contaminated_stream(2_000, 8, batch_size=2_000, seed=4).batch(0))
    refit = est.profile_.report()
    assert refit.metadata["batches"] == 1 and "predict" not in refit  # fit starts a new profile
    assert "profile" in est.get_params() and not rh.RenewableHuberRegressor().profile
    with pytest.raises(ValueError, match="profile"):
        rh.RenewableHuberRegressor(profile="yes").fit(np.ones((3, 1)), np.ones(3))


def test_profiling_changes_no_number():
    X, y = make_contaminated_stream(3_000, 6, batch_size=3_000, seed=5).batch(0)
    config = Config()
    plain, plain_diag = update(None, X, y, None, config)
    with rh.profile():
        profiled, profiled_diag = update(None, X, y, None, config)
    assert np.array_equal(plain.coef, profiled.coef)
    assert np.array_equal(plain.information, profiled.information)
    assert plain_diag == profiled_diag


def test_off_records_nothing_and_nesting_restores():
    with rh.profile(sync_mode="off") as outer:
        assert _hooks.ACTIVE is not None
        with rh.profile() as inner:
            _stream("numpy")
        assert _hooks.ACTIVE is outer._recorder
        _stream("native_cpu")
    assert _hooks.ACTIVE is None
    assert len(outer.report()) == 0 and len(inner.report()) > 0
    # Detached afterwards: a later unprofiled update records nowhere.
    before = inner.report()["validate"].calls
    _stream("numpy")
    assert inner.report()["validate"].calls == before


def test_native_profiler_binding():
    bricks = native.bricks
    assert [name for name, _ in bricks.BRICKS] == list(_hooks.BRICKS)
    p = bricks.Profiler(sync_mode="deferred", clock="steady")
    assert p.sync_mode == "deferred" and p.clock == "steady_clock_source"
    p.begin_batch(10)
    t0 = _hooks.now()
    p.record(p.brick_id("solve"), t0, 1_000, 1, 2, 3)
    p.end_batch()
    assert json.loads(p.report_json())["bricks"][_hooks.SOLVE]["count"] == 1
    with pytest.raises(ValueError):
        bricks.Profiler(sync_mode="sometimes")
    with pytest.raises(ValueError):
        p.brick_id("nope")
