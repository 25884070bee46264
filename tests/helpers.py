"""Small shared helpers for the tests."""

import json
from pathlib import Path

import numpy as np

from rhuber.lab.golden import CORPUS_FILE

#: The native CPU engine's backend (rhuber._native.load) and the distribution that installs it.
NATIVE_CPU = ("native_cpu", "rhuber-native-cpu")


def golden_corpus() -> dict:
    """The committed golden corpus (tests/golden/)."""
    return json.loads((Path(__file__).resolve().parent / "golden" / CORPUS_FILE).read_text())


def make_problem(rng, n, p, *, outliers=0.05, dtype=np.float64, intercept=0.5):
    X = rng.normal(size=(n, p))
    beta = rng.normal(size=p)
    y = X @ beta + intercept + rng.standard_t(3, size=n)
    bad = rng.random(n) < outliers
    y[bad] += rng.normal(0, 30, size=int(bad.sum()))
    return X.astype(dtype), y.astype(dtype), beta


def state_dicts_equal(a: dict, b: dict, *, ignore=("params",)) -> bool:
    """Equal in every key but ``ignore`` (set_params changes "params", not the state)."""
    a = {k: v for k, v in a.items() if k not in ignore}
    b = {k: v for k, v in b.items() if k not in ignore}
    if a.keys() != b.keys():
        return False
    return all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in a)


def require_module(module: str, distribution: str):
    """A native engine's binding (a backend name, rhuber._native.load) or another module. Under
    `make test` (RH_REQUIRE_NATIVE=1) a missing one fails the test; elsewhere it skips, saying
    which distribution would run it."""
    import importlib
    import os

    import pytest

    from rhuber import _native

    try:
        if module in _native.MODULES:
            return _native.load(module)
        return importlib.import_module(module)
    except ImportError as exc:
        message = f"{distribution} is not installed ({exc}); scripts/build_native_cpu.sh builds it"
        if os.environ.get("RH_REQUIRE_NATIVE") == "1":
            pytest.fail(message)
        pytest.skip(message)


#: NIST StRD's Filip (public domain): a copy of shared/data/nist_filip.json.
FILIP = Path(__file__).resolve().parent / "fixtures" / "nist_filip.json"


def nist_filip():
    """Filip's design (x, ..., x^10; the intercept left to the estimator), its y and NIST's
    certified coefficients b0 ... b10."""
    data = json.loads(FILIP.read_text())
    x = np.asarray(data["x"])
    X = np.column_stack([x**k for k in range(1, 11)])
    return X, np.asarray(data["y"]), np.asarray(data["certified_b0_to_b10"])


# Filip's certified digits the qr mode must keep, by batch size (82: at once). Which of its about
# seven digits survive rounding moves with the row order, the batch size and the machine's BLAS
# kernels (over 12 row orders 6.9-8.4 at once, 6.5-8.5 in batches of 20 and 7, on every engine;
# in the natural order 6.99 in batches of 7 on an AMD EPYC, 6.96 at once on an H200:
# docs/numerics.md). The Cholesky mode keeps none.
FILIP_DIGITS = {82: 6.8, 20: 6.5, 7: 6.5}


def log_relative_error(estimate, certified):
    """NIST's log relative error: the fewest correct digits over the coefficients."""
    return float(np.min(-np.log10(np.abs(estimate - certified) / np.abs(certified))))


def native_cpu_engine():
    """The native CPU engine (rhuber.engines.NativeCpuEngine), as require_module gets it."""
    from rhuber.engines import NativeCpuEngine

    return NativeCpuEngine(require_module(*NATIVE_CPU))


def batches_of(seed, dtype, n=400, p=5, count=3, weights=True):
    """``count`` contaminated batches (X, y, w) of ``n`` x ``p`` from ``seed``; w draws 0, 0.5, 1
    and 2 (None with ``weights=False``)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        X, y, _ = make_problem(rng, n, p, dtype=dtype)
        w = rng.choice([0.0, 0.5, 1.0, 2.0], size=n).astype(dtype) if weights else None
        out.append((X, y, w))
    return out


def stream_updates(engine_update, batches, config):
    """The final state and every batch's diagnostics of ``batches`` fed through an engine."""
    state, diags = None, []
    for X, y, w in batches:
        state, diag = engine_update(state, X, y, w, config)
        diags.append(diag)
    return state, diags


def corpus_subset(step: int = 12):
    """Every ``step``-th workload of the shipped tuner corpus (its measurements) and the corpus's
    fingerprints: enough for every tuner model, quick to train on."""
    from rhuber.tuner.models import default_models_dir
    from rhuber.tuner.store import Store

    with Store(default_models_dir().parent / "corpus.sqlite", read_only=True) as store:
        rows, fingerprints = list(store.measurements()), store.hardware()
    chosen = set(sorted({m.workload_id for m in rows})[::step])
    return [m for m in rows if m.workload_id in chosen], fingerprints


def other_machine(fingerprints: dict, cpu_model: str):
    """The corpus's first machine's fingerprint (the one of a single-machine store) renamed:
    another machine, its own hardware id."""
    import dataclasses

    from rhuber.tuner.hardware import Hardware

    fingerprint = fingerprints.get("fee15980d40e045d") or next(iter(fingerprints.values()))
    hw = dataclasses.replace(Hardware.from_dict(fingerprint), cpu_model=cpu_model)
    assert hw.measured and hw.hardware_id not in fingerprints
    return hw


class BatchClock:
    """time.perf_counter for the estimator: each batch (two readings) lasts the next of
    ``durations``, then a second."""

    def __init__(self, durations):
        self.durations, self.now, self.reads = list(durations), 0.0, 0

    def perf_counter(self):
        self.reads += 1
        if self.reads % 2 == 0:
            self.now += self.durations.pop(0) if self.durations else 1.0
        return self.now
