"""The tuner's measurement store and collector: rows are whole or absent, a newer or foreign
file is refused by name, and a collection resumes after a budget stop or a kill -9."""

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from types import SimpleNamespace

import pytest

from rhuber.cli._common import parse_duration
from rhuber.cli.tune import summarize
from rhuber.engines.plans import Plan
from rhuber.engines.workload import Workload
from rhuber.lab import collect as collecting
from rhuber.tuner.labels import best_plans
from rhuber.tuner.store import SCHEMA_VERSION, Measurement, Store, StoreError

HARDWARE = SimpleNamespace(hardware_id="test-hw", as_dict=lambda: {"cpu": "test"})


def measurement(plan="numpy", workload="n256/p2/float64/l1=0/icpt=1/host", seconds=0.01):
    return Measurement(hardware_id="test-hw", workload_id=workload, plan_id=plan, status="ok",
                       rows_per_run=768, runs_s=[seconds] * 3, median_s=seconds, cv=0.0,
                       rows_per_s=768 / seconds, brick_fractions={"gram": 0.5}, brick_calls=40,
                       library_version="0", measured_at="2026-11-30T00:00:00+00:00")


def test_a_measurement_round_trips_and_a_rerun_replaces_it(tmp_path):
    with Store(tmp_path / "m.sqlite") as store:
        store.add_hardware("test-hw", {"cpu": "test"})
        store.record(measurement())
        store.record(measurement(seconds=0.02))  # the same key: replaced, not duplicated
        (got,) = store.measurements()
        assert got == measurement(seconds=0.02)
        assert store.done("test-hw") == {(got.workload_id, "numpy")}
        assert store.schema_version == SCHEMA_VERSION


def test_a_bad_measurement_leaves_the_store_as_it_was(tmp_path):
    with Store(tmp_path / "m.sqlite") as store:
        store.add_hardware("test-hw", {})
        store.record(measurement())
        with pytest.raises(ValueError, match="status"):
            store.record(replace(measurement(plan="other"), status="great"))
        with pytest.raises(sqlite3.IntegrityError):  # unknown hardware: foreign key
            store.record(replace(measurement(plan="other"), hardware_id="elsewhere"))
        assert len(store) == 1


def test_a_newer_schema_is_refused_naming_both_versions(tmp_path):
    path = tmp_path / "m.sqlite"
    Store(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                   (str(SCHEMA_VERSION + 1),))
    with pytest.raises(StoreError, match=f"version {SCHEMA_VERSION + 1}, newer than this "
                                         f"library's {SCHEMA_VERSION}"):
        Store(path)


@pytest.mark.parametrize("content", [b"not a database at all" * 100, b""])
def test_a_file_that_is_not_a_store_is_refused(tmp_path, content):
    path = tmp_path / "m.sqlite"
    path.write_bytes(content)
    if content:
        with pytest.raises(StoreError, match="not a usable measurement store"):
            Store(path)
    else:  # an empty file is an empty database: it becomes a store
        Store(path).close()
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    with pytest.raises(StoreError, match="not a measurement store"):
        Store(other)


def test_outliers_beyond_three_sigma_are_rejected_and_counted():
    runs = [1.0] * 12 + [5.0]
    kept, rejected = collecting.reject_outliers(runs, 3.0)
    assert rejected == 1 and kept == [1.0] * 12
    assert collecting.reject_outliers([1.0, 1.1, 5.0], 3.0)[1] == 0  # 3 runs cannot reach 3σ


def test_durations_parse_as_the_cli_takes_them():
    assert [parse_duration(t) for t in ("90", "90s", "10m", "1.5h")] == [90, 90, 600, 5400]


def test_grid_spans_the_issue_axes_and_respects_the_batch_cap():
    full = collecting.grid()
    assert {w.rows for w in full} == set(collecting.GRID_ROWS)
    assert {w.features for w in full} == set(collecting.GRID_FEATURES)
    assert len(full) == 6 * 5 * 2 * 2
    capped = collecting.grid(max_batch_bytes=2**20)
    assert capped and all(w.rows * w.features * w.itemsize <= 2**20 for w in capped)
    tall = collecting.grid(min_rows_per_coef=4)
    assert tall and all(w.rows >= 4 * w.dim for w in tall)
    assert any(w.rows < 4 * w.dim for w in full)


# Tests check the bookkeeping, not this shared machine's timing noise: any CV is acceptable.
QUICK = collecting.Quality(warmup=0, runs=3, max_cv=1e9, max_remeasure=0, batches_per_run=2,
                           profile=False)
TINY = [Workload(rows=64, features=2), Workload(rows=96, features=3, dtype="float32")]


def numpy_only(workload, hardware):
    return [Plan("numpy")]


def test_collect_measures_what_users_run_and_a_rerun_resumes(tmp_path):
    with Store(tmp_path / "m.sqlite") as store:
        stopped = collecting.collect(store, HARDWARE, TINY, plans=numpy_only, quality=QUICK,
                                     budget_s=0.0, progress=False)
        assert stopped.measured == 0 and stopped.pending == 2
        first = collecting.collect(store, HARDWARE, TINY[:1], plans=numpy_only, quality=QUICK,
                                   progress=False)
        rest = collecting.collect(store, HARDWARE, TINY, plans=numpy_only, quality=QUICK,
                                  progress=False)
        assert (first.measured, rest.measured, rest.skipped) == (1, 1, 1)
        rows = list(store.measurements())
    assert [m.status for m in rows] == ["ok", "ok"]
    assert all(len(m.runs_s) == 3 and m.rows_per_s > 0 for m in rows)
    assert sorted(m.rows_per_run for m in rows) == [2 * 64, 2 * 96]
    assert "2 measurements on 1 machine(s), 2 workloads" in summarize(
        rows, {"test-hw": {}}, best_plans(rows))


def scripted_runs(monkeypatch, times):
    runs = iter(times)
    monkeypatch.setattr(collecting, "_timed_run", lambda *args: next(runs))


def test_a_noisy_measurement_is_remeasured_then_stored_as_unstable(monkeypatch):
    quality = collecting.Quality(warmup=1, runs=3, max_cv=0.15, max_remeasure=2, profile=False)
    scripted_runs(monkeypatch, [9.0, 1.0, 2.0, 3.0, 1.0, 2.0, 3.0, 1.0, 2.0, 3.0])
    m = collecting.measure(TINY[0], Plan("numpy"), "test-hw", quality, batches=[(0, [0] * 64)])
    assert (m.status, m.remeasured, len(m.runs_s)) == ("unstable", 2, 9)  # warm-up not kept
    scripted_runs(monkeypatch, [9.0, 1.0, 2.0, 3.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0])
    m = collecting.measure(TINY[0], Plan("numpy"), "test-hw", quality, batches=[(0, [0] * 64)])
    assert m.status == "unstable"  # the noisy first round still counts in the CV
    scripted_runs(monkeypatch, [9.0, 1.0, 1.1, 1.05])
    m = collecting.measure(TINY[0], Plan("numpy"), "test-hw", quality, batches=[(0, [0] * 64)])
    assert (m.status, m.remeasured, m.median_s, m.rows_per_s) == ("ok", 0, 1.05, 64 / 1.05)


def test_a_plan_that_fails_is_stored_as_failed_with_its_error(tmp_path, monkeypatch):
    def broken(*args):
        raise RuntimeError("no such engine here")

    monkeypatch.setattr(collecting, "_timed_run", broken)
    m = collecting.measure(TINY[0], Plan("numpy"), "test-hw", QUICK)
    assert m.status == "failed" and "no such engine here" in m.error



TWINS = [Plan("native_cpu", threads=1, chunk_kib=64), Plan("native_cpu", threads=1, chunk_kib=256)]


def test_a_workloads_plans_are_timed_in_shuffled_rounds_and_returned_in_their_order(monkeypatch):
    calls = []
    monkeypatch.setattr(collecting, "_timed_run", lambda w, plan, b: calls.append(plan.id) or 1.0)
    plans = [Plan("native_cpu", threads=1, chunk_kib=k) for k in (64, 256, 1024)]
    quality = replace(QUICK, warmup=1, runs=5)
    taken = collecting.measure_interleaved(TINY[0], plans, "test-hw", quality,
                                           batches=[(0, [0] * 64)])
    assert [m.plan_id for m in taken] == [p.id for p in plans]
    rounds = [calls[k:k + 3] for k in range(0, len(calls), 3)]
    assert len(rounds) == 6 and all(sorted(r) == sorted(p.id for p in plans) for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1  # the order is shuffled between rounds
    assert all(len(m.runs_s) == 5 for m in taken)  # the warm-up round is not kept


def test_a_drift_during_a_workload_falls_on_its_plans_alike(monkeypatch):
    """The machine runs at half speed for the second half of the workload's runs. Two plans
    that run the same computation come out level when interleaved; measured one after the
    other, the second one would take twice the first's time."""
    clock = iter(range(10**6))
    monkeypatch.setattr(collecting, "_timed_run",
                        lambda w, plan, b: 1.0 if next(clock) < 8 else 2.0)
    quality = replace(QUICK, warmup=1, runs=7)
    a, b = collecting.measure_interleaved(TINY[0], TWINS, "test-hw", quality,
                                          batches=[(0, [0] * 64)])
    assert a.median_s == b.median_s == 2.0
    clock = iter(range(10**6))
    apart = [collecting.measure(TINY[0], p, "test-hw", quality, batches=[(0, [0] * 64)])
             for p in TWINS]
    assert apart[1].median_s / apart[0].median_s == 2.0


def test_only_the_plans_still_noisy_are_timed_again(monkeypatch):
    noisy = iter([1.0, 5.0] * 10)
    monkeypatch.setattr(collecting, "_timed_run", lambda w, plan, b: next(noisy)
                        if plan.id == TWINS[1].id else 1.0)
    quality = collecting.Quality(warmup=0, runs=3, max_cv=0.15, max_remeasure=2, profile=False)
    steady, shaky = collecting.measure_interleaved(TINY[0], TWINS, "test-hw", quality,
                                                   batches=[(0, [0] * 64)])
    assert (steady.status, steady.remeasured, len(steady.runs_s)) == ("ok", 0, 3)
    assert (shaky.status, shaky.remeasured, len(shaky.runs_s)) == ("unstable", 2, 9)


def test_a_plan_that_fails_leaves_the_rounds_and_the_others_are_measured(monkeypatch):
    def run(w, plan, b):
        if plan.id == TWINS[0].id:
            raise RuntimeError("no such engine here")
        return 1.0

    monkeypatch.setattr(collecting, "_timed_run", run)
    broken, fine = collecting.measure_interleaved(TINY[0], TWINS, "test-hw",
                                                  replace(QUICK, warmup=1),
                                                  batches=[(0, [0] * 64)])
    assert broken.status == "failed" and "no such engine here" in broken.error
    assert (fine.status, len(fine.runs_s)) == ("ok", 3)


def test_a_workload_whose_warm_up_round_would_overrun_the_deadline_is_not_taken(monkeypatch):
    monkeypatch.setattr(collecting, "_timed_run", lambda w, plan, b: 0.5)
    quality = replace(QUICK, warmup=1)
    soon = time.perf_counter() + 3.0  # one plan's 3 runs fit, two plans' 6 do not
    assert collecting.measure_interleaved(TINY[0], TWINS, "test-hw", quality,
                                          batches=[(0, [0] * 64)], deadline=soon) is None
    assert collecting.measure_interleaved(TINY[0], TWINS[:1], "test-hw", quality,
                                          batches=[(0, [0] * 64)], deadline=soon) is not None


def test_collect_measures_each_workloads_plans_together_one_backend_at_a_time(tmp_path,
                                                                              monkeypatch):
    groups = []
    real = collecting.measure_interleaved

    def spy(w, plans, *args, **kwargs):
        groups.append((w.id, [p.id for p in plans]))
        return real(w, plans, *args, **kwargs)

    monkeypatch.setattr(collecting, "measure_interleaved", spy)
    monkeypatch.setattr(collecting, "_timed_run", lambda w, plan, b: 0.001)
    plans = [Plan("numpy"), *TWINS]
    with Store(tmp_path / "m.sqlite") as store:
        collecting.collect(store, HARDWARE, TINY, plans=lambda w, h: plans, quality=QUICK,
                           progress=False, shuffle_seed=None)
        assert len(list(store.measurements())) == 6
    assert groups == [(w.id, ids) for w in TINY
                      for ids in ([plans[0].id], [p.id for p in TWINS])]

KILLED_COLLECTION = textwrap.dedent("""
    import sys
    from types import SimpleNamespace
    from rhuber.lab import collect as c
    from rhuber.engines.plans import Plan
    from rhuber.tuner.store import Store
    from rhuber.engines.workload import Workload
    hw = SimpleNamespace(hardware_id="test-hw", as_dict=lambda: {})
    grid = [Workload(rows=64 + k, features=2) for k in range(400)]
    quality = c.Quality(warmup=0, runs=3, max_cv=1e9, max_remeasure=0, batches_per_run=2,
                        profile=False)
    with Store(sys.argv[1]) as store:
        c.collect(store, hw, grid, plans=lambda w, h: [Plan("numpy")], quality=quality,
                  progress=False, shuffle_seed=None)
""")


def test_a_collection_killed_with_sigkill_resumes_with_whole_rows(tmp_path):
    path = tmp_path / "m.sqlite"
    child = subprocess.Popen([sys.executable, "-c", KILLED_COLLECTION, str(path)])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if path.exists() and _count(path) >= 3:
                break
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    assert child.returncode == -signal.SIGKILL
    with Store(path) as store:
        assert store._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        before = list(store.measurements())
        assert 3 <= len(before) < 400
        assert all(m.status == "ok" and len(m.runs_s) == 3 for m in before)
        grid = [Workload(rows=64 + k, features=2) for k in range(len(before) + 2)]
        resumed = collecting.collect(store, HARDWARE, grid, plans=numpy_only, quality=QUICK,
                                     progress=False, shuffle_seed=None)
        assert (resumed.skipped, resumed.measured) == (len(before), 2)


def test_workloads_are_measured_in_a_seeded_shuffled_order(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(collecting, "measure_interleaved",
                        lambda w, plans, h, q, b: seen.append(w.rows) or [measurement(
                            workload=w.id, plan=p.id) for p in plans])
    monkeypatch.setattr(collecting, "workload_batches", lambda w, n: None)
    grid = [Workload(rows=64 + k, features=2) for k in range(12)]
    for seed in (0, 0, 1):
        with Store(tmp_path / f"m{len(seen)}.sqlite") as store:
            collecting.collect(store, HARDWARE, grid, plans=numpy_only, quality=QUICK,
                               progress=False, shuffle_seed=seed)
    first, again, other = seen[:12], seen[12:24], seen[24:]
    assert sorted(first) == [w.rows for w in grid]  # every workload, once
    assert first == again and first != other and first != sorted(first)


def _count(path):
    try:
        with sqlite3.connect(path, timeout=1) as db:
            return db.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_cli_collects_a_small_grid_then_summarizes_and_exports(tmp_path, capsys, monkeypatch):
    from rhuber.cli import main

    monkeypatch.setenv("RHUBER_CACHE_DIR", str(tmp_path / "cache"))

    store = tmp_path / "m.sqlite"
    argv = ["tune", "collect", "--store", str(store), "--rows", "64", "--features", "2,3"]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert "measured" in first and "already in" in first
    assert main(argv) == 0  # a rerun measures nothing new
    assert "rhuber tune collect: 0 measured" in capsys.readouterr().out
    assert main(["tune", "stats", "--store", str(store), "--export",
                 str(tmp_path / "m.parquet")]) == 0
    out = capsys.readouterr().out
    assert "8 workloads" in out and "best plan per workload" in out
    import pandas as pd

    frame = pd.read_parquet(tmp_path / "m.parquet")
    with Store(store) as reopened:
        assert len(frame) == len(reopened)
    assert frame["rows_per_s"].notna().any()


def test_cli_names_a_bad_store_and_prints_the_fingerprint(tmp_path, capsys, monkeypatch):
    from rhuber.cli import main

    monkeypatch.setenv("RHUBER_CACHE_DIR", str(tmp_path / "cache"))

    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"garbage" * 1000)
    assert main(["tune", "stats", "--store", str(bad)]) == 2
    assert "not a usable measurement store" in capsys.readouterr().err
    assert main(["tune", "stats", "--store", str(tmp_path / "none.sqlite")]) == 2
    assert "no such store" in capsys.readouterr().err
    assert main(["tune", "hardware", "--no-measure"]) == 0
    assert "hardware_id" in capsys.readouterr().out


def test_stats_compare_the_best_plan_with_the_default_measured_beside_it():
    default = Plan("native_cpu").resolved(2).id
    fast = Plan("native_cpu", threads=1, gram="full", chunk_kib=64).id
    rows = [replace(measurement(plan=default), rows_per_s=100.0),
            replace(measurement(plan=fast), rows_per_s=250.0),
            replace(measurement(plan="numpy/l1=lamm"), rows_per_s=10.0),
            replace(measurement(plan="numpy/l1=lamm", workload="n512/p2/float64/l1=0/icpt=1/host"),
                    rows_per_s=10.0)]
    hardware = {"test-hw": {"logical_cores": 2}}
    text = summarize(rows, hardware, best_plans(rows))
    assert "differs on 1 of 2 workloads (50%), beyond 3 % on 1" in text
    assert f"largest 2.50x (n256/p2/float64/l1=0/icpt=1/host: {fast})" in text


def test_a_store_opens_read_only_after_sealing_and_refuses_writes(tmp_path):
    path = tmp_path / "m.sqlite"
    with Store(path) as store:
        store.add_hardware("test-hw", {})
        store.record(measurement())
        store.seal()
    assert not (tmp_path / "m.sqlite-wal").exists()
    with Store(path, read_only=True) as shipped:
        assert len(shipped) == 1
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            shipped.record(measurement(plan="other"))
    with pytest.raises(StoreError, match="no such store"):
        Store(tmp_path / "absent.sqlite", read_only=True)


def test_the_shipped_corpus_is_sealed_so_that_a_read_only_install_can_read_it():
    """A store in WAL mode is read through an index file (-shm) SQLite creates beside it: in a
    directory the process cannot write (site-packages installed by root) reading it fails with
    "attempt to write a readonly database", and with it ``rhuber tune calibrate``. Any
    read-write ``Store`` of the file turns WAL on: the file shipped must be sealed again
    (``Store.seal()``) before it is committed."""
    from rhuber.tuner.local import corpus_path

    path = corpus_path()
    header = path.read_bytes()[:20]
    # Bytes 18 and 19 of an SQLite header: file format write / read versions, 2 in WAL mode.
    assert (header[18], header[19]) == (1, 1), f"{path} is in WAL mode: seal it (Store.seal())"
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    finally:
        db.close()
    assert not path.with_name(path.name + "-wal").exists()


def test_stats_read_a_sealed_store_without_reopening_it_for_writing(tmp_path, capsys):
    """`rhuber tune stats` on the shipped corpus must leave it one sealed file (no WAL mode)."""
    from rhuber.cli import main

    path = tmp_path / "m.sqlite"
    with Store(path) as store:
        store.add_hardware("test-hw", {})
        store.record(measurement())
        store.seal()
    before = path.read_bytes()
    assert main(["tune", "stats", "--store", str(path)]) == 0
    assert "1 measurements" in capsys.readouterr().out
    assert path.read_bytes() == before
    assert not (tmp_path / "m.sqlite-wal").exists()


def test_cli_collects_only_the_unpenalized_or_only_the_penalized_workloads(tmp_path, monkeypatch):
    from rhuber.cli import main
    from rhuber.cli import tune as tune_cli

    monkeypatch.setenv("RHUBER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(tune_cli, "fingerprint", lambda measure: HARDWARE)
    asked = []

    def record(store, hardware, workloads, **kwargs):
        asked.append(list(workloads))
        return collecting.CollectSummary(measured=0, skipped=0, pending=0, failed=0,
                                         unstable=0, seconds=0.0)

    monkeypatch.setattr(collecting, "collect", record)
    store = str(tmp_path / "m.sqlite")
    for flag in ("--unpenalized-only", "--penalized-only"):
        assert main(["tune", "collect", "--store", store, "--points", "512x4", flag]) == 0
    unpenalized, penalized = asked
    assert [w.id for w in unpenalized] == ["n512/p4/float64/l1=0/icpt=1/host",
                                           "n512/p4/float32/l1=0/icpt=1/host"]
    assert len(penalized) == 4 and all(w.penalized for w in penalized)
    assert main(["tune", "collect", "--store", store, "--unpenalized-only",
                 "--penalized-only"]) == 2  # one or the other
    assert len(asked) == 2
