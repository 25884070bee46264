"""The seed system as a benchmark peer (scripts/benchmarks/rhbench/seed.py): its records, our
matched rows beside them, the ratio table and plot, and the skip without its venv."""

import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "benchmarks"))

from rhbench import seed, sweep
from rhbench.limits import measure_machine_limits
from rhbench.report import gate, markdown_tables, plot, seed_ratios
from rhbench.schema import validation_errors

TINY = sweep.Profile(
    name="tiny", shapes=(sweep.Shape("custom", 600, 4, 200, "test"),), dtypes=("float64",
                                                                              "float32"),
    alphas=(0.0, 0.05), engines=("native_cpu",), peers=seed.SEED_PEERS, paths=("estimator",),
    cold_repeats=1, steady_repeats=2, min_repeats=1, budget_s=5.0, bandwidth_elements=1 << 16,
    gemm_n=64, probe_repeats=1, threads=1)
needs_seed = pytest.mark.skipif(bool(seed.seed_unavailable())
                                and not os.environ.get("RH_REQUIRE_SEED"),
                                reason=seed.seed_unavailable() or "seed venv present")


@pytest.fixture(scope="module")
def document():
    limits = measure_machine_limits(TINY.bandwidth_elements, TINY.gemm_n, TINY.probe_repeats)
    return sweep.Sweep(TINY, progress=False, limits=limits).run(command=["pytest"])


def test_the_seeds_lambda_schedule_starts_at_alpha():
    scale = seed.lambda_scale_for(0.05, 200, 4)
    assert seed.schedule(scale, [200, 200], 4)[0] == pytest.approx(0.05)
    assert seed.schedule(scale, [200], 4, start=200)[0] == pytest.approx(0.05 / 2 ** 0.5)


@needs_seed
def test_seed_rows_sit_beside_ours_with_the_ratio(document, tmp_path):
    assert validation_errors(document) == []
    ok = {(r["engine"], r["contract"], r["penalty"]["alpha"], r["dtype"]) for r in
          document["records"] if r["status"] == "ok"}
    for engine in ("seed_native_cpu", "seed_numpy", "native_cpu_tau"):
        for alpha in TINY.alphas:
            for dtype in TINY.dtypes:
                assert {(engine, c, alpha, dtype) for c in ("cold", "steady")} <= ok, engine
    seed_rows = [r for r in document["records"] if r["engine"].startswith("seed_")]
    assert all(r["engine_kind"] == "peer" and r["path"] == "estimator" for r in seed_rows)
    l1 = next(r for r in seed_rows if r["penalty"]["alpha"])
    assert l1["parameters"]["penalty"] == "l1" and l1["parameters"]["lambda_scale"] > 0
    # Our matched rows are the seed's comparison, never a gate pair against our reference.
    pairs, _ = gate(document)
    assert not any(p.engine in seed.MATCHED for p in pairs)
    rows = seed_ratios(document)
    assert len(rows) == 2 * len(TINY.alphas) * len(TINY.dtypes)
    assert all(r["speedup_tau_vs_seed_native"] > 0 and r["speedup_mad_vs_seed_native"] > 0
               for r in rows)
    assert "against the seed system" in markdown_tables(document)
    assert any(p.name.endswith("-seed.png") for p in plot(document, tmp_path / "run"))


def test_without_the_seed_venv_its_rows_say_how_to_get_it(monkeypatch):
    monkeypatch.setattr(seed, "SEED_PYTHON", Path("/nonexistent/python"))
    planned = sweep._subjects(replace(TINY, peers=("seed_native_cpu",)), 0.0)
    reasons = [why for name, *_, subject, why in planned if name == "seed_native_cpu"]
    assert reasons and "make seed-venv" in reasons[0]
