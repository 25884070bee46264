"""The golden corpus: committed file up to date, and the reference engine meets it."""

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import NATIVE_CPU, golden_corpus, log_relative_error, nist_filip, require_module
from rhuber.core import update
from rhuber.engines import make_engine
from rhuber.lab.golden import (
    QR_CASES,
    RUNG_CHECKED,
    V3_CASES,
    V4_CASES,
    compare_batch,
    replay_case,
)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = golden_corpus()


def test_corpus_has_the_cases_of_the_contract():
    assert CORPUS["version"] == 2
    assert not (ROOT / "tests" / "golden" / "native_core_v1.json").exists()
    names = [c["name"] for c in CORPUS["cases"]]
    assert names == ["weighted_unpenalized", "l1_history", "float32_outliers", "rank_deficient",
                     "badly_scaled", "lambda_schedule_l1", "smoothed_curvature",
                     "inference_matrices_weighted", "forgetting_half_life", "drift_statistic",
                     "filip_least_squares_qr", "polynomial_huber_qr"]
    batch_counts = {"filip_least_squares_qr": 3, "polynomial_huber_qr": 3}
    for case in CORPUS["cases"]:
        # Contract v4's cases take three: a history discounted twice, a stationary batch and
        # a changed one for the drift test; Filip streams in four.
        want = batch_counts.get(case["name"], 3 if case["name"] in V4_CASES else 2)
        assert len(case["batches"]) == want
        features = 10 if case["name"] == "filip_least_squares_qr" else 6
        assert all(len(b["X"]) <= 200 and len(b["X"][0]) <= features for b in case["batches"])
    rank = CORPUS["cases"][3]
    assert [b["diagnostics"]["solver"] for b in rank["batches"]] == ["svd", "svd"]
    assert [b["diagnostics"]["rcond"] for b in rank["batches"]] == [0.0, 0.0]
    l1 = CORPUS["cases"][1]
    assert l1["batches"][1]["state"]["previous_lambda"] > 0
    assert [b["diagnostics"]["rcond"] for b in l1["batches"]] == [None, None]


def test_contract_v3_cases_exercise_what_they_name():
    """The v3 cases (docs/method-v3.md): the λ schedule is λ_b = lambda_scale · τ_b · √(q/N_b) with
    τ_b = epsilon · scale (recorded), L1 by LAMM; the smoothed case's h is below τ (not capped)
    and c_h is fractional for some rows (Σwc² < Σwc); the inference case keeps G and K, weighted,
    and every v3 record carries the sums."""
    cases = {c["name"]: c for c in CORPUS["cases"]}
    lam = cases["lambda_schedule_l1"]
    for b in lam["batches"]:
        st, dg = b["state"], b["diagnostics"]
        tau = lam["config"]["epsilon"] * st["scale"]
        want = lam["config"]["lambda_scale"] * tau * np.sqrt(np.log(5) / st["effective_weight"])
        assert dg["lambda"] == pytest.approx(want, rel=1e-12)
        assert st["previous_lambda"] == dg["lambda"]
        assert dg["solver"] == "lamm"
    smooth = cases["smoothed_curvature"]
    for b in smooth["batches"]:
        st, dg = b["state"], b["diagnostics"]
        assert dg["bandwidth"] < smooth["config"]["epsilon"] * st["scale"]
        assert st["curvature_sq_sum"] < st["curvature_sum"] < st["inference_weight"]
    weighted = cases["inference_matrices_weighted"]
    assert len(set(weighted["batches"][0]["sample_weight"])) > 2
    for k, b in enumerate(weighted["batches"], start=1):
        assert b["state"]["gram"] is not None and b["state"]["inference_batches"] == k
        assert b["state"]["inference_weight"] == b["state"]["effective_weight"]
    for case in CORPUS["cases"]:
        v3 = case["name"] in V3_CASES
        assert all(("score_sq_sum" in b["state"]) == v3 for b in case["batches"])


def test_badly_scaled_case_takes_cholesky_and_matches_least_squares():
    case = CORPUS["cases"][4]
    assert [b["diagnostics"]["solver"] for b in case["batches"]] == ["cholesky", "cholesky"]
    column_units = np.abs(np.asarray(case["batches"][0]["X"])).max(axis=0)
    assert column_units.max() / column_units.min() > 1e5
    X = np.vstack([b["X"] for b in case["batches"]])
    y = np.concatenate([b["y"] for b in case["batches"]])
    design = np.column_stack([X, np.ones(len(y))])
    # Least squares through a QR of the column-scaled design: nothing shared with the ladder.
    units = np.abs(design).max(axis=0)
    least_squares = np.linalg.lstsq(design / units, y, rcond=None)[0] / units
    coef = np.asarray(case["batches"][1]["state"]["coef"])
    assert np.max(np.abs(coef - least_squares) / np.abs(least_squares)) < 1e-6



def run_check(corpus: dict | None, tmp_path=None) -> subprocess.CompletedProcess:
    """scripts/generate_native_golden.py --check on the committed corpus, or on ``corpus``
    written to a file under ``tmp_path``."""
    command = [sys.executable, str(ROOT / "scripts" / "generate_native_golden.py"), "--check"]
    if corpus is not None:
        path = tmp_path / "golden.json"
        path.write_text(json.dumps(corpus))
        command += ["--path", str(path)]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def differs(out: subprocess.CompletedProcess) -> bool:
    return out.returncode == 1 and "differs" in out.stderr


def test_generator_check_passes_on_committed_corpus():
    out = run_check(None)
    assert out.returncode == 0, out.stderr


def test_generator_check_fails_on_a_changed_number(tmp_path):
    corpus = json.loads(json.dumps(CORPUS))
    corpus["cases"][0]["batches"][0]["state"]["coef"][0] *= 1 + 1e-9
    assert differs(run_check(corpus, tmp_path))


@pytest.mark.parametrize(("change", "fails"), [(1e-4, True), (1e-6, False)])
def test_generator_check_allows_float32_cases_blas_rounding_only(tmp_path, change, fails):
    """A float32 case rounds through NumPy's BLAS, which changes between NumPy releases: the
    check allows 1e-5 relative there (1e-12 for float64 cases), not more."""
    corpus = json.loads(json.dumps(CORPUS))
    index = next(k for k, case in enumerate(corpus["cases"]) if case["dtype"] == "float32")
    corpus["cases"][index]["batches"][0]["state"]["scale"] *= 1 + change
    out = run_check(corpus, tmp_path)
    assert differs(out) == fails, out.stderr


@pytest.mark.parametrize(("name", "field", "change", "fails"), [
    ("polynomial_huber_qr", "coef", 1e-8, True),
    ("polynomial_huber_qr", "coef", 1e-10, False),
    ("filip_least_squares_qr", "coef", 2e-6, True),
    ("filip_least_squares_qr", "coef", 3e-7, False),
    ("filip_least_squares_qr", "scale", 3e-7, True),
    ("filip_least_squares_qr", "scale", 5e-8, False),
])
def test_generator_check_allows_the_qr_cases_processor_rounding_only(tmp_path, name, field, change,
                                                                    fails):
    """The qr cases' reference numbers move with LAPACK's kernels on another processor (an AMD
    EPYC moved Filip's coefficients by 1.3e-7 from an AVX-512 Xeon's): 1e-9 for a qr case, and for
    Filip, whose batches declare coef's tolerance, the contract's 1e-7 and that tolerance."""
    corpus = json.loads(json.dumps(CORPUS))
    case = next(c for c in corpus["cases"] if c["name"] == name)
    state = case["batches"][-1]["state"]
    if isinstance(state[field], list):
        state[field][0] *= 1 + change
    else:
        state[field] *= 1 + change
    out = run_check(corpus, tmp_path)
    assert differs(out) == fails, out.stderr


@pytest.mark.parametrize("case", CORPUS["cases"], ids=lambda c: c["name"])
def test_reference_meets_golden(case):
    for k, (got, want) in enumerate(zip(replay_case(case, update), case["batches"], strict=True)):
        problems = compare_batch(got, want, case["dtype"], check_rung=True)
        assert not problems, f"batch {k + 1}: {problems}"


def test_contract_v4_cases_record_forgetting_and_the_drift_test():
    cases = {c["name"]: c for c in CORPUS["cases"]}
    forgetting = cases["forgetting_half_life"]
    assert forgetting["config"]["half_life"] == 100.0
    batches = forgetting["batches"]
    for before, after in itertools.pairwise(batches):
        w = sum(after["sample_weight"])
        gamma = 2.0 ** (-w / 100.0)
        want = gamma * before["state"]["effective_weight"] + w
        assert after["state"]["effective_weight"] == pytest.approx(want, rel=1e-14)
        assert after["state"]["n_samples_seen"] == before["state"]["n_samples_seen"] + len(
            after["y"])
    drift = cases["drift_statistic"]
    first, *later = drift["batches"]
    assert first["diagnostics"]["drift_pvalue"] is None
    assert all(b["diagnostics"]["drift_df"] == 5.0 for b in later)
    assert later[0]["diagnostics"]["drift_pvalue"] > 0.05  # stationary
    assert later[1]["diagnostics"]["drift_pvalue"] < 0.01  # the intercept jumps
    for case in CORPUS["cases"]:
        has_drift = case["name"] in V4_CASES
        assert all(("drift_pvalue" in b["diagnostics"]) == has_drift for b in case["batches"])


QR_CORPUS = [case for case in CORPUS["cases"] if case["name"] in QR_CASES]


def test_qr_cases_are_what_they_name():
    """Filip's recorded stream keeps NIST's certified values to 7 digits on the qr rung; the
    Huber case has outliers (rows outside τ) in every batch."""
    filip, poly = QR_CORPUS
    assert filip_digits(filip["batches"][-1]["state"]["coef"]) >= 7
    for case in QR_CORPUS:
        assert case["config"]["factorization"] == "qr"
        assert all(b["diagnostics"]["solver"] == "qr" for b in case["batches"])
    for b in poly["batches"]:
        X = np.column_stack([b["X"], np.ones(len(b["y"]))])
        residual = np.asarray(b["y"]) - X @ np.asarray(b["state"]["coef"])
        tau = b["diagnostics"]["bandwidth"]
        assert np.sum(np.abs(residual) > tau) >= 3


@pytest.mark.parametrize("backend", ["numpy", "native_cpu"])
@pytest.mark.parametrize("case", QR_CORPUS, ids=lambda c: c["name"])
def test_qr_cases_on_every_engine_that_declares_qr(case, backend):
    if backend == "native_cpu":
        require_module(*NATIVE_CPU)
    engine = make_engine(backend)
    if "qr" not in engine.contract_features:
        pytest.skip(f"{backend} does not declare 'qr' (factorization='qr', contract v4) in its "
                    "CONTRACT_FEATURES yet: its qr mode is not in this build")
    records = replay_case(case, engine.update)
    for k, (got, want) in enumerate(zip(records, case["batches"], strict=True)):
        problems = compare_batch(got, want, case["dtype"], check_rung=case["name"] in RUNG_CHECKED)
        assert not problems, f"batch {k + 1}: {problems}"
    if case["name"] == "filip_least_squares_qr":  # NIST's anchor, whatever the corpus says
        # 6.5, not 7: Filip's digits in float64 fall anywhere in 6.6-8.6 with the rounding of
        # one valid QR or another (docs/numerics.md); the >= 7 targets are in
        # tests/test_sqrt_information.py, on the batch sizes of the issue.
        assert filip_digits(records[-1]["state"]["coef"]) >= 6.5


def filip_digits(coef):
    _, _, certified = nist_filip()
    return log_relative_error(np.r_[coef[-1], coef[:-1]], certified)


def test_only_filip_loosens_a_tolerance_and_only_its_coefficients():
    for case in CORPUS["cases"]:
        loosened = [b.get("tolerance") for b in case["batches"]]
        if case["name"] == "filip_least_squares_qr":
            assert loosened == [{"coef": 1e-6}] * len(case["batches"])
        else:
            assert loosened == [None] * len(case["batches"])
