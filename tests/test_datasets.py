"""The synthetic stream: seeded, batch-independent, the reference shape by default."""

from __future__ import annotations

import numpy as np
import pytest

from rhuber.datasets import make_contaminated_stream


def test_default_is_the_reference_shape_without_generating_it():
    stream = make_contaminated_stream()
    assert (stream.n_samples, stream.n_features, stream.batch_size) == (100_000, 90, 32_768)
    assert (stream.noise, stream.df, stream.outlier_fraction) == ("student_t", 3.0, 0.05)
    assert len(stream) == 4
    assert [stream.batch_rows(i) for i in range(4)] == [32_768] * 3 + [1_696]
    assert stream.coef.shape == (90,)


def test_same_seed_same_stream_and_other_seed_other_stream():
    a = make_contaminated_stream(900, 4, batch_size=400, seed=7)
    b = make_contaminated_stream(900, 4, batch_size=400, seed=7)
    c = make_contaminated_stream(900, 4, batch_size=400, seed=8)
    for (Xa, ya), (Xb, yb) in zip(a, b, strict=True):
        np.testing.assert_array_equal(Xa, Xb)
        np.testing.assert_array_equal(ya, yb)
    np.testing.assert_array_equal(a.coef, b.coef)
    assert not np.array_equal(a.coef, c.coef)
    assert not np.array_equal(a.batch(0)[1], c.batch(0)[1])


def test_any_batch_regenerates_alone_and_matches_iteration():
    stream = make_contaminated_stream(1000, 3, batch_size=300, seed=1)
    batches = list(stream)
    for index in (2, 0, 3, 1):  # out of order: no hidden generator state
        X, y = stream.batch(index)
        np.testing.assert_array_equal(X, batches[index][0])
        np.testing.assert_array_equal(y, batches[index][1])


def test_coefficients_do_not_depend_on_batching():
    a = make_contaminated_stream(1000, 5, batch_size=100, seed=3)
    b = make_contaminated_stream(5000, 5, batch_size=999, seed=3)
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.intercept == b.intercept
    with pytest.raises(ValueError, match="read-only"):
        a.coef[0] = 1.0


def test_shapes_dtype_and_materialize():
    stream = make_contaminated_stream(1000, 3, batch_size=400, dtype=np.float32)
    assert [X.shape for X, _ in stream] == [(400, 3), (400, 3), (200, 3)]
    X, y = stream.materialize()
    assert X.shape == (1000, 3) and y.shape == (1000,)
    assert X.dtype == y.dtype == np.float32
    np.testing.assert_array_equal(X[400:800], stream.batch(1)[0])


def test_outliers_are_gross_response_shifts_at_the_stated_rate():
    stream = make_contaminated_stream(20_000, 4, batch_size=5_000, outlier_fraction=0.05, seed=2)
    for index in range(len(stream)):
        X, y = stream.batch(index)
        mask = stream.outlier_mask(index)
        assert mask.sum() == 250  # exactly 5 % of every batch
        residual = y - X @ stream.coef - stream.intercept
        assert np.all(np.abs(residual[mask]) > 30)  # shifted by 50 to 100, noise is t(3)
        assert np.median(np.abs(residual[~mask])) < 1.5


def test_gaussian_clean_stream_fits_by_least_squares():
    stream = make_contaminated_stream(
        4000, 3, batch_size=4000, noise="gaussian", outlier_fraction=0.0, seed=4
    )
    X, y = stream.materialize()
    design = np.column_stack([X, np.ones(len(X))])
    beta = np.linalg.lstsq(design, y, rcond=None)[0]
    np.testing.assert_allclose(beta[:-1], stream.coef, atol=0.06)
    assert abs(beta[-1] - stream.intercept) < 0.06


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_samples": 0}, "positive"),
        ({"batch_size": 0}, "positive"),
        ({"noise": "cauchy"}, "noise"),
        ({"df": 0}, "df"),
        ({"outlier_fraction": 1.0}, "outlier_fraction"),
        ({"outlier_scale": -1.0}, "outlier_scale"),
        ({"dtype": np.int64}, "dtype"),
    ],
)
def test_bad_arguments_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_contaminated_stream(**{"n_samples": 10, "n_features": 2, **kwargs})


def test_batch_index_out_of_range():
    with pytest.raises(IndexError, match="out of range"):
        make_contaminated_stream(10, 2, batch_size=5).batch(2)
