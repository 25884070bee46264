"""The L1 penalty's regime: the first batch's screen (engines.regime), the workload that carries
it, the rule that reads it, and the collector that measures it (docs/tuner.md, "The penalty's
regime")."""

import ctypes
import os

import numpy as np
import pytest

from helpers import NATIVE_CPU, BatchClock, require_module
from rhuber import RenewableHuberRegressor, dispatch
from rhuber.datasets import make_contaminated_stream
from rhuber.engines import regime
from rhuber.engines.plans import Plan
from rhuber.engines.workload import Workload
from rhuber.lab import collect
from rhuber.tuner import advisor as adv
from rhuber.tuner import current, reasons, rule_search, rules
from rhuber.tuner import session as sessions
from rhuber.tuner.features import FeatureExtractor
from rhuber.tuner.store import Measurement


def wide_batch(dtype="float64"):
    return make_contaminated_stream(4096, 256, batch_size=4096, seed=0, dtype=dtype).batch(0)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_screen_tells_a_sparse_schedule_from_a_dense_one(dtype):
    X, y = wide_batch(dtype)
    share = {c: regime.active_share(X, y, alpha=0.0, lambda_scale=c, tau=None, epsilon=1.345,
                                    fit_intercept=True) for c in (0.5, 3.0)}
    assert share[0.5] > 0.5 >= share[3.0]
    # and the solve agrees: lambda_scale 3 leaves few coefficients, 0.5 nearly all
    for c, expect_sparse in ((0.5, False), (3.0, True)):
        est = RenewableHuberRegressor(backend="numpy", lambda_scale=c).partial_fit(X, y)
        assert (np.mean(est.coef_ != 0) <= 0.5) == expect_sparse
        assert dispatch.workload(est, X, y).sparse == expect_sparse


def test_the_workload_is_sparse_only_when_penalized_and_read_from_data():
    X, y = wide_batch()
    assert not dispatch.workload(RenewableHuberRegressor(), X, y).sparse
    assert not dispatch.workload(RenewableHuberRegressor(lambda_scale=3.0), X).sparse  # no y
    assert dispatch.workload(RenewableHuberRegressor(alpha=10.0), X, y).sparse  # all zeroed
    w = Workload(4096, 256, penalized=True, sparse=True)
    assert w.id == "n4096/p256/float64/l1=2/icpt=1/host" and Workload.from_id(w.id) == w
    assert not Workload.from_id("n4096/p256/float64/l1=1/icpt=1/host").sparse
    with pytest.raises(ValueError, match="sparse workload must be penalized"):
        Workload(10, 2, sparse=True)
    with pytest.raises(ValueError, match="not a workload id"):
        Workload.from_id("n4096/p256/float64/l1=3/icpt=1/host")


def test_the_screen_cannot_tell_without_a_scale_or_rows():
    X = np.ones((50, 3))
    assert regime.active_share(X, np.zeros(50), alpha=0.1, lambda_scale=None, tau=None,
                               epsilon=1.345, fit_intercept=True) == 1.0
    assert regime.active_share(X[:0], np.zeros(0), alpha=0.1, lambda_scale=None, tau=None,
                               epsilon=1.345, fit_intercept=True) == 1.0


def test_the_features_see_the_regime():
    from test_tuner_features import CPU

    plan = Plan("native_cpu", threads=1, l1_solver="prox_newton")
    f = FeatureExtractor()
    dense = f.extract_dict(Workload(4096, 256, penalized=True), plan, CPU)
    sparse = f.extract_dict(Workload(4096, 256, penalized=True, sparse=True), plan, CPU)
    assert (dense["l1_sparse"], sparse["l1_sparse"]) == (0.0, 1.0)
    assert {k for k in dense if dense[k] != sparse[k]} == {"l1_sparse"}


DENSE = Workload(4096, 256, penalized=True)
SPARSE = Workload(4096, 256, penalized=True, sparse=True)


def test_the_rule_reads_the_regime():
    rule = rules.Rule(prox_newton_max_bytes=None, sparse_prox_newton_max_bytes=0)
    assert rule.plan(DENSE, 2).l1_solver == "prox_newton"
    assert rule.plan(SPARSE, 2).l1_solver == "lamm"
    assert "sparse regime: lamm" in rule.describe()
    # a rule file written before the regime existed keeps one cut-over for both
    old = rules.Rule.from_dict({"prox_newton_max_bytes": None, "one_thread_below": 1 << 16,
                                "gram": "incremental", "chunk_kib": 64})
    assert old.plan(SPARSE, 2).l1_solver == old.plan(DENSE, 2).l1_solver == "prox_newton"


def _measurements(seconds):
    """One machine's measurements: {(workload, l1_solver): seconds} on every other knob fixed
    as the family varies them (threads, gram, chunk), so every rule has its plan measured."""
    out = []
    for (w, solver), s in seconds.items():
        for threads in (1, 2):
            for gram in ("incremental", "full"):
                for chunk in (64, 256, 1024):
                    plan = Plan("native_cpu", threads=threads, gram=gram, chunk_kib=chunk,
                                l1_solver=solver)
                    out.append(Measurement("hw", w.id, plan.id, "ok", rows_per_run=w.rows,
                                           median_s=s, rows_per_s=w.rows / s))
    return out


def test_the_search_picks_per_regime_where_the_winners_differ():
    """Measured winners differ by regime (prox_newton dense, lamm sparse, at one batch size):
    the searched rule follows them; where prox_newton wins both, it says prox_newton for
    both."""
    differ = _measurements({(DENSE, "prox_newton"): 1.0, (DENSE, "lamm"): 2.0,
                            (SPARSE, "prox_newton"): 2.0, (SPARSE, "lamm"): 1.0})
    rule, score = rule_search.search(differ, {"hw": 2})
    assert score == pytest.approx(1.0)
    assert rule.plan(DENSE, 2).l1_solver == "prox_newton"
    assert rule.plan(SPARSE, 2).l1_solver == "lamm"
    same = _measurements({(DENSE, "prox_newton"): 1.0, (DENSE, "lamm"): 2.0,
                          (SPARSE, "prox_newton"): 1.0, (SPARSE, "lamm"): 10.0})
    rule, _ = rule_search.search(same, {"hw": 2})
    assert rule.plan(DENSE, 2).l1_solver == rule.plan(SPARSE, 2).l1_solver == "prox_newton"


def test_the_search_follows_fresh_measurements_where_a_machine_has_only_stale_ones():
    """Machine "a" measured after LAMM's last speed change (LAMM twice as fast), machine "b"
    before it (LAMM ten times slower): b's LAMM rows no longer describe LAMM, so the search
    follows a's, and b still counts LAMM as measured (a rule is not pushed off a plan for the
    lack of a fresh figure). Measured after the change on both, b's rows decide for
    prox_newton."""
    from dataclasses import replace

    from rhuber.tuner import labels

    fresh = "2026-12-31T00:00:00+00:00"
    old = "2026-12-01T00:00:00+00:00"
    a = [replace(m, hardware_id="a", measured_at=fresh) for m in
         _measurements({(DENSE, "prox_newton"): 2.0, (DENSE, "lamm"): 1.0})]
    b = [replace(m, hardware_id="b", measured_at=old) for m in
         _measurements({(DENSE, "prox_newton"): 1.0, (DENSE, "lamm"): 10.0})]
    assert any(labels.stale(m) for m in b) and not any(labels.stale(m) for m in a)
    rule, score = rule_search.search(a + b, {"a": 2, "b": 2})
    assert rule.plan(DENSE, 2).l1_solver == "lamm" and score == pytest.approx(1.0)
    b_now = [replace(m, measured_at=fresh) for m in b]
    rule, _ = rule_search.search(a + b_now, {"a": 2, "b": 2})
    assert rule.plan(DENSE, 2).l1_solver == "prox_newton"


def test_the_search_does_not_hand_a_rule_a_solver_nothing_current_measured():
    """Every LAMM row is stale: no current figure says how fast LAMM is, so the stale figures
    score a rule that runs it on the penalized batch, not nothing. (The unpenalized batch wants
    one thread and the smaller penalized one two, which no single threads rule gives both: a
    rule escaping the penalized batch's score would look perfect.)"""
    from dataclasses import replace

    big, small = Workload(65536, 32), Workload(8192, 8, penalized=True)
    now, before = "2026-12-31T00:00:00+00:00", "2026-12-01T00:00:00+00:00"
    rows = [Measurement(hw, w.id, Plan("native_cpu", threads=threads, gram=gram, chunk_kib=chunk,
                                       l1_solver=solver).id, "ok", rows_per_run=w.rows,
                        median_s=seconds, rows_per_s=w.rows / seconds, measured_at=at)
            for hw in ("a", "b") for threads in (1, 2) for gram in ("incremental", "full")
            for chunk in (64, 256, 1024)
            for w, solver, seconds, at in (
                (big, "lamm", 1.0 if threads == 1 else 2.0, now),
                (small, "prox_newton", 1.0 if threads == 2 else 2.0, now),
                (small, "lamm", 10.0, before))]
    rule, score = rule_search.search(rows, {"a": 2, "b": 2})
    assert rule.plan(small, 2).l1_solver == "prox_newton"
    assert score == pytest.approx(2 ** 0.5)
    # One machine's current LAMM figures are evidence: the other's stale ones count as measured.
    a_now = [replace(m, measured_at=now) if m.hardware_id == "a" else m for m in rows]
    counted, scored_stale = rule_search._stale_rows(a_now)
    assert counted and all(h == "b" and p.endswith("/l1=lamm") for h, _, p in counted)
    assert scored_stale == []
    assert all(m.plan_id.endswith("/l1=lamm") for m in rule_search._stale_rows(rows)[1])


class _Recorder:
    """An advisor that records the workloads it is asked about and returns the default."""

    rule = rules.DEFAULT_RULE

    def __init__(self):
        self.seen, self.candidates = [], []

    def advise(self, workload, *, candidates, default):
        self.seen.append(workload)
        self.candidates.append(candidates)
        return adv.Advice(workload, default, default, reasons.CHOSEN, "test", 1e6, 5e5,
                          model_id="recorder")


def _calls(monkeypatch, owner, name):
    """Count the calls of ``owner.name`` (each still runs)."""
    calls = []
    original = getattr(owner, name)

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counting)
    return calls


def _screens(monkeypatch):
    """Count the strong-rule screens dispatch runs."""
    return _calls(monkeypatch, regime, "active_share")


def _unloaded(monkeypatch, rule=rules.DEFAULT_RULE):
    """A process that has not loaded its advisor, whose rule in force is ``rule``."""
    monkeypatch.setattr(current, "available", lambda: reasons.UNLOADED)
    monkeypatch.setattr(rules, "current_rule", lambda: rule)
    dispatch._ANSWERS.clear()


def test_a_stream_whose_first_plan_does_not_depend_on_the_regime_does_not_read_it(monkeypatch):
    """A rule that says prox_newton in both regimes (at this size, the shipped one says lamm
    in the dense regime only): the screen (~50 µs, as much as a small batch) is not run at
    the stream's start."""
    require_module(*NATIVE_CPU)
    either = rules.DEFAULT_RULE.replace(prox_newton_max_bytes=None,
                                        sparse_prox_newton_max_bytes=None)
    _unloaded(monkeypatch, either)
    screens = _screens(monkeypatch)
    X, y = wide_batch()
    for c in (0.5, 3.0):
        est = RenewableHuberRegressor(lambda_scale=c).partial_fit(X, y)
        assert est.plan_.reason == reasons.RULE_FIRST
        assert est.plan_.plan == either.plan(DENSE, os.cpu_count() or 1).id
        assert est._session.unread
    dispatch._ANSWERS.clear()
    assert screens == []


def test_a_rule_that_reads_the_regime_gets_it_from_the_first_batch(monkeypatch):
    require_module(*NATIVE_CPU)
    _unloaded(monkeypatch, rules.Rule(prox_newton_max_bytes=None, sparse_prox_newton_max_bytes=0))
    screens = _screens(monkeypatch)
    X, y = wide_batch()
    solvers = [RenewableHuberRegressor(lambda_scale=c).partial_fit(X, y)._plan().l1_solver
               for c in (0.5, 3.0)]
    dispatch._ANSWERS.clear()
    assert solvers == ["prox_newton", "lamm"] and len(screens) == 2


def test_a_loaded_advisor_whose_answer_depends_on_the_regime_gets_it(monkeypatch):
    """The model's choice (its promise is checked against the batches) is asked with the
    regime read; so is fit's, and the workload auto plans for (its memo's key) carries it."""
    require_module(*NATIVE_CPU)
    recorder = _Recorder()
    monkeypatch.setattr(current, "available", lambda: recorder)
    dispatch._ANSWERS.clear()
    X, y = wide_batch()
    sparse = RenewableHuberRegressor(lambda_scale=3.0).partial_fit(X, y)
    dense = RenewableHuberRegressor(lambda_scale=0.5).partial_fit(X, y)
    fitted = RenewableHuberRegressor(lambda_scale=3.0, batch_size=4096).fit(
        np.vstack([X, X]), np.concatenate([y, y]))
    dispatch._ANSWERS.clear()
    assert sparse._session.advice.workload.id == "n4096/p256/float64/l1=2/icpt=1/host"
    assert not dense._session.advice.workload.sparse
    assert fitted._session.advice.workload.sparse
    assert not (sparse._session.unread or dense._session.unread)


def _long_stream():
    """Batches for a stream that asks the advisor (its TRIAL_AFTER_BATCHES-th) and two more."""
    return make_contaminated_stream(512 * (sessions.TRIAL_AFTER_BATCHES + 2), 64, batch_size=512,
                                    seed=0)


def _stream_sparse_batches(monkeypatch, stream, screens):
    """``stream``'s batches through a fresh sparse-regime estimator, each lasting 1 s (a long
    stream), checking that its regime is screened once: at the batch where it asks."""
    from rhuber import estimator

    n = sessions.TRIAL_AFTER_BATCHES
    monkeypatch.setattr(estimator, "time", BatchClock([1.0] * (n + 2)))
    est = RenewableHuberRegressor(lambda_scale=3.0)
    for b in range(n + 2):
        est.partial_fit(*stream.batch(b))
        assert len(screens) == (b >= n - 1)
    dispatch._ANSWERS.clear()
    return est


def test_a_stream_asks_the_advisor_with_the_regime_of_the_batch_it_asks_at(monkeypatch):
    """Not read at its start, the regime is read when the long stream asks the advisor (its
    20th batch here), from that batch; the advice's workload carries it, and so do the later
    batches' records (online learning)."""
    require_module(*NATIVE_CPU)
    _unloaded(monkeypatch)
    recorder = _Recorder()
    monkeypatch.setattr(adv, "shared", lambda: recorder)
    screens = _screens(monkeypatch)
    stream = _long_stream()
    est = _stream_sparse_batches(monkeypatch, stream, screens)
    assert [w.sparse for w in recorder.seen] == [True]
    assert dispatch.batch_workload(est, stream.batch(0)[0], est._session).sparse


class _TrialsWhenDense(_Recorder):
    """An advisor that tries a second plan after the default on dense batches and keeps the
    default on sparse ones: the first batches run the default in either regime."""

    def advise(self, workload, *, candidates, default):
        self.seen.append(workload)
        if workload.sparse:
            return adv.Advice(workload, default, default, reasons.GAIN_BELOW_MARGIN, "test", 1e6,
                              1e6, model_id="trials-when-dense")
        other = next(p for p in candidates if p != default)
        return adv.Advice(workload, default, default, reasons.TRIAL, "test", 1e6, 1e6,
                          model_id="trials-when-dense", trials=(default, other))


def test_trials_in_one_regime_only_leave_the_regime_unread_until_the_stream_asks(monkeypatch):
    """Both regimes' answers start on the rule's plan and only the dense one tries others later:
    no stream pays the screen at its start (a 12-batch stream of 3,000 x 48 paid ~5 % for it);
    a long one reads its regime when it asks (its 20th batch), and its sparse answer settles on
    the plan that runs."""
    require_module(*NATIVE_CPU)
    advisor = _TrialsWhenDense()
    monkeypatch.setattr(current, "available", lambda: advisor)
    dispatch._ANSWERS.clear()
    screens = _screens(monkeypatch)
    stream = _long_stream()
    for c in (0.5, 3.0):
        est = RenewableHuberRegressor(lambda_scale=c).partial_fit(*stream.batch(0))
        assert est.plan_.reason == reasons.RULE_FIRST and est._session.unread
    assert screens == []
    est = _stream_sparse_batches(monkeypatch, stream, screens)
    assert advisor.seen[-1].sparse
    assert est.plan_.reason == reasons.GAIN_BELOW_MARGIN and est._session.settled


def test_a_profiled_stream_reads_its_regime_at_the_start_and_its_batches_keep_it(monkeypatch):
    """Online learning records each batch's workload: a profiled stream reads its regime at its
    start, and its later batches (no screen: the targets are not read again) keep it."""
    require_module(*NATIVE_CPU)
    _unloaded(monkeypatch)
    X, y = wide_batch()
    sparse = RenewableHuberRegressor(lambda_scale=3.0, profile=True).partial_fit(X, y)
    dense = RenewableHuberRegressor(lambda_scale=0.5, profile=True).partial_fit(X, y)
    dispatch._ANSWERS.clear()
    assert dispatch.batch_workload(sparse, X[:100], sparse._session).sparse
    assert not dispatch.batch_workload(dense, X[:100], dense._session).sparse
    assert not dispatch.batch_workload(sparse, X[:100], None).sparse


def test_a_user_set_l1_solver_is_obeyed_in_the_sparse_regime(monkeypatch):
    """A rule that says lamm in the sparse regime, a user who fixed prox_newton: the user's
    solver in both regimes (so the regime need not be read)."""
    require_module(*NATIVE_CPU)
    _unloaded(monkeypatch, rules.Rule(prox_newton_max_bytes=None, sparse_prox_newton_max_bytes=0))
    X, y = wide_batch()
    est = RenewableHuberRegressor(lambda_scale=3.0, l1_solver="prox_newton").partial_fit(X, y)
    dispatch._ANSWERS.clear()
    assert regime.is_sparse(regime.active_share(X, y, alpha=0.0, lambda_scale=3.0, tau=None,
                                                epsilon=1.345, fit_intercept=True))
    candidates = est._session.waiting[1]  # what the advisor will be asked to choose from
    assert {p.l1_solver for p in candidates if p.backend == "native_cpu"} == {"prox_newton"}
    assert est._plan().l1_solver == "prox_newton"
    assert est.diagnostics_[-1]["solver"] == "prox_newton"


@pytest.mark.parametrize("point", [(4096, 16), (32768, 90), (4096, 256), (65536, 32), (256, 2)])
def test_the_collectors_sparse_workloads_are_sparse_by_the_screen(point):
    n, p = point
    w = Workload(n, p, penalized=True, sparse=True)
    batches = collect.workload_batches(w, 1)
    alpha = collect.penalty_alpha(w, batches)
    X, y = batches[0]
    assert regime.is_sparse(regime.active_share(X, y, alpha=alpha, lambda_scale=None, tau=None,
                                                epsilon=1.345, fit_intercept=True))
    dense = Workload(n, p, penalized=True)
    assert collect.penalty_alpha(dense, batches) == collect.PENALTY_ALPHA
    assert not regime.is_sparse(regime.active_share(
        X, y, alpha=collect.PENALTY_ALPHA, lambda_scale=None, tau=None, epsilon=1.345,
        fit_intercept=True))


@pytest.mark.parametrize("x_dtype", ["float32", "float64"])
@pytest.mark.parametrize("y_dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 2, 7, 2048, 3000])
def test_the_native_screen_is_the_numpy_screen(x_dtype, y_dtype, n):
    """The library's start gradient (rh_cpu_start_gradient) against the NumPy reference: the
    same τ to the bit (the same medians), the same gradient to rounding, with and without an
    intercept and a given τ, targets as a vector or a column."""
    cpu = require_module(*NATIVE_CPU)
    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, 5)).astype(x_dtype)
    y = (X[:, 0] - 2 * X[:, 3] + rng.standard_t(3, n) + 4).astype(y_dtype)
    native = cpu.start_gradient
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return native(*args, **kwargs)

    for targets in (y, y[:, None]):
        for tau in (None, 0.7):
            for intercept in (True, False):
                kwargs = {"tau": tau, "epsilon": 1.345, "fit_intercept": intercept}
                with pytest.MonkeyPatch.context() as patch:  # the screen took the library
                    patch.setattr(cpu, "start_gradient", counted)
                    g, used = regime.start_gradient(X, targets, **kwargs)
                assert calls.pop()
                g_ref, used_ref = regime.start_gradient_numpy(X, targets, **kwargs)
                assert used == used_ref
                np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-12 * g_ref.max())
    rows = np.ascontiguousarray(X[:regime.SCREEN_ROWS])
    assert cpu.start_gradient(rows, np.ascontiguousarray(y[:regime.SCREEN_ROWS]), tau=None,
                              mad_factor=2.0, fit_intercept=True) is not None  # it ran


def test_the_screen_runs_in_numpy_where_the_library_cannot(monkeypatch):
    """Rows that are not C-contiguous, and a process with no library loaded, take the NumPy
    screen: the same answer."""
    cpu = require_module(*NATIVE_CPU)
    X, y = wide_batch()
    strided = X[:, ::2]
    expected = regime.start_gradient_numpy(strided, y, tau=None, epsilon=1.345,
                                           fit_intercept=True)
    calls = []
    monkeypatch.setattr(cpu, "start_gradient", lambda *a, **k: calls.append(a))
    got = regime.start_gradient(strided, y, tau=None, epsilon=1.345, fit_intercept=True)
    assert not calls and got[1] == expected[1] and np.array_equal(got[0], expected[0])
    monkeypatch.undo()
    monkeypatch.setattr(cpu, "LIB", None)
    assert cpu.start_gradient(X, y, tau=None, mad_factor=2.0, fit_intercept=True) is None
    got = regime.start_gradient(X, y, tau=None, epsilon=1.345, fit_intercept=True)
    expected = regime.start_gradient_numpy(X, y, tau=None, epsilon=1.345, fit_intercept=True)
    assert got[1] == expected[1] and np.array_equal(got[0], expected[0])


def test_the_native_screen_cannot_tell_from_targets_that_are_not_finite():
    cpu = require_module(*NATIVE_CPU)
    X = np.random.default_rng(0).standard_normal((64, 3))
    y = X[:, 0].copy()
    y[5] = np.nan
    g, tau = cpu.start_gradient(X, y, tau=None, mad_factor=2.0, fit_intercept=True)
    assert tau == 0.0 and not g.any()
    assert regime.active_share(X, y, alpha=0.1, lambda_scale=None, tau=None, epsilon=1.345,
                               fit_intercept=True) == 1.0
    with pytest.raises(ValueError, match="dtype must be"):
        cpu.check(cpu.LIB.rh_cpu_start_gradient(X.ctypes.data, 9, 64, 3, y.ctypes.data, 2, 0,
                                                0.0, 2.0, 1, np.empty(3).ctypes.data,
                                                ctypes.byref(ctypes.c_double())))


@pytest.mark.parametrize("n", [1, 2, 5, 6, 2047, 2048])
def test_the_screens_median_is_numpys(n):
    v = np.random.default_rng(n).normal(size=n)
    assert regime._median(v) == np.median(v)


def test_a_later_stream_of_a_workload_starts_on_the_session_found_for_the_first(monkeypatch):
    """A stream's start finds its session once per workload (~15 µs a stream otherwise, a few
    per cent of a stream of small batches): the next stream of the same workload and settings
    takes it as found, and another workload, dtype or setting finds its own."""
    require_module(*NATIVE_CPU)
    _unloaded(monkeypatch)
    starts = _calls(monkeypatch, dispatch, "_start")
    X, y = wide_batch()
    first = RenewableHuberRegressor().partial_fit(X, y)
    second = RenewableHuberRegressor().partial_fit(X, y)
    assert len(starts) == 1 and second._session is not None
    assert second.plan_.plan == first.plan_.plan and second.plan_.reason == first.plan_.reason
    RenewableHuberRegressor(n_jobs=1).partial_fit(X, y)
    RenewableHuberRegressor().partial_fit(X.astype(np.float32), y.astype(np.float32))
    RenewableHuberRegressor(fit_intercept=False).partial_fit(X, y)
    RenewableHuberRegressor(batch_size=2048).fit(X, y)
    dispatch._ANSWERS.clear()
    assert len(starts) == 5


def test_a_session_found_from_the_batch_s_regime_is_found_again_for_each_stream(monkeypatch):
    """Where the first plan depends on the penalty's regime, the regime is the batch's data:
    each stream reads its own (the rule's sparse and dense plans differ here), and the session
    of a regime read before is found again rather than made anew."""
    require_module(*NATIVE_CPU)
    _unloaded(monkeypatch, rules.Rule(prox_newton_max_bytes=None, sparse_prox_newton_max_bytes=0))
    dispatch._ANSWERS.clear()
    starts = _calls(monkeypatch, dispatch, "_start")
    screens = _calls(monkeypatch, dispatch, "sparse")
    X, y = wide_batch()
    models = [RenewableHuberRegressor(lambda_scale=c).partial_fit(X, y)
              for c in (0.5, 3.0, 0.5, 3.0)]
    dispatch._ANSWERS.clear()
    assert [m._plan().l1_solver for m in models] == ["prox_newton", "lamm"] * 2
    assert len(screens) == 4 and len(starts) == 2


def test_recording_or_forgetting_a_trial_s_winner_makes_streams_find_their_session_again(
        monkeypatch, tmp_path):
    """The found sessions are keyed by the trials' generation: after a trial's winner is
    recorded (or the recorded ones forgotten) the next stream finds its session again, so it
    starts on the winner (through the estimator: test_tuner_trials.py)."""
    monkeypatch.setenv("RHUBER_CACHE_DIR", str(tmp_path))
    before = current.trials_generation()
    adv.remember(Workload(4096, 256, "float64"), (Plan("native_cpu", threads=1),),
                 Plan("native_cpu", threads=1), "a test's trial")
    assert current.trials_generation() == before + 1
    adv.reset_shared()
    assert current.trials_generation() == before + 2


@pytest.mark.parametrize("penalized", [False, True])
@pytest.mark.parametrize("n_jobs", [None, 1, 2, -1, -2])
@pytest.mark.parametrize("solver", ["lamm", "prox_newton"])
def test_the_lazy_candidates_hold_what_auto_plans_lists(penalized, n_jobs, solver):
    """A stream starting on its rule's plan asks only whether that plan is a candidate: the
    answer without the list is the list's."""
    require_module(*NATIVE_CPU)
    w = Workload(4096, 16, penalized=penalized)
    solver = solver if penalized else "lamm"
    args = (w, dispatch.threads(n_jobs), n_jobs is not None, solver)
    listed = dispatch.auto_plans(*args)[0]
    lazy = dispatch.Candidates(*args)
    assert tuple(lazy) == listed and len(lazy) == len(listed)
    probes = [Plan("numpy"), Plan("cuda"),
              *(Plan("native_cpu", threads=t, gram=g, chunk_kib=c, l1_solver=s)
                for t in (1, 2, 3, (os.cpu_count() or 1) + 1) for g in ("incremental", "full")
                for c in (64, 128, 256) for s in ("lamm", "prox_newton"))]
    for plan in probes:
        assert (plan in lazy) == (plan in listed), plan


def test_a_first_stream_on_the_rule_lists_no_candidates_until_it_asks(monkeypatch):
    """Before the advisor is asked, a stream's start needs its rule's plan alone: listing and
    validating every candidate (~0.07 ms) is left to the stream that asks."""
    require_module(*NATIVE_CPU)
    _unloaded(monkeypatch)
    listed = []
    plans = dispatch.auto_plans

    def recording(*args):
        listed.append(args)
        return plans(*args)

    monkeypatch.setattr(dispatch, "auto_plans", recording)
    X = np.random.default_rng(0).normal(size=(512, 6))
    est = RenewableHuberRegressor().partial_fit(X, X @ np.ones(6))
    assert listed == []
    assert est._session.reason == reasons.RULE_FIRST
    assert tuple(est._session.waiting[1]) == plans(Workload(512, 6), None, False, "lamm")[0]
    assert listed  # listed when asked for
