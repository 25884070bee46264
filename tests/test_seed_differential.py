"""Differential test against the seed system (renewable-huber 0.7.1, run from .venv-seed).

On seeded streams (weighted, L1 with the λ schedule, float32, no intercept, smoothed
information with rows inside the smoothing band) ours and the seed agree, within the seed's
own golden tolerances, on the information, the predictions and the counters; the seed's
objective (a mean) times N_b is ours (a sum). Where coefficients differ beyond those
tolerances, ours is the better minimizer: the norm of the minimum-norm subgradient of the
batch objective, computed here from method.md, is smaller at ours. The seed's own golden
corpus (tests/golden/seed/, a verbatim copy) is replayed the same way, without the seed venv.

The parameter mapping (docs/coming-from-renewable-huber.md): seed ``tau`` -> ``tau`` (fixed,
in y's units); ``penalty="l1"`` with ``lambda_scale`` -> ``lambda_scale`` (the same schedule
λ_b = lambda_scale·τ·√(log max(p,2)/N_b), our alpha per unit of weight as its λ on its mean
objective); its smoothed information -> ``curvature="smoothed"`` with the same
``bandwidth_scale`` (tau fixed: h in y's units on both); ``ridge`` (added to its Hessian / N)
-> not carried (it damps steps only, on both); ``tol`` and ``max_iter`` -> the same names.

Without .venv-seed the seed-driven tests skip, saying to run ``make seed-venv``;
``make test-seed`` builds it and runs them with RH_REQUIRE_SEED=1, where a skip is a failure.
RH_SEED_REPORT=path writes the largest differences per quantity as JSON.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from seed_peer import MISSING, SEED_PYTHON, run_seed

from rhuber import RenewableHuberRegressor
from rhuber.engines import make_engine, native_cpu_available

GOLDEN = Path(__file__).parent / "golden" / "seed" / "native_core_v1.json"
#: The seed's golden tolerances (rtol, atol), by the kind of case they cover.
TOLERANCE = {"float64": (2e-9, 2e-10), "l1": (3e-7, 3e-8), "float32": (3e-4, 3e-5)}
#: Gradient norms (per unit of weight) below this are rounding: two solutions there are equally
#: good minimizers (a rank-deficient batch's minimizers form a line; both sit on it).
GRADIENT_FLOOR = {"float64": 1e-12, "float32": 1e-6}
REPORT: dict[str, dict[str, float]] = {}

needs_seed = pytest.mark.skipif(
    not SEED_PYTHON.exists() and not os.environ.get("RH_REQUIRE_SEED"), reason=MISSING)


def tolerance(dtype: str, penalized: bool) -> tuple[float, float]:
    return TOLERANCE["float32" if dtype == "float32" else "l1" if penalized else "float64"]


# ------------------------------------------------- method.md, written out independently


def design(X: np.ndarray, fit_intercept: bool) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    return np.column_stack([X, np.ones(len(X))]) if fit_intercept else X


def log_p(p: int) -> float:
    return math.log(max(p, 2))


def subgradient_norm(X, y, w, beta, before, lam, tau, fit_intercept) -> float:
    """‖the minimum-norm element of ∂Q(β)‖₂ / N_b: Q the batch objective of method.md (a sum)
    on the state ``before`` (coef, information, effective weight, previous λ), all in float64."""
    Xt = design(X, fit_intercept)
    beta = np.asarray(beta, dtype=np.float64)
    coef0, info0, W, lam0 = (np.asarray(before[0], np.float64), np.asarray(before[1], np.float64),
                             before[2], before[3])
    w = np.ones(len(Xt)) if w is None else np.asarray(w, np.float64)
    r = np.asarray(y, np.float64) - Xt @ beta
    g = -Xt.T @ (w * np.clip(r, -tau, tau)) + info0 @ (beta - coef0)
    penalized = np.ones(len(beta), bool)
    if fit_intercept:
        penalized[-1] = False
    g[penalized] -= W * lam0 * np.sign(coef0[penalized])
    n_total = W + w.sum()
    t = n_total * lam
    sub = g.copy()
    on = penalized & (beta != 0)
    sub[on] += t * np.sign(beta[on])
    off = penalized & (beta == 0)
    sub[off] = np.sign(g[off]) * np.maximum(np.abs(g[off]) - t, 0.0)
    return float(np.linalg.norm(sub) / n_total)


def smoothed_curvature(r: np.ndarray, tau: float, h: float) -> np.ndarray:
    """c_h of method.md (eq. 2.1): 1 inside, linear over [τ − h, τ + h], 0 beyond."""
    a = np.abs(r)
    return np.clip(0.5 - (a - tau) / (2.0 * h), 0.0, 1.0)


def information_at(X, y, w, beta, before_information, tau, h, fit_intercept) -> np.ndarray:
    """J̃ + X̃ᵀ diag(w ∘ c_h(r)) X̃ at ``beta``: the information update of method.md."""
    Xt = design(X, fit_intercept)
    w = np.ones(len(Xt)) if w is None else np.asarray(w, np.float64)
    r = np.asarray(y, np.float64) - Xt @ np.asarray(beta, np.float64)
    return np.asarray(before_information, np.float64) + Xt.T @ (
        (w * smoothed_curvature(r, tau, h))[:, None] * Xt)


def rows_in_band(X, y, beta, tau, h, fit_intercept) -> int:
    """Rows whose residual lies in a transition of c_h: τ − h ≤ |r| ≤ τ + h."""
    r = np.abs(np.asarray(y, np.float64) - design(X, fit_intercept) @ np.asarray(beta, np.float64))
    return int(np.sum((r >= tau - h) & (r <= tau + h)))


def rel(a, b) -> float:
    """max |a − b| / max(1, |b|), the golden corpus' measure."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)))) if a.size else 0.0


def within(a, b, rtol: float, atol: float) -> bool:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return bool(np.all(np.abs(a - b) <= atol + rtol * np.abs(b)))


def record(case: str, quantity: str, value: float) -> None:
    REPORT.setdefault(case, {})
    REPORT[case][quantity] = max(REPORT[case].get(quantity, 0.0), value)


@pytest.fixture(scope="module", autouse=True)
def _write_report():
    yield
    path = os.environ.get("RH_SEED_REPORT")
    if path and REPORT:
        Path(path).write_text(json.dumps(REPORT, indent=1, sort_keys=True) + "\n")


# ------------------------------------------------------------------ comparing two streams


def ours_for(config: dict, backend: str = "numpy") -> RenewableHuberRegressor:
    """Our estimator under the seed's ``config`` (the mapping of the module docstring)."""
    return RenewableHuberRegressor(
        tau=config["tau"], fit_intercept=config["fit_intercept"], backend=backend,
        lambda_scale=config.get("lambda_scale", 1.0) if config["penalty"] == "l1" else None,
        curvature="smoothed", bandwidth_scale=config.get("bandwidth_scale", 1.0),
        max_iter=max(500, config["max_iter"]),
        tol=1e-12 if config["dtype"] == "float64" else None)


def compare_stream(case: str, config: dict, batches: list, seed_states: list,
                   seed_predictions, probe, backend: str = "numpy",
                   tol: tuple[float, float] | None = None) -> RenewableHuberRegressor:
    """Fit ours batch by batch and check each state against the seed's (module docstring).

    ``seed_states``: per batch, (coef, information, record) with the record's
    n_samples_seen, batch_count, weight_sum, previous_lambda, objective, lambda_value,
    bandwidth. ``tol``: (rtol, atol), by default the seed's golden tolerance for the kind.
    """
    dtype = config["dtype"]
    penalized = config["penalty"] == "l1"
    rtol, atol = tol or tolerance(dtype, penalized)
    floor = GRADIENT_FLOOR[dtype]
    model = ours_for(config, backend)
    d = batches[0][0].shape[1] + config["fit_intercept"]
    ours_before = seed_before = (np.zeros(d), np.zeros((d, d)), 0.0, 0.0)
    p = batches[0][0].shape[1]
    for b, ((X, y, w), (coef, info, rec)) in enumerate(zip(batches, seed_states, strict=True)):
        model.partial_fit(X, y, sample_weight=w)
        diag = model.diagnostics_[-1]
        where = f"{case}, batch {b + 1}"
        assert model.n_samples_seen_ == rec["n_samples_seen"], where
        assert model.n_batches_ == rec["batch_count"], where
        assert within(model.effective_weight_, rec["weight_sum"], 1e-12, 0), where
        n_total = rec["weight_sum"]
        lam = config.get("lambda_scale", 1.0) * config["tau"] * math.sqrt(log_p(p) / n_total)
        if penalized:  # the schedule, independently (ours rounds τ to float32 there)
            assert within(diag["lambda"], lam, 1e-12 if dtype == "float64" else rtol, 0), where
        for name, mine, theirs in (("previous_lambda", model.previous_lambda_,
                                    rec["previous_lambda"]),
                                   ("lambda", diag["lambda"], rec["lambda_value"]),
                                   ("bandwidth", diag["bandwidth"], rec["bandwidth"]),
                                   ("objective", diag["objective"],
                                    rec["objective"] * n_total)):
            record(case, name, rel(mine, theirs))
            assert within(mine, theirs, rtol, atol * max(1.0, n_total if name == "objective"
                                                           else 1.0)), (where, name, mine,
                                                                        theirs)
        ours_coef = (np.r_[model.coef_, model.intercept_] if config["fit_intercept"]
                     else model.coef_)
        info_atol = atol * max(1.0, n_total)
        record(case, "coefficients", rel(ours_coef, coef))
        record(case, "information", rel(model.information_, info))
        if within(ours_coef, coef, rtol, atol):
            assert within(model.information_, info, rtol, info_atol), (
                where, "information", rel(model.information_, info))
        else:
            # Beyond the tolerance: each solved the batch from its own state; ours must be the
            # better minimizer of its objective, and each side's information the update of
            # method.md at its own coefficients (the difference is the coefficients', nothing
            # else).
            tau = config["tau"]
            g_ours = subgradient_norm(X, y, w, ours_coef, ours_before, diag["lambda"], tau,
                                      config["fit_intercept"])
            g_seed = subgradient_norm(X, y, w, coef, seed_before, rec["lambda_value"], tau,
                                      config["fit_intercept"])
            record(case, "gradient_norm_ours", g_ours)
            record(case, "gradient_norm_seed", g_seed)
            assert g_ours <= max(g_seed, floor), (
                where, "coefficients differ and ours is not the better minimizer", g_ours, g_seed)
            for who, beta, before, information in (
                    ("ours", ours_coef, ours_before, model.information_),
                    ("seed", coef, seed_before, info)):
                expected = information_at(X, y, w, beta, before[1], tau, rec["bandwidth"],
                                          config["fit_intercept"])
                record(case, f"information_vs_update_at_own_coef_{who}",
                       rel(information, expected))
                assert within(information, expected, rtol, info_atol), (where, who)
        final = (ours_coef, coef)
        ours_before = (ours_coef, model.information_, model.effective_weight_,
                       model.previous_lambda_)
        seed_before = (coef, info, rec["weight_sum"], rec["previous_lambda"])
    probe = np.asarray(probe, dtype=dtype)
    predictions = model.predict(probe)
    record(case, "predictions", rel(predictions, seed_predictions))
    if within(final[0], final[1], rtol, atol):
        assert within(predictions, seed_predictions, rtol, atol), (case, "predictions")
    else:  # the coefficients' difference, and nothing else
        Xp = design(probe, config["fit_intercept"])
        assert within(predictions, Xp @ final[0], rtol, atol), (case, "predictions, ours")
        assert within(seed_predictions, Xp @ final[1], rtol, atol), (case, "predictions, seed")
    return model


# ------------------------------------------------------------------ seeded streams, live


@needs_seed
def test_the_seed_venv_holds_the_seeds_two_distributions_only():
    listing = subprocess.run(
        [str(SEED_PYTHON), "-c", "import importlib.metadata as m, json; print(json.dumps("
         "{d.metadata['Name'].lower(): d.version for d in m.distributions()}))"],
        capture_output=True, text=True, timeout=60, check=True)
    installed = json.loads(listing.stdout)
    assert installed["renewable-huber"] == installed["renewable-huber-native-cpu"] == "0.7.1"
    # Theirs, what they need, and the venv's own tools: never rhuber.
    assert set(installed) - {"renewable-huber", "renewable-huber-native-cpu", "numpy", "pip",
                             "setuptools", "wheel"} == set(), installed


def stream(seed: int, n: int, p: int, dtype: str, weighted: bool, batches: int = 3):
    rng = np.random.default_rng(seed)
    beta = rng.normal(size=p) * np.where(np.arange(p) % 3 == 0, 0.0, 1.0)  # some exact zeros
    out = []
    for _ in range(batches):
        X = rng.normal(size=(n, p))
        y = X @ beta + 0.3 + rng.standard_t(3, size=n)
        w = rng.choice([0.0, 0.5, 1.0, 2.0, 3.0], size=n) if weighted else None
        out.append((X.astype(dtype), y.astype(dtype), None if w is None else w.astype(dtype)))
    probe = rng.normal(size=(7, p)).astype(dtype)
    return out, probe


STREAMS = {
    # name: (seed config, stream arguments)
    "weighted_smoothed_f64": (dict(tau=1.2, penalty="none", fit_intercept=True,
                                   dtype="float64", bandwidth_scale=3.0),
                              dict(seed=1, n=300, p=5, weighted=True)),
    "l1_schedule_f64": (dict(tau=1.345, penalty="l1", lambda_scale=0.6, fit_intercept=True,
                             dtype="float64", bandwidth_scale=3.0),
                        dict(seed=2, n=250, p=6, weighted=False)),
    "f32_no_intercept": (dict(tau=1.1, penalty="none", fit_intercept=False, dtype="float32",
                              bandwidth_scale=3.0),
                         dict(seed=3, n=400, p=4, weighted=False)),
    # Everything at once: weighted, L1 with the schedule, float32, no intercept, smoothed.
    "weighted_l1_f32_no_intercept": (dict(tau=1.345, penalty="l1", lambda_scale=0.5,
                                          fit_intercept=False, dtype="float32",
                                          bandwidth_scale=3.0),
                                     dict(seed=4, n=300, p=5, weighted=True)),
}


def ours_lacks(backend: str) -> str:
    """Why our ``backend`` cannot run these streams here ("" when it can)."""
    if backend == "numpy":
        return ""
    if not native_cpu_available():
        return "the native_cpu engine is not built"
    missing = {"lambda_schedule", "smoothed_curvature"} - make_engine(backend).contract_features
    return f"our {backend} engine lacks {sorted(missing)} (contract v3) yet" if missing else ""


@needs_seed
@pytest.mark.parametrize("ours", ["numpy", "native_cpu"])
@pytest.mark.parametrize("seed_backend", ["numpy", "native_cpu"])
@pytest.mark.parametrize("name", sorted(STREAMS))
def test_seeded_stream_agrees_with_the_seed(tmp_path, name, seed_backend, ours):
    if why := ours_lacks(ours):
        pytest.skip(why)
    config, arguments = STREAMS[name]
    batches, probe = stream(**arguments, dtype=config["dtype"])
    seed_config = {**config, "backend": seed_backend, "max_iter": 5000,
                   "tol": 1e-12 if config["dtype"] == "float64" else 1e-7}
    seed = run_seed(seed_config, batches, probe, tmp_path)
    assert seed["backend"] == seed_backend
    states = list(zip(seed["coef"], seed["information"], seed["batches"], strict=True))
    for (X, y, _), (coef, _, rec) in zip(batches, states, strict=True):
        band = rows_in_band(X, y, coef, config["tau"], rec["bandwidth"], config["fit_intercept"])
        assert band >= 3, f"{name}: only {band} rows inside the smoothing band"
    compare_stream(f"{name}/ours {ours}/seed {seed_backend}", seed_config, batches, states,
                   seed["predictions"], probe, backend=ours)


# --------------------------------------------------------- the seed's own golden corpus


CORPUS = json.loads(GOLDEN.read_text())


@pytest.mark.filterwarnings("ignore::rhuber.IllConditionedWarning")  # the rank-deficient case
@pytest.mark.parametrize("case", CORPUS["cases"], ids=[c["id"] for c in CORPUS["cases"]])
def test_the_seeds_golden_corpus_replays(case):
    config = case["config"]
    dtype = config["dtype"]
    batches = [(np.asarray(b["X"], dtype), np.asarray(b["y"], dtype),
                None if b["sample_weight"] is None else np.asarray(b["sample_weight"], dtype))
               for b in case["batches"]]
    states = [(np.asarray(s["coefficients"]), np.asarray(s["information"]),
               {**s, **s["diagnostics"]}) for s in case["expected"]["states"]]
    compare_stream(f"golden/{case['id']}", config, batches, states,
                   case["expected"]["predictions"], case["probe_X"],
                   tol=(case["rtol"], case["atol"]))
