"""`rhuber top`'s recommendations panel (cli/_top.py, tuner/recommend.py panel_lines).

The pseudo-terminal run of `rhuber top` is in test_cli_profile.py; here the pieces, on the
machine the shipped model was trained on (its stored fingerprint), so nothing depends on the
machine the tests run on.
"""

from __future__ import annotations

import json
import types

import numpy as np
import pytest

from rhuber import RenewableHuberRegressor
from rhuber.cli import _build_parser, _top
from rhuber.engines.plans import Plan
from rhuber.engines.workload import Workload
from rhuber.tuner.advisor import Advisor
from rhuber.tuner.hardware import Hardware
from rhuber.tuner.models import Ensemble
from rhuber.tuner.reasons import OUT_OF_DISTRIBUTION
from rhuber.tuner.recommend import panel_lines, rate, top_panel


@pytest.fixture(scope="module")
def advisor() -> Advisor:
    ensemble = Ensemble.load()
    fingerprints = json.loads(ensemble.models["throughput"].metadata["fingerprints"])
    hw = Hardware.from_dict(next(iter(fingerprints.values())))
    return Advisor(ensemble, hw, source="shipped", model_id="shipped:test")


def test_measured_rate_leaves_out_the_cold_first_call():
    state = _top.TopState(source="test")
    assert state.measured_rows_per_s() is None
    state.add(1000, 1.0, {})  # cold: 1k rows/s
    assert state.measured_rows_per_s() == 1000
    for seconds in (0.001, 0.002, 0.004):
        state.add(1000, seconds, {})
    assert state.measured_rows_per_s() == pytest.approx(500_000)  # median of 1M, 500k, 250k
    for _ in range(30):
        state.add(1000, 0.01, {})
    assert len(state.rates) == 20 and state.measured_rows_per_s() == pytest.approx(100_000)


def test_workload_of_a_batch():
    X = np.zeros((2000, 7), dtype=np.float32)
    assert _top.workload_of(X, RenewableHuberRegressor(alpha=0.1, fit_intercept=False)) == (
        Workload(2000, 7, dtype="float32", penalized=True, intercept=False))
    assert _top.workload_of(X.astype(int), RenewableHuberRegressor()) == Workload(2000, 7)


def test_workload_of_a_lambda_scale_stream_is_penalized():
    """The schedule penalizes every batch whatever alpha is: top's recommendations are for an
    L1 workload, as auto's."""
    X = np.zeros((2000, 7))
    assert _top.workload_of(X, RenewableHuberRegressor(lambda_scale=0.5)).penalized
    args = _build_parser().parse_args(["top", "--lambda-scale", "2"])
    assert args.lambda_scale == 2.0


def test_running_plan():
    X = np.random.default_rng(0).normal(size=(200, 3))
    y = X @ [1.0, 2.0, 3.0]
    numpy = RenewableHuberRegressor(backend="numpy")
    assert _top.running_plan(numpy) is None  # nothing ran yet
    assert _top.running_plan(numpy.partial_fit(X, y)) == Plan("numpy")
    pinned = RenewableHuberRegressor(plan="numpy/l1=lamm").partial_fit(X, y)
    assert _top.running_plan(pinned) == Plan("numpy")
    # what the advisor reports (est.plan_) wins over the estimator's settings
    reported = types.SimpleNamespace(plan_=types.SimpleNamespace(plan="numpy/l1=lamm"),
                                     plan=None, backend_="native_cpu")
    assert _top.running_plan(reported) == Plan("numpy")
    native = types.SimpleNamespace(plan=None, backend_="native_cpu", _threads=lambda: 2)
    assert _top.running_plan(native, "prox_newton") == Plan("native_cpu", threads=2,
                                                            l1_solver="prox_newton")


def test_panel_compares_running_and_advised_plans(advisor):
    workload = Workload(4096, 32, penalized=True)
    panel = top_panel(advisor, workload, Plan("numpy"))
    rec = panel.recommendation
    assert panel.running == "numpy/l1=lamm"
    assert panel.running_prediction.plan == "numpy/l1=lamm"
    assert panel.running_bottleneck.plan == "numpy/l1=lamm"
    lines = panel_lines(panel, 123_000.0, width=100)
    assert all(len(line) <= 98 for line in lines)
    text = " ".join(" ".join(lines).split())
    assert f"workload {workload.id} (shipped:test)" in text
    assert (f"running numpy/l1=lamm: measured 123k rows/s, predicted "
            f"{rate(panel.running_prediction.rows_per_s)}") in text
    assert f"advisor {rec.auto_plan}: predicted {rate(rec.predicted_rows_per_s)} rows/s" in text
    assert rec.reason in text
    assert [line.split()[0] for line in lines if not line.startswith(" ")] == [
        "workload", "running", "advisor", "suggest"]
    gain = rec.predicted_rows_per_s / panel.running_prediction.rows_per_s - 1
    if gain >= 0.10:  # the advisor's plan is clearly faster than numpy: switch
        assert f"suggest plan='{rec.auto_plan}', predicted {gain * 100:+.0f} %" in text
    else:
        assert f"suggest {panel.running_bottleneck.kind}-bound" in text


def test_panel_suggests_the_bottleneck_action_when_the_advised_plan_runs(advisor):
    workload = Workload(2000, 10)
    rec_plan = advisor.advise(workload).plan
    panel = top_panel(advisor, workload, rec_plan)
    b = panel.running_bottleneck
    text = " ".join(" ".join(panel_lines(panel, None)).split())
    assert "measured — rows/s" in text
    assert f"suggest {b.kind}-bound ({b.probabilities[b.kind]:.0%}): " \
           f"{' '.join(b.action.split())}" in text


def test_panel_out_of_distribution(advisor):
    # A running plan other than the rule's default (the advisor ranks the default even out of
    # distribution, for its promise): its prediction is an extrapolation.
    running = Plan("native_cpu", threads=1, gram="full", chunk_kib=64)
    panel = top_panel(advisor, Workload(1_048_576, 8), running.id)
    assert panel.running == running.resolved(advisor.hardware.cores).id
    text = " ".join(" ".join(panel_lines(panel, 5e6)).split())
    assert OUT_OF_DISTRIBUTION in text and "1048576" in text and "(extrapolated)" in text


def test_render_shows_the_panel():
    state = _top.TopState(source="demo", backend="numpy")
    state.add(100, 0.01, {"converged": True, "n_iter": 3, "solver": "cholesky",
                          "objective": 1.0})
    report = types.SimpleNamespace(rows=[])
    frame = _top.render(state, report, {}, "no bricks recorded yet",
                        recommendations=["workload n100/p3", "suggest  more rows"])
    lines = frame.splitlines()
    at = next(i for i, line in enumerate(lines) if "recommendations" in line)
    assert lines[at + 1:at + 3] == ["  workload n100/p3", "  suggest  more rows"]
    assert lines.index("bottleneck: no bricks recorded yet") < at
    assert "recommendations" not in _top.render(state, report, {}, "-")
    assert _top.recommendation_lines(None, None, 80) == ["waiting for the first batch"]
    assert _top.recommendation_lines("unavailable: x", None, 80) == ["unavailable: x"]
