"""A long stream keeps the latest batches' diagnostics in full and of the older ones only what
the summary and the inference refusal read: bounded memory, and a read of ``diagnostics_`` that
does not copy the whole past (rhuber._history)."""

import numpy as np
import pytest

from helpers import make_problem
from rhuber import RenewableHuberRegressor, _history
from rhuber.core.inference import InferenceError

rng = np.random.default_rng(7)
X0, y0, _ = make_problem(rng, 96, 3)
BATCHES = [(X0[8 * k:8 * (k + 1)], y0[8 * k:8 * (k + 1)]) for k in range(12)]


@pytest.fixture
def kept_four(monkeypatch):
    monkeypatch.setattr(_history, "KEPT", 4)


def _stream(changes=None):
    """A numpy stream over BATCHES; ``changes``: {batch index: params set before it}."""
    model = RenewableHuberRegressor(backend="numpy")
    for k, (X, y) in enumerate(BATCHES):
        if changes and k in changes:
            model.set_params(**changes[k])
        model.partial_fit(X, y)
    return model


def test_a_long_stream_keeps_the_latest_batches_and_a_bounded_list(kept_four):
    model = _stream()
    assert model.n_batches_ == 12
    full = _without_history_bound(_stream)
    assert model.diagnostics_ == full.diagnostics_[-4:]
    assert model.n_iter_ == full.n_iter_
    assert len(model._fitted.history.entries) <= 4 + 4 // 4


def test_the_summary_describes_batches_dropped_from_the_history(kept_four):
    changes = {3: {"epsilon": 2.0}, 9: {"epsilon": 3.0}}
    header = dict(_stream(changes).summary().header)
    full = dict(_without_history_bound(_stream, changes).summary().header)
    assert header["Epsilon"] == full["Epsilon"] == (
        "differs by batch: 1.345 (batches 1-3), 2 (batches 4-9), 3 (batches 10-12)")


def test_a_penalized_batch_dropped_from_the_history_still_refuses_inference(kept_four):
    with pytest.raises(InferenceError, match="L1-penalized"):
        _stream({0: {"alpha": 0.05}, 1: {"alpha": 0.0}}).summary()
    _stream({1: {"alpha": 0.0}}).summary()  # never penalized: the table


def test_an_older_snapshot_keeps_its_view_when_the_history_is_folded(kept_four):
    model = RenewableHuberRegressor(backend="numpy")
    for X, y in BATCHES[:5]:
        model.partial_fit(X, y)
    before = model._fitted
    seen = model.diagnostics_
    for X, y in BATCHES[5:]:
        model.partial_fit(X, y)
    assert before.history.latest() == seen
    assert model.diagnostics_ != seen


def test_merged_streams_keep_what_their_dropped_batches_say(kept_four):
    penalized = _stream({0: {"alpha": 0.05}, 1: {"alpha": 0.0}})
    plain = _stream()
    merged = plain.merge(penalized)
    assert merged.diagnostics_ == penalized.diagnostics_[-4:]
    with pytest.raises(InferenceError, match="L1-penalized"):
        merged.summary()


@pytest.mark.parametrize("lengths", [(3, 2), (6, 1), (2, 9), (7, 7, 7)])
def test_joined_histories_are_the_batches_one_after_the_other(kept_four, lengths):
    records = [[{"lambda": float(s), "epsilon": 1.0 + s, "tau": None, "curvature": "c",
                 "inference_matrices": False, "n": k} for k in range(n)]
               for s, n in enumerate(lengths)]
    every = [r for part in records for r in part]
    joined = _history.History.joined([_history.History.of(part) for part in records])
    assert joined.recorded == len(every)
    assert joined.latest() == every[-4:]
    assert joined.largest_lambda() == max(r["lambda"] for r in every)
    assert joined.settings_runs() == _history.History.of(every)._folded(0).settings_runs() \
        == tuple((s, n) for s, n in _runs_of(every))


def _runs_of(records):
    out = []
    for r in records:
        s = tuple(r[k] for k in _history.SETTINGS)
        if out and out[-1][0] == s:
            out[-1][1] += 1
        else:
            out.append([s, 1])
    return out


def _without_history_bound(make, *args):
    saved = _history.KEPT
    _history.KEPT = 10**9
    try:
        return make(*args)
    finally:
        _history.KEPT = saved
