"""The committed measurement corpus (python/rhuber/tuner/data/): what its data card
claims holds for the file that ships."""

from collections import defaultdict
from pathlib import Path

from rhuber.engines.plans import CHUNK_KIB, GRAM_STRATEGIES, L1_SOLVERS
from rhuber.engines.workload import Workload
from rhuber.tuner.store import SCHEMA_VERSION, Store

DATA = Path(__file__).resolve().parents[1] / "python" / "rhuber" / "tuner" / "data"


def test_the_corpus_covers_its_machines_with_every_plan_of_each():
    # The first machine's grid (>= 300 workloads) and, for every machine, every plan valid on it
    # per workload — but the one workload a collection's budget may have cut short.
    with Store(DATA / "corpus.sqlite", read_only=True) as corpus:
        assert corpus.schema_version == SCHEMA_VERSION
        fingerprints = corpus.hardware()
        measurements = list(corpus.measurements())
    assert len(fingerprints) >= 3
    plans = defaultdict(set)
    for m in measurements:
        assert m.hardware_id in fingerprints
        plans[(m.hardware_id, m.workload_id)].add(m.plan_id)
    assert sum(h == "fee15980d40e045d" for h, _ in plans) >= 300
    for hardware_id, fingerprint in fingerprints.items():
        cores = fingerprint["logical_cores"]
        threads = len({1, 2, 4, 8, 16, 32, 64} & set(range(1, cores + 1)) | {cores})
        short = 0
        for (h, workload_id), measured in plans.items():
            if h != hardware_id:
                continue
            workload = Workload.from_id(workload_id)
            solvers = len(L1_SOLVERS) if workload.penalized else 1
            native = threads * len(GRAM_STRATEGIES) * len(CHUNK_KIB) * solvers
            cuda = 1 if fingerprint.get("gpu_count") else 0  # a machine with a GPU: plan "cuda"
            assert len(measured) <= 1 + native + cuda, workload_id
            short += len(measured) < 1 + native + cuda  # numpy, every native_cpu plan, cuda
        assert short <= 1, hardware_id
    good = [m for m in measurements if m.status == "ok"]
    assert len(good) >= 0.9 * len(measurements)
    assert all(m.brick_fractions for m in good)
    # Every workload has a good measurement, but at most the one a budget cut short per machine
    # (good as stored: a stale one, which labels.best_plans leaves out, counts here).
    measured_ok = {(m.hardware_id, m.workload_id) for m in good}
    assert len(measured_ok) >= len(plans) - (len(fingerprints) - 1)


def test_the_data_card_states_the_corpus_figures():
    card = (DATA / "DATA_CARD.md").read_text()
    with Store(DATA / "corpus.sqlite", read_only=True) as corpus:
        count = len(corpus)
    assert f"{count:,} measurements" in card
