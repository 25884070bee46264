"""`rhuber tune calibrate`: the designed subset, the budget, the local store,
the local models (atomic writes) and `--reset`. Every test writes under a temporary cache
directory (RHUBER_CACHE_DIR), never ~/.cache."""

import json
import os
from pathlib import Path

import pytest

from helpers import corpus_subset, other_machine
from rhuber.cli import main
from rhuber.engines.plans import default_plan
from rhuber.engines.workload import Workload
from rhuber.lab import calibrate
from rhuber.lab.collect import Quality
from rhuber.tuner import hardware, local, models, rules
from rhuber.tuner.store import Store

DATA = Path(__file__).resolve().parents[1] / "python" / "rhuber" / "tuner" / "data"
#: Small models, so that a test trains in about a second.
FAST_PARAMS = {"throughput": {"n_estimators": 20}, "plan": {"n_estimators": 8},
               "bottleneck": {"solver": "sag"}}
FAST_QUALITY = Quality(warmup=1, runs=3, max_remeasure=0, batches_per_run=1, profile=False)
TINY = [Workload(rows=256, features=4), Workload(rows=512, features=8, dtype="float32",
                                                 penalized=True)]


@pytest.fixture(scope="module")
def base():
    return corpus_subset()


@pytest.fixture(scope="module")
def machine(base):
    return other_machine(base[1], "calibration test CPU")


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """Every test's cache directory (the local store and models): a temporary one."""
    monkeypatch.setenv(hardware.CACHE_DIR_VARIABLE, str(tmp_path))
    return tmp_path


def test_local_paths_follow_the_cache_dir(cache):
    assert local.store_path() == cache / "measurements.sqlite"
    assert local.models_dir("abc") == cache / "models" / "abc"
    assert not local.has_models("abc") and local.remove_models("abc") == []


def test_a_cache_directory_that_cannot_be_written_stops_calibrate_before_it_measures(
        cache, monkeypatch, capsys):
    """Named with the way out, and before the fingerprint's seconds of probes."""
    blocker = cache / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(hardware.CACHE_DIR_VARIABLE, str(blocker / "rhuber"))

    def no_fingerprint():
        raise AssertionError("the fingerprint was taken before the cache directory was checked")

    monkeypatch.setattr(calibrate, "machine", no_fingerprint)
    with pytest.raises(OSError, match=r"cache directory .*a-file/rhuber cannot be written "
                                      r"\(Not a directory\): point RHUBER_CACHE_DIR"):
        calibrate.calibrate(budget_s=60.0, workloads=TINY)
    assert main(["tune", "calibrate", "--budget", "60"]) != 0
    assert "point RHUBER_CACHE_DIR at a writable directory" in capsys.readouterr().err


def test_design_spreads_over_the_corpus_grid():
    workloads = calibrate.design()
    assert len(workloads) == len(calibrate.DESIGN_SIZES) * 4 == 20
    assert {w.dtype for w in workloads} == {"float32", "float64"}
    assert {w.penalized for w in workloads} == {False, True}
    with Store(DATA / "corpus.sqlite", read_only=True) as store:
        grid = {Workload.from_id(m.workload_id) for m in store.measurements()}
    assert set(workloads) <= grid  # every design point is a corpus workload
    rows, features = {w.rows for w in workloads}, {w.features for w in workloads}
    assert min(rows) < 512 and max(rows) >= 65536 and min(features) <= 2 and max(features) >= 128


def test_tasks_put_default_and_first_choice_first_then_uncertain(machine):
    ensemble = models.Ensemble.load()
    workloads = calibrate.design()[:4]
    skip = {(workloads[0].id, "numpy/l1=lamm")}
    todo = calibrate.tasks(ensemble, machine, workloads, top=2, uncertain=1, skip=skip)
    keys = [(t.workload.id, t.plan.id) for t in todo]
    assert len(keys) == len(set(keys))  # no pair twice
    reasons = [t.reason for t in todo]
    n_first = sum(r in ("default", "top-1") for r in reasons)
    assert set(reasons[:n_first]) <= {"default", "top-1"}  # priority order
    assert reasons[n_first:] == sorted(reasons[n_first:], key=lambda r: r != "uncertain")
    for w in workloads:  # the rule's plan is the default measured (what auto runs without a model)
        assert (w.id, _ruled(w, machine, rules.DEFAULT_RULE).id) in keys
        ranked = ensemble.rank(w, calibrate.plans_for(w, machine), machine)
        assert (w.id, ranked[0].plan.id) in keys and (w.id, ranked[1].plan.id) in keys
    uncertain = [t for t in todo if t.reason == "uncertain"]
    assert 1 <= len(uncertain) <= len(workloads)
    assert not {(t.workload.id, t.plan.id) for t in uncertain} & skip
    assert all(t.predicted_s > 0 for t in todo)


def test_calibrate_measures_into_the_local_store_and_trains_local_models(cache, base, machine):
    lines: list[str] = []
    result = calibrate.calibrate(budget_s=60.0, workloads=TINY, top=1, uncertain=1,
                                 quality=FAST_QUALITY, hardware=machine, base=base,
                                 params=FAST_PARAMS, progress=lines.append)
    assert result.models_dir == local.models_dir(machine.hardware_id) == (
        cache / "models" / machine.hardware_id)
    assert local.has_models(machine.hardware_id) and result.model == "shipped"
    loaded = models.load(result.models_dir)
    meta = loaded["throughput"].metadata
    assert loaded["throughput"].n_trees == 20  # the params reached models.fit
    with Store(local.store_path()) as store:
        stored = {(m.workload_id, m.plan_id): m for m in store.measurements(machine.hardware_id)}
        assert machine.hardware_id in store.hardware()
    card = (result.models_dir / local.DATA_CARD).read_text()
    assert f"({len(stored)} from the local store" in card
    good = any(m.status == "ok" for m in stored.values())  # only good rows train throughput
    trained_on = {m.hardware_id for m in base[0] if m.status == "ok"}
    assert set(json.loads(meta["hardware_ids"])) == {*trained_on, *[machine.hardware_id] * good}
    assert result.measured and len(stored) == len(result.measured)
    shipped_rule = rules.load(models.default_models_dir())
    for w in TINY:  # the rule's plan of every workload was measured, with the light quality
        m = stored[(w.id, _ruled(w, machine, shipped_rule).id)]
        assert m.status in ("ok", "unstable") and len(m.runs_s) == 3
        assert m.rows_per_run == w.rows and m.brick_fractions is None
    assert result.training_measurements == len(base[0]) + result.local_measurements
    assert result.local_measurements == len(stored)  # another machine: nothing replaced
    assert any("(default)" in line for line in lines) and "training" in lines[-1]
    assert not list((cache / "models").glob(".*-*"))  # no temporary directory left

    # A second calibration chooses with the local model and replaces it whole.
    again = calibrate.calibrate(budget_s=60.0, workloads=TINY[:1], top=1, uncertain=0,
                                quality=FAST_QUALITY, hardware=machine, base=base,
                                params=FAST_PARAMS, progress=None)
    assert again.model == "local" and local.has_models(machine.hardware_id)



def test_a_workloads_default_and_first_choice_are_timed_together(cache, base, machine,
                                                                 monkeypatch):
    """The priority order puts each workload's default and the model's first choice side by
    side; calibrate times them in the same rounds (collect.measure_interleaved), so that the
    comparison it calibrates on is not a drift of the machine between the two."""
    groups: list[list[str]] = []
    real = calibrate.measure_interleaved

    def spy(w, plans, *args, **kwargs):
        groups.append([p.id for p in plans])
        return real(w, plans, *args, **kwargs)

    monkeypatch.setattr(calibrate, "measure_interleaved", spy)
    result = calibrate.calibrate(budget_s=60.0, workloads=TINY, top=1, uncertain=0,
                                 quality=FAST_QUALITY, hardware=machine, base=base,
                                 params=FAST_PARAMS, progress=None)
    assert sum(map(len, groups)) == len(result.measured)
    assert any(len(g) > 1 for g in groups)
    ensemble = models.Ensemble.load()
    shipped_rule = rules.load(models.default_models_dir())
    for w in TINY:
        default = _ruled(w, machine, shipped_rule).id
        top = ensemble.rank(w, calibrate.plans_for(w, machine), machine)[0].plan.id
        together = next(g for g in groups if default in g)
        assert top in together  # one call, one set of rounds (the same plan where top = default)

def test_budget_bounds_the_measuring(cache, base, machine):
    result = calibrate.calibrate(budget_s=0.001, workloads=TINY, top=1, uncertain=1,
                                 quality=FAST_QUALITY, hardware=machine, base=base,
                                 params=FAST_PARAMS, progress=None)
    assert result.measured == [] and result.skipped >= len(TINY)
    assert result.local_measurements == 0 and local.has_models(machine.hardware_id)


def test_a_failed_write_keeps_the_old_models(cache, base, machine, monkeypatch):
    files = models.train(base[0], base[1], params=FAST_PARAMS)
    target = local.write_models(files, machine.hardware_id, card="first\n")
    before = {p.name: p.read_bytes() for p in target.iterdir()}

    def half_save(models_, directory):
        (Path(directory) / models.MODEL_FILES["throughput"]).write_bytes(b"half a model")
        raise OSError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(models, "save", half_save)
        with pytest.raises(OSError, match="disk full"):
            local.write_models(files, machine.hardware_id, card="second\n")
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before
    assert not list(target.parent.glob(".*-*"))  # the temporary directory went too

    # A killed writer's leftovers (older than STALE_TEMP_S) are removed by the next write.
    stale = target.parent / f".{machine.hardware_id}.tmp-killed"
    stale.mkdir()
    (stale / "throughput.safetensors").write_bytes(b"half")
    old = stale.stat().st_mtime - 2 * local.STALE_TEMP_S
    os.utime(stale, (old, old))
    local.write_models(files, machine.hardware_id, card="third\n")
    assert not stale.exists() and (target / local.DATA_CARD).read_text() == "third\n"
    models.load(target)


def test_cli_reset_says_what_it_removed(cache, base, machine, monkeypatch, capsys):
    monkeypatch.setattr(hardware, "identify", lambda: machine)
    assert main(["tune", "calibrate", "--reset"]) == 0
    assert "no local models" in capsys.readouterr().out
    files = models.train(base[0], base[1], params=FAST_PARAMS)
    target = local.write_models(files, machine.hardware_id)
    assert main(["tune", "calibrate", "--reset"]) == 0
    out = capsys.readouterr().out
    assert f"removed {target}" in out and "shipped models apply" in out
    assert not target.exists() and not local.has_models(machine.hardware_id)


def test_cli_calibrate_prints_progress_and_a_final_line(cache, base, machine, monkeypatch,
                                                        capsys):
    monkeypatch.setattr(calibrate, "machine", lambda: machine)
    monkeypatch.setattr(calibrate, "design", lambda: TINY[:1])
    monkeypatch.setattr(local, "corpus", lambda: base)
    monkeypatch.setattr(local, "LOCAL_PARAMS", FAST_PARAMS)
    assert main(["tune", "calibrate", "--budget", "40s"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("[") and machine.hardware_id in out[0]
    final = out[-1]
    assert final.startswith("rhuber tune calibrate: local models in ")
    assert str(local.models_dir(machine.hardware_id)) in final
    assert "measurements" in final and final.endswith(" s")
    assert local.has_models(machine.hardware_id)
    assert main(["tune", "calibrate", "--budget", "0"]) == 2



def test_written_and_removed_local_models_reach_the_advisor(cache, base, machine, monkeypatch):
    """After calibration writes (or --reset removes) local models, this process's backend="auto"
    loads them at its next stream, not the models it loaded before."""
    from rhuber.tuner import advisor

    loads = []
    monkeypatch.setattr(advisor.Advisor, "load", classmethod(lambda cls: loads.append(1)))
    files = models.train(base[0], base[1], params=FAST_PARAMS)
    advisor.reset_shared()
    advisor.shared()
    advisor.shared()
    assert len(loads) == 1
    local.write_models(files, machine.hardware_id)
    advisor.shared()
    assert len(loads) == 2
    assert local.remove_models(machine.hardware_id)
    advisor.shared()
    assert len(loads) == 3
    advisor.reset_shared()


def _ruled(workload, machine, rule):
    """The default plan calibration measures: the rule's, else the engine default."""
    plan = rule.plan(workload, machine.cores)
    if plan not in calibrate.plans_for(workload, machine):
        plan = default_plan(workload)
    return plan.resolved(machine.cores)
