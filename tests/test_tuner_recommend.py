"""`rhuber tune recommend` and the recommendations it is built from (tuner/recommend.py).

The box's content is checked on the machine the shipped model was trained on (its fingerprint is
stored in the model), so nothing here depends on the machine the tests run on; the CLI is run end
to end once with that fingerprint and once on this machine, without probing it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shlex
import unicodedata

import numpy as np
import pytest

from rhuber.cli import _build_parser, main
from rhuber.engines.plans import Plan, plans_for
from rhuber.engines.workload import Workload
from rhuber.tuner import hardware as hardware_module
from rhuber.tuner.advisor import Advisor
from rhuber.tuner.hardware import Hardware
from rhuber.tuner.labels import BOTTLENECKS
from rhuber.tuner.models import Ensemble
from rhuber.tuner.reasons import OUT_OF_DISTRIBUTION, TRIAL
from rhuber.tuner.recommend import (
    ACTIONS,
    action_for,
    neighbours,
    rate,
    recommend,
    render_box,
    uncertainty_percent,
)

IN = Workload(4096, 32)
PENALIZED = Workload(4096, 32, penalized=True)
OUT = Workload(1_048_576, 8, dtype="float32", intercept=False)
#: A workload the shipped model moves off the rule's plan for where it is trusted (a retrained
#: one may not: pick another). The shipped rule trusts it nowhere today, so the test that shows
#: a chosen plan trusts it everywhere.
CHOSEN = Workload(4096, 32, "float32", penalized=True)


@pytest.fixture(scope="module")
def stored_hardware() -> Hardware:
    ensemble = Ensemble.load()
    fingerprints = json.loads(ensemble.models["throughput"].metadata["fingerprints"])
    return Hardware.from_dict(fingerprints["fee15980d40e045d"])


@pytest.fixture(scope="module")
def advisor(stored_hardware) -> Advisor:
    return Advisor(Ensemble.load(), stored_hardware, source="shipped", model_id="shipped:test")


@pytest.fixture(scope="module")
def recs(advisor):
    return {w: recommend(w, advisor) for w in (IN, PENALIZED, OUT)}


def columns(text: str) -> int:
    """Terminal columns of one line: no wide characters (box drawing is "ambiguous", one column
    outside CJK locales)."""
    assert all(unicodedata.east_asian_width(c) in {"N", "Na", "H", "A"} for c in text), text
    return len(text)


def test_uncertainty_is_shown_as_plus_minus_percent():
    assert uncertainty_percent(0.0) == 0.0
    assert uncertainty_percent(math.log(1.25)) == pytest.approx(25.0)
    assert rate(1_234_567) == "1.23M" and rate(45_600) == "45.6k" and rate(999) == "999"
    assert rate(None) == "—"


@pytest.mark.parametrize("workload", [IN, PENALIZED])
def test_every_valid_plan_best_first_with_default_and_auto_marked(recs, advisor, workload):
    rec = recs[workload]
    hw = advisor.hardware
    assert sorted(p.plan for p in rec.plans) == sorted(p.id for p in plans_for(workload, hw))
    rates = [p.rows_per_s for p in rec.plans]
    assert rates == sorted(rates, reverse=True)
    ranked = advisor.ensemble.rank(workload, plans_for(workload, hw), hw)
    assert rec.plans[0].rows_per_s == pytest.approx(math.exp(ranked[0].log_rows_per_s))
    assert rec.plans[0].uncertainty == pytest.approx(ranked[0].uncertainty)
    defaults = [p.plan for p in rec.plans if p.default]
    advice = advisor.advise(workload)
    assert defaults == [advice.default.id] == [rec.default_plan]
    assert advice.default == advisor.rule.plan(workload, hw.cores)  # the rule's plan
    assert [p.plan for p in rec.plans if p.auto] == [advice.plan.id] == [rec.auto_plan]
    assert rec.reason == advice.reason and rec.detail == advice.detail
    assert {p.plan for p in rec.plans if p.in_distribution} == {r.plan.id for r in advice.ranked}

    box = render_box(rec)
    lines = box.splitlines()
    assert lines[0].startswith("╭─ BrickTuner Recommendations") and lines[-1].startswith("╰")
    assert all(columns(line) == 80 for line in lines), [line for line in lines
                                                         if len(line) != 80]
    assert all(line[0] in "╭│├╰" and line[-1] in "╮│┤╯" for line in lines)
    start = next(i for i, line in enumerate(lines) if "plans, best predicted first" in line)
    assert lines[start + 1].split()[1:4] == ["plan", "rows/s", "±"]
    table = lines[start + 2: start + 2 + len(rec.plans)]
    for p, line in zip(rec.plans, table, strict=True):  # the table's order
        assert f" {p.plan} " in line and rate(p.rows_per_s) in line
        assert f"±{p.uncertainty_pct:.0f}%" in line
        assert line.startswith("│ " + ("▶" if p.auto else " ") + ("*" if p.default else " "))
    assert f"auto runs  {rec.auto_plan}" in box and rec.reason in box
    assert "OUTSIDE THE TRAINING DISTRIBUTION" not in box


def test_a_chosen_plan_shows_its_gain_over_the_default(stored_hardware):
    from rhuber.lab.validate import ALL_REGIONS
    from rhuber.tuner import rules
    from rhuber.tuner.advisor import default_models_dir

    trusting = rules.load(default_models_dir()).replace(model_regions=ALL_REGIONS)
    rec = recommend(CHOSEN, Advisor(Ensemble.load(), stored_hardware, source="shipped",
                                    model_id="shipped:test", rule=trusting))
    assert rec.auto_plan != rec.default_plan, rec.reason
    gain = (rec.predicted_rows_per_s / rec.default_rows_per_s - 1) * 100
    assert gain >= 10  # the advisor's margin
    assert f"default {rate(rec.default_rows_per_s)} rows/s ({gain:+.0f} %)" in render_box(rec)


def test_out_of_distribution_is_said_plainly(recs, advisor):
    rec = recs[OUT]
    assert rec.out_of_distribution and rec.reason in (OUT_OF_DISTRIBUTION, TRIAL)
    assert rec.auto_plan == rec.default_plan
    assert "1048576" in rec.detail  # the advisor names what is out of range
    assert len(rec.plans) == len(plans_for(OUT, advisor.hardware))
    box = render_box(rec)
    flat = " ".join(line.strip("│ ") for line in box.splitlines())
    assert "OUTSIDE THE TRAINING DISTRIBUTION: " + " ".join(rec.detail.split()) in flat
    assert "extrapolat" in box and "~ outside the training distribution" in box
    assert all(columns(line) == 80 for line in box.splitlines())


def test_a_machine_without_measured_limits_gets_predictions_but_no_roofline(stored_hardware):
    # Issue 28: the features need nothing measured; only the bottleneck's roofline does.
    unmeasured = dataclasses.replace(stored_hardware, cpu_model="another CPU",
                                     memory_bandwidth_bytes_per_s=None, peak_flops_float64=None,
                                     peak_flops_float32=None)
    advisor = Advisor(Ensemble.load(), unmeasured, source="shipped", model_id="shipped:test")
    rec = recommend(IN, advisor)
    assert not rec.out_of_distribution, rec.detail
    assert sorted(p.plan for p in rec.plans) == sorted(p.id for p in plans_for(IN, unmeasured))
    assert all(p.rows_per_s is not None for p in rec.plans)
    assert rec.bottleneck is None
    assert all(columns(line) == 80 for line in render_box(rec).splitlines())
    json.dumps(rec.as_dict())


def test_bottleneck_comes_with_its_probabilities_and_roofline(recs, advisor):
    rec = recs[IN]
    b = rec.bottleneck
    hw = advisor.hardware
    model = advisor.ensemble.models["bottleneck"]
    x = advisor.ensemble.extractor.extract(IN, Plan.from_id(rec.auto_plan), hw)
    proba = model.predict_proba(x).reshape(-1)
    assert b.plan == rec.auto_plan
    assert list(b.probabilities) == list(model.classes)
    assert list(b.probabilities.values()) == pytest.approx(proba.tolist())
    assert b.kind == model.classes[int(np.argmax(proba))]
    n, d = IN.rows, IN.features + 1
    assert b.roofline["bytes"] == n * (IN.features + 1) * 8
    assert b.roofline["flops"] == n * d * (d + 1)
    assert b.roofline["memory_s"] == pytest.approx(b.roofline["bytes"]
                                                   / hw.memory_bandwidth_bytes_per_s)
    assert b.roofline["compute_s"] == pytest.approx(b.roofline["flops"] / hw.peak_flops_float64)
    assert b.ridge == pytest.approx(hw.peak_flops_float64 / hw.memory_bandwidth_bytes_per_s)
    assert b.action == action_for(b.kind, IN, Plan.from_id(rec.auto_plan), hw.cores)
    flat = " ".join(line.strip("│ ") for line in render_box(rec).splitlines())
    assert f"class {b.kind} (" in " ".join(flat.split())
    assert f"{b.roofline['bound_kind']}-bound" in flat and "GB/s" in flat
    assert " ".join(b.action.split()) in " ".join(flat.split())


def test_each_bottleneck_class_has_a_rule_that_fits_the_workload():
    assert set(ACTIONS) == set(BOTTLENECKS)
    f64, f32 = Workload(4096, 32), Workload(4096, 32, dtype="float32")
    one_thread = Plan("native_cpu", threads=1, gram="full", chunk_kib=256)
    assert "float32 input halves the bytes" in action_for("memory", f64, one_thread, 8)
    assert "float32" not in action_for("memory", f32, one_thread, 8)
    assert "larger batches don't help" in action_for("memory", f32, one_thread, 8)
    compute = action_for("compute", f64, one_thread, 8)
    assert "threads 1 → 8" in compute and "float32" in compute and "incremental" in compute
    assert "threads" not in action_for("compute", f64, Plan("native_cpu", threads=8), 8)
    assert "4,096 → 16,384 rows" in action_for("overhead", f64, one_thread, 8)
    assert "larger batches" in action_for("solve", f64, one_thread, 8)
    assert action_for("transfer", f64, Plan("cuda"), 8) == ACTIONS["transfer"]


def test_experiments_are_the_most_uncertain_neighbours_with_a_collect_command(recs, advisor):
    rec = recs[IN]
    near = {w.id for w in neighbours(IN)}
    assert near == {w.id for w in (IN, Workload(2048, 32), Workload(8192, 32),
                                   Workload(4096, 16), Workload(4096, 64))}
    assert 1 <= len(rec.experiments) <= 3
    assert len({e.workload for e in rec.experiments}) == len(rec.experiments)
    assert all(e.workload in near for e in rec.experiments)
    spreads = [e.uncertainty for e in rec.experiments]
    assert spreads == sorted(spreads, reverse=True)
    hw = advisor.hardware
    pairs = [(w, p) for w in neighbours(IN) for p in plans_for(w, hw)]
    _, spread = advisor.ensemble.throughput(np.stack(
        [advisor.ensemble.extractor.extract(w, p, hw) for w, p in pairs]))
    assert spreads[0] == pytest.approx(float(spread.max()))  # the most uncertain of all
    measured = set()
    for command in rec.commands:  # commands the real parser takes, covering every experiment
        argv = shlex.split(command)
        assert argv[:3] == ["rhuber", "tune", "collect"]
        args = _build_parser().parse_args(argv[1:])
        measured |= {(n, p) for n in args.rows for p in args.features}
    assert {(Workload.from_id(e.workload).rows, Workload.from_id(e.workload).features)
            for e in rec.experiments} <= measured
    box = render_box(rec)
    assert all(f"$ {c}" in box for c in rec.commands)


def test_json_is_the_same_content(recs):
    rec = recs[PENALIZED]
    data = json.loads(json.dumps(rec.as_dict()))
    assert data["workload"]["id"] == PENALIZED.id and data["workload"]["penalized"] is True
    assert [p["plan"] for p in data["plans"]] == [p.plan for p in rec.plans]
    assert data["auto"]["plan"] == rec.auto_plan and data["auto"]["reason"] == rec.reason
    assert data["default"]["plan"] == rec.default_plan
    assert data["bottleneck"]["class"] == rec.bottleneck.kind
    assert data["bottleneck"]["roofline"]["bytes"] == rec.bottleneck.roofline["bytes"]
    assert [e["workload"] for e in data["experiments"]] == [e.workload for e in rec.experiments]
    assert data["commands"] == list(rec.commands)
    first = data["plans"][0]
    assert first["uncertainty_percent"] == pytest.approx(uncertainty_percent(
        first["uncertainty_log"]))


@pytest.fixture
def on_the_stored_machine(monkeypatch, stored_hardware):
    """`rhuber tune recommend` on the machine the shipped model was trained on."""
    monkeypatch.setattr(hardware_module, "fingerprint", lambda measure=True: stored_hardware)
    monkeypatch.setenv(hardware_module.CACHE_DIR_VARIABLE, "/nonexistent-rh-cache")
    return stored_hardware


def test_cli_prints_the_box(capsys, on_the_stored_machine, recs):
    status = main(["tune", "recommend", "--rows", "4096", "--features", "32", "--alpha", "0.01"])
    out, err = capsys.readouterr()
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("╭─ BrickTuner Recommendations") and lines[-1].startswith("╰")
    assert all(columns(line) <= 80 for line in lines)
    rec = recs[PENALIZED]
    assert f"workload  {PENALIZED.id}" in out and on_the_stored_machine.hardware_id in out
    assert f"auto runs  {rec.auto_plan}" in out
    assert all(p.plan in out for p in rec.plans)


def test_cli_json(capsys, on_the_stored_machine, recs):
    status = main(["tune", "recommend", "--rows", "1048576", "--features", "8", "--dtype",
                   "float32", "--no-intercept", "--json"])
    out, err = capsys.readouterr()
    assert status == 0, err
    data = json.loads(out)
    assert data["workload"]["id"] == OUT.id
    assert data["hardware_id"] == on_the_stored_machine.hardware_id
    assert data["auto"]["out_of_distribution"] is True
    assert data["auto"]["reason"] in (OUT_OF_DISTRIBUTION, TRIAL)
    assert [p["plan"] for p in data["plans"]] == [p.plan for p in recs[OUT].plans]


def test_cli_on_this_machine_without_probing(capsys):
    status = main(["tune", "recommend", "--rows", "1000", "--features", "5", "--no-measure",
                   "--json"])
    out, err = capsys.readouterr()
    assert status == 0, err
    data = json.loads(out)
    assert data["workload"]["id"] == Workload(1000, 5).id
    assert data["plans"] and sum(p["auto"] for p in data["plans"]) == 1
    assert sum(p["default"] for p in data["plans"]) == 1


@pytest.mark.parametrize("argv, message", [
    (["--rows", "0", "--features", "3"], "argument --rows: must be at least 1"),
    (["--rows", "ten", "--features", "3"], "argument --rows: expected a whole number"),
    (["--rows", "10", "--features", "0"], "argument --features: must be at least 1"),
    (["--rows", "10", "--features", "3", "--dtype", "float16"], "argument --dtype: invalid"),
    (["--rows", "10", "--features", "3", "--alpha", "-1"], "argument --alpha: must be finite"),
    (["--rows", "10"], "the following arguments are required: --features"),
])
def test_cli_refuses_bad_arguments(capsys, argv, message):
    assert main(["tune", "recommend", *argv]) == 2
    out, err = capsys.readouterr()
    assert message in err and out == ""
