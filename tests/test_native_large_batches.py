"""The native CPU engine on batches large enough for its steps by expansion (docs/native.md,
"Passes over X per batch": from 2^17 entries a Newton step, and a LAMM iteration once its solve
has anchored, is evaluated without a pass over X)
against the reference, at the contract's cross-engine tolerance, state and diagnostics of every
batch of a stream, under the options that reach the information and the objective differently."""

import dataclasses

import numpy as np
import pytest

from helpers import NATIVE_CPU, batches_of, native_cpu_engine, require_module
from rhuber.core.types import Config
from rhuber.core.update import update as reference_update

# 24,000 x 10 (+ the intercept): 264,000 entries, above the engine's 131,072.
ROWS, FEATURES = 24_000, 10

CONFIGS = {
    "default": Config(),
    "tau-fixed": Config(tau=1.0),
    "no-intercept": Config(fit_intercept=False),
    "ridge": Config(ridge=0.5),
    "smoothed": Config(curvature="smoothed"),
    "matrices": Config(inference_matrices=True),
    "half-life": Config(half_life=20_000.0),
    # LAMM: iterations by expansion once the solve has anchored (docs/native.md)
    "l1": Config(alpha=0.01),
    "l1-schedule-smoothed": Config(lambda_scale=0.5, curvature="smoothed"),
    "l1-half-life-no-intercept": Config(alpha=0.01, half_life=20_000.0, fit_intercept=False),
}


def _close(got, want, rtol):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64),
                               np.asarray(want, dtype=np.float64), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_stream_of_large_batches_matches_the_reference(name, dtype):
    config = CONFIGS[name]
    engine = native_cpu_engine()
    rtol = 1e-7 if dtype == np.float64 else 2e-3
    batches = batches_of(11, dtype, n=ROWS, p=FEATURES, count=3)
    state = want = None
    for X, y, w in batches:
        state, diag = engine.update(state, X, y, w, config)
        want, want_diag = reference_update(want, X, y, w, config)
        _close(state.coef, want.coef, rtol)
        _close(state.information, want.information, rtol)
        _close(state.scale, want.scale, rtol)
        for field in ("score_sq_sum", "curvature_sum", "curvature_sq_sum", "inference_weight"):
            _close(getattr(state, field), getattr(want, field), rtol)
        if config.inference_matrices:
            _close(state.gram, want.gram, rtol)
            _close(state.score_gram, want.score_gram, rtol)
        _close(diag.objective, want_diag.objective, rtol)
        assert diag.converged == want_diag.converged
        if dtype == np.float64 and np.isfinite(want_diag.drift_statistic):
            _close(diag.drift_statistic, want_diag.drift_statistic, 1e-6)


def test_a_large_batch_after_a_small_one_and_back():
    # The engine's workspace is sized by the largest batch; the expansion's buffers with it.
    engine = native_cpu_engine()
    config = dataclasses.replace(Config(), tau=1.0)
    sizes = [500, ROWS, 700, ROWS]
    rng_batches = [batches_of(20 + k, np.float64, n=n, p=FEATURES, count=1)[0]
                   for k, n in enumerate(sizes)]
    state = want = None
    for X, y, w in rng_batches:
        state, _ = engine.update(state, X, y, w, config)
        want, _ = reference_update(want, X, y, w, config)
        _close(state.coef, want.coef, 1e-7)
        _close(state.information, want.information, 1e-7)


# A fresh process's peak RSS over a QR stream: 65,536 x 2 float64, two threads, 1 MiB chunks (32
# blocks of 2,048 rows). The QR's row buffers are the threads' and a chunk never holds more than
# a block: ~7 MiB here, where buffers per block sized by the batch's rows took ~200 MiB
# (docs/native.md, "Memory"; experiment qr-buffers-per-thread-chunk-at-block).
_QR_MEMORY = """
import resource, sys
import numpy as np
sys.path.insert(0, {tests!r})
from helpers import NATIVE_CPU, require_module
from rhuber.core.types import Config
from rhuber.engines import NativeCpuEngine
engine = NativeCpuEngine(require_module(*NATIVE_CPU), threads=2, chunk_bytes=1 << 20)
rng = np.random.default_rng(3)
X = rng.standard_normal((65_536, 2))
y = X @ np.array([1.0, -2.0]) + rng.standard_t(3, 65_536)
w = np.ones(65_536)
config = Config(factorization="qr")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
state = None
for _ in range(2):
    state, _ = engine.update(state, X, y, w, config)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)
"""


def test_a_qr_streams_buffers_are_per_thread_not_per_block():
    import subprocess
    import sys
    from pathlib import Path

    require_module(*NATIVE_CPU)  # skips (or fails under make test) here, saying why
    script = _QR_MEMORY.format(tests=str(Path(__file__).parent))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    added_mib = float(out.stdout.strip().splitlines()[-1])
    # X and y are 1.5 MiB; the method's row vectors a few more; per-block buffers were 168 MB.
    assert added_mib < 40.0, f"a 65,536 x 2 QR stream added {added_mib:.1f} MiB of peak RSS"
