"""Labels derived from measurements: throughput, the best plan per workload, and each documented
bottleneck rule on a constructed profile."""

from dataclasses import replace

import pytest

from rhuber.engines.workload import Workload
from rhuber.tuner import labels
from rhuber.tuner.store import Measurement

BASE = Measurement(hardware_id="hw", workload_id="n4096/p32/float64/l1=0/icpt=1/host",
                   plan_id="numpy", status="ok", rows_per_run=8192, median_s=1.0,
                   rows_per_s=8192.0)
# A two-core machine: ridge point 50 GFLOP/s / 10 GB/s = 5 flops per byte.
PEAKS = {"peak_gflops": 50.0, "bandwidth_gbs": 10.0}
WIDE = Workload(rows=4096, features=127)  # d = 128: 16 flops per byte in float64
THIN = Workload(rows=4096, features=7)  # d = 8: 1 flop per byte


def test_throughput_counts_good_measurements_only():
    assert labels.throughput(BASE) == 8192.0
    assert labels.throughput(replace(BASE, status="unstable")) is None
    assert labels.throughput(replace(BASE, status="failed", rows_per_s=None)) is None


def test_best_plan_and_the_plans_within_three_percent():
    ms = [replace(BASE, plan_id="a", rows_per_s=100.0), replace(BASE, plan_id="b", rows_per_s=98.0),
          replace(BASE, plan_id="c", rows_per_s=90.0),
          replace(BASE, plan_id="d", rows_per_s=500.0, status="unstable")]
    (best,) = labels.best_plans(ms).values()
    assert best.plan_id == "a" and best.near_best == ("a", "b")


@pytest.mark.parametrize(("fractions", "workload", "backend", "extra", "expected"), [
    ({"stage": 0.2, "transfer": 0.15, "gram": 0.5}, WIDE, "cuda", {}, "transfer"),
    ({"gram": 0.2, "unattributed": 0.7}, WIDE, "cuda",
     {"bricks_per_run": 10_000, "run_seconds": 0.1}, "launch"),
    # The same profile on the CPU is overhead, not launch: launches are a GPU matter.
    ({"gram": 0.2, "unattributed": 0.7}, WIDE, "native_cpu",
     {"bricks_per_run": 10_000, "run_seconds": 0.1}, "overhead"),
    ({"validate": 0.25, "unattributed": 0.2, "gram": 0.3}, WIDE, "native_cpu", {}, "overhead"),
    ({"solve": 0.45, "gram": 0.3}, WIDE, "native_cpu", {}, "solve"),
    ({"gram": 0.4, "info_update": 0.2, "residual": 0.2}, WIDE, "native_cpu", {}, "compute"),
    # BLAS-3 dominates, but a d = 8 Gram is below the ridge point: bandwidth bounds it.
    ({"gram": 0.4, "info_update": 0.2, "residual": 0.2}, THIN, "native_cpu", {}, "memory"),
    ({"residual": 0.3, "score": 0.3, "line_search": 0.2}, WIDE, "native_cpu", {}, "memory"),
])
def test_each_bottleneck_rule(fractions, workload, backend, extra, expected):
    assert labels.bottleneck(fractions, workload, backend=backend, **PEAKS, **extra) == expected


def test_a_stored_measurement_without_a_profile_has_no_bottleneck():
    assert labels.measurement_bottleneck(BASE, **PEAKS) is None
    profiled = replace(BASE, brick_fractions={"solve": 0.5}, brick_calls=100)
    assert labels.measurement_bottleneck(profiled, **PEAKS) == "solve"


PENALIZED = "n4096/p32/float64/l1=1/icpt=1/host"
LAMM = "native_cpu/t1/gram=incremental/chunk=256k/l1=lamm"
PROX = "native_cpu/t1/gram=incremental/chunk=256k/l1=prox_newton"


def _at(m, moment):
    return replace(m, measured_at=moment)


@pytest.mark.parametrize("change", labels.SPEED_CHANGES)
def test_a_solver_measured_before_its_code_changed_speed_is_stale(change):
    """Rows of the changed solver on penalized workloads, measured before the change, no longer
    count; the same rows measured after it, the other solver's rows and unpenalized rows do."""
    solver = f"native_cpu/t1/gram=incremental/chunk=256k/l1={change.l1_solver}"
    other = PROX if change.l1_solver == "lamm" else LAMM
    penalized = replace(BASE, workload_id=PENALIZED, plan_id=solver)
    before = "2026-12-01T00:00:00+00:00"
    assert labels.stale(_at(penalized, before))
    sparse = replace(penalized, workload_id=PENALIZED.replace("/l1=1/", "/l1=2/"))
    assert labels.stale(_at(sparse, before))  # the sparse regime's rows too
    assert labels.throughput(_at(penalized, before)) is None
    assert labels.throughput(_at(penalized, "2026-12-31T00:00:00+00:00")) == 8192.0
    assert labels.throughput(_at(replace(penalized, plan_id=other), before)) == 8192.0
    assert labels.throughput(_at(replace(BASE, plan_id=solver), before)) == 8192.0
    # A row whose time cannot be read is kept: nothing says it is old.
    assert labels.throughput(_at(penalized, "yesterday")) == 8192.0
    assert labels.throughput(_at(penalized, "")) == 8192.0


def test_the_best_plan_leaves_out_stale_rows():
    before = "2026-12-01T00:00:00+00:00"
    ms = [replace(BASE, workload_id=PENALIZED, plan_id=LAMM, rows_per_s=900.0,
                  measured_at=before),
          replace(BASE, workload_id=PENALIZED, plan_id=PROX, rows_per_s=100.0,
                  measured_at=before)]
    (best,) = labels.best_plans(ms).values()
    assert best.plan_id == PROX
