"""The benchmark's fair race with SGD (scripts/benchmarks/rhbench/race.py) and its memory
measurement: SGD tuned on a held-out stream, pass after pass until it reaches our error."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parents[1] / "scripts" / "benchmarks"
sys.path.insert(0, str(BENCH_DIR))

from rhbench import memory, race  # noqa: E402


def _stream(seed: int, coef: np.ndarray, n: int = 4000, batch: int = 1000):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, coef.size))
    y = X @ coef + 0.5 + rng.standard_normal(n)
    return [(X[i:i + batch], y[i:i + batch]) for i in range(0, n, batch)]


def test_race_stops_at_our_error_and_records_the_curve(tmp_path):
    coef = np.array([1.0, -2.0, 0.5])
    batches, held_out = _stream(0, coef), _stream(1, coef)
    result = race.race(batches, held_out, coef, 0.5, 0.0, 1.345, 0, ours_rel_l2=0.05,
                       ours_s=1e-3)
    assert result["tuning"]["chosen"]["eta0"] in race.ETA0
    assert len(result["tuning"]["grid"]) == len(race.ETA0) * len(race.SCHEDULES)
    curve = result["curve"]
    assert [c["passes"] for c in curve] == list(range(1, len(curve) + 1))
    assert all(b["seconds"] >= a["seconds"] for a, b in itertools.pairwise(curve))
    if result["passes_to_our_error"] is not None:
        assert curve[-1]["rel_l2"] <= 0.05
        assert result["sgd_seconds_to_our_error"] == curve[-1]["seconds"]
    else:
        assert len(curve) == race.MAX_PASSES
    document = {"sgd_race": [{"shape_class": "tiny", "dtype": "float64", "alpha": 0.0,
                              **result}]}
    (png,) = race.plot(document, tmp_path / "run")
    assert png.exists() and png.stat().st_size > 0
    assert race.plot({"sgd_race": []}, tmp_path / "none") == []


def test_unreachable_error_runs_every_pass():
    coef = np.array([1.0, -2.0])
    batches = _stream(2, coef, n=400, batch=200)
    result = race.race(batches, batches, coef, 0.5, 0.0, 1.345, 0, ours_rel_l2=0.0, ours_s=1.0)
    assert result["passes_to_our_error"] is None
    assert result["sgd_seconds_to_our_error"] is None
    assert len(result["curve"]) == race.MAX_PASSES
    assert result["ours_faster"]


def test_peak_memory_counts_what_the_pass_allocates():
    out, measured = memory.peak_over(lambda: np.ones(1 << 24).sum(), 1 << 20)  # 128 MiB
    assert out == float(1 << 24)
    if measured is not None:  # Linux with clear_refs
        assert measured["peak_rss_over_start_bytes"] >= 100 << 20
        assert measured["over_X_bytes"] == measured["peak_rss_over_start_bytes"] / (1 << 20)
