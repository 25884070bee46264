#!/usr/bin/env python3
"""The estimator's own Python per call, without the engine: partial_fit with the engine's
update replaced by one that returns a result computed beforehand (docs/perf/experiments.jsonl,
"estimator-python-cost"). Two figures, medians: a later batch of a stream, and a fresh
estimator's first batch (sharing the warm engine, so the engine's construction is left out).

    estimator_python_cost.py LABEL
"""

import statistics
import sys
import time

import numpy as np

from rhuber import RenewableHuberRegressor

rng = np.random.default_rng(0)
X = rng.normal(size=(4096, 16))
y = X @ np.ones(16) + rng.standard_t(2, 4096)
est = RenewableHuberRegressor(backend="native_cpu").partial_fit(X, y)
engine = est._engine()
result = engine.update(est._state, X, y, None, est._config())
engine.update = lambda *args, **kwargs: result
for _ in range(50):
    est.partial_fit(X, y)
later = []
for _ in range(3000):
    start = time.perf_counter_ns()
    est.partial_fit(X, y)
    later.append(time.perf_counter_ns() - start)
fresh = []
for _ in range(500):
    new = RenewableHuberRegressor(backend="native_cpu")
    new._engine_cache = est._engine_cache
    start = time.perf_counter_ns()
    new.partial_fit(X, y)
    fresh.append(time.perf_counter_ns() - start)
print(sys.argv[1] if len(sys.argv) > 1 else "", "later_us", statistics.median(later) / 1e3,
      "fresh_us", statistics.median(fresh) / 1e3)
