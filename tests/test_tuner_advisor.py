"""The advisor behind backend="auto": its rules, its evidence, and the estimator's plan_."""

import dataclasses
import json

import numpy as np
import pytest

from helpers import NATIVE_CPU, BatchClock, make_problem, require_module
from rhuber import RenewableHuberRegressor
from rhuber.engines.plans import Plan, plans_for
from rhuber.engines.workload import Workload
from rhuber.lab import validate
from rhuber.tuner import advisor as adv
from rhuber.tuner import current, reasons, rules
from rhuber.tuner import session as sessions
from rhuber.tuner.hardware import Hardware
from rhuber.tuner.models import Ensemble, default_models_dir


@pytest.fixture(scope="module")
def models():
    require_module(*NATIVE_CPU)
    ensemble = Ensemble.load()
    fingerprints = json.loads(ensemble.models["throughput"].metadata["fingerprints"])
    return ensemble, Hardware.from_dict(fingerprints["fee15980d40e045d"])


@pytest.fixture
def shipped(models):
    """A fresh advisor (it remembers answers) on the shipped models, with the fingerprint of
    the machine they were trained on: the decisions below do not depend on the machine
    running the tests."""
    ensemble, hardware = models
    return adv.Advisor(ensemble, hardware, model_id="test", rule=TRUSTING)


#: The shipped rule with the model trusted in every region: the model's own decisions below.
TRUSTING = rules.load(default_models_dir()).replace(model_regions=validate.ALL_REGIONS)


def advise(advisor, workload):
    return advisor.advise(workload, candidates=plans_for(workload, advisor.hardware))


# A workload the shipped model moves off the default for, and one it keeps the default for.
CHOSEN_WORKLOAD = Workload(4096, 32, "float32", penalized=True)
NEAR_DEFAULT_WORKLOAD = Workload(4096, 32, "float32")
#: One whose best plan is predicted a little faster than the default (below the margin).
SMALL_GAIN_WORKLOAD = Workload(16384, 2, "float32")


def test_a_workload_with_a_predicted_gain_gets_the_faster_plan(shipped):
    advice = advise(shipped, CHOSEN_WORKLOAD)
    assert advice.reason == reasons.CHOSEN, advice.detail
    assert advice.plan != advice.default
    assert advice.predicted_rows_per_s >= (1 + adv.GAIN_MARGIN) * advice.default_rows_per_s
    assert advice.ranked[0].plan == advice.plan
    assert advice.model_id == "test"


def test_advice_is_deterministic(shipped):
    assert advise(shipped, CHOSEN_WORKLOAD) == advise(shipped, CHOSEN_WORKLOAD)


def test_a_small_predicted_gain_keeps_the_default(shipped):
    advice = advise(shipped, NEAR_DEFAULT_WORKLOAD)
    assert advice.reason == reasons.GAIN_BELOW_MARGIN
    assert advice.plan == advice.default == TRUSTING.plan(NEAR_DEFAULT_WORKLOAD,
                                                          shipped.hardware.cores)


def test_the_margin_decides(shipped, monkeypatch):
    monkeypatch.setattr(adv, "GAIN_MARGIN", 10.0)
    assert advise(shipped, CHOSEN_WORKLOAD).reason == reasons.GAIN_BELOW_MARGIN
    monkeypatch.setattr(adv, "GAIN_MARGIN", 0.0)
    advice = advise(shipped, SMALL_GAIN_WORKLOAD)
    assert advice.reason == reasons.CHOSEN, advice.detail


@pytest.mark.parametrize("workload, why", [
    (Workload(10**7, 8), "rows 10000000 outside"),
    (Workload(1024, 1000), "features 1000 outside"),
    (Workload(4096, 16, intercept=False), "feature intercept"),
    (Workload(65536, 256), "feature batch_bytes_log"),
])
def test_workloads_outside_the_training_distribution_run_the_default(shipped, workload, why):
    # Out of distribution, auto runs the rule's default, or tries it first against the model's
    # candidates predicted faster.
    advice = advise(shipped, workload)
    assert advice.reason in (reasons.OUT_OF_DISTRIBUTION, reasons.TRIAL)
    assert why in advice.detail
    assert advice.plan == advice.default
    assert not advice.trials or advice.trials[0] == advice.default


def test_an_unmeasured_machine_is_not_out_of_distribution_but_a_bigger_one_is(shipped):
    unmeasured = dataclasses.replace(shipped.hardware, cpu_model="Some Other CPU",
                                     memory_bandwidth_bytes_per_s=None, peak_flops_float64=None,
                                     peak_flops_float32=None)
    advice = advise(adv.Advisor(shipped.ensemble, unmeasured, rule=TRUSTING), CHOSEN_WORKLOAD)
    assert advice.reason == reasons.CHOSEN, advice.detail  # the features need nothing measured
    bigger = dataclasses.replace(shipped.hardware, cpu_model="Some Other CPU",
                                 logical_cores=64, physical_cores=32)
    advice = advise(adv.Advisor(shipped.ensemble, bigger, rule=TRUSTING), CHOSEN_WORKLOAD)
    assert advice.reason in (reasons.OUT_OF_DISTRIBUTION, reasons.TRIAL)
    assert "cores_log" in advice.detail


def test_the_machine_the_model_knows_is_recognized_by_its_id(shipped):
    unmeasured = dataclasses.replace(shipped.hardware, memory_bandwidth_bytes_per_s=None,
                                     peak_flops_float64=None, peak_flops_float32=None)
    advisor = adv.Advisor(shipped.ensemble, unmeasured, rule=TRUSTING)
    assert advisor.hardware == shipped.hardware
    assert advise(advisor, CHOSEN_WORKLOAD).reason == reasons.CHOSEN


def test_an_unsure_model_keeps_the_default(shipped, monkeypatch):
    monkeypatch.setattr(shipped, "uncertainty_bound", 1e-6)
    advice = advise(shipped, CHOSEN_WORKLOAD)
    assert advice.reason in (reasons.OUT_OF_DISTRIBUTION, reasons.TRIAL)
    assert "unsure" in advice.detail
    assert advice.plan == advice.default


def test_the_plan_classifier_must_agree(shipped, monkeypatch):
    default = TRUSTING.plan(CHOSEN_WORKLOAD, shipped.hardware.cores)
    monkeypatch.setattr(shipped.ensemble, "plan_probabilities",
                        lambda workload, hardware: {default.id: 1.0})
    advice = advise(shipped, CHOSEN_WORKLOAD)
    assert advice.reason == reasons.CLASSIFIER_DISAGREES and advice.plan == default


def test_models_without_a_training_distribution_are_refused(shipped):
    models = dict(shipped.ensemble.models)
    stripped = dataclasses.replace(models["throughput"], metadata={
        k: v for k, v in models["throughput"].metadata.items() if k != "feature_min"})
    with pytest.raises(ValueError, match="no training distribution"):
        adv.Advisor(Ensemble({**models, "throughput": stripped}), shipped.hardware)


# --------------------------------------------------------------------------- evidence


def _decision(session):
    return session.plan, session.display, session.reason, session.detail, session.settled


def _chosen_session(promised=1000.0):
    default = Plan("native_cpu").resolved(2)
    plan = Plan("native_cpu", threads=1, gram="incremental", chunk_kib=64)
    advice = adv.Advice(Workload(1024, 8), plan, default, reasons.CHOSEN, "+20 %", promised,
                        promised / 1.2, model_id="m")
    return sessions.Session.from_advice(advice)


def test_a_chosen_plan_that_keeps_its_promise_stays():
    session = _chosen_session()
    for seconds in (10.0, 1.0, 1.02, 0.99):  # rows/s: 100 (warm-up), 1000, 980, 1010
        session = session.observe(1000, seconds)
    assert session.reason == reasons.CHOSEN and session.plan is not None
    assert session.measured() == pytest.approx(1000.0)
    after = session.observe(1000, 100.0)  # evidence is complete: the decision stays
    assert _decision(after) == _decision(session)
    assert after.measured() == pytest.approx((1000 + 1000 / 1.02) / 2)  # 1000, 980, 1010, 10


def _broken_promise():
    """A chosen plan that measured 833 rows/s against a promise of 1,000: the default's trial
    runs next."""
    session = _chosen_session()
    for seconds in (1.0, 1.0, 1.2):  # warm-up, then 1000 and 833 rows/s: not yet complete
        session = session.observe(1000, seconds)
    assert session.reason == reasons.CHOSEN and session.plan is not None
    session = session.observe(1000, 1.2)  # median 833 < 1000 / 1.1
    assert session.plan == session.advice.default and session.trial == ()
    assert not session.settled
    return session


def test_a_broken_promise_reverts_when_the_default_measures_faster():
    session = _broken_promise()
    for seconds in (5.0, 1.0):  # the default's warm-up, then 1000 rows/s: not yet complete
        session = session.observe(1000, seconds)
        assert session.plan == session.advice.default and session.reason == reasons.CHOSEN
    session = session.observe(1000, 1.0)
    assert session.reason == reasons.REVERTED and session.plan == session.advice.default
    assert session.settled
    assert session.display == session.advice.default.id
    assert "measured 833 rows/s (promised 1,000), the default 1,000" in session.detail
    assert session.measured() == pytest.approx(1000.0)
    assert session.report().predicted_rows_per_s == pytest.approx(1000 / 1.2)
    after = session.observe(1000, 0.001)  # settled: the decision does not change any more
    assert _decision(after) == _decision(session)


def test_a_broken_promise_keeps_the_plan_when_the_default_is_slower_still():
    session = _broken_promise()
    for seconds in (5.0, 2.0, 2.0):  # the default: 500 rows/s
        session = session.observe(1000, seconds)
    assert session.reason == reasons.CHOSEN and session.settled
    assert session.plan == session.advice.plan
    assert "kept: " in session.detail and "the default 500" in session.detail
    assert session.measured() == pytest.approx(833.33, rel=1e-3)


def test_the_default_is_never_reverted():
    default = Plan("native_cpu").resolved(2)
    advice = adv.Advice(Workload(1024, 8), default, default, reasons.GAIN_BELOW_MARGIN, "", 1e9,
                        1e9)
    session = sessions.Session.from_advice(advice)
    for _ in range(6):
        session = session.observe(10, 1.0)
    assert session.reason == reasons.GAIN_BELOW_MARGIN and session.plan == default


def test_plan_report_reads_as_one_line():
    report = sessions.PlanReport("numpy/l1=lamm", reasons.CHOSEN, "+12 %", 1e6, 9e5, "shipped:abc")
    assert str(report) == ("numpy/l1=lamm (chosen by the model: +12 %); predicted 1,000,000 "
                           "rows/s, measured 900,000 rows/s (its batches' median, the first "
                           "left out); model shipped:abc")
    assert "\n" not in str(sessions.PlanReport("numpy/l1=lamm", reasons.NO_MODEL))


# -------------------------------------------------------------------- the estimator


class _FixedAdvisor:
    """Chooses ``plan`` for every workload, promising ``promised`` rows/s."""

    rule = rules.DEFAULT_RULE

    def __init__(self, plan, promised):
        self.plan, self.promised = plan, promised

    def advise(self, workload, *, candidates, default):
        assert self.plan in candidates
        return adv.Advice(workload, self.plan, default, reasons.CHOSEN, "test", self.promised,
                          self.promised / 2, model_id="fixed")


@pytest.fixture
def native():
    return require_module(*NATIVE_CPU)


def _use(monkeypatch, make):
    """Make ``make()`` this process's advisor, loaded already (a warm process)."""
    monkeypatch.setattr(adv, "shared", make)
    monkeypatch.setattr(current, "available", make)


def _stream(estimator, X, y, batch):
    for start in range(0, len(y), batch):
        estimator.partial_fit(X[start:start + batch], y[start:start + batch])
    return estimator



def test_auto_reverts_mid_stream_and_matches_the_default(native, monkeypatch):
    from rhuber import estimator

    chosen = Plan("native_cpu", threads=1, gram="full", chunk_kib=64)
    _use(monkeypatch, lambda: _FixedAdvisor(chosen, promised=1e15))
    # Four batches on the chosen plan at 300 rows/s (far below its promise), then the default's
    # trial at 600 rows/s: the default wins.
    monkeypatch.setattr(estimator, "time", BatchClock([1.0] * 4 + [0.5] * 4))
    X, y, _ = make_problem(np.random.default_rng(3), 8 * 300, 5)
    auto = RenewableHuberRegressor()
    engines = []
    for start in range(0, len(y), 300):
        auto.partial_fit(X[start:start + 300], y[start:start + 300])
        engines.append(auto._plan())
    default = auto._session.advice.default
    assert engines == [chosen] * 3 + [default] * 5  # the trial started after the 4th batch
    assert auto.plan_.reason == reasons.REVERTED and auto.plan_.plan == default.id
    assert auto.plan_.model_id == "fixed" and auto.plan_.measured_rows_per_s == pytest.approx(600)
    reference = _stream(RenewableHuberRegressor(backend="native_cpu"), X, y, 300)
    np.testing.assert_allclose(auto.coef_, reference.coef_, rtol=1e-9, atol=1e-12)


def test_auto_keeps_a_chosen_plan_that_delivers(native, monkeypatch):
    chosen = Plan("native_cpu", threads=1, gram="incremental", chunk_kib=64)
    _use(monkeypatch, lambda: _FixedAdvisor(chosen, promised=1.0))
    X, y, _ = make_problem(np.random.default_rng(4), 2000, 4)
    est = RenewableHuberRegressor(batch_size=250).fit(X, y)
    assert est.plan_.reason == reasons.CHOSEN and est.plan_.plan == chosen.id
    assert est._plan() == chosen and est.backend_ == "native_cpu"


def test_pins_bypass_the_advisor(native, monkeypatch):
    def refuse():
        raise AssertionError("the advisor was asked")

    monkeypatch.setattr(adv, "shared", refuse)
    monkeypatch.setattr(current, "available", refuse)
    X, y, _ = make_problem(np.random.default_rng(5), 400, 3)
    monkeypatch.setenv("RH_PLAN", "numpy/l1=lamm")
    est = RenewableHuberRegressor().fit(X, y)
    assert (est.plan_.reason, est.plan_.plan, est.backend_) == (reasons.PINNED_ENV, "numpy/l1=lamm",
                                                               "numpy")
    pinned = "native_cpu/t1/gram=full/chunk=64k/l1=lamm"
    est = RenewableHuberRegressor(plan=pinned).fit(X, y)  # plan= wins over RH_PLAN
    assert (est.plan_.reason, est.plan_.plan, est.backend_) == (reasons.PINNED, pinned,
                                                                 "native_cpu")
    est = RenewableHuberRegressor(backend="native_cpu").fit(X, y)  # RH_PLAN is auto's only
    assert (est.plan_.reason, est.backend_) == (reasons.USER_BACKEND, "native_cpu")


def test_a_bad_rh_plan_is_a_clear_error(native, monkeypatch):
    X, y, _ = make_problem(np.random.default_rng(6), 400, 3)
    monkeypatch.setenv("RH_PLAN", "native_cpu/t0")
    with pytest.raises(ValueError, match="RH_PLAN='native_cpu/t0': not a plan id"):
        RenewableHuberRegressor().fit(X, y)
    monkeypatch.setenv("RH_PLAN", "native_cpu/t1")
    with pytest.raises(ValueError, match=r"RH_PLAN='native_cpu/t1/.*' decides .* n_jobs=2"):
        RenewableHuberRegressor(n_jobs=2).fit(X, y)


def test_auto_respects_the_threads_the_user_fixed(native, monkeypatch):
    seen = {}

    class Spy:
        def advise(self, workload, *, candidates, default):
            seen.update(candidates=candidates, default=default)
            return adv.Advice(workload, default, default, reasons.GAIN_BELOW_MARGIN, "", None, None)

    _use(monkeypatch, Spy)
    X, y, _ = make_problem(np.random.default_rng(7), 400, 3)
    RenewableHuberRegressor(n_jobs=1).fit(X, y)
    assert seen["default"].threads == 1
    assert {p.threads for p in seen["candidates"] if p.backend == "native_cpu"} == {1}


def test_a_failed_update_leaves_plan_and_session_untouched(native, monkeypatch):
    chosen = Plan("native_cpu", threads=1, gram="full", chunk_kib=64)
    _use(monkeypatch, lambda: _FixedAdvisor(chosen, promised=1e15))
    X, y, _ = make_problem(np.random.default_rng(8), 900, 3)
    est = _stream(RenewableHuberRegressor(), X[:600], y[:600], 300)
    before = (est.plan_, est._session)
    bad = X[600:].copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError):
        est.partial_fit(bad, y[600:])
    assert (est.plan_, est._session) == before
