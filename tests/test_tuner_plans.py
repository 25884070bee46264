"""Plans: stable ids, validation, enumeration, and every plan reaching the engine and meeting
the contract (the golden corpus) through the public parameters ``plan`` and ``n_jobs``."""

import dataclasses
import itertools
import json
import os

import numpy as np
import pytest
from sklearn.base import clone

from helpers import NATIVE_CPU, golden_corpus, make_problem, require_module
from rhuber import RenewableHuberRegressor
from rhuber.engines import native_cpu_available
from rhuber.engines.plans import (
    CHUNK_KIB,
    Plan,
    cuda_usable,
    default_plan,
    installed_backends,
    offers,
    plans_for,
)
from rhuber.engines.workload import Workload
from rhuber.lab.golden import (
    RTOL,
    RUNG_CHECKED,
    case_config,
    compare_batch,
    replay_case,
)

CORPUS = golden_corpus()
CORES = os.cpu_count() or 1

WORKLOADS = [
    Workload(rows=rows, features=features, dtype=dtype, penalized=penalized,
             intercept=intercept, location=location)
    for rows, features, dtype, penalized, intercept, location in itertools.product(
        (256, 65536), (2, 64), ("float64", "float32"), (False, True), (True, False),
        ("host", "device"))
]


@pytest.fixture
def native():
    return require_module(*NATIVE_CPU)


def native_engine(estimator):
    """The C++ engine object behind a fitted native_cpu estimator (its options are properties)."""
    return estimator._engine()._engine


# ------------------------------------------------------------------------------------- ids


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.id)
def test_every_plan_id_round_trips_and_is_unique(workload):
    plans = plans_for(workload)
    assert len({p.id for p in plans}) == len(plans)
    for plan in plans:
        assert Plan.from_id(plan.id) == plan
        assert str(plan) == plan.id
    default = default_plan(workload)
    assert Plan.from_id(default.id) == default


@pytest.mark.parametrize("plan,key", [
    (Plan("native_cpu", threads=2, gram="incremental", chunk_kib=256, l1_solver="prox_newton"),
     "native_cpu/t2/gram=incremental/chunk=256k/l1=prox_newton"),
    (Plan("native_cpu"), "native_cpu/t*/gram=*/chunk=*/l1=lamm"),
    (Plan("native_cpu", gram="full"), "native_cpu/t*/gram=full/chunk=*/l1=lamm"),
    (Plan("numpy"), "numpy/l1=lamm"),
    (Plan("cuda"), "cuda/l1=lamm"),
])
def test_canonical_ids(plan, key):
    assert plan.id == key
    assert Plan.from_id(key) == plan


def test_left_out_segments_take_their_defaults():
    assert Plan.from_id("numpy") == Plan("numpy")
    assert Plan.from_id("native_cpu/gram=full") == Plan("native_cpu", gram="full")
    assert Plan.from_id("native_cpu/t4/l1=prox_newton") == Plan("native_cpu", threads=4,
                                                                l1_solver="prox_newton")


@pytest.mark.parametrize("key,message", [
    ("", "unknown backend ''"),
    ("auto", "unknown backend 'auto'"),
    ("native-cpu/t2", "unknown backend 'native-cpu'"),
    ("native_cpu/t0", "threads must be >= 1"),
    ("native_cpu/tfour", "'tfour': threads are 't<count>' or 't\\*'"),
    ("native_cpu/gram=fresh", "gram must be one of"),
    ("native_cpu/chunk=256", "'chunk=256': chunks are"),
    ("native_cpu/chunk=0k", "chunk_kib must be in"),
    ("native_cpu/l1=ista", "l1_solver must be one of"),
    ("native_cpu/l1=lamm/t2", "'t2' is out of order"),
    ("native_cpu/t2/t4", "'t4' repeats threads"),
    ("native_cpu/t2/", "unknown segment ''"),
    ("native_cpu/simd=avx2", "unknown segment 'simd=avx2'"),
    ("numpy/t2", "threads=2: only native_cpu has this setting"),
    ("cuda/gram=full/chunk=64k", "gram='full', chunk_kib=64: only native_cpu has these"),
    ("cuda/l1=prox_newton", "l1_solver='prox_newton': only native_cpu"),
])
def test_bad_ids_are_refused_naming_the_problem(key, message):
    with pytest.raises(ValueError, match=message) as info:
        Plan.from_id(key)
    assert repr(key) in str(info.value)  # the whole id, for the log it came from


def test_an_id_must_be_a_string():
    with pytest.raises(TypeError, match="a plan id is a string"):
        Plan.from_id(Plan("numpy"))


@pytest.mark.parametrize("kwargs,error,message", [
    ({"backend": "auto"}, ValueError, "'auto' is the estimator's choice"),
    ({"backend": "gpu"}, ValueError, "backend must be one of"),
    ({"backend": "native_cpu", "threads": 0}, ValueError, "threads must be >= 1"),
    ({"backend": "native_cpu", "threads": 2.0}, TypeError, "threads must be an integer"),
    ({"backend": "native_cpu", "threads": True}, TypeError, "threads must be an integer"),
    ({"backend": "native_cpu", "chunk_kib": 1 << 21}, ValueError, "chunk_kib must be in"),
    ({"backend": "native_cpu", "gram": "Full"}, ValueError, "gram must be one of"),
    ({"backend": "numpy", "l1_solver": "prox_newton"}, ValueError, "only native_cpu"),
    ({"backend": "cuda", "threads": 4}, ValueError, "backend is 'cuda'"),
])
def test_invalid_plans_are_refused(kwargs, error, message):
    with pytest.raises(error, match=message):
        Plan(**kwargs)


def test_numpy_integers_are_accepted_as_ints():
    plan = Plan("native_cpu", threads=np.int64(2), chunk_kib=np.int32(64))
    assert plan == Plan("native_cpu", threads=2, chunk_kib=64)
    assert type(plan.threads) is int and plan.id == "native_cpu/t2/gram=*/chunk=64k/l1=lamm"


# ------------------------------------------------------------------------------- plans_for


def test_plans_for_spans_every_knob_on_this_machine():
    unpenalized = plans_for(Workload(4096, 16))
    penalized = plans_for(Workload(4096, 16, penalized=True))
    assert unpenalized[0] == Plan("numpy")
    assert {p.l1_solver for p in unpenalized} == {"lamm"}
    native = [p for p in penalized if p.backend == "native_cpu"]
    if not native_cpu_available():
        assert native == []
        return
    threads = sorted({p.threads for p in native})
    assert threads[0] == 1 and threads[-1] == CORES and all(t <= CORES for t in threads)
    assert {p.gram for p in native} == {"incremental", "full"}
    assert {p.chunk_kib for p in native} == set(CHUNK_KIB)
    assert {p.l1_solver for p in native} == {"lamm", "prox_newton"}
    assert len(native) == len(threads) * 2 * len(CHUNK_KIB) * 2
    assert len(penalized) - 1 - cuda_usable() == 2 * (len(unpenalized) - 1 - cuda_usable())
    # What auto runs today is one of them, its defaults written out.
    assert default_plan(Workload(4096, 16)).resolved() in unpenalized


@pytest.mark.parametrize("cores,threads", [(1, [1]), (6, [1, 2, 4, 6]), (16, [1, 2, 4, 8, 16])])
def test_threads_follow_the_hardwares_cores(cores, threads):
    require_module(*NATIVE_CPU)

    class Hardware:
        pass

    hardware = Hardware()
    hardware.cores = cores
    got = sorted({p.threads for p in plans_for(Workload(1000, 8), hardware)
                  if p.backend == "native_cpu"})
    assert got == threads


def test_without_the_native_engine_only_numpy_remains(monkeypatch):
    import rhuber.engines.plans as plans

    monkeypatch.setattr(plans, "native_cpu_available", lambda: False)
    workload = Workload(1000, 8, penalized=True)
    assert [p for p in plans_for(workload) if p.backend != "cuda"] == [Plan("numpy")]
    assert default_plan(workload) == Plan("numpy")


def test_device_workloads_run_on_cuda_only():
    workload = Workload(1000, 8, location="device")
    assert plans_for(workload) == ([Plan("cuda")] if cuda_usable() else [])
    assert "numpy" in installed_backends()


# ------------------------------------------------------- the parameters reach the engine


def test_n_jobs_reaches_the_engine(native):
    X, y, _ = make_problem(np.random.default_rng(0), 300, 4)

    def pinned(**params):  # backend="auto" may run another plan (the advisor's)
        return RenewableHuberRegressor(backend="native_cpu", **params)

    assert native_engine(pinned(n_jobs=1).fit(X, y)).threads == 1
    assert native_engine(pinned().fit(X, y)).threads == CORES
    assert native_engine(pinned(n_jobs=-1).fit(X, y)).threads == CORES
    assert native_engine(pinned(n_jobs=-2).fit(X, y)).threads == max(1, CORES - 1)
    assert RenewableHuberRegressor(backend="numpy", n_jobs=3).fit(X, y).backend_ == "numpy"


@pytest.mark.parametrize("n_jobs", [0, 1.5, "all"])
def test_bad_n_jobs_is_refused(n_jobs):
    X, y, _ = make_problem(np.random.default_rng(0), 50, 2)
    with pytest.raises((ValueError, TypeError), match="n_jobs"):
        RenewableHuberRegressor(n_jobs=n_jobs).fit(X, y)


@pytest.mark.parametrize("as_id", [False, True])
def test_a_plan_decides_the_engine(native, as_id):
    plan = Plan("native_cpu", threads=1, gram="full", chunk_kib=64, l1_solver="prox_newton")
    X, y, _ = make_problem(np.random.default_rng(1), 500, 5)
    m = RenewableHuberRegressor(plan=plan.id if as_id else plan, alpha=0.01).fit(X, y)
    engine = native_engine(m)
    assert (engine.threads, engine.gram, engine.chunk_bytes) == (1, "full", 64 * 1024)
    assert m.backend_ == "native_cpu" and m._config().l1_solver == "prox_newton"
    defaults = native_engine(RenewableHuberRegressor(plan="native_cpu").fit(X, y))
    assert (defaults.threads, defaults.gram, defaults.chunk_bytes) == (CORES, "incremental",
                                                                       256 * 1024)
    assert RenewableHuberRegressor(plan="numpy").fit(X, y).backend_ == "numpy"


def test_the_engine_is_rebuilt_when_and_only_when_a_plan_changes_it(native):
    rng = np.random.default_rng(2)
    batches = [make_problem(rng, 400, 3)[:2] for _ in range(3)]
    m = RenewableHuberRegressor(plan="native_cpu/t1/gram=incremental/chunk=256k/l1=lamm")
    m.partial_fit(*batches[0])
    first = m._engine()
    m.set_params(plan=Plan("native_cpu", threads=1, gram="incremental", chunk_kib=256))
    m.partial_fit(*batches[1])
    assert m._engine() is first  # the same settings, as a Plan instead of its id
    m.set_params(plan="native_cpu/t1/gram=full/chunk=256k/l1=lamm")
    m.partial_fit(*batches[2])
    assert m._engine() is not first and native_engine(m).gram == "full"
    assert m.n_batches_ == 3


@pytest.mark.parametrize("settings,named", [
    ({"backend": "numpy"}, "backend='numpy'"),
    ({"l1_solver": "prox_newton"}, "l1_solver='prox_newton'"),
    ({"n_jobs": 1}, "n_jobs=1"),
])
def test_settings_that_contradict_the_plan_are_refused(native, settings, named):
    X, y, _ = make_problem(np.random.default_rng(3), 100, 3)
    plan = f"native_cpu/t{CORES + 1}/gram=full/chunk=64k/l1=lamm"
    with pytest.raises(ValueError, match=f"conflicts with {named}"):
        RenewableHuberRegressor(plan=plan, **settings).fit(X, y)


def test_settings_that_agree_with_the_plan_are_accepted(native):
    X, y, _ = make_problem(np.random.default_rng(3), 100, 3)
    m = RenewableHuberRegressor(plan="native_cpu/t1/l1=prox_newton", backend="native_cpu",
                                n_jobs=1, l1_solver="prox_newton").fit(X, y)
    assert native_engine(m).threads == 1
    # n_jobs=None and a plan's t* both mean all cores; so do -1 and t<cores>.
    RenewableHuberRegressor(plan=f"native_cpu/t{CORES}", n_jobs=-1).fit(X, y)


def test_a_bad_plan_is_refused_when_fitting():
    X, y, _ = make_problem(np.random.default_rng(3), 100, 3)
    with pytest.raises(ValueError, match="not a plan id: 'native_cpu/t0'"):
        RenewableHuberRegressor(plan="native_cpu/t0").fit(X, y)
    with pytest.raises(ValueError, match="plan"):
        RenewableHuberRegressor(plan=3).fit(X, y)


def test_clone_and_get_params_keep_the_plan():
    plan = Plan("native_cpu", threads=1)
    m = RenewableHuberRegressor(plan=plan, n_jobs=1)
    assert clone(m).get_params()["plan"] == plan and clone(m).n_jobs == 1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_full_and_incremental_gram_agree_within_the_contract(native, dtype):
    # Enough rows for several row blocks and chunks, and outliers: the incremental Gram is used.
    rng = np.random.default_rng(4)
    batches = [make_problem(rng, 12000, 10, outliers=0.2, dtype=dtype)[:2] for _ in range(3)]
    fits = {}
    for gram in ("incremental", "full"):
        m = RenewableHuberRegressor(plan=Plan("native_cpu", gram=gram))
        for X, y in batches:
            m.partial_fit(X, y)
        fits[gram] = m
    rtol = RTOL[np.dtype(dtype).name]
    a, b = fits["full"], fits["incremental"]
    for got, want in ((a.coef_, b.coef_), (a.intercept_, b.intercept_),
                      (a.information_, b.information_), (a.scale_, b.scale_)):
        x, ref = np.asarray(got, float), np.asarray(want, float)
        assert np.all(np.abs(x - ref) <= rtol * np.maximum(1, np.abs(ref)))


def test_every_plan_agrees_with_the_reference_on_a_large_stream(native):
    # Larger than the corpus's cases: several chunks per block at every chunk size.
    rng = np.random.default_rng(5)
    batches = [make_problem(rng, 9000, 12, outliers=0.15)[:2] for _ in range(2)]
    workload = Workload(rows=9000, features=12, penalized=True)
    reference = RenewableHuberRegressor(backend="numpy", alpha=0.005)
    for X, y in batches:
        reference.partial_fit(X, y)
    for plan in plans_for(workload):
        if plan.backend == "cuda":
            continue
        m = RenewableHuberRegressor(plan=plan, alpha=0.005)
        for X, y in batches:
            m.partial_fit(X, y)
        for x, ref in ((m.coef_, reference.coef_), (m.information_, reference.information_)):
            assert np.all(np.abs(x - ref) <= 1e-7 * np.maximum(1, np.abs(ref))), plan.id


# ------------------------------------------------------------------- the golden corpus


def _case_workload(case):
    first = case["batches"][0]
    return Workload(rows=len(first["X"]), features=len(first["X"][0]), dtype=case["dtype"],
                    penalized=case["config"]["alpha"] > 0,
                    intercept=case["config"]["fit_intercept"])


GOLDEN_PLANS = [
    pytest.param(case, plan, id=f"{case['name']}-{plan.id}")
    for case in CORPUS["cases"] for plan in plans_for(_case_workload(case))
]


@pytest.mark.parametrize("case,plan", GOLDEN_PLANS)
def test_every_plan_meets_golden(case, plan):
    config = dataclasses.replace(case_config(case), l1_solver=plan.l1_solver)
    records = replay_case(case, plan.make_engine().update, config)
    for k, (got, want) in enumerate(zip(records, case["batches"], strict=True)):
        problems = compare_batch(got, want, case["dtype"], check_rung=case["name"] in RUNG_CHECKED)
        assert not problems, f"{plan.id}, batch {k + 1}: {problems}"


def test_golden_covers_every_installed_host_backend():
    assert {plan.backend for _, plan in (p.values for p in GOLDEN_PLANS)} == \
        set(installed_backends())


# ------------------------------------------------------------------------- checkpoints


@pytest.mark.parametrize("as_id", [False, True])
def test_a_plan_survives_a_checkpoint(tmp_path, native, as_id):
    plan = Plan("native_cpu", threads=1, gram="full", chunk_kib=64)
    rng = np.random.default_rng(6)
    batches = [make_problem(rng, 300, 4)[:2] for _ in range(2)]
    m = RenewableHuberRegressor(plan=plan.id if as_id else plan, n_jobs=1)
    m.partial_fit(*batches[0])
    assert json.loads(str(m.state_dict()["params"]))["plan"] == plan.id
    m.save_checkpoint(tmp_path / "m.npz")
    loaded = RenewableHuberRegressor.load_checkpoint(tmp_path / "m.npz")
    assert Plan.from_id(loaded.plan) == plan and loaded.n_jobs == 1
    loaded.partial_fit(*batches[1])
    m.partial_fit(*batches[1])
    assert native_engine(loaded).gram == "full"
    np.testing.assert_array_equal(loaded.coef_, m.coef_)


#: Plans on and off plans_for's grid: thread counts it lists and not (3 is no power of two below
#: 4 cores), chunks it tries and not, both solvers, and the other backends.
PROBED_PLANS = [Plan("numpy"), Plan("cuda"),
                *(Plan("native_cpu", threads=t, gram=g, chunk_kib=c, l1_solver=s)
                  for t in (1, 2, 3, 4, CORES, CORES + 1) for g in ("incremental", "full")
                  for c in (64, 128, 256, 1024) for s in ("lamm", "prox_newton"))]


@pytest.mark.parametrize("cores", [None, 1, 2, 4, 6])
def test_offers_answers_what_plans_for_lists(cores):
    """offers() is membership in plans_for's host list, without building it."""
    hardware = None if cores is None else type("Hardware", (), {"cores": cores})()
    for w in WORKLOADS:
        listed = set(plans_for(w, hardware, cuda=False))
        for plan in PROBED_PLANS:
            assert offers(plan, w, cores) == (plan in listed), (w, plan)


def test_all_cores_means_the_cores_this_process_may_run_on(monkeypatch):
    from rhuber.engines import plans

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert plans.usable_cores() == 1  # confined to one core of 64 (taskset, a cpuset)
    monkeypatch.delattr(os, "sched_getaffinity")
    assert plans.usable_cores() == 64  # no affinity masks (macOS, Windows): every core
