"""C++ inference of the tuner's models: the native Model loads safetensors files
in the tuner's format and predicts as scikit-learn does, to 1e-12; bad files are ValueErrors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rhuber import _native
from rhuber.errors import EngineNotAvailableError

try:
    native = _native.load("native_cpu")
except EngineNotAvailableError as exc:
    pytest.skip(f"rhuber-native-cpu is not installed: {exc}", allow_module_level=True)
safetensors_numpy = pytest.importorskip("safetensors.numpy")
ensemble = pytest.importorskip("sklearn.ensemble")
linear_model = pytest.importorskip("sklearn.linear_model")

if not hasattr(native, "tuner"):
    pytest.skip("the native module has no tuner submodule", allow_module_level=True)

N_FEATURES = 6


def _metadata(kind: str, n_features: int, classes: list) -> dict[str, str]:
    return {
        "kind": kind,
        "format_version": "1",
        "feature_names": json.dumps([f"f{j}" for j in range(n_features)]),
        "classes": json.dumps(classes),
    }


def _write_trees(path: Path, trees, kind: str, init, scale: float, classes: list,
                 normalize: bool) -> None:
    """The tuner's tree format from fitted scikit-learn trees (tree_ attributes)."""
    offsets, feature, threshold, left, right, value = [0], [], [], [], [], []
    for tree in trees:
        t = tree.tree_
        is_leaf = t.children_left == -1
        feature.append(np.where(is_leaf, -1, t.feature).astype(np.int32))
        threshold.append(t.threshold.astype(np.float64))
        left.append(t.children_left.astype(np.int32))
        right.append(t.children_right.astype(np.int32))
        v = t.value[:, 0, :].astype(np.float64)
        if normalize:
            v = v / v.sum(axis=1, keepdims=True)
        value.append(v)
        offsets.append(offsets[-1] + t.node_count)
    tensors = {
        "tree_offsets": np.asarray(offsets, dtype=np.int64),
        "feature": np.concatenate(feature),
        "threshold": np.concatenate(threshold),
        "left": np.concatenate(left),
        "right": np.concatenate(right),
        "value": np.ascontiguousarray(np.concatenate(value)),
        "init": np.asarray(init, dtype=np.float64).reshape(-1),
        "scale": np.asarray([scale], dtype=np.float64),
    }
    safetensors_numpy.save_file(tensors, str(path),
                                metadata=_metadata(kind, N_FEATURES, classes))


def _data(seed: int, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_FEATURES))
    y = X[:, 0] * 2.0 - X[:, 1] ** 2 + np.sin(3 * X[:, 2]) + 0.1 * rng.normal(size=n)
    return X, y


def test_gradient_boosted_regressor_matches_sklearn(tmp_path: Path) -> None:
    X, y = _data(0)
    model = ensemble.GradientBoostingRegressor(n_estimators=40, max_depth=4, random_state=0)
    model.fit(X, y)
    path = tmp_path / "gbt.safetensors"
    _write_trees(path, model.estimators_[:, 0], "gbt_regressor",
                 model._raw_predict_init(X[:1])[0], model.learning_rate, [], normalize=False)
    m = native.tuner.Model.load(str(path))
    assert m.kind == "gbt_regressor"
    assert (m.n_features, m.n_outputs, m.n_trees) == (N_FEATURES, 1, 40)
    assert m.classes == []
    assert m.metadata["format_version"] == "1"
    X_test, _ = _data(1, 300)
    got = m.predict(X_test)
    assert got.shape == (300, 1)
    np.testing.assert_allclose(got[:, 0], model.predict(X_test), rtol=0, atol=1e-12)
    np.testing.assert_allclose(m.predict(X_test[3]), model.predict(X_test[3:4]), rtol=0,
                               atol=1e-12)
    # The training rows too: they sit on the float32 grid sklearn's thresholds come from.
    np.testing.assert_allclose(m.predict(X)[:, 0], model.predict(X), rtol=0, atol=1e-12)


def test_random_forest_classifier_matches_sklearn(tmp_path: Path) -> None:
    X, y = _data(2)
    labels = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    model = ensemble.RandomForestClassifier(n_estimators=25, max_depth=6, random_state=0)
    model.fit(X, labels)
    path = tmp_path / "forest.safetensors"
    n_classes = len(model.classes_)
    _write_trees(path, model.estimators_, "forest_classifier", np.zeros(n_classes),
                 1.0 / len(model.estimators_), model.classes_.tolist(), normalize=True)
    m = native.tuner.Model.load(str(path))
    assert m.kind == "forest_classifier"
    assert m.classes == model.classes_.tolist()
    X_test, _ = _data(3, 300)
    for rows in (X_test, X):
        np.testing.assert_allclose(m.predict(rows), model.predict_proba(rows), rtol=0, atol=1e-12)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_logistic_regression_matches_sklearn(tmp_path: Path, n_classes: int) -> None:
    X, y = _data(4)
    labels = np.digitize(y, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))
    model = linear_model.LogisticRegression(max_iter=2000).fit(X, labels)
    coef, intercept = model.coef_, model.intercept_
    if n_classes == 2:  # sigmoid(z) == softmax([0, z])[1]
        coef = np.vstack([np.zeros_like(coef), coef])
        intercept = np.concatenate([[0.0], intercept])
    path = tmp_path / "logistic.safetensors"
    safetensors_numpy.save_file(
        {"coef": np.ascontiguousarray(coef, dtype=np.float64),
         "intercept": np.asarray(intercept, dtype=np.float64)},
        str(path), metadata=_metadata("logistic", N_FEATURES, model.classes_.tolist()))
    m = native.tuner.Model.load(str(path))
    assert m.kind == "logistic" and m.n_outputs == n_classes
    X_test, _ = _data(5, 300)
    np.testing.assert_allclose(m.predict(X_test), model.predict_proba(X_test), rtol=0,
                               atol=1e-12)


def test_bad_files_are_value_errors(tmp_path: Path) -> None:
    safetensors_numpy.save_file(
        {"coef": np.ones((2, 3)), "intercept": np.zeros(2)}, str(tmp_path / "ok.safetensors"),
        metadata=_metadata("logistic", 3, [0, 1]))
    good = (tmp_path / "ok.safetensors").read_bytes()
    assert native.tuner.Model.from_bytes(good).n_outputs == 2
    for bad in (b"", good[:7], good[:-1], good[:20], b"\xff" * 8 + good[8:]):
        with pytest.raises(ValueError):
            native.tuner.Model.from_bytes(bad)
    with pytest.raises(native.tuner.ModelFormatError, match="truncated"):
        native.tuner.Model.from_bytes(good[:12])
    m = native.tuner.Model.from_bytes(good)
    with pytest.raises(ValueError, match="features"):
        m.predict(np.zeros(4))
    with pytest.raises(ValueError):
        m.predict(np.zeros((2, 2, 3)))
    with pytest.raises(RuntimeError):
        native.tuner.Model.load(str(tmp_path / "missing.safetensors"))


SHIPPED = Path(__file__).resolve().parents[1] / "python/rhuber/tuner/data/models"


@pytest.mark.parametrize("name", ["throughput", "plan", "bottleneck"])
def test_shipped_models_match_the_numpy_evaluation(name: str) -> None:
    from rhuber.tuner import model_files

    path = SHIPPED / f"{name}.safetensors"
    loaded = model_files.read(path)
    assert loaded.native is not None  # read() evaluates with C++ when the module is there
    reference = model_files.ModelFile(loaded.kind, loaded.tensors, loaded.metadata)  # NumPy
    m = native.tuner.Model.load(str(path))
    X = np.random.default_rng(6).normal(scale=3.0, size=(500, m.n_features))
    if m.kind == "gbt_regressor":
        expected = reference.predict(X)[:, None]
    else:
        expected = reference.predict_proba(X)
    np.testing.assert_allclose(m.predict(X), expected, rtol=0, atol=1e-12)
    through_read = loaded.predict(X)[:, None] if m.kind == "gbt_regressor" else \
        loaded.predict_proba(X)
    np.testing.assert_allclose(through_read, expected, rtol=0, atol=1e-12)
