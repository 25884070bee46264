"""The committed measurement corpus (python/rhuber/tuner/data/): what its data card
claims holds for the file that ships."""

from collections import defaultdict
from pathlib import Path

from rhuber.engines.plans import CHUNK_KIB, GRAM_STRATEGIES, L1_SOLVERS
from rhuber.engines.workload import Workload
from rhuber.tuner.labels import best_plans
from rhuber.tuner.store import SCHEMA_VERSION, Store

DATA = Path(__file__).resolve().parents[1] / "python" / "rhuber" / "tuner" / "data"


def test_the_corpus_covers_at_least_300_workloads_with_every_plan_of_its_machine():
    with Store(DATA / "corpus.sqlite", read_only=True) as corpus:
        assert corpus.schema_version == SCHEMA_VERSION
        (hardware_id, fingerprint), = corpus.hardware().items()
        measurements = list(corpus.measurements())
    cores = fingerprint["logical_cores"]
    threads = len({1, 2, 4, 8, 16, 32, 64} & set(range(1, cores + 1)) | {cores})
    plans = defaultdict(set)
    for m in measurements:
        assert m.hardware_id == hardware_id
        plans[m.workload_id].add(m.plan_id)
    assert len(plans) >= 300
    for workload_id, measured in plans.items():
        workload = Workload.from_id(workload_id)
        solvers = len(L1_SOLVERS) if workload.penalized else 1
        native = threads * len(GRAM_STRATEGIES) * len(CHUNK_KIB) * solvers
        assert len(measured) == 1 + native, workload_id  # numpy + every native_cpu plan
    good = [m for m in measurements if m.status == "ok"]
    assert len(good) >= 0.9 * len(measurements)
    assert all(m.brick_fractions for m in good)
    assert len(best_plans(measurements)) == len(plans)


def test_the_data_card_states_the_corpus_figures():
    card = (DATA / "DATA_CARD.md").read_text()
    with Store(DATA / "corpus.sqlite", read_only=True) as corpus:
        count = len(corpus)
    assert f"{count:,} measurements" in card
