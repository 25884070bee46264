"""The rhuber command line, run in-process through main() and once as a real process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import NATIVE_CPU, require_module
from rhuber import RenewableHuberRegressor, __version__
from rhuber.cli import main
from rhuber.datasets import make_contaminated_stream

# The reference engine, so that the figures checked do not depend on which engines are built.
SMALL_DEMO = [
    "demo",
    "--rows",
    "5000",
    "--n-features",
    "5",
    "--batch-size",
    "1000",
    "--backend",
    "numpy",
]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def data() -> pd.DataFrame:
    stream = make_contaminated_stream(3000, 3, batch_size=3000, seed=5)
    X, y = stream.materialize()
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"])
    frame.insert(1, "y", y)  # the target in the middle: not simply the last column
    return frame


def test_demo_prints_its_figures_and_writes_a_checkpoint(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, out, err = run(capsys, *SMALL_DEMO)
    assert status == 0, err
    assert "5,000 rows × 5 features in 5 batches" in out
    assert re.search(r"= [\d,]+ rows/s over all of them, the first included \(data generation "
                     r"excluded", out)
    assert "backend: numpy" in out
    table = re.findall(
        r"^\s+(\d)\s+(yes|NO)\s+(\d+)\s+\S+\s+(cholesky|lu|svd)\s+(\S+)\s+\S+$", out,
        re.MULTILINE,
    )
    assert [row[0] for row in table] == ["1", "2", "3", "4", "5"]
    assert all(row[1] == "yes" for row in table)
    assert all(0.01 < float(row[4]) <= 1 for row in table)  # rcond: well conditioned
    huber = float(re.search(r"renewable Huber\s+(\S+)", out).group(1))
    ols = float(re.search(r"least squares \(OLS\)\s+(\S+)", out).group(1))
    assert huber < 0.15 and huber < ols / 3  # robust to the gross outliers; OLS is not
    checkpoint = tmp_path / "rhuber-demo.npz"
    assert f"checkpoint: {checkpoint}" in out
    model = RenewableHuberRegressor.load_checkpoint(checkpoint)
    assert model.n_samples_seen_ == 5000 and model.n_batches_ == 5


def test_demo_error_matches_a_direct_fit(capsys, tmp_path):
    # The CLI adds nothing to the estimator: its checkpoint is the state of partial_fit
    # over the same stream.
    path = tmp_path / "demo.npz"
    assert main([*SMALL_DEMO, "-o", str(path)]) == 0
    capsys.readouterr()
    direct = RenewableHuberRegressor(backend="numpy")
    for X, y in make_contaminated_stream(5000, 5, batch_size=1000):
        direct.partial_fit(X, y)
    np.testing.assert_array_equal(RenewableHuberRegressor.load_checkpoint(path).coef_, direct.coef_)


@pytest.mark.parametrize("fmt", ["csv", "parquet", "npy"])
def test_fit_then_predict_round_trip(capsys, tmp_path, data, fmt):
    path = tmp_path / f"train.{fmt}"
    target = "y"
    if fmt == "csv":
        data.to_csv(path, index=False)
    elif fmt == "parquet":
        data.to_parquet(path)
    else:
        np.save(path, data.to_numpy())
        target = "1"
    model_path = tmp_path / "model.npz"
    status, out, err = run(
        capsys, "fit", str(path), "--target", target, "--batch-size", "700", "-o", str(model_path)
    )
    assert status == 0, err
    assert f"checkpoint: {model_path}" in out
    assert "3,000 rows in 5 batches" in out
    model = RenewableHuberRegressor.load_checkpoint(model_path)
    stream = make_contaminated_stream(3000, 3, batch_size=3000, seed=5)
    np.testing.assert_allclose(model.coef_, stream.coef, atol=0.1)
    if fmt != "npy":
        assert list(model.feature_names_in_) == ["x0", "x1", "x2"]

    out_csv = tmp_path / "predictions.csv"
    status, _, err = run(
        capsys, "predict", str(model_path), str(path), "--target", target, "-o", str(out_csv)
    )
    assert status == 0, err
    assert "3,000 predictions written" in err
    predictions = pd.read_csv(out_csv)
    assert list(predictions.columns) == ["prediction"]
    features = data[["x0", "x1", "x2"]]
    expected = model.predict(features if fmt != "npy" else features.to_numpy())
    # Equal up to the summation order of X @ coef, which depends on the memory layout.
    np.testing.assert_allclose(predictions["prediction"].to_numpy(), expected, rtol=1e-12)


def test_predict_takes_named_columns_in_any_order_and_writes_stdout(capsys, tmp_path, data):
    data.to_csv(tmp_path / "train.csv", index=False)
    model_path = tmp_path / "model.npz"
    assert main(["fit", str(tmp_path / "train.csv"), "--target", "y", "-o", str(model_path)]) == 0
    shuffled = data[["x2", "x0", "x1"]].head(4)  # no target, other column order
    shuffled.to_parquet(tmp_path / "new.parquet")
    capsys.readouterr()
    status, out, _ = run(capsys, "predict", str(model_path), str(tmp_path / "new.parquet"))
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == "prediction" and len(lines) == 5
    model = RenewableHuberRegressor.load_checkpoint(model_path)
    expected = model.predict(data[["x0", "x1", "x2"]].head(4))
    np.testing.assert_allclose([float(v) for v in lines[1:]], expected, rtol=1e-12)


def test_fit_options_reach_the_estimator(capsys, tmp_path, data):
    data.to_csv(tmp_path / "train.csv", index=False)
    model_path = tmp_path / "model.npz"
    args = ["fit", str(tmp_path / "train.csv"), "--target", "y", "-o", str(model_path)]
    status, _, err = run(capsys, *args, "--no-intercept", "--alpha", "0.01", "--epsilon", "2")
    assert status == 0, err
    model = RenewableHuberRegressor.load_checkpoint(model_path)
    assert (model.fit_intercept, model.alpha, model.epsilon) == (False, 0.01, 2.0)
    assert model.l1_solver == "lamm"
    status, _, err = run(capsys, *args, "--features", "x2,x0")
    assert status == 0, err
    assert list(RenewableHuberRegressor.load_checkpoint(model_path).feature_names_in_) == [
        "x2",
        "x0",
    ]


def test_fit_takes_the_opt_in_l1_solver(capsys, tmp_path, data):
    require_module(*NATIVE_CPU)  # its only engine
    data.to_csv(tmp_path / "train.csv", index=False)
    model_path = tmp_path / "model.npz"
    args = ["fit", str(tmp_path / "train.csv"), "--target", "y", "-o", str(model_path)]
    status, _, err = run(capsys, *args, "--alpha", "0.01", "--l1-solver", "prox_newton")
    assert status == 0, err
    model = RenewableHuberRegressor.load_checkpoint(model_path)
    assert model.l1_solver == "prox_newton"
    assert {d["solver"] for d in model.diagnostics_} <= {"prox_newton", "lamm"}
    status, _, err = run(capsys, *args, "--backend", "numpy", "--alpha", "0.01",
                         "--l1-solver", "prox_newton")
    assert status == 2 and "opt-in variant of the native CPU engine" in err
    assert "Traceback" not in err


def test_malformed_csv_is_one_error_line_with_row_and_column(capsys, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("a,b,y\n1,2,3\n4,5,6\n7,eight,9\n")
    model_path = tmp_path / "model.npz"
    status, out, err = run(capsys, "fit", str(path), "--target", "y", "-o", str(model_path))
    assert (status, out) == (2, "")
    assert err == (
        f"rhuber: error: {path}, row 3 (line 4 of the file, counting the header line), "
        "column 'b': non-numeric value 'eight'\n"
    )
    assert not model_path.exists()  # nothing is written from a failed stream


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fit", "{tmp}/train.csv", "--target", "price"], "no target column 'price'"),
        (["fit", "{tmp}/train.csv"], "name the response column with --target"),
        (["fit", "{tmp}/missing.csv", "--target", "y"], "missing.csv: no such file"),
        (["fit", "{tmp}/train.csv", "--target", "y", "--epsilon", "-1"], "epsilon"),
        (["fit", "{tmp}/train.csv", "--target", "y", "-o", "{tmp}/no/m.npz"], "no such dir"),
        (["predict", "{tmp}/missing.npz", "{tmp}/train.csv"], "missing.npz"),
        (["predict", "{tmp}/train.csv", "{tmp}/train.csv"], "checkpoint"),
        (["predict", "{tmp}/model.npz", "{tmp}/train.csv", "--features", "x0"], "feature"),
    ],
)
def test_user_errors_exit_2_without_traceback(capsys, tmp_path, data, argv, message):
    data.to_csv(tmp_path / "train.csv", index=False)
    assert (
        main(
            ["fit", str(tmp_path / "train.csv"), "--target", "y", "-o", str(tmp_path / "model.npz")]
        )
        == 0
    )
    capsys.readouterr()
    status, _, err = run(capsys, *(a.format(tmp=tmp_path) for a in argv))
    assert status == 2
    assert err.startswith("rhuber: error: ") and message in err
    assert "Traceback" not in err


def test_usage_errors_help_and_version(capsys):
    assert run(capsys, "--version")[:2] == (0, f"rhuber {__version__}\n")
    status, _, err = run(capsys)
    assert status == 2 and "demo" in err and "predict" in err
    status, _, err = run(capsys, "demo", "--rows", "0")
    assert status == 2 and "expected a positive number" in err
    status, _, err = run(capsys, "demo", "--backend", "gpu")
    assert status == 2 and "invalid choice" in err


def test_as_a_real_process(tmp_path):
    """The installed console script (else ``python -m rhuber.cli``) in a subprocess."""
    script = Path(sys.executable).with_name("rhuber")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "rhuber.cli"]
    python_dir = Path(__file__).resolve().parents[1] / "python"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(python_dir), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [*command, *SMALL_DEMO, "-o", "demo.npz"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "renewable Huber" in done.stdout and (tmp_path / "demo.npz").exists()
    (tmp_path / "bad.csv").write_text("a,y\n1,\n")
    done = subprocess.run(
        [*command, "fit", "bad.csv", "--target", "y"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert (
        done.stderr.startswith("rhuber: error: bad.csv, row 1") and "Traceback" not in done.stderr
    )


def test_fit_prints_the_inference_summary_and_json_carries_it(capsys, tmp_path, data):
    import json

    data.to_csv(tmp_path / "train.csv", index=False)
    args = ["fit", str(tmp_path / "train.csv"), "--target", "y", "-o", str(tmp_path / "m.npz"),
            "--backend", "numpy", "--batch-size", "1000"]
    status, out, err = run(capsys, *args, "--inference-matrices")
    assert status == 0, err
    for word in ("std err", "P>|z|", "Covariance type:   H1", "all 3 batches", "x0", "intercept"):
        assert word in out, word
    model = RenewableHuberRegressor.load_checkpoint(tmp_path / "m.npz")
    status, out, err = run(capsys, *args, "--json", "--cov-type", "H2")
    assert status == 0, err
    report = json.loads(out)
    assert report["summary"]["cov_type"] == "H2" and report["summary_refused"] is None
    np.testing.assert_allclose([r["std_err"] for r in report["summary"]["coefficients"]],
                               model.bse("H2"), rtol=1e-12)
    status, out, err = run(capsys, *args, "--json", "--alpha", "0.01")
    report = json.loads(out)
    assert report["summary"] is None and "post-selection" in report["summary_refused"]
    status, out, err = run(capsys, *args, "--lambda-scale", "0.5")
    assert status == 0 and "no standard errors" in out and "post-selection" in out
