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
