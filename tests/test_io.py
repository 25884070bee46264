"""Streaming readers: batches equal the whole file, and every problem names its row and column."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rhuber.io import DataFileError, detect_format, read_batches

ROWS, BATCH = 23, 5


@pytest.fixture
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    data = rng.standard_normal((ROWS, 4))
    return pd.DataFrame(data, columns=["a", "b", "c", "y"])


def _write(frame: pd.DataFrame, path, fmt: str) -> None:
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "parquet":
        frame.to_parquet(path, row_group_size=7)  # row groups that straddle the batches
    elif fmt == "npy":
        np.save(path, frame.to_numpy())
    elif fmt == "npz":
        np.savez(path, data=frame.to_numpy())


def _concat(reader):
    batches = list(reader)
    X = np.concatenate([b.X for b in batches])
    y = np.concatenate([b.y for b in batches]) if batches[0].y is not None else None
    return batches, X, y


@pytest.mark.parametrize(
    ("fmt", "target"), [("csv", "y"), ("parquet", "y"), ("npy", "3"), ("npz", -1)]
)
def test_batches_concatenate_to_the_whole_file(tmp_path, frame, fmt, target):
    path = tmp_path / f"data.{fmt}"
    _write(frame, path, fmt)
    reader = read_batches(path, target=target, batch_size=BATCH)
    batches, X, y = _concat(reader)
    assert [len(b.X) for b in batches] == [5, 5, 5, 5, 3]
    assert [b.row_offset for b in batches] == [0, 5, 10, 15, 20]
    assert all(b.X.dtype == np.float64 and b.y.dtype == np.float64 for b in batches)
    np.testing.assert_array_equal(X, frame[["a", "b", "c"]].to_numpy())
    np.testing.assert_array_equal(y, frame["y"].to_numpy())
    assert reader.format == fmt
    assert reader.n_rows == (None if fmt == "csv" else ROWS)
    expected_names = ("a", "b", "c") if fmt in ("csv", "parquet") else None
    assert reader.feature_names == expected_names
    assert len(list(reader)) == 5  # iterable again


def test_npz_with_X_and_y_needs_no_target(tmp_path, frame):
    path = tmp_path / "data.npz"
    np.savez_compressed(path, X=frame[["a", "b", "c"]].to_numpy(), y=frame["y"].to_numpy())
    _, X, y = _concat(read_batches(path, batch_size=BATCH))
    np.testing.assert_array_equal(X, frame[["a", "b", "c"]].to_numpy())
    np.testing.assert_array_equal(y, frame["y"].to_numpy())


def test_features_select_and_order_columns(tmp_path, frame):
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    _, X, _ = _concat(read_batches(path, target="y", features=["c", "a"], batch_size=BATCH))
    np.testing.assert_array_equal(X, frame[["c", "a"]].to_numpy())
    np.save(tmp_path / "data.npy", frame.to_numpy())
    reader = read_batches(tmp_path / "data.npy", target=3, features=["2", 0])
    _, X, _ = _concat(reader)
    np.testing.assert_array_equal(X, frame[["c", "a"]].to_numpy())


def test_without_target_every_column_is_a_feature(tmp_path, frame):
    path = tmp_path / "data.parquet"
    frame.to_parquet(path)
    _, X, y = _concat(read_batches(path, batch_size=BATCH))
    assert y is None and X.shape == (ROWS, 4)
    reader = read_batches(path, target="price", target_required=False)
    assert reader.target is None and reader.feature_columns == ("a", "b", "c", "y")


def test_compressed_and_tab_separated_csv(tmp_path, frame):
    frame.to_csv(tmp_path / "data.csv.gz", index=False)
    frame.to_csv(tmp_path / "data.tsv", index=False, sep="\t")
    for name in ("data.csv.gz", "data.tsv"):
        _, X, y = _concat(read_batches(tmp_path / name, target="y", batch_size=BATCH))
        np.testing.assert_array_equal(X, frame[["a", "b", "c"]].to_numpy())
        np.testing.assert_array_equal(y, frame["y"].to_numpy())


def test_csv_is_streamed_never_read_whole(tmp_path, monkeypatch):
    # The file is broken at its very end: a reader that loaded it whole would fail before
    # yielding anything, a streaming one yields every earlier batch first.
    path = tmp_path / "big.csv"
    rows = [f"{i},{2 * i}" for i in range(5000)]
    path.write_text("x,y\n" + "\n".join(rows) + "\n1,oops\n")
    seen_chunksize = []
    read_csv = pd.read_csv

    def spy(*args, **kwargs):
        seen_chunksize.append(kwargs.get("chunksize"))
        return read_csv(*args, **kwargs)

    monkeypatch.setattr(pd, "read_csv", spy)
    batches = iter(read_batches(path, target="y", batch_size=100))
    first = next(batches)
    assert first.X[:, 0].tolist() == list(range(100))
    assert seen_chunksize == [None, 100]  # the header alone, then chunks of the batch size
    with pytest.raises(DataFileError, match="row 5001"):
        for _ in batches:
            pass


@pytest.fixture
def malformed_csv(tmp_path):
    def write(body: str):
        path = tmp_path / "bad.csv"
        path.write_text("a,b,y\n" + body)
        return path

    return write


@pytest.mark.parametrize(
    ("body", "row", "column", "problem"),
    [
        ("1,2,3\n4,abc,6\n", 2, "b", "non-numeric value 'abc'"),
        ("1,2,3\n4,5,6\n7,,9\n", 3, "b", "missing value"),
        ("1,2,3\n4,5,NaN\n", 2, "y", "missing value"),
        ("1,2,3\n4,5,inf\n", 2, "y", "non-finite value"),
        ("1,2,3\n\n4,5,6\n", 2, "a", "missing value"),  # a blank line is a row, not skipped
        ("1,2,3\n4,5,6\n7,8,9,10\n", 3, None, "wrong shape: 4 fields where the header has 3"),
        ("1,2,3\n4,5\n", 2, "y", "missing value"),  # a short row
    ],
)
def test_csv_errors_name_row_line_and_column(malformed_csv, body, row, column, problem):
    path = malformed_csv(body)
    with pytest.raises(DataFileError) as info:
        list(read_batches(path, target="y", batch_size=2))
    error = info.value
    assert (error.row, error.column) == (row, column)
    message = str(error)
    assert str(path) in message and problem in message
    assert f"row {row} (line {row + 1} of the file, counting the header line)" in message
    if column is not None:
        assert f"column {column!r}" in message


def test_earliest_bad_row_is_reported_whatever_its_column(malformed_csv):
    path = malformed_csv("1,2,3\n4,5,6\n7,8,x\n1,q,2\nz,1,1\n")
    with pytest.raises(DataFileError, match=r"row 3 .*column 'y': non-numeric value 'x'"):
        list(read_batches(path, target="y", batch_size=10))


def test_missing_target_lists_the_columns(malformed_csv):
    path = malformed_csv("1,2,3\n")
    with pytest.raises(DataFileError, match="no target column 'price'; the columns are 'a', 'b'"):
        read_batches(path, target="price")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"features": ["a", "zz"]}, "no feature column 'zz'"),
        ({"features": ["a", "y"]}, "also listed as a feature"),
        ({"features": ["a", "a"]}, "listed twice"),
    ],
)
def test_bad_feature_lists(malformed_csv, kwargs, message):
    with pytest.raises(DataFileError, match=message):
        read_batches(malformed_csv("1,2,3\n"), target="y", **kwargs)


def test_unreadable_files(tmp_path):
    with pytest.raises(DataFileError, match="no such file"):
        read_batches(tmp_path / "nope.csv", target="y")
    with pytest.raises(DataFileError, match="cannot tell the format"):
        detect_format(tmp_path / "data.txt")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DataFileError, match="empty"):
        read_batches(tmp_path / "empty.csv", target="y")
    (tmp_path / "junk.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(DataFileError, match=r"junk\.parquet: cannot be read as Parquet"):
        read_batches(tmp_path / "junk.parquet", target="y")
    (tmp_path / "junk.npy").write_bytes(b"\x00garbage")
    with pytest.raises(DataFileError, match=r"junk\.npy: cannot be read"):
        read_batches(tmp_path / "junk.npy", target=0)
    (tmp_path / "junk.npz").write_bytes(b"PK garbage")
    with pytest.raises(DataFileError, match=r"junk\.npz: cannot be read"):
        read_batches(tmp_path / "junk.npz")
    (tmp_path / "latin.csv").write_bytes("a,y\n1,2\n\xe9,3\n".encode("latin-1"))
    with pytest.raises(DataFileError, match=r"latin\.csv: is not UTF-8 text"):
        list(read_batches(tmp_path / "latin.csv", target="y"))


def test_parquet_errors_name_row_and_column(tmp_path):
    path = tmp_path / "data.parquet"
    pd.DataFrame(
        {"a": [1.0, 2.0, None, 4.0], "b": ["1", "2", "3", "zz"], "y": [1, 2, 3, 4]}
    ).to_parquet(path)
    with pytest.raises(DataFileError, match=r"row 3 \(index 2\), column 'a': missing value"):
        list(read_batches(path, target="y", batch_size=2))
    with pytest.raises(
        DataFileError, match=r"row 4 \(index 3\), column 'b': non-numeric value 'zz'"
    ):
        list(read_batches(path, target="y", features=["b"], batch_size=2))
    pd.DataFrame({"t": pd.to_datetime(["2024-01-01"]), "y": [1.0]}).to_parquet(path)
    with pytest.raises(DataFileError, match=r"column 't': has Parquet type timestamp"):
        read_batches(path, target="y")


def test_parquet_with_two_columns_of_one_name_is_refused_by_name(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "twice.parquet"
    table = pa.Table.from_arrays([pa.array([1.0, 2.0]), pa.array([3.0, 4.0]), pa.array([5.0, 6.0])],
                                 names=["a", "a", "y"])
    pq.write_table(table, path)
    with pytest.raises(DataFileError, match=r"twice\.parquet: has more than one column named 'a'"):
        read_batches(path, target="y")


def test_array_errors_name_row_index_and_column(tmp_path):
    data = np.arange(12.0).reshape(4, 3)
    data[2, 1] = np.inf
    np.save(tmp_path / "a.npy", data)
    with pytest.raises(DataFileError, match=r"row 3 \(index 2\), column 1: non-finite value inf"):
        list(read_batches(tmp_path / "a.npy", target=2, batch_size=3))
    with pytest.raises(DataFileError, match="cannot be named 'price'"):
        read_batches(tmp_path / "a.npy", target="price")
    with pytest.raises(DataFileError, match="out of range for 3 columns"):
        read_batches(tmp_path / "a.npy", target=3)
    np.save(tmp_path / "flat.npy", np.arange(4.0))
    with pytest.raises(DataFileError, match=r"wrong shape: the array has shape \(4,\)"):
        read_batches(tmp_path / "flat.npy", target=0)
    np.savez(tmp_path / "pair.npz", X=data[:, :2], y=data[:3, 2])
    with pytest.raises(DataFileError, match="'X' has 4 rows but array 'y' has 3"):
        read_batches(tmp_path / "pair.npz")
    np.savez(tmp_path / "many.npz", p=data, q=data)
    with pytest.raises(DataFileError, match="holds 'p', 'q'"):
        read_batches(tmp_path / "many.npz", target=0)


def test_bad_batch_size():
    with pytest.raises(ValueError, match="batch_size"):
        read_batches("data.csv", target="y", batch_size=0)
