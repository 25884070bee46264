"""Golden corpus v2 (method.md, contract v2): five small two-batch cases, their inputs and the
reference's answers, and the comparison every engine is held to; contract v3 adds three cases
(the λ schedule, the smoothed curvature, the inference sums with matrices) whose records also
carry the v3 configuration and the inference sums (docs/method-v3.md).

The generator script (scripts/generate_native_golden.py) writes what :func:`build_corpus`
returns; tests replay the inputs through an engine and call :func:`compare_batch`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..core import Config, State, update

CORPUS_VERSION = 2
#: The committed corpus, under tests/golden/.
CORPUS_FILE = "native_core_v2.json"
#: The cases whose ladder rung every engine must reproduce exactly (method.md).
RUNG_CHECKED = frozenset({"rank_deficient", "badly_scaled", "filip_least_squares_qr",
                          "polynomial_huber_qr"})
RTOL = {"float64": 1e-7, "float32": 2e-3}
STATE_FLOATS = ("coef", "information", "effective_weight", "previous_lambda", "scale")
STATE_COUNTERS = ("n_samples_seen", "batch_count")
DIAG_FLOATS = ("objective", "lambda", "bandwidth")
#: Contract v3: the inference sums in a v3 case's state records (matrices None when not kept).
INFERENCE_FLOATS = ("score_sq_sum", "curvature_sum", "curvature_sq_sum", "inference_weight")
INFERENCE_MATRICES = ("gram", "score_gram")
V3_CONFIG = ("lambda_scale", "curvature", "bandwidth_scale", "inference_matrices")
#: Contract v4: the drift test's diagnostics in a v4 case's records (None where NaN).
DRIFT_FLOATS = ("drift_statistic", "drift_df", "drift_pvalue")


def _case_inputs(name: str) -> dict[str, Any]:
    """Inputs of one case, from fixed seeds."""
    if name == "weighted_unpenalized":
        rng = np.random.default_rng(101)
        beta, intercept = np.array([1.5, -2.0, 0.5, 3.0]), 0.7
        batches = []
        for n in (180, 160):
            X = rng.normal(size=(n, 4))
            y = X @ beta + intercept + rng.standard_t(3, size=n)
            w = rng.choice([0.0, 0.5, 1.0, 1.0, 2.0, 3.0, 0.25], size=n)
            batches.append((X, y, w))
        config = Config(fit_intercept=True)
        dtype = np.float64
    elif name == "l1_history":
        rng = np.random.default_rng(202)
        beta, intercept = np.array([2.0, 0.0, -1.0, 0.0, 0.0, 0.5]), -1.0
        batches = []
        for n in (200, 150):
            X = rng.normal(size=(n, 6))
            y = X @ beta + intercept + 0.5 * rng.standard_normal(n)
            batches.append((X, y, None))
        config = Config(fit_intercept=True, alpha=0.05)
        dtype = np.float64
    elif name == "float32_outliers":
        rng = np.random.default_rng(303)
        beta = np.array([1.0, -1.0, 2.0])
        batches = []
        for n in (120, 100):
            X = rng.normal(size=(n, 3)).astype(np.float32)
            y = X.astype(np.float64) @ beta + 0.3 * rng.standard_normal(n)
            outliers = rng.random(n) < 0.1
            y[outliers] += rng.choice([-25.0, 40.0], size=int(outliers.sum()))
            batches.append((X, y.astype(np.float32), None))
        config = Config(fit_intercept=False)
        dtype = np.float32
    elif name == "rank_deficient":
        # A seed whose every Newton matrix is singular by a wide margin after equilibration:
        # no rung's rcond comes near d * eps, so rounding cannot make engines take different
        # rungs (some seeds reach 1.1 * d * eps on Cholesky in a late iteration).
        rng = np.random.default_rng(412)
        batches = []
        for n in (90, 80):
            Z = rng.normal(size=(n, 3))
            X = np.column_stack([Z, Z[:, 1]])  # column 3 duplicates column 1
            y = Z @ np.array([1.0, 2.0, -1.0]) + 0.4 + 0.2 * rng.standard_normal(n)
            batches.append((X, y, None))
        config = Config(fit_intercept=True, ridge=0.0)
        dtype = np.float64
    elif name == "badly_scaled":
        rng = np.random.default_rng(505)
        units = np.array([1.0, 1e2, 1e4, 1e6, 1e6])
        beta = np.array([1.0, -2.0, 0.5, 3.0, -1.0])
        batches = []
        for n in (160, 140):
            Z = rng.normal(size=(n, 5))
            Z[:, 4] = Z[:, 3] + 1e-3 * rng.standard_normal(n)  # nearly collinear with column 3
            y = Z @ beta + 5.0 + 0.1 * rng.standard_normal(n)
            batches.append((Z * units, y, None))
        # tau beyond every residual: Huber is least squares, which the case is checked against.
        config = Config(fit_intercept=True, tau=1e9)
        dtype = np.float64
    elif name == "lambda_schedule_l1":
        rng = np.random.default_rng(606)
        beta, intercept = np.array([1.5, 0.0, -2.0, 0.0, 0.8]), 0.4
        batches = []
        for n in (180, 150):
            X = rng.normal(size=(n, 5))
            y = X @ beta + intercept + 0.7 * rng.standard_t(4, size=n)
            batches.append((X, y, None))
        # The MAD scale: the pilot solve uses the λ of the pilot τ. tol 1e-10: at LAMM's
        # default 1e-8 the recorded answer stays ~1e-7 from the minimizer, and batch 2's MAD
        # scale (τ) carries that to the contract's tolerance.
        config = Config(fit_intercept=True, lambda_scale=0.6, tol=1e-10)
        dtype = np.float64
    elif name == "smoothed_curvature":
        rng = np.random.default_rng(707)
        beta, intercept = np.array([0.5, -1.0, 2.0]), -0.3
        batches = []
        for n in (160, 140):
            X = rng.normal(size=(n, 3))
            y = X @ beta + intercept + rng.standard_t(3, size=n)
            batches.append((X, y, None))
        # h ≈ 0.5 scale (0.4 in batch 2): below τ = 1.345 scale, so not capped, and wide
        # enough that many residuals lie on the ramps of c_h.
        config = Config(fit_intercept=True, curvature="smoothed", bandwidth_scale=8.0)
        dtype = np.float64
    elif name == "inference_matrices_weighted":
        rng = np.random.default_rng(808)
        beta, intercept = np.array([1.0, -0.5, 0.25, 2.0]), 1.2
        batches = []
        for n in (170, 150):
            X = rng.normal(size=(n, 4))
            y = X @ beta + intercept + (1 + 0.5 * np.abs(X[:, 0])) * rng.standard_t(5, size=n)
            w = rng.choice([0.0, 0.5, 1.0, 1.0, 2.0, 3.0], size=n)
            batches.append((X, y, w))
        config = Config(fit_intercept=True, inference_matrices=True)
        dtype = np.float64
    elif name == "forgetting_half_life":
        rng = np.random.default_rng(909)
        batches = []
        for k, n in enumerate((160, 120, 140)):
            beta = np.array([1.0, -1.5, 0.5]) if k < 2 else np.array([1.8, -1.5, 0.5])
            X = rng.normal(size=(n, 3))
            y = X @ beta + 0.5 + rng.standard_t(4, size=n)
            w = rng.choice([0.5, 1.0, 1.0, 2.0], size=n)
            batches.append((X, y, w))
        # The MAD scale (its average takes the discounted W) and the matrices G and K (they
        # are discounted too); the history halves every 100 units of weight.
        config = Config(fit_intercept=True, inference_matrices=True, half_life=100.0)
        dtype = np.float64
    elif name == "drift_statistic":
        rng = np.random.default_rng(1010)
        batches = []
        for k, n in enumerate((200, 180, 190)):
            beta = np.array([0.8, 2.0, -1.0, 0.3])
            intercept = 1.0 if k < 2 else 1.6  # the last batch's intercept jumps
            X = rng.normal(size=(n, 4))
            y = X @ beta + intercept + rng.standard_t(3, size=n)
            batches.append((X, y, None))
        config = Config(fit_intercept=True, tau=1.5)
        dtype = np.float64
    elif name == "filip_least_squares_qr":
        # NIST StRD's Filip (public domain): a degree-10 polynomial the normal equations cannot
        # fit; tau beyond every residual (least squares), streamed in batches of 41, 20 and 21
        # rows. The first batch is half the data: 20 rows determine the 11 coefficients to 5
        # digits only, and no two valid QRs would agree on them (FILIP_COEF_RTOL).
        data = json.loads(FILIP_DATA.read_text())
        x = np.asarray(data["x"])
        X = np.column_stack([x**k for k in range(1, 11)])
        y = np.asarray(data["y"])
        batches = [(X[a:b], y[a:b], None) for a, b in ((0, 41), (41, 61), (61, 82))]
        config = Config(fit_intercept=True, tau=1e9, factorization="qr")
        # Predictions on the polynomial at five points of the data's range.
        grid = np.linspace(x.min(), x.max(), 5)
        probe = np.column_stack([grid**k for k in range(1, 11)])
        return {"config": config, "dtype": "float64", "batches": batches, "probe": probe}
    elif name == "polynomial_huber_qr":
        # A degree-6 polynomial in x ∈ [2, 5] (R's condition ~1e6: the normal equations lose
        # twelve digits, the Cholesky mode's answer is 1e-2 off), t3 noise, 10 % outliers.
        rng = np.random.default_rng(1111)
        beta = np.array([0.3, -1.2, 0.8, -0.25, 0.04, -0.002])
        batches = []
        for n in (70, 60, 65):
            x = rng.uniform(2.0, 5.0, n)
            X = np.column_stack([x**k for k in range(1, 7)])
            y = X @ beta + 2.0 + 0.5 * rng.standard_t(3, size=n)
            outliers = rng.random(n) < 0.1
            y[outliers] += rng.choice([-30.0, 40.0], size=int(outliers.sum()))
            batches.append((X, y, None))
        config = Config(fit_intercept=True, factorization="qr")
        dtype = np.float64
    else:
        raise KeyError(name)
    probe_rng = np.random.default_rng(999)
    p = batches[0][0].shape[1]
    probe = probe_rng.normal(size=(5, p)).astype(dtype)
    return {"config": config, "dtype": np.dtype(dtype).name, "batches": batches, "probe": probe}


CASES = {
    "weighted_unpenalized": "unpenalized, non-uniform weights (integers, fractions, zeros), "
    "intercept, float64",
    "l1_history": "L1 (alpha > 0), intercept, float64; batch 2 uses the historical subgradient",
    "float32_outliers": "float32, no intercept, response outliers",
    "rank_deficient": "duplicated column, ridge = 0: both batches take the svd rung",
    "badly_scaled": "column units from 1 to 1e6, two nearly collinear columns, tau = 1e9 (least "
    "squares), float64: the equilibrated ladder takes cholesky",
    "lambda_schedule_l1": "contract v3: the λ schedule (lambda_scale = 0.6, MAD scale, the "
    "pilot at the pilot τ's λ), L1 by LAMM, intercept, float64",
    "smoothed_curvature": "contract v3: the smoothed curvature c_h in the information update "
    "(bandwidth_scale = 8, scale-equivariant h), unpenalized, intercept, float64",
    "inference_matrices_weighted": "contract v3: the inference sums and the matrices G and K, "
    "non-uniform weights (zeros included), heteroscedastic errors, intercept, float64",
    "forgetting_half_life": "contract v4: forgetting with half_life = 100 (weight), three "
    "batches with non-uniform weights and a slope jump in the third, MAD scale, G and K kept, "
    "float64",
    "drift_statistic": "contract v4: the drift test on three batches (tau = 1.5, t3 noise), "
    "the intercept jumps by 0.6 in the third, float64",
    "filip_least_squares_qr": "contract v4, factorization='qr': NIST Filip (degree 10, 82 rows) "
    "in batches of 41, 20 and 21, tau = 1e9 (least squares), float64; predictions on the "
    "polynomial at five points of the data's range; coef compared at 1e-6 (its batch records' "
    "'tolerance'), being determined to about 7 digits",
    "polynomial_huber_qr": "contract v4, factorization='qr': a degree-6 polynomial in x in "
    "[2, 5], t3 noise and 10 % outliers, MAD scale, three batches, float64",
}
#: The cases of contract v3: their records carry the v3 configuration and the inference sums.
V3_CASES = frozenset({"lambda_schedule_l1", "smoothed_curvature",
                      "inference_matrices_weighted", "forgetting_half_life"})
#: The cases of contract v4: their records carry half_life and the drift test's diagnostics.
V4_CASES = frozenset({"forgetting_half_life", "drift_statistic"})
#: The cases of factorization="qr" (contract v4): their records carry the factorization.
QR_CASES = frozenset({"filip_least_squares_qr", "polynomial_huber_qr"})
#: NIST's Filip data and certified values (a copy of shared/data/nist_filip.json).
FILIP_DATA = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "nist_filip.json"
#: Filip's coefficients are determined to about 7 digits by its data (NIST; cond(R) ≈ 1e10
#: after equilibration): two valid Householder orderings of the reference's own QR (the rows
#: reversed, a QR by row blocks) moved them by up to 1.1e-7 relative, so they are compared at
#: 1e-6; everything else of the case (information, objective, scale, predictions on the
#: polynomial) at the contract's 1e-7, and every engine's last batch must meet NIST's
#: certified values to 7 digits (tests/test_golden.py).
FILIP_COEF_RTOL = 1e-6


def predict(state: State, probe: np.ndarray, fit_intercept: bool) -> np.ndarray:
    coef = np.asarray(state.coef)
    if fit_intercept:
        return probe @ coef[:-1] + coef[-1]
    return probe @ coef


def state_record(state: State, v3: bool = False) -> dict[str, Any]:
    """A state as the corpus records it; ``v3`` adds the inference sums (contract v3 cases)."""
    record = {
        "coef": np.asarray(state.coef, dtype=np.float64).tolist(),
        "information": np.asarray(state.information, dtype=np.float64).tolist(),
        "n_samples_seen": int(state.n_samples_seen),
        "effective_weight": float(state.effective_weight),
        "batch_count": int(state.batch_count),
        "previous_lambda": float(state.previous_lambda),
        "scale": float(state.scale),
        "dtype": state.dtype.name,
    }
    if v3:
        record.update({k: float(getattr(state, k)) for k in INFERENCE_FLOATS})
        record["inference_batches"] = int(state.inference_batches)
        record.update({k: _list(getattr(state, k)) for k in INFERENCE_MATRICES})
    return record


def config_record(config: Config, v3: bool = False, v4: bool = False,
                  qr: bool = False) -> dict[str, Any]:
    keys = ("fit_intercept", "epsilon", "tau", "alpha", "ridge", "max_iter", "tol")
    return {k: getattr(config, k)
            for k in (*keys, *(V3_CONFIG if v3 else ()), *(("half_life",) if v4 else ()),
                      *(("factorization",) if qr else ()))}


def diagnostics_record(diag: Any, v4: bool = False) -> dict[str, Any]:
    """A batch's diagnostics as the corpus records them; ``v4`` keeps the drift test's (NaN as
    None, which JSON has), which the earlier cases do not record."""
    record = diag.as_dict()
    record.pop("stationarity_step")  # a diagnostic of ours, not the contract's: not recorded
    for key in DRIFT_FLOATS:
        value = record.pop(key)
        if v4:
            record[key] = None if math.isnan(value) else value
    return record


def missing_features(case: dict[str, Any], engine: Any) -> list[str]:
    """The contract-v3 features a case needs that ``engine`` does not declare
    (``contract_features``): a v3 case needs the inference sums, and what its config asks for."""
    if case["name"] not in V3_CASES | V4_CASES | QR_CASES:
        return []
    have = getattr(engine, "contract_features", frozenset())
    sums = ("inference_sums",) if case["name"] in V3_CASES | V4_CASES else ()
    drift = ("drift_test",) if case["name"] in V4_CASES else ()
    wanted = (*sums, *case_config(case).features(), *drift)
    return [f for f in wanted if f not in have]


def _list(a: Any) -> Any:
    return None if a is None else np.asarray(a, dtype=np.float64).tolist()


def build_case(name: str, engine: Callable = update) -> dict[str, Any]:
    inputs = _case_inputs(name)
    config = inputs["config"]
    v3, v4 = name in V3_CASES, name in V4_CASES
    state, records = None, []
    for X, y, w in inputs["batches"]:
        state, diag = engine(state, X, y, w, config)
        records.append({
            "X": _list(X), "y": _list(y), "sample_weight": _list(w),
            "state": state_record(state, v3),
            "diagnostics": diagnostics_record(diag, v4),
            "predictions": predict(state, inputs["probe"], config.fit_intercept).tolist(),
        })
        if name == "filip_least_squares_qr":
            records[-1]["tolerance"] = {"coef": FILIP_COEF_RTOL}
    return {"name": name, "description": CASES[name], "dtype": inputs["dtype"],
            "config": config_record(config, v3, v4, name in QR_CASES),
            "probe": _list(inputs["probe"]),
            "batches": records}


def build_corpus() -> dict[str, Any]:
    return {
        "corpus": "renewable-huber native core",
        "version": CORPUS_VERSION,
        "contract": "shared/spec/method.md",
        "tolerance": {"rtol": RTOL, "rule": "|a - b| <= rtol * max(1, |b|)"},
        "cases": [build_case(name) for name in CASES],
    }


def case_batches(case: dict[str, Any]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """The recorded inputs of a case, in the case's dtype (weights too)."""
    dtype = np.dtype(case["dtype"])
    out = []
    for b in case["batches"]:
        w = None if b["sample_weight"] is None else np.asarray(b["sample_weight"], dtype=dtype)
        out.append((np.asarray(b["X"], dtype=dtype), np.asarray(b["y"], dtype=dtype), w))
    return out


def case_config(case: dict[str, Any]) -> Config:
    return Config(**case["config"])


def replay_case(case: dict[str, Any], engine: Callable, config: Config | None = None,
                to_device: Callable = lambda a: a) -> list[dict[str, Any]]:
    """An engine's records for a case's recorded batches (:func:`replay`); ``config`` defaults
    to the case's."""
    return replay(case_batches(case), np.asarray(case["probe"], dtype=case["dtype"]), engine,
                  case_config(case) if config is None else config,
                  v3=case["name"] in V3_CASES, v4=case["name"] in V4_CASES, to_device=to_device)


def replay(batches: list[tuple[Any, Any, Any]], probe: np.ndarray, engine: Callable,
           config: Config, *, v3: bool = True, v4: bool = True,
           to_device: Callable = lambda a: a) -> list[dict[str, Any]]:
    """An engine's records for ``batches`` ((X, y, w or None), ...) streamed from no state, laid
    out as the corpus's (state, diagnostics, predictions at ``probe``), for
    :func:`compare_batch`. ``engine`` is called as ``update`` is; ``v3``/``v4``: record those
    contracts' fields; ``to_device`` moves each input array."""
    state, records = None, []
    for batch in batches:
        inputs = (None if a is None else to_device(a) for a in batch)
        state, diag = engine(state, *inputs, config)
        records.append({"state": state_record(state, v3),
                        "diagnostics": diagnostics_record(diag, v4),
                        "predictions": predict(state, probe, config.fit_intercept).tolist()})
    return records


def _close(a: Any, b: Any, rtol: float) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= rtol * np.maximum(1.0, np.abs(b))))


def compare_batch(actual: dict[str, Any], expected: dict[str, Any], dtype: str,
                  *, check_rung: bool, rtol: float | None = None) -> list[str]:
    """Differences between an engine's batch record and the expected one, per method.md's
    cross-engine tolerance; an empty list means the engine meets the contract."""
    rtol = RTOL[dtype] if rtol is None else rtol
    # A record may loosen a key where the data determine no more digits (FILIP_COEF_RTOL).
    loosened = expected.get("tolerance", {})
    problems = []
    for key in STATE_FLOATS:
        key_rtol = max(rtol, loosened.get(key, 0.0))
        if not _close(actual["state"][key], expected["state"][key], key_rtol):
            problems.append(f"state.{key}: {actual['state'][key]} vs {expected['state'][key]}")
    for key in (*STATE_COUNTERS, "dtype"):
        if actual["state"][key] != expected["state"][key]:
            problems.append(f"state.{key}: {actual['state'][key]} vs {expected['state'][key]}")
    for key in (k for k in (*INFERENCE_FLOATS, *INFERENCE_MATRICES) if k in expected["state"]):
        a, b = actual["state"].get(key), expected["state"][key]
        if (a is None) != (b is None) or (b is not None and not _close(a, b, rtol)):
            problems.append(f"state.{key}: {_brief(a)} vs {_brief(b)}")
    if "inference_batches" in expected["state"] and (
            actual["state"].get("inference_batches") != expected["state"]["inference_batches"]):
        problems.append(f"state.inference_batches: {actual['state'].get('inference_batches')} "
                        f"vs {expected['state']['inference_batches']}")
    for key in DIAG_FLOATS:
        a, b = actual["diagnostics"][key], expected["diagnostics"][key]
        if not _close(a, b, rtol):
            problems.append(f"diagnostics.{key}: {a} vs {b}")
    for key in (k for k in DRIFT_FLOATS if k in expected["diagnostics"]):
        a, b = actual["diagnostics"].get(key, "missing"), expected["diagnostics"][key]
        if (a is None) != (b is None) or (b is not None and not _close(a, b, rtol)):
            problems.append(f"diagnostics.{key}: {a} vs {b}")
    if actual["diagnostics"]["converged"] != expected["diagnostics"]["converged"]:
        problems.append("diagnostics.converged differs")
    if check_rung and actual["diagnostics"]["solver"] != expected["diagnostics"]["solver"]:
        problems.append(f"diagnostics.solver: {actual['diagnostics']['solver']} vs "
                        f"{expected['diagnostics']['solver']}")
    if not _close(actual["predictions"], expected["predictions"], rtol):
        problems.append("predictions differ")
    return problems


def _brief(a: Any) -> str:
    return "None" if a is None else np.array2string(np.asarray(a), threshold=6, precision=6)


def max_relative_difference(a: Any, b: Any) -> float:
    """Largest |a − b| / max(1, |b|) over two nested JSON structures of numbers."""
    if isinstance(b, dict):
        return max((max_relative_difference(a[k], b[k]) for k in b), default=0.0)
    if isinstance(b, list):
        if len(a) != len(b):
            return math.inf
        return max((max_relative_difference(x, y) for x, y in zip(a, b, strict=True)), default=0.0)
    if isinstance(b, (bool, str)) or b is None:
        return 0.0 if a == b else math.inf
    return abs(float(a) - float(b)) / max(1.0, abs(float(b)))
