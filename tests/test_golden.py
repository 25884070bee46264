"""The golden corpus: committed file up to date, and the reference engine meets it."""

import json
from pathlib import Path

import pytest

from renewable_huber.core import update
from renewable_huber.golden import compare_batch, replay_case

ROOT = Path(__file__).resolve().parent.parent
CORPUS = json.loads((ROOT / "tests" / "golden" / "native_core_v1.json").read_text())


def test_corpus_has_the_four_cases_of_the_contract():
    names = [c["name"] for c in CORPUS["cases"]]
    assert names == ["weighted_unpenalized", "l1_history", "float32_outliers", "rank_deficient"]
    for case in CORPUS["cases"]:
        assert len(case["batches"]) == 2
        assert all(len(b["X"]) <= 200 and len(b["X"][0]) <= 6 for b in case["batches"])
    rank = CORPUS["cases"][3]
    assert [b["diagnostics"]["solver"] for b in rank["batches"]] == ["svd", "svd"]
    l1 = CORPUS["cases"][1]
    assert l1["batches"][1]["state"]["previous_lambda"] > 0


def test_generator_check_passes_on_committed_corpus():
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "generate_native_golden.py"), "--check"],
        capture_output=True, text=True, check=False,
    )
    assert out.returncode == 0, out.stderr


def test_generator_check_fails_on_a_changed_number(tmp_path):
    import subprocess
    import sys

    corpus = json.loads(json.dumps(CORPUS))
    corpus["cases"][0]["batches"][0]["state"]["coef"][0] *= 1 + 1e-9
    path = tmp_path / "golden.json"
    path.write_text(json.dumps(corpus))
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "generate_native_golden.py"), "--check",
         "--path", str(path)], capture_output=True, text=True, check=False,
    )
    assert out.returncode == 1 and "differs" in out.stderr


@pytest.mark.parametrize("case", CORPUS["cases"], ids=lambda c: c["name"])
def test_reference_meets_golden(case):
    for k, (got, want) in enumerate(zip(replay_case(case, update), case["batches"], strict=True)):
        problems = compare_batch(got, want, case["dtype"], check_rung=True)
        assert not problems, f"batch {k + 1}: {problems}"
