"""The tuner's model files: one safetensors file per model, flat arrays plus string metadata, and
their NumPy evaluation (docs/tuner.md, "Models"; the C++ reader in native/tuner/ reads the same).

Tree models (kinds ``gbt_regressor``, ``forest_classifier``)::

    tree_offsets int64 [n_trees + 1]   start of each tree's nodes in the flat arrays
    feature      int32 [n_nodes]       -1 at a leaf
    threshold    float64 [n_nodes]     go left when x[feature] <= threshold
    left, right  int32 [n_nodes]       children, relative to the tree's start; -1 at a leaf
    value        float64 [n_nodes, n_outputs]
    init         float64 [n_outputs]
    scale        float64 [1]
    prediction = init + scale * Σ_trees value[leaf]   (summed tree by tree, as scikit-learn)

Linear models (kind ``logistic``): ``coef`` float64 [n_classes, n_features], ``intercept``
float64 [n_classes]; probabilities = softmax(coef @ x + intercept).

Like scikit-learn's trees, the comparison is made on the feature rounded to float32 (scikit-learn
casts X to float32 before walking a tree): ``float(np.float32(x)) <= threshold``. Every feature is
in [0, 1], so the rounding never overflows.

No pickle: a file holds arrays and strings only. Every read is validated (dtypes, shapes, child
indices, metadata); a bad file is a ValueError naming the file and what is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import _native
from ..errors import EngineNotAvailableError

FORMAT_VERSION = "1"
TREE_KINDS = ("gbt_regressor", "forest_classifier")
LINEAR_KINDS = ("logistic",)
KINDS = TREE_KINDS + LINEAR_KINDS
#: Metadata every file carries (all strings; the JSON ones hold JSON lists).
METADATA_KEYS = ("kind", "format_version", "feature_names", "feature_schema_version", "classes",
                 "target", "hardware_ids", "samples", "trained_at", "library_version", "seed")
_JSON_LIST_KEYS = ("feature_names", "classes", "hardware_ids")
#: The largest file the tuner writes (the issue's bound).
MAX_FILE_BYTES = 5 * 1024 * 1024

_TREE_TENSORS = {"tree_offsets": (np.int64, 1), "feature": (np.int32, 1),
                 "threshold": (np.float64, 1), "left": (np.int32, 1), "right": (np.int32, 1),
                 "value": (np.float64, 2), "init": (np.float64, 1), "scale": (np.float64, 1)}
_LINEAR_TENSORS = {"coef": (np.float64, 2), "intercept": (np.float64, 1)}


@dataclass
class ModelFile:
    """One model: its kind, arrays and metadata (strings), evaluated by the native module's C++
    reader of the same file when it is installed (:func:`read` attaches it), else with NumPy;
    the two agree to 1e-12 (tests/test_tuner_native_model.py)."""

    kind: str
    tensors: dict[str, np.ndarray]
    metadata: dict[str, str] = field(default_factory=dict)
    native: Any = field(default=None, compare=False, repr=False)

    @property
    def feature_names(self) -> list[str]:
        return json.loads(self.metadata["feature_names"])

    @property
    def classes(self) -> list[str]:
        return json.loads(self.metadata["classes"])

    @property
    def n_trees(self) -> int:
        return int(self.tensors["tree_offsets"].shape[0] - 1)

    def _rows(self, X: Any) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[None, :]
        n_features = len(self.feature_names)
        if X.ndim != 2 or X.shape[1] != n_features:
            raise ValueError(f"expected rows of {n_features} features, got shape {X.shape}")
        return X

    def leaves(self, X: Any) -> np.ndarray:
        """The absolute leaf index of each row in each tree, shape [n_rows, n_trees]."""
        X = self._rows(X).astype(np.float32).astype(np.float64)  # as scikit-learn compares
        t = self.tensors
        offsets = t["tree_offsets"][:-1]
        node = np.broadcast_to(offsets, (X.shape[0], offsets.shape[0])).copy()
        rows = np.arange(X.shape[0])[:, None]
        while True:
            feat = t["feature"][node]
            internal = feat >= 0
            if not internal.any():
                return node
            go_left = X[rows, np.where(internal, feat, 0)] <= t["threshold"][node]
            child = np.where(go_left, t["left"][node], t["right"][node]) + offsets
            node = np.where(internal, child, node)

    def tree_values(self, X: Any) -> np.ndarray:
        """Each tree's leaf value, shape [n_rows, n_trees, n_outputs] (unscaled)."""
        return self.tensors["value"][self.leaves(X)]

    def raw(self, X: Any) -> np.ndarray:
        """Tree models: init + scale · Σ value[leaf]; linear: coef @ x + intercept.
        Shape [n_rows, n_outputs]."""
        if self.native is not None and self.kind in TREE_KINDS:
            return np.asarray(self.native.predict(self._rows(X)))
        if self.kind in LINEAR_KINDS:
            X = self._rows(X)
            return X @ self.tensors["coef"].T + self.tensors["intercept"]
        values = self.tree_values(X)
        scale = float(self.tensors["scale"][0])
        out = np.repeat(self.tensors["init"][None, :], values.shape[0], axis=0)
        for k in range(values.shape[1]):  # tree by tree, in scikit-learn's order
            out += scale * values[:, k, :]
        return out

    def predict(self, X: Any) -> np.ndarray:
        """Regressor: the prediction per row. Classifiers: the class label of the largest
        probability."""
        if self.kind == "gbt_regressor":
            return self.raw(X)[:, 0]
        return np.asarray(self.classes, dtype=object)[np.argmax(self.predict_proba(X), axis=1)]

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities, shape [n_rows, n_classes] (classifiers only)."""
        if self.kind == "gbt_regressor":
            raise ValueError("a gbt_regressor has no class probabilities")
        if self.native is not None:  # the C++ reader returns probabilities for both kinds
            return np.asarray(self.native.predict(self._rows(X)))
        raw = self.raw(X)
        if self.kind == "forest_classifier":
            return raw
        z = raw - raw.max(axis=1, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(axis=1, keepdims=True)
        return z


# ---------------------------------------------------------------------- from scikit-learn


def _tree_arrays(trees: list[Any], normalize: bool) -> dict[str, np.ndarray]:
    offsets, feature, threshold, left, right, value = [0], [], [], [], [], []
    for tree in trees:
        t = tree.tree_
        leaf = t.children_left < 0
        feature.append(np.where(leaf, -1, t.feature).astype(np.int32))
        threshold.append(np.where(leaf, 0.0, t.threshold).astype(np.float64))
        left.append(np.where(leaf, -1, t.children_left).astype(np.int32))
        right.append(np.where(leaf, -1, t.children_right).astype(np.int32))
        v = np.asarray(t.value, dtype=np.float64).reshape(t.node_count, -1)
        if normalize:
            total = v.sum(axis=1, keepdims=True)
            v = v / np.where(total == 0.0, 1.0, total)
        value.append(v)
        offsets.append(offsets[-1] + t.node_count)
    return {"tree_offsets": np.asarray(offsets, dtype=np.int64),
            "feature": np.concatenate(feature), "threshold": np.concatenate(threshold),
            "left": np.concatenate(left), "right": np.concatenate(right),
            "value": np.ascontiguousarray(np.concatenate(value))}


def from_sklearn(model: Any, metadata: Mapping[str, str]) -> ModelFile:
    """A ModelFile of a fitted GradientBoostingRegressor (single output), RandomForestClassifier
    or LogisticRegression; ``metadata`` supplies every key but ``kind`` and
    ``format_version``."""
    kind, tensors = sklearn_tensors(model)
    meta = {k: str(v) for k, v in metadata.items()}
    meta.update(kind=kind, format_version=FORMAT_VERSION)
    out = ModelFile(kind, tensors, meta)
    validate(out)
    return out


def sklearn_tensors(model: Any) -> tuple[str, dict[str, np.ndarray]]:
    """The kind and the tensors of ``model``'s file (:func:`from_sklearn`), without metadata."""
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression

    if isinstance(model, GradientBoostingRegressor):
        kind = "gbt_regressor"
        tensors = _tree_arrays([est for est in model.estimators_[:, 0]], normalize=False)
        tensors["init"] = np.asarray(model.init_.constant_, dtype=np.float64).reshape(1)
        tensors["scale"] = np.asarray([model.learning_rate], dtype=np.float64)
    elif isinstance(model, RandomForestClassifier):
        kind = "forest_classifier"
        tensors = _tree_arrays(list(model.estimators_), normalize=True)
        n_classes = tensors["value"].shape[1]
        tensors["init"] = np.zeros(n_classes, dtype=np.float64)
        tensors["scale"] = np.asarray([1.0 / len(model.estimators_)], dtype=np.float64)
    elif isinstance(model, LogisticRegression):
        kind = "logistic"
        coef = np.asarray(model.coef_, dtype=np.float64)
        intercept = np.asarray(model.intercept_, dtype=np.float64)
        if coef.shape[0] == 1:  # binary: sigmoid(z) = softmax([-z/2, z/2])[1]
            coef = np.vstack([-coef / 2, coef / 2])
            intercept = np.concatenate([-intercept / 2, intercept / 2])
        tensors = {"coef": np.ascontiguousarray(coef), "intercept": intercept}
    else:
        raise TypeError(f"no model file for {type(model).__name__}")
    return kind, tensors


# ---------------------------------------------------------------------- writing and reading


def write(model: ModelFile, path: str | Path) -> Path:
    """Write ``model`` (validated first) as a safetensors file; refuses one over 5 MB."""
    from safetensors.numpy import save_file

    validate(model)
    path = Path(path)
    tensors = {k: np.ascontiguousarray(v).astype(v.dtype.newbyteorder("<"), copy=False)
               for k, v in model.tensors.items()}
    save_file(tensors, str(path), metadata=dict(model.metadata))
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        path.unlink()
        raise ValueError(f"{path}: {size} bytes, over the model file bound of {MAX_FILE_BYTES}; "
                         "train fewer or shallower trees")
    return path


def read(path: str | Path) -> ModelFile:
    """Read and validate one model file; any problem is a ValueError naming the file."""
    from safetensors import safe_open

    path = Path(path)
    try:
        with safe_open(str(path), framework="numpy") as f:
            metadata = dict(f.metadata() or {})
            tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (not a dict)
    except FileNotFoundError:
        raise
    except Exception as exc:  # safetensors' own errors: truncated, bad header, bad offsets
        raise ValueError(f"{path}: not a readable safetensors model file: {exc}") from exc
    model = ModelFile(metadata.get("kind", ""), tensors, metadata)
    try:
        validate(model)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc
    model.native = native_evaluator(path)
    return model


def native_evaluator(path: Path) -> Any:
    """The native module's reader of the file at ``path`` (None without the module)."""

    try:
        module = _native.load("native_cpu")
    except EngineNotAvailableError:
        return None
    return module.tuner.Model.load(str(path))


def validate(model: ModelFile) -> None:
    """Check the metadata and every array of ``model``; a ValueError says what is wrong."""
    meta = model.metadata
    missing = [k for k in METADATA_KEYS if k not in meta]
    if missing:
        raise ValueError(f"metadata lacks {missing}")
    if meta["kind"] not in KINDS or meta["kind"] != model.kind:
        raise ValueError(f"unknown model kind {meta['kind']!r}; expected one of {KINDS}")
    if meta["format_version"] != FORMAT_VERSION:
        raise ValueError(f"format_version {meta['format_version']!r}; this library reads "
                         f"{FORMAT_VERSION!r}")
    lists = {}
    for key in _JSON_LIST_KEYS:
        try:
            lists[key] = json.loads(meta[key])
        except json.JSONDecodeError as exc:
            raise ValueError(f"metadata {key!r} is not JSON: {exc}") from None
        if not isinstance(lists[key], list):
            raise ValueError(f"metadata {key!r} must be a JSON list")
    n_features = len(lists["feature_names"])
    if n_features < 1:
        raise ValueError("metadata 'feature_names' is empty")
    n_classes = len(lists["classes"])
    expected = _TREE_TENSORS if model.kind in TREE_KINDS else _LINEAR_TENSORS
    t = model.tensors
    if set(t) != set(expected):
        raise ValueError(f"a {model.kind} file holds tensors {sorted(expected)}, this one "
                         f"{sorted(t)}")
    for name, (dtype, ndim) in expected.items():
        a = t[name]
        if a.dtype != np.dtype(dtype) or a.ndim != ndim:
            raise ValueError(f"tensor {name!r} is {a.dtype}[{a.ndim}-d], expected "
                             f"{np.dtype(dtype)}[{ndim}-d]")
    if model.kind in LINEAR_KINDS:
        _validate_linear(t, n_features, n_classes)
    else:
        _validate_trees(t, n_features, n_classes, model.kind)


def _validate_linear(t: dict[str, np.ndarray], n_features: int, n_classes: int) -> None:
    coef, intercept = t["coef"], t["intercept"]
    if coef.shape != (n_classes, n_features) or intercept.shape != (n_classes,) or n_classes < 2:
        raise ValueError(f"coef {coef.shape} and intercept {intercept.shape} do not match "
                         f"{n_classes} classes (at least 2) x {n_features} features")
    if not (np.isfinite(coef).all() and np.isfinite(intercept).all()):
        raise ValueError("coef and intercept must be finite")


def _validate_trees(t: dict[str, np.ndarray], n_features: int, n_classes: int,
                    kind: str) -> None:
    offsets = t["tree_offsets"]
    n = t["feature"].shape[0]
    for name in ("threshold", "left", "right"):
        if t[name].shape != (n,):
            raise ValueError(f"tensor {name!r} has shape {t[name].shape}, expected ({n},)")
    n_outputs = 1 if kind == "gbt_regressor" else n_classes
    if kind == "forest_classifier" and n_classes < 2:
        raise ValueError(f"a forest_classifier needs at least 2 classes, metadata has "
                         f"{n_classes}")
    if t["value"].shape != (n, n_outputs):
        raise ValueError(f"tensor 'value' has shape {t['value'].shape}, expected "
                         f"({n}, {n_outputs})")
    if t["init"].shape != (n_outputs,) or t["scale"].shape != (1,):
        raise ValueError(f"init {t['init'].shape} / scale {t['scale'].shape}: expected "
                         f"({n_outputs},) / (1,)")
    if offsets.shape[0] < 2 or offsets[0] != 0 or offsets[-1] != n or (np.diff(offsets) < 1).any():
        raise ValueError(f"tree_offsets must rise strictly from 0 to the node count {n}")
    if not (np.isfinite(t["value"]).all() and np.isfinite(t["init"]).all()
            and np.isfinite(t["scale"]).all()):
        raise ValueError("value, init and scale must be finite")
    feature, left, right = t["feature"], t["left"], t["right"]
    leaf = feature == -1
    if ((feature < -1) | (feature >= n_features)).any():
        raise ValueError(f"a feature index is outside [-1, {n_features})")
    if ((left[leaf] != -1) | (right[leaf] != -1)).any():
        raise ValueError("a leaf (feature -1) has a child")
    if not np.isfinite(t["threshold"][~leaf]).all():
        raise ValueError("a split threshold is not finite")
    sizes = np.diff(offsets)
    tree_of = np.repeat(np.arange(sizes.shape[0]), sizes)
    local = np.arange(n) - offsets[tree_of]
    size = sizes[tree_of]
    for name, child in (("left", left), ("right", right)):
        bad = ~leaf & ((child <= local) | (child >= size))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"child index out of range: node {i} (tree {tree_of[i]}) has "
                             f"{name} child {child[i]}; children come after their node, inside "
                             f"a tree of {size[i]} nodes")
