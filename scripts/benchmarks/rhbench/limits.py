"""The machine's limits, measured in the run: memory bandwidth, peak flops, roofline bounds.

The probes live in the package (:mod:`rhuber.tuner.probes`) because the tuner's
hardware fingerprint measures the machine with them too; the benchmark uses the same code, so a
sweep's ``machine_limits`` and a fingerprint's measured figures are comparable.
"""

from __future__ import annotations

from rhuber.tuner.probes import (
    gemm_flops,
    measure_machine_limits,
    roofline_bound,
    triad_bandwidth,
    usable_cores,
)

__all__ = [
    "gemm_flops",
    "measure_machine_limits",
    "roofline_bound",
    "triad_bandwidth",
    "usable_cores",
]
