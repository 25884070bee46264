"""The shape-sweep benchmark (RFC 0001, "Benchmark protocol"): records, contracts, gate, compare.

A tiny profile runs in-process; every record it emits must follow scripts/benchmarks/
schema_v2.json. --compare and --gate are checked on documents built from it. Each engine has
engine-path records (engine.update) and estimator-path records
(RenewableHuberRegressor(backend=...).partial_fit, what users run) side by side.
"""

from __future__ import annotations

import copy
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from helpers import NATIVE_CPU, require_module

BENCH_DIR = Path(__file__).resolve().parents[1] / "scripts" / "benchmarks"
sys.path.insert(0, str(BENCH_DIR))

import benchmark_shape_sweep  # noqa: E402
from rhbench import SCHEMA_MINOR, contracts, sweep  # noqa: E402
from rhbench.limits import measure_machine_limits, roofline_bound  # noqa: E402
from rhbench.report import compare, gate, markdown_tables, record_path  # noqa: E402
from rhbench.schema import validate_document, validation_errors  # noqa: E402

TINY = sweep.Profile(
    name="tiny",
    shapes=(sweep.Shape("custom", 600, 4, 200, "test"),
            sweep.Shape("latency", 128, 3, 128, "test")),
    dtypes=("float64", "float32"),
    alphas=(0.0, 0.05),
    cold_repeats=1,
    steady_repeats=2,
    min_repeats=1,
    budget_s=5.0,
    full_fit_budget_s=5.0,
    bandwidth_elements=1 << 16,
    gemm_n=64,
    probe_repeats=1,
    threads=1,
)


@pytest.fixture(scope="module")
def limits() -> dict:
    return measure_machine_limits(TINY.bandwidth_elements, TINY.gemm_n, TINY.probe_repeats)


@pytest.fixture(scope="module")
def document(limits) -> dict:
    return sweep.Sweep(TINY, progress=False, limits=limits).run(command=["pytest"])


def _ok(doc, **match):
    return [r for r in doc["records"] if r["status"] == "ok"
            and all(r[k] == v for k, v in match.items())]


def test_every_record_follows_schema_v2(document):
    assert validation_errors(document) == []
    assert document["schema_version"] == 2
    assert len(document["records"]) > 0
    for record in document["records"]:
        assert record["environment"]["numpy"] == np.__version__
        # The profile limits BLAS to one thread: the record shows the limit in force.
        blas = [lib for lib in record["environment"]["threads"]["blas_lapack"]
                if lib["user_api"] == "blas"]
        assert blas and all(lib["num_threads"] == 1 for lib in blas)


def test_cold_and_steady_are_separate_records_for_each_workload(document):
    for engine in ("numpy", "sgd_huber"):
        for shape in TINY.shapes:
            for alpha in TINY.alphas:
                for dtype in TINY.dtypes:
                    found = {r["contract"] for r in _ok(document, engine=engine,
                                                        shape_class=shape.name, dtype=dtype)
                             if r["penalty"]["alpha"] == alpha}
                    assert found == {"cold", "steady"}, (engine, shape.name, alpha, dtype)
    steady = _ok(document, contract="steady", engine="numpy")[0]
    assert "one-time prime (first full pass)" in steady["excluded_from_timing"]
    assert "primed-state restore" in steady["excluded_from_timing"]
    cold = _ok(document, contract="cold", engine="numpy")[0]
    assert "primed-state restore" not in cold["excluded_from_timing"]
    assert "warm-up" in cold["excluded_from_timing"]


def test_timing_summary_matches_the_repetitions(document):
    for r in _ok(document):
        assert len(r["timings_s"]) == r["repetitions"] >= 1
        assert r["min_s"] == min(r["timings_s"])
        assert r["median_s"] == pytest.approx(float(np.median(r["timings_s"])))
        assert r["throughput_rows_per_s"] == pytest.approx(r["n_samples"] / r["median_s"])
        assert r["roofline"]["achieved_fraction"] == pytest.approx(
            r["roofline"]["bound_s"] / r["median_s"])
        assert r["transfer_in_timed_interval"] is False
        assert r["coef_error"]["rel_l2"] >= 0


def test_peers_are_fed_the_same_batches(document):
    for shape in TINY.shapes:
        for dtype in TINY.dtypes:
            prints = {r["input_sha256"] for r in document["records"]
                      if r["shape_class"] == shape.name and r["dtype"] == dtype}
            assert len(prints) == 1


def test_unavailable_or_inapplicable_subjects_are_skipped_with_a_reason(document):
    cuda = [r for r in document["records"] if r["engine"] == "cuda"]
    assert {r["residency"] for r in cuda} == {"host_fed", "device_resident"}
    for r in cuda:
        if r["status"] != "ok":
            assert r["reason"] and r["median_s"] is None
        assert r["transfer_in_timed_interval"] is (r["residency"] == "host_fed")
    huber_l1 = [r for r in document["records"]
                if r["engine"] == "huber_regressor" and r["penalty"]["alpha"] > 0]
    assert huber_l1 and all(r["status"] == "skipped" and "L1" in r["reason"] for r in huber_l1)
    huber = _ok(document, engine="huber_regressor")
    assert huber and {r["contract"] for r in huber} == {"full_fit"}


def test_engines_match_the_reference_on_the_same_data(document):
    """The reference and native records describe the same computation (same iterations)."""
    require_module(*NATIVE_CPU)
    natives = _ok(document, engine="native_cpu", contract="cold")
    assert {r["path"] for r in natives} == {"engine", "estimator"}
    for nat in natives:
        ref = next(r for r in _ok(document, engine="numpy", contract="cold", path=nat["path"])
                   if r["shape_class"] == nat["shape_class"] and r["dtype"] == nat["dtype"]
                   and r["penalty"] == nat["penalty"])
        assert nat["coef_error"]["rel_l2"] == pytest.approx(ref["coef_error"]["rel_l2"],
                                                            rel=1e-3, abs=1e-5)
        assert nat["solver_iterations"]["per_batch"] == ref["solver_iterations"]["per_batch"]
        # The rcond of each batch's last step: a condition estimate, the same to a few digits.
        for a, b in zip(nat["solver_iterations"]["rcond_per_batch"],
                        ref["solver_iterations"]["rcond_per_batch"], strict=True):
            assert (a is None and b is None) or a == pytest.approx(b, rel=1e-3)


def test_schema_rejects_inconsistent_records(document):
    doc = copy.deepcopy(document)
    ok = next(r for r in doc["records"] if r["status"] == "ok")
    ok["median_s"] = None
    skipped = next(r for r in doc["records"] if r["status"] == "skipped")
    skipped["reason"] = ""
    host_fed = next(r for r in doc["records"] if r["residency"] == "host_fed")
    host_fed["transfer_in_timed_interval"] = False
    del doc["records"][-1]["input_sha256"]
    errors = "\n".join(validation_errors(doc))
    assert "median_s" in errors or "None is not of type 'number'" in errors
    assert "transfer_in_timed_interval" in errors or "True was expected" in errors
    assert "input_sha256" in errors
    with pytest.raises(ValueError, match="schema v2"):
        validate_document(doc)


class _CountingSubject(contracts.Subject):
    """A subject whose "state" counts passes: checks what each contract starts from."""

    name = "numpy"
    kind = "reference"
    operation = "update"

    def __init__(self):
        self.starts: list[int] = []
        self.made = 0

    def make(self):
        self.made += 1
        return object()

    def start(self, obj):
        return 0

    def restore(self, primed):
        return int(primed)

    def run(self, obj, state, batches):
        self.starts.append(state)
        return contracts.PassResult(seconds=0.01, state=state + 1, iterations=[1] * len(batches),
                                    solvers=["x"] * len(batches), converged=[True] * len(batches))

    def warm_up(self, batches):
        pass

    def coefficients(self, state):
        return np.zeros(3), 0.0


def test_steady_state_starts_from_the_primed_state(monkeypatch, limits):
    subject = _CountingSubject()
    monkeypatch.setattr(sweep, "_subjects",
                        lambda profile, alpha: [("numpy", "engine", "host", subject, "")])
    profile = replace(TINY, shapes=(TINY.shapes[1],), dtypes=("float64",), alphas=(0.0,),
                      cold_repeats=2, steady_repeats=3)
    doc = sweep.Sweep(profile, progress=False, limits=limits).run(command=["pytest"])
    validate_document(doc)
    # Two cold passes from the empty state (each on a fresh object), then three steady passes
    # each from the state the first full pass left behind.
    assert subject.starts == [0, 0, 1, 1, 1]
    assert subject.made == 2
    steady = next(r for r in doc["records"] if r["contract"] == "steady")
    assert steady["repetitions"] == 3


def test_roofline_bound_counts_rows_once_and_the_gram_of_every_batch():
    limits = {"memory_bandwidth_bytes_per_s": 1e9, "peak_flops_per_s": {"float64": 1e9,
                                                                          "float32": 4e9}}
    bound = roofline_bound(1000, 9, 400, np.dtype("float64"), limits)
    assert bound["bytes"] == 1000 * 10 * 8
    assert bound["flops"] == (400 + 400 + 200) * 10 * 11
    assert bound["bound_s"] == pytest.approx(max(80_000 / 1e9, 110_000 / 1e9))
    assert bound["bound_kind"] == "compute"
    bound32 = roofline_bound(1000, 9, 400, np.dtype("float32"), limits)
    assert bound32["bytes"] == 40_000 and bound32["bound_kind"] == "memory"
    first_order = roofline_bound(1000, 9, 400, np.dtype("float64"), limits, gram=False)
    assert first_order["bound_s"] == pytest.approx(80_000 / 1e9)
    assert first_order["bound_kind"] == "memory" and first_order["gram_in_bound"] is False


def test_peers_are_bounded_by_the_read_alone(document):
    for r in _ok(document):
        assert r["roofline"]["gram_in_bound"] is (r["engine_kind"] != "peer")


def _scaled(doc, factor, **match):
    out = copy.deepcopy(doc)
    for r in out["records"]:
        if r["status"] == "ok" and all(r[k] == v for k, v in match.items()):
            r["median_s"] *= factor
            r["timings_s"] = [t * factor for t in r["timings_s"]]
            r["min_s"] *= factor
    return out


def test_compare_flags_a_slower_record(document, tmp_path):
    slower = _scaled(document, 1.5, engine="numpy", contract="steady", shape_class="custom")
    pairs, warnings = compare(document, slower)
    assert not warnings
    flagged = [p for p in pairs if p.is_regression(0.05)]
    assert flagged and all(p.key[0] == "steady" and p.key[1] == "numpy" for p in flagged)
    assert all(p.ratio == pytest.approx(1.5) for p in flagged)
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(document))
    new.write_text(json.dumps(slower))
    assert benchmark_shape_sweep.main(["--compare", str(old), str(old)]) == 0
    assert benchmark_shape_sweep.main(["--compare", str(old), str(new)]) == 1


def _gate_document(document, native_factor):
    """Reference medians 1.0 s, native medians native_factor s, for every paired record."""
    doc = copy.deepcopy(document)
    # Only native_cpu is paired here: the opt-in variant's records keep their measured times.
    doc["records"] = [r for r in doc["records"] if r["engine"] != "native_cpu_prox_newton"]
    refs = [r for r in doc["records"] if r["status"] == "ok" and r["engine"] == "numpy"]
    for r in refs:
        r["median_s"] = 1.0
        twin = copy.deepcopy(r)
        twin.update(engine="native_cpu", engine_kind="native", median_s=native_factor,
                    id=r["id"].replace("numpy", "native_cpu"))
        doc["records"] = [x for x in doc["records"] if x["id"] != twin["id"]]
        doc["records"].append(twin)
    return doc


@pytest.mark.parametrize(("factor", "promoted", "advised"),
                         [(0.5, True, True), (0.95, True, False), (1.0, True, False),
                          (1.01, False, False)])
def test_gate_applies_the_rfc_rule_and_the_advisor_margin(document, factor, promoted, advised):
    _, verdicts = gate(_gate_document(document, factor))
    assert verdicts
    for (engine, _shape), v in verdicts.items():
        assert engine == "native_cpu"
        assert v["promoted"] is promoted
        assert v["advised"] is advised


def test_gate_refuses_a_shape_when_one_pair_is_slower(document, tmp_path):
    doc = _gate_document(document, 0.5)
    victim = next(r for r in doc["records"] if r["engine"] == "native_cpu"
                  and r["shape_class"] == "custom" and r["contract"] == "steady")
    victim["median_s"] = 1.2
    _, verdicts = gate(doc)
    assert verdicts[("native_cpu", "custom")]["promoted"] is False
    assert verdicts[("native_cpu", "latency")]["promoted"] is True
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    assert benchmark_shape_sweep.main(["--gate", str(path)]) == 1


def test_gate_pairs_only_identical_inputs(document):
    doc = _gate_document(document, 0.5)
    for r in doc["records"]:
        if r["engine"] == "native_cpu":
            r["input_sha256"] = "0" * 64
    pairs, verdicts = gate(doc)
    assert pairs == [] and verdicts == {}


def test_command_line_writes_json_and_plots(monkeypatch, tmp_path, capsys):
    tiny = replace(TINY, shapes=(TINY.shapes[1],), dtypes=("float64",), peers=("sgd_huber",))
    monkeypatch.setitem(sweep.PROFILES, "tiny", tiny)
    status = benchmark_shape_sweep.main(["--profile", "tiny", "--out", str(tmp_path / "r.json"),
                                         "--quiet", "--gate"])
    out = capsys.readouterr().out
    assert status in (0, 1)
    doc = json.loads((tmp_path / "r.json").read_text())
    validate_document(doc)
    assert doc["profile"]["name"] == "tiny"
    assert (tmp_path / "r-throughput.png").stat().st_size > 0
    assert (tmp_path / "r-roofline.png").stat().st_size > 0
    assert (tmp_path / "r-estimator.png").stat().st_size > 0
    assert "wrote" in out
    assert benchmark_shape_sweep.main(["--tables", str(tmp_path / "r.json")]) == 0
    tables = capsys.readouterr().out
    assert "Machine limits" in tables and "estimator path" in tables


# --------------------------------------------------------------------- estimator path


def test_estimator_rows_sit_beside_the_engine_rows(document):
    """Every engine workload has an estimator-path twin: the public partial_fit on the same
    input, doing the same solver work (same iterations, same coefficients)."""
    assert document["schema_minor"] == SCHEMA_MINOR >= 1
    engines = ("numpy", "native_cpu")
    for engine_row in _ok(document, path="engine"):
        if engine_row["engine"] not in engines or engine_row["contract"] not in ("cold",):
            continue
        twin = [r for r in _ok(document, path="estimator", engine=engine_row["engine"],
                               contract=engine_row["contract"],
                               shape_class=engine_row["shape_class"],
                               dtype=engine_row["dtype"], penalty=engine_row["penalty"])]
        assert len(twin) == 1, engine_row["id"]
        est = twin[0]
        assert est["id"] != engine_row["id"] and "/estimator/" in est["id"]
        assert est["operation"] == "partial_fit" and engine_row["operation"] == "update"
        backend = engine_row["engine"]
        assert est["timed_call"].startswith(f"RenewableHuberRegressor(backend={backend!r}")
        assert est["parameters"]["backend"] == backend
        assert est["input_sha256"] == engine_row["input_sha256"]
        assert "estimator construction" in est["excluded_from_timing"]
        assert "engine construction" not in est["excluded_from_timing"]
        assert (est["solver_iterations"]["per_batch"]
                == engine_row["solver_iterations"]["per_batch"])
        assert est["coef_error"]["rel_l2"] == pytest.approx(engine_row["coef_error"]["rel_l2"],
                                                            rel=1e-9, abs=1e-12)


def test_peers_are_timed_through_their_public_estimators(document):
    for r in document["records"]:
        assert r["path"] == record_path(r)
        if r["engine_kind"] == "peer":
            assert r["path"] == "estimator"
    sgd = _ok(document, engine="sgd_huber")
    assert sgd and all(r["operation"] == "partial_fit" and "SGDRegressor" in r["timed_call"]
                       for r in sgd)
    # The rows that decide "faster than SGD" are timed alike: the public partial_fit, the same
    # batches, the estimator built outside the clock.
    ours = _ok(document, engine="numpy", path="estimator")
    assert {r["excluded_from_timing"] == sgd[0]["excluded_from_timing"]
            for r in ours if r["contract"] == sgd[0]["contract"]} == {True}


def test_estimator_subject_times_partial_fit_on_the_users_arrays(monkeypatch):
    """Cold: a fresh estimator per pass; steady: the primed state adopted outside the clock;
    each batch goes to partial_fit as is (the same C-contiguous ndarray, no copy)."""
    from rhuber import RenewableHuberRegressor
    from rhuber.core import Config

    rng = np.random.default_rng(0)
    batches = [(np.ascontiguousarray(rng.normal(size=(50, 3))), rng.normal(size=50))
               for _ in range(3)]
    subject = contracts.EstimatorSubject("numpy", Config(epsilon=1.345, alpha=0.0, max_iter=50))
    seen = []
    original = RenewableHuberRegressor.partial_fit

    def spy(self, X, y, sample_weight=None):
        seen.append((X, y))
        return original(self, X, y, sample_weight)

    monkeypatch.setattr(RenewableHuberRegressor, "partial_fit", spy)
    obj = subject.make()
    assert isinstance(obj, RenewableHuberRegressor) and obj.backend == "numpy"
    assert not hasattr(obj, "coef_")  # built unfitted, outside the clock
    cold = subject.run(obj, subject.start(obj), batches)
    assert all(a is X and b is y for (a, b), (X, y) in zip(seen, batches, strict=True))
    assert cold.seconds > 0 and len(cold.iterations) == 3
    primed = cold.state
    assert int(primed["batch_count"]) == 3 and int(primed["n_samples_seen"]) == 150
    steady = subject.run(obj, subject.restore(primed), batches)
    # The steady pass continued the primed stream; the primed snapshot itself is untouched.
    assert int(steady.state["batch_count"]) == 6 and int(steady.state["n_samples_seen"]) == 300
    assert int(primed["batch_count"]) == 3
    again = subject.run(obj, subject.restore(primed), batches)
    np.testing.assert_allclose(again.state["coef"], steady.state["coef"])
    slopes, intercept = subject.coefficients(steady.state)
    assert slopes.shape == (3,) and np.isfinite(intercept)


def test_paths_choose_what_is_timed_for_the_engines():
    engine_only = replace(TINY, engines=("numpy",), paths=("engine",))
    planned = sweep._subjects(engine_only, 0.0)
    assert [(e, path) for e, path, *_ in planned] == [
        ("numpy", "engine"), ("sgd_huber", "estimator"), ("huber_regressor", "estimator"),
        ("seed_native_cpu", "estimator"), ("seed_numpy", "estimator")]
    both = sweep._subjects(replace(TINY, engines=("numpy",), peers=()), 0.0)
    assert [type(s).__name__ for *_, s, _ in both] == ["EngineSubject", "EstimatorSubject"]
    with pytest.raises(ValueError, match="path"):
        sweep._subjects(replace(TINY, paths=("wrapper",)), 0.0)


def _revision_0(document):
    """The document as schema v2 revision 0 wrote it: no path, no timed_call, engine rows
    only for our engines."""
    old = copy.deepcopy(document)
    del old["schema_minor"]
    old["records"] = [r for r in old["records"] if r["engine_kind"] == "peer"
                      or r["path"] == "engine"]
    for r in old["records"]:
        del r["path"], r["timed_call"]
        if r["solver_iterations"]:
            del r["solver_iterations"]["rcond_per_batch"]
    return old


def test_schema_revision_1_is_a_compatible_extension(document):
    old = _revision_0(document)
    assert validation_errors(old) == []  # revision-0 documents still validate
    missing = copy.deepcopy(document)
    del missing["records"][0]["path"]
    assert any("path" in e for e in validation_errors(missing))
    wrong = copy.deepcopy(document)
    row = next(r for r in wrong["records"] if r["path"] == "engine")
    row["operation"] = "partial_fit"
    assert validation_errors(wrong)
    # A revision-0 run compares with a revision-1 run: engine rows pair with engine rows.
    pairs, warnings = compare(old, document)
    assert pairs and all(p.key[2] == "engine" or p.key[1] in sweep.PEERS for p in pairs)
    assert all(p.ratio == pytest.approx(1.0) for p in pairs)
    assert any("only in the new" in w for w in warnings)
    # The gate and the tables read both revisions.
    assert gate(old)[0] and "estimator path" not in markdown_tables(old)


def test_gate_and_tables_pair_estimator_rows_with_estimator_rows(document):
    pairs, _ = gate(_gate_document(document, 0.5))
    assert {p.path for p in pairs} == {"engine", "estimator"}
    tables = markdown_tables(document)
    assert "Steady state, estimator path" in tables and "native / SGD" in tables
    assert "native estimator / engine" in tables


def test_a_profile_may_limit_the_references_estimator_rows(limits):
    """The smoke profile runs the NumPy reference through the estimator on the latency shape
    only; elsewhere the row is recorded as skipped with the reason."""
    assert sweep.PROFILES["smoke"].reference_estimator_shapes == ("latency",)
    assert sweep.PROFILES["standard"].reference_estimator_shapes is None
    profile = replace(TINY, dtypes=("float64",), alphas=(0.0,), engines=("numpy",), peers=(),
                      paths=("estimator",), reference_estimator_shapes=("latency",))
    doc = sweep.Sweep(profile, progress=False, limits=limits).run(command=["pytest"])
    validate_document(doc)
    status = {(r["shape_class"], r["contract"]): r for r in doc["records"]}
    assert {k for k, r in status.items() if r["status"] == "ok"} == {("latency", "cold"),
                                                                     ("latency", "steady")}
    skipped = status[("custom", "cold")]
    assert skipped["status"] == "skipped" and "reference_estimator_shapes" in skipped["reason"]
    assert skipped["path"] == "estimator"


def test_the_saved_baseline_still_validates_and_gates():
    baseline = BENCH_DIR.parents[1] / "docs" / "perf" / "results" / "standard-2026-11-29.json"
    if not baseline.exists():
        pytest.skip("the 2026-11-29 baseline is not in this checkout")
    doc = json.loads(baseline.read_text())
    assert "schema_minor" not in doc and validation_errors(doc) == []
    pairs, verdicts = gate(doc)
    assert pairs and {p.path for p in pairs} == {"engine"} and verdicts
    assert "estimator path" not in markdown_tables(doc)
