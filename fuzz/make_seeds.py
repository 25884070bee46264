"""Write the seed corpora of the fuzz targets (fuzz/corpus/<target>/): small valid files and a
few near misses, so that the fuzzers start inside each format rather than discovering its
magic bytes. Deterministic but for the order of the safetensors headers' keys (the library
writes them from a hash map); run it again only to change the seeds (they are committed).

    python fuzz/make_seeds.py
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
# The first byte of a reader target's input chooses its options (targets._options): batch size
# 1 + (b & 15) * 7, target required (b & 16), a target column (b & 32), .tsv (b & 64).
WITH_TARGET, WITHOUT = bytes([0x23]), bytes([0x02])


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def _npz(compressed: bool = False, **arrays: np.ndarray) -> bytes:
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    return buf.getvalue()


def checkpoints() -> dict[str, bytes]:
    from rhuber import RenewableHuberRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = X @ [1.0, -1.0] + rng.normal(size=30)
    out = {}
    for name, params, Xs in [("f64", {}, X), ("f32_no_intercept", {"fit_intercept": False},
                                               X.astype(np.float32)),
                             ("l1", {"alpha": 0.1}, X)]:
        model = RenewableHuberRegressor(backend="numpy", **params).fit(Xs, y.astype(Xs.dtype))
        buf = io.BytesIO()
        np.savez(buf, **model.state_dict())
        out[name] = buf.getvalue()
    named = RenewableHuberRegressor(backend="numpy")
    import pandas as pd

    named.fit(pd.DataFrame(X, columns=["a", "b"]), y)
    buf = io.BytesIO()
    np.savez(buf, **named.state_dict())
    out["feature_names"] = buf.getvalue()
    out["plain_npy"] = _npy(np.eye(2))
    # The seed system's format (rhuber.seed_checkpoint), as the seed itself wrote it.
    fixtures = HERE.parent / "tests" / "fixtures" / "seed"
    for name in ("v1_f64", "v2_l1_f32_no_intercept"):
        out[f"seed_{name}"] = (fixtures / f"{name}.npz").read_bytes()
    return out


def checkpoint_fields() -> dict[str, bytes]:
    """Edits of a valid checkpoint (fuzz/targets.py, checkpoint_fields): byte 0 + 1 edits,
    then per edit a key index, remove-or-replace, a value kind and its bytes."""
    return {
        "unchanged_params": bytes([0, 11, 1, 0, 2]) + b"{}",
        "params_plan_int": bytes([0, 11, 1, 0, 0, 1, 9, 2]),
        "coef_f4": bytes([0, 1, 1, 1, 1, 1, 3, 12]) + bytes(12),
        "drop_scale": bytes([0, 7, 0]),
        "names_u3": bytes([1, 13, 1, 2, 5, 1, 2, 6]) + b"a\0\0\0b\0",
    }


def csvs() -> dict[str, bytes]:
    return {
        "target": WITH_TARGET + b"a,b,y\n1,2,3\n4.5,-6e3,7\n,8,9\n",
        "no_target": WITHOUT + b"x1,x2\n1,2\n3,4\n",
        "quoted": WITH_TARGET + b'"a","b c",y\n"1",2,3\n1,"x",2\n',
        "ragged": WITH_TARGET + b"a,y\n1,2,3\n",
        "tsv": bytes([0x63]) + b"a\tb\ty\n1\t2\t3\ninf\tnan\t1\n",
        "blank_lines": WITH_TARGET + b"a,y\n\n1,2\n\n",
    }


def parquets() -> dict[str, bytes]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = {
        "floats": pa.table({"a": [1.0, 2.0, None], "b": [3, 4, 5], "y": [0.5, 1.5, 2.5]}),
        "strings": pa.table({"a": ["1", "x", "3"], "y": [1.0, 2.0, 3.0]}),
        "bools_decimal": pa.table({"a": [True, False], "d": pa.array([1, 2], pa.decimal128(5, 2)),
                                   "y": [1, 2]}),
        "no_target": pa.table({"x": [1.0, 2.0]}),
    }
    out = {}
    for name, table in tables.items():
        buf = io.BytesIO()
        pq.write_table(table, buf, row_group_size=2)
        out[name] = (WITHOUT if name == "no_target" else WITH_TARGET) + buf.getvalue()
    return out


def npys() -> dict[str, bytes]:
    return {
        "f64": WITH_TARGET + _npy(np.arange(12.0).reshape(4, 3)),
        "i32_fortran": WITH_TARGET + _npy(np.asfortranarray(np.arange(6, dtype=np.int32)
                                                            .reshape(3, 2))),
        "f32_nan": WITHOUT + _npy(np.array([[1.0, np.nan]], dtype=np.float32)),
        "one_d": WITHOUT + _npy(np.arange(3.0)),
        "strings": WITHOUT + _npy(np.array([["a", "b"]])),
    }


def npzs() -> dict[str, bytes]:
    X = np.arange(8.0).reshape(4, 2)
    return {
        "pair": WITHOUT + _npz(X=X, y=np.arange(4.0)),
        "pair_compressed": WITHOUT + _npz(True, X=X, y=np.arange(4.0)),
        "single": WITH_TARGET + _npz(data=X),
        "x_only": bytes([0x12]) + _npz(X=X),
        "mismatch": WITHOUT + _npz(X=X, y=np.arange(3.0)),
    }


def safetensors() -> dict[str, bytes]:
    """Small model files in the tuner's format (native/tuner/tests/model_files.hpp)."""
    from safetensors.numpy import save

    def names(n: int) -> str:
        return json.dumps([f"f{j}" for j in range(n)])

    trees = {"tree_offsets": np.array([0, 3, 8], np.int64),
             "feature": np.array([0, -1, -1, 1, 0, -1, -1, -1], np.int32),
             "threshold": np.array([0.5, -2, -2, 0.0, -1.0, -2, -2, -2]),
             "left": np.array([1, -1, -1, 1, 2, -1, -1, -1], np.int32),
             "right": np.array([2, -1, -1, 4, 3, -1, -1, -1], np.int32),
             "value": np.array([0, 1, 2, 0, 0, 10, 20, 30.0]).reshape(8, 1),
             "init": np.array([0.5]), "scale": np.array([0.1])}
    forest = dict(trees, value=np.tile([[0.5, 0.5]], (8, 1)), init=np.zeros(2),
                  scale=np.array([0.5]))
    logistic = {"coef": np.array([[1.0, -2.0], [0.5, 0.25], [-1.5, 3.0]]),
                "intercept": np.array([0.1, -0.2, 0.3])}
    out = {
        "gbt_regressor": save(trees, {"kind": "gbt_regressor", "format_version": "1",
                                      "feature_names": names(2), "classes": "[]"}),
        "forest_classifier": save(forest, {"kind": "forest_classifier", "format_version": "1",
                                           "feature_names": names(2),
                                           "classes": '["a", "b"]'}),
        "logistic": save(logistic, {"kind": "logistic", "format_version": "1",
                                    "feature_names": names(2), "classes": '["a", "b", "c"]'}),
        "empty": save({}, {}),
    }
    shipped = HERE.parent / "python/rhuber/tuner/data/models/bottleneck.safetensors"
    out["shipped_bottleneck"] = shipped.read_bytes()
    return out


def main() -> None:
    corpora = {"checkpoint": checkpoints(), "checkpoint_fields": checkpoint_fields(),
               "csv": csvs(), "parquet": parquets(), "npy": npys(), "npz": npzs(),
               "safetensors": safetensors()}
    for target, seeds in corpora.items():
        directory = CORPUS / target
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        for name, data in seeds.items():
            (directory / name).write_bytes(data)
    print(f"wrote {sum(map(len, corpora.values()))} seeds into {CORPUS}")


if __name__ == "__main__":
    main()
