"""The seed's 100-point falsification checklist (F001–F100) as checks against this product
(``rhuber tune falsify``; docs/tuner.md, "Falsification scorecard").

The seed (shared/seeds/ml-tuner-compute-bricks.txt §9) was written for an LLM-inference tuner;
shared/spec/bricks-and-tuner.md maps it here: tokens/s are rows/s, kernels are plans, model size
is the number of features, quantization is the dtype, the GPU is the machine. Each item is either

- a check: a small function of a :class:`Context` (the measurement store, the model files, the
  feature extractor, the plans, the native reader, the advisor) that computes a figure and
  compares it with a threshold, returning an :class:`Outcome`; or
- not applicable, with the reason (GGUF, attention, WASM: things with no counterpart here).

No check is a constant: each reads something that a broken store, model or extractor changes.
A check that raises fails, with the exception as its reason.

Checks that need retraining (cross-validation, ablations, bootstraps) fit a smaller gradient
boosting model, :data:`PROXY_GBT` (100 trees of depth 4, under a second on the corpus; on the
held-out workloads it scores as the shipped 600 × 6 model does, R² 0.987 against 0.984), so that
the whole scorecard runs in well under a minute on two cores. The shipped models themselves are
judged wherever no retraining is needed.

The modules: :mod:`.registry` (the item and result types, the registry, the comparisons,
running), :mod:`.context` (the :class:`Context` and the figures checks share), :mod:`.report`
(the scorecard and the JSON), and one module per category, each registering its twenty items:
:mod:`.accuracy` (F001–F020), :mod:`.feature_checks` (F021–F040), :mod:`.data_quality` (F041–F060),
:mod:`.integration` (F061–F080) and :mod:`.robustness` (F081–F100).
"""

from __future__ import annotations

from .context import (
    CORPUS,
    EXPERIMENTS,
    PROXY_GBT,
    SEED,
    Context,
    corpus_workloads,
    fit_proxy,
    held_workloads,
    mape,
    masked,
    model_outputs,
    near_best_accuracy,
    r2,
    ranked_first,
    workload_series,
)
from .registry import (
    CATEGORIES,
    FAIL,
    NA,
    PASS,
    REGISTRY,
    Item,
    Outcome,
    Result,
    check,
    compare,
    count,
    holds,
    ids,
    not_applicable,
    pct,
    run,
    run_item,
)
from .report import scorecard, summary, to_json

# The category modules register their items as they are imported: in this order, F001 … F100.
# isort: off
from . import accuracy, feature_checks, data_quality, integration, robustness
# isort: on

#: The modules of the five categories, in the order of :data:`CATEGORIES`.
CHECK_MODULES = (accuracy, feature_checks, data_quality, integration, robustness)

__all__ = [
    "CATEGORIES", "CHECK_MODULES", "CORPUS", "EXPERIMENTS", "FAIL", "NA", "PASS", "PROXY_GBT",
    "REGISTRY", "SEED", "Context", "Item", "Outcome", "Result", "check", "compare",
    "corpus_workloads", "count", "fit_proxy", "held_workloads", "holds", "ids", "mape", "masked",
    "model_outputs", "near_best_accuracy", "not_applicable", "pct", "r2", "ranked_first", "run",
    "run_item", "scorecard", "summary", "to_json", "workload_series"]
