"""`rhuber tune falsify`: the registry covers exactly F001–F100, the scorecard adds up,
and checks fail when what they read is broken (a tampered model, a bad measurement)."""

import dataclasses
import json
import shutil

import pytest

from rhuber.cli import main
from rhuber.lab import falsify
from rhuber.lab.falsify import FAIL, NA, PASS, REGISTRY, Context, Result
from rhuber.tuner import model_files, models
from rhuber.tuner.store import Store

CORPUS = falsify.CORPUS


@pytest.fixture(scope="module")
def corpus():
    with Store(CORPUS, read_only=True) as store:
        return list(store.measurements()), store.hardware()


@pytest.fixture(scope="module")
def shipped():
    return Context(CORPUS)


def make_store(path, corpus, *, workloads=4, extra=()):
    """A store with the corpus's machine and every measurement of a few of its workloads."""
    measurements, fingerprints = corpus
    chosen = sorted({m.workload_id for m in measurements})[:: 50][:workloads]
    with Store(path) as store:
        for hid, fingerprint in fingerprints.items():
            store.add_hardware(hid, fingerprint)
        for m in measurements:
            if m.workload_id in chosen:
                store.record(m)
        for m in extra:
            store.record(m)
    return path


def one(ctx, item_id):
    (result,) = falsify.run(ctx, [item_id])
    return result


# ---------------------------------------------------------------------------- the registry


def test_the_registry_covers_exactly_f001_to_f100():
    assert falsify.ids() == [f"F{i:03d}" for i in range(1, 101)]
    for item in REGISTRY.values():
        assert item.title
        assert (item.run is None) != (item.not_applicable is None), item.id
    by_category = {}
    for item in REGISTRY.values():
        by_category.setdefault(item.category, []).append(item.id)
    assert list(by_category) == list(falsify.CATEGORIES)
    assert all(len(v) == 20 for v in by_category.values())


def test_not_applicable_items_say_why_and_are_few():
    na = [item for item in REGISTRY.values() if item.not_applicable is not None]
    assert 0 < len(na) <= 10
    assert all(len(item.not_applicable) > 40 for item in na)


def test_the_scorecard_counts_add_up():
    def result(i, status):
        return Result(f"F{i:03d}", falsify.CATEGORIES[(i - 1) // 20], f"item {i}", status,
                      None if status == NA else "1", None if status == NA else "< 2",
                      "why" if status == NA else "")

    results = [result(1, PASS), result(2, FAIL), result(21, NA), result(41, PASS)]
    assert falsify.summary(results) == {"passed": 2, "failed": 1, "not_applicable": 1,
                                        "applicable": 3, "total": 4}
    text = falsify.scorecard(results, 1.25)
    assert text.rstrip().endswith("2/3 passed (1 not applicable, 4 items; 1.2 s)")
    lines = text.splitlines()
    for r in results:
        assert sum(line.startswith(r.id) for line in lines) == 1
    assert "F002 FAIL" in text and "F021 N/A" in text and "## feature engineering" in text


def test_an_unknown_id_is_refused(shipped):
    with pytest.raises(ValueError, match="F101"):
        falsify.run(shipped, ["F101"])


# ---------------------------------------------------------------------------- real checks


def test_cheap_checks_pass_on_the_shipped_data(shipped):
    results = falsify.run(shipped, ["F011", "F029", "F040", "F050", "F079", "F096"])
    assert [r.status for r in results] == [PASS, PASS, PASS, NA, PASS, PASS]
    assert results[2].value == 47


def test_a_bad_measurement_fails_the_data_quality_checks(tmp_path, corpus):
    good = next(m for m in corpus[0] if m.status == "ok")
    clean = Context(make_store(tmp_path / "clean.sqlite", corpus))
    assert [one(clean, i).status for i in ("F042", "F043", "F044", "F053")] == [PASS] * 4

    noisy = dataclasses.replace(good, workload_id="n300/p2/float64/l1=0/icpt=1/host",
                                runs_s=[0.01, 0.02, 0.03], median_s=0.02, cv=0.1)
    short = dataclasses.replace(good, workload_id="n301/p2/float64/l1=0/icpt=1/host",
                                runs_s=good.runs_s[:2])
    undated = dataclasses.replace(good, workload_id="n302/p2/float64/l1=0/icpt=1/host",
                                  measured_at="yesterday")
    extra = [noisy, short, undated]
    broken = Context(make_store(tmp_path / "broken.sqlite", corpus, extra=extra))
    f043 = one(broken, "F043")
    assert f043.status == FAIL and f043.value == pytest.approx(0.5)
    assert "stored CVs differ from their runs" in f043.reason
    assert one(broken, "F042").status == FAIL
    assert one(broken, "F053").status == FAIL


def test_a_configuration_stored_twice_is_a_duplicate(tmp_path, corpus):
    default = next(m for m in corpus[0] if m.status == "ok"
                   and m.plan_id == "native_cpu/t2/gram=incremental/chunk=256k/l1=lamm")
    again = dataclasses.replace(default, plan_id="native_cpu/t*/gram=*/chunk=*/l1=lamm")
    ctx = Context(make_store(tmp_path / "dup.sqlite", corpus, extra=[default, again]))
    result = one(ctx, "F044")
    assert result.status == FAIL and result.value == 1


def test_one_machine_fails_the_diversity_check_and_the_cli_exits_1(tmp_path, corpus, capsys):
    measurements, fingerprints = corpus
    first = min(fingerprints)
    one_machine = ([m for m in measurements if m.hardware_id == first], fingerprints)
    store = make_store(tmp_path / "one.sqlite", one_machine)
    assert main(["tune", "falsify", "--store", str(store), "--only", "F047,F050"]) == 1
    out = capsys.readouterr().out
    assert "F047 FAIL" in out and "F050 N/A" in out
    assert "0/1 passed (1 not applicable, 2 items" in out


def test_a_tampered_model_fails_accuracy_and_leakage(tmp_path, shipped):
    directory = tmp_path / "models"
    shutil.copytree(models.default_models_dir(), directory)
    m = shipped.models["throughput"]
    tampered = dataclasses.replace(
        m, tensors={**m.tensors, "init": m.tensors["init"] + 1.5},
        metadata={**m.metadata, "samples": "10"}, native=None)
    model_files.write(tampered, directory / models.MODEL_FILES["throughput"])
    ctx = Context(CORPUS, directory)
    f001 = one(ctx, "F001")
    assert f001.status == FAIL and f001.value > 1.0  # predictions ~4.5x too fast
    assert one(shipped, "F001").value < f001.value
    f059 = one(ctx, "F059")
    assert f059.status == FAIL and "throughput 10 vs" in f059.measured


def test_a_corrupted_model_file_fails_the_checks_that_read_it(tmp_path):
    directory = tmp_path / "models"
    shutil.copytree(models.default_models_dir(), directory)
    path = directory / models.MODEL_FILES["bottleneck"]
    data = bytearray(path.read_bytes())
    data[20:40] = b"\xff" * 20  # inside the JSON header
    path.write_bytes(bytes(data))
    result = one(Context(CORPUS, directory), "F040")
    assert result.status == FAIL and result.measured == "error"
    assert "ValueError" in result.reason


def test_out_of_distribution_workloads_are_flagged(shipped):
    result = one(shipped, "F086")
    assert result.status == PASS, result
    assert result.measured.startswith("4/4 outside flagged")


# ---------------------------------------------------------------------------- the command


def test_json_output_parses(capsys):
    assert main(["tune", "falsify", "--only", "F040,f50", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == ["F040", "F050"]
    assert {"id", "category", "title", "status", "measured", "threshold", "reason"} <= set(
        rows[0])
    assert [r["status"] for r in rows] == ["pass", "na"]
    assert rows[0]["threshold"] == "<= 50 features" and rows[1]["measured"] is None


@pytest.mark.parametrize("only", ["F101", "F0", "G001", ","])
def test_bad_ids_are_a_usage_error(only, capsys):
    assert main(["tune", "falsify", "--only", only]) == 2
    assert "F001" in capsys.readouterr().err
