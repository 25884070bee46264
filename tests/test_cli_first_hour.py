"""The command line checks what it can before it streams, names the file in its errors, writes
nothing to stdout before an error exit, and gives an option one name across commands."""

import numpy as np
import pytest

from rhuber import RenewableHuberRegressor
from rhuber.cli import main

pd = pytest.importorskip("pandas", reason="the CLI's tables need pandas ([cli] extra)")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 2))
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "y": X @ [1.0, -2.0] + rng.normal(size=400)})
    path = tmp_path / "train.csv"
    frame.to_csv(path, index=False)
    np.save(tmp_path / "train.npy", frame.to_numpy())
    return path


def test_a_covariance_that_needs_the_matrices_is_refused_before_streaming(capsys, table,
                                                                         monkeypatch):
    streamed = []
    monkeypatch.setattr(RenewableHuberRegressor, "partial_fit",
                        lambda self, *a, **k: streamed.append(1))
    status, out, err = run(capsys, "fit", table, "--target", "y", "--cov-type", "H1",
                           "-o", table.parent / "m.npz")
    assert status == 2 and out == "" and not streamed
    assert "--cov-type H1 needs" in err and "--inference-matrices" in err
    assert "inference_matrices=True" not in err  # the flag, not the Python parameter
    assert not (table.parent / "m.npz").exists()


def test_a_header_only_csv_names_the_file(capsys, tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("a,b,y\n")
    status, out, err = run(capsys, "fit", path, "--target", "y", "-o", tmp_path / "m.npz")
    assert status == 2 and out == ""
    assert err.strip() == f"rhuber: error: {path}: the file has no data rows"


def test_predict_with_an_extra_column_names_the_file_and_hints_target(capsys, table):
    model = table.parent / "m.npz"
    assert main(["fit", str(table.parent / "train.npy"), "--target", "2", "-o", str(model)]) == 0
    capsys.readouterr()
    status, out, err = run(capsys, "predict", model, table.parent / "train.npy")
    assert status == 2
    assert out == ""  # no 'prediction' header before the error
    assert f"{table.parent / 'train.npy'}: has 3 feature column(s), but the model of" in err
    assert "--target" in err
    status, out, _ = run(capsys, "predict", model, table.parent / "train.npy", "--target", "2")
    assert status == 0 and out.startswith("prediction\n") and len(out.splitlines()) == 401


def test_predict_on_a_header_only_csv_writes_nothing_to_stdout(capsys, table, tmp_path):
    model = tmp_path / "m.npz"
    assert main(["fit", str(table), "--target", "y", "-o", str(model)]) == 0
    capsys.readouterr()
    empty = tmp_path / "empty.csv"
    empty.write_text("a,b\n")
    status, out, err = run(capsys, "predict", model, empty)
    assert status == 2 and out == "" and "the file has no data rows" in err


def test_the_demo_s_feature_count_is_n_features_in_every_command(capsys, tmp_path):
    status, out, err = run(capsys, "demo", "--rows", 500, "--n-features", 3, "--backend", "numpy",
                           "-o", tmp_path / "d.npz")
    assert status == 0 and "500 rows × 3 features in 1 batch of up to" in out
    status, _, err = run(capsys, "demo", "--features", 3)
    assert status == 2 and "--n-features 3" in err
    status, out, err = run(capsys, "profile", "demo", "--features", "10")
    assert status == 2 and out == ""
    assert "--features names a data file's columns" in err and "--n-features" in err


def test_an_engine_error_leaves_nothing_on_stdout(capsys, tmp_path, monkeypatch):
    def refuse(self, *args, **kwargs):
        raise ValueError("the engine refused the batch")

    monkeypatch.setattr(RenewableHuberRegressor, "partial_fit", refuse)
    status, out, err = run(capsys, "demo", "--rows", 500, "--n-features", 3,
                           "-o", tmp_path / "d.npz")
    assert status == 2 and out == "" and "the engine refused the batch" in err
