"""Recommendations: what the tuner predicts for one workload on one machine, and why (the seed's
"BrickTuner Recommendations" box, §7.1–7.2; docs/tuner.md, "Recommendations").

:func:`recommend` gathers, from an :class:`~.advisor.Advisor`:

- every valid plan (:func:`~.plans.plans_for`) with its predicted rows/s and uncertainty (the
  ensemble's tree disagreement, a std in log(rows/s), shown as ±(exp(u) − 1) · 100 %), best first,
  the default plan and the plan ``backend="auto"`` runs marked, and which plans lie outside the
  training distribution;
- the plan auto runs and why (the advisor's reason and detail);
- the bottleneck class the bottleneck model predicts for that plan, with its class probabilities
  and the roofline evidence (bytes, flops, intensity, memory- vs compute-bound time of one batch
  at this machine's measured bandwidth and GEMM peak);
- the action for that class (:data:`ACTIONS`, tailored to the workload by :func:`action_for`);
- the experiments that would reduce the uncertainty most (:meth:`Ensemble.suggest_experiments`
  over the workload and its neighbours, rows × and ÷ 2), with the ``rhuber tune collect`` command
  line that measures them.

:func:`render_box` draws it in unicode box drawing, 80 columns wide; :meth:`Recommendation.as_dict`
is the same content as JSON; :func:`panel_lines` is the few lines ``rhuber top`` shows.
"""

from __future__ import annotations

import dataclasses
import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..engines.plans import Plan, parse_plan, plans_for
from ..engines.workload import Workload
from .advisor import GAIN_MARGIN
from .features import batch_roofline
from .reasons import GAIN_BELOW_MARGIN

if TYPE_CHECKING:  # the advisor imports the models; keep this module light to import
    from .advisor import Advisor

#: The action per bottleneck class (labels.BOTTLENECKS), as documented in docs/tuner.md.
ACTIONS = {
    "memory": "passes over X are bandwidth-bound: float32 input halves the bytes read; "
              "larger batches don't help (every row is read as often)",
    "compute": "the Gram's BLAS-3 work dominates: use every core (more threads); float32 "
               "doubles the GEMM peak",
    "solve": "the d × d factorizations dominate: larger batches amortize them (one per "
             "Newton step, whatever the rows)",
    "overhead": "Python, validation and dispatch dominate: larger batches amortize the "
                "per-call cost",
    "transfer": "host ↔ device copies dominate: keep the input on the GPU, or run a CPU plan",
    "launch": "kernel launches dominate: larger batches, or a CPU plan for batches this small",
}

#: How many experiments the box suggests.
EXPERIMENTS = 3


def uncertainty_percent(u: float) -> float:
    """The ensemble's uncertainty (a std in log(rows/s)) as ± percent: (exp(u) − 1) · 100."""
    return (math.exp(u) - 1.0) * 100.0


def action_for(bottleneck: str, workload: Workload, plan: Plan, cores: int) -> str:
    """:data:`ACTIONS` for ``bottleneck``, with the parts that do not apply to ``workload`` and
    ``plan`` left out (float32 when it already is, more threads when all cores run)."""
    if bottleneck == "memory":
        head = "passes over X are bandwidth-bound: "
        parts = (["float32 input halves the bytes read"] if workload.dtype == "float64" else [])
        return head + "; ".join([*parts, "larger batches don't help (every row is read as "
                                         "often)"])
    if bottleneck == "compute":
        parts = []
        if plan.backend == "native_cpu" and (plan.threads or cores) < cores:
            parts.append(f"use every core (threads {plan.threads} → {cores})")
        if workload.dtype == "float64":
            parts.append("float32 doubles the GEMM peak")
        if plan.gram == "full":
            parts.append("the incremental Gram recomputes less")
        return ("the Gram's BLAS-3 work dominates: "
                + ("; ".join(parts) if parts else "the plan already uses every core and "
                   "float32; fewer features are the lever left"))
    if bottleneck == "solve":
        share = workload.dim / (3 * workload.rows + workload.dim)
        return (f"the d × d factorizations dominate (≈ {share:.0%} of the flops at "
                f"{workload.rows:,} rows): larger batches amortize them")
    if bottleneck == "overhead":
        return (f"Python, validation and dispatch dominate: larger batches amortize the per-call "
                f"cost ({workload.rows:,} → {workload.rows * 4:,} rows)")
    return ACTIONS.get(bottleneck, "no rule for this class")


@dataclass(frozen=True)
class PlanPrediction:
    plan: str
    rows_per_s: float | None  # None: no prediction (the machine's limits are not measured)
    uncertainty: float | None  # the ensemble's, in log(rows/s)
    default: bool  # the default plan (what auto falls back to)
    auto: bool  # what backend="auto" runs
    in_distribution: bool

    @property
    def uncertainty_pct(self) -> float | None:
        return None if self.uncertainty is None else uncertainty_percent(self.uncertainty)


@dataclass(frozen=True)
class Bottleneck:
    plan: str
    kind: str  # the class the bottleneck model predicts
    probabilities: dict[str, float]
    roofline: dict[str, Any]  # probes.roofline_bound of one batch
    bandwidth_bytes_per_s: float
    peak_flops_per_s: float  # the measured GEMM peak of the workload's dtype
    action: str

    @property
    def ridge(self) -> float:
        """Flops per byte where the machine turns from memory- to compute-bound."""
        return self.peak_flops_per_s / self.bandwidth_bytes_per_s


@dataclass(frozen=True)
class Experiment:
    workload: str
    plan: str
    uncertainty: float

    @property
    def uncertainty_pct(self) -> float:
        return uncertainty_percent(self.uncertainty)


@dataclass(frozen=True)
class Recommendation:
    workload: Workload
    hardware_id: str
    cores: int
    model_source: str  # "shipped" or "local"
    model_id: str | None
    auto_plan: str
    default_plan: str
    reason: str
    detail: str
    out_of_distribution: bool
    predicted_rows_per_s: float | None  # of auto_plan (an extrapolation when out of distribution)
    default_rows_per_s: float | None
    plans: tuple[PlanPrediction, ...]  # every valid plan, best predicted first
    bottleneck: Bottleneck | None  # None where the machine's limits are not measured
    experiments: tuple[Experiment, ...]
    commands: tuple[str, ...]  # `rhuber tune collect` lines that measure the experiments

    def as_dict(self) -> dict[str, Any]:
        """The same content as :func:`render_box`, JSON-ready."""
        w = self.workload
        b = self.bottleneck
        return {
            "workload": {"id": w.id, "rows": w.rows, "features": w.features, "dtype": w.dtype,
                         "penalized": w.penalized, "intercept": w.intercept,
                         "location": w.location},
            "hardware_id": self.hardware_id, "cores": self.cores,
            "model": {"source": self.model_source, "id": self.model_id},
            "auto": {"plan": self.auto_plan, "reason": self.reason, "detail": self.detail,
                     "out_of_distribution": self.out_of_distribution,
                     "predicted_rows_per_s": self.predicted_rows_per_s},
            "default": {"plan": self.default_plan,
                        "predicted_rows_per_s": self.default_rows_per_s},
            "plans": [{"plan": p.plan, "predicted_rows_per_s": p.rows_per_s,
                       "uncertainty_log": p.uncertainty,
                       "uncertainty_percent": p.uncertainty_pct, "default": p.default,
                       "auto": p.auto, "in_distribution": p.in_distribution}
                      for p in self.plans],
            "bottleneck": None if b is None else {
                "plan": b.plan, "class": b.kind, "probabilities": b.probabilities,
                "roofline": b.roofline, "bandwidth_bytes_per_s": b.bandwidth_bytes_per_s,
                "peak_flops_per_s": b.peak_flops_per_s, "ridge_flops_per_byte": b.ridge,
                "action": b.action},
            "experiments": [{"workload": e.workload, "plan": e.plan,
                             "uncertainty_log": e.uncertainty,
                             "uncertainty_percent": e.uncertainty_pct}
                            for e in self.experiments],
            "commands": list(self.commands),
        }


def neighbours(workload: Workload) -> list[Workload]:
    """The workload and its neighbours: rows ÷ 2 and × 2, features ÷ 2 and × 2."""
    sizes = [(workload.rows, workload.features),
             (workload.rows // 2, workload.features), (workload.rows * 2, workload.features),
             (workload.rows, workload.features // 2), (workload.rows, workload.features * 2)]
    return [dataclasses.replace(workload, rows=n, features=p)
            for n, p in dict.fromkeys(sizes) if n >= 1 and p >= 1]


def experiments_for(advisor: Advisor, workload: Workload, n: int = EXPERIMENTS
                    ) -> tuple[Experiment, ...]:
    """The ``n`` neighbouring workloads (:func:`neighbours`) whose predictions the trees
    disagree on most, each with its most uncertain plan (:meth:`Ensemble.suggest_experiments`
    over all their plans; one per workload, since collecting a workload measures every plan)."""
    candidates = neighbours(workload)
    total = sum(len(plans_for(w, advisor.hardware)) for w in candidates)
    out: dict[str, Experiment] = {}
    for w, p, u in advisor.ensemble.suggest_experiments(total, advisor.hardware, candidates):
        if w not in out and len(out) < n:
            out[w] = Experiment(w, p, u)
    return tuple(out.values())


def collect_commands(experiments: Sequence[Experiment]) -> tuple[str, ...]:
    """One ``rhuber tune collect`` line per features count, over the suggested rows."""
    by_features: dict[int, list[int]] = {}
    for e in experiments:
        w = Workload.from_id(e.workload)
        rows = by_features.setdefault(w.features, [])
        if w.rows not in rows:
            rows.append(w.rows)
    return tuple(f"rhuber tune collect --rows {','.join(map(str, sorted(rows)))} "
                 f"--features {p}" for p, rows in by_features.items())


def bottleneck_of(advisor: Advisor, workload: Workload, plan: Plan) -> Bottleneck | None:
    """The bottleneck model's class and probabilities for ``plan``, with the roofline evidence;
    None when the hardware has no measured limits (the features need them)."""
    hw = advisor.hardware
    if not hw.measured:
        return None
    model = advisor.ensemble.models["bottleneck"]
    x = advisor.ensemble.extractor.extract(workload, plan, hw)
    proba = np.asarray(model.predict_proba(x), dtype=float).reshape(-1)
    probabilities = {str(c): float(p) for c, p in zip(model.classes, proba, strict=True)}
    kind = max(probabilities, key=probabilities.__getitem__)
    roofline = batch_roofline(workload, hw)
    return Bottleneck(plan.id, kind, probabilities, roofline,
                      float(hw.memory_bandwidth_bytes_per_s),
                      float(hw.peak_flops(workload.dtype)),
                      action_for(kind, workload, plan, hw.cores))


def recommend(workload: Workload, advisor: Advisor, *, experiments: int = EXPERIMENTS
              ) -> Recommendation:
    """Everything the recommendations box shows for ``workload`` (see the module docstring)."""

    advice = advisor.advise(workload)
    hw = advisor.hardware
    ensemble = advisor.ensemble
    candidates = plans_for(workload, hw)
    for extra in (advice.plan, advice.default):  # both are members, but never drop either
        if extra.id not in {p.id for p in candidates}:
            candidates.append(extra)
    inside = {r.plan.id for r in advice.ranked}
    ranked = [(r.plan, math.exp(r.log_rows_per_s), r.uncertainty)
              for r in ensemble.rank(workload, candidates, hw)]
    rows = tuple(PlanPrediction(p.id, r, u, p.id == advice.default.id, p.id == advice.plan.id,
                                p.id in inside) for p, r, u in ranked)
    # Out of distribution the advisor predicts nothing; the box still shows the extrapolation.
    extrapolated = {p.plan: p.rows_per_s for p in rows}
    predicted = advice.predicted_rows_per_s
    default_rate = advice.default_rows_per_s
    if predicted is None:
        predicted = extrapolated.get(advice.plan.id)
    if default_rate is None:
        default_rate = extrapolated.get(advice.default.id)
    suggested = experiments_for(advisor, workload, experiments)
    return Recommendation(
        workload=workload, hardware_id=hw.hardware_id, cores=hw.cores,
        model_source=advisor.source, model_id=advice.model_id, auto_plan=advice.plan.id,
        default_plan=advice.default.id, reason=advice.reason, detail=advice.detail,
        out_of_distribution=advice.out_of_distribution,
        predicted_rows_per_s=predicted, default_rows_per_s=default_rate, plans=rows,
        bottleneck=bottleneck_of(advisor, workload, advice.plan), experiments=suggested,
        commands=collect_commands(suggested))


# --- text -------------------------------------------------------------------------------------

def rate(rows_per_s: float | None) -> str:
    """Rows per second in 3 significant digits: 987, 12.3k, 1.23M."""
    if rows_per_s is None or not math.isfinite(rows_per_s):
        return "—"
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if rows_per_s >= factor * 0.9995:
            value = rows_per_s / factor
            return f"{value:.3g}{suffix}" if value < 1000 else f"{value:.0f}{suffix}"
    return f"{rows_per_s:.0f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"±{value:.0f}%"


def _share(x: float) -> str:
    return f"{x:.0%}" if x >= 0.01 else f"{x * 100:.1g}%"


def _si(value: float, unit: str) -> str:
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _seconds(s: float) -> str:
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def describe_workload(w: Workload) -> str:
    penalty = ("no penalty" if not w.penalized else
               "L1 penalty, sparse regime" if w.sparse else "L1 penalty")
    return (f"{w.rows:,} rows × {w.features} features, {w.dtype}, {penalty}, "
            f"{'intercept' if w.intercept else 'no intercept'}"
            f"{', input on the GPU' if w.location == 'device' else ''}")


def _gain(a: float | None, b: float | None) -> str:
    if a is None or b is None or b <= 0:
        return ""
    return f" ({(a / b - 1) * 100:+.0f} %)"


def render_box(rec: Recommendation, *, width: int = 80) -> str:
    """The recommendations box, ``width`` columns wide (at least 60)."""
    width = max(60, width)
    inner = width - 4  # "│ " … " │"
    out: list[str] = []

    def rule(left: str, right: str, title: str = "") -> None:
        head = f"{left}─ {title} " if title else left
        out.append(head + "─" * (width - len(head) - 1) + right)

    def line(text: str = "", indent: int = 0) -> None:
        chunks = textwrap.wrap(text, inner, subsequent_indent=" " * indent,
                               break_long_words=True, break_on_hyphens=False) or [""]
        out.extend(f"│ {c:<{inner}} │" for c in chunks)

    w = rec.workload
    predicts = any(p.rows_per_s is not None for p in rec.plans)
    model = f"model {rec.model_id}" if rec.model_id else f"{rec.model_source} model"
    rule("╭", "╮", "BrickTuner Recommendations")
    line(f"workload  {w.id}", 10)
    line(f"          {describe_workload(w)}", 10)
    line(f"machine   {rec.hardware_id} ({rec.cores} cores), {model}", 10)
    rule("├", "┤")
    if rec.out_of_distribution:
        line(f"! OUTSIDE THE TRAINING DISTRIBUTION: {rec.detail}. "
             + ("The predictions below are extrapolations; auto keeps the default plan."
                if predicts else "Auto keeps the default plan."), 2)
        line()
    line(f"auto runs  {rec.auto_plan}", 11)
    because = rec.detail if rec.detail and not rec.out_of_distribution else ""
    line(f"           because: {rec.reason}" + (f" ({because})" if because else ""), 11)
    line(f"predicted  {rate(rec.predicted_rows_per_s)} rows/s"
         + (" (extrapolated)" if rec.out_of_distribution and predicts else "")
         + ("" if rec.auto_plan == rec.default_plan else
            f", default {rate(rec.default_rows_per_s)} rows/s"
            f"{_gain(rec.predicted_rows_per_s, rec.default_rows_per_s)}"), 11)

    rule("├", "┤", f"{len(rec.plans)} plans, "
         + ("best predicted first" if predicts else "no predictions"))
    plan_width = max([len(p.plan) for p in rec.plans] + [4])
    plan_width = min(plan_width, inner - 16)
    line(f"   {'plan':<{plan_width}} {'rows/s':>6} {'±':>5}")
    for p in rec.plans:
        mark = ("▶" if p.auto else " ") + ("*" if p.default else " ")
        name = p.plan if len(p.plan) <= plan_width else p.plan[: plan_width - 1] + "…"
        line(f"{mark} {name:<{plan_width}} {rate(p.rows_per_s):>6} {_pct(p.uncertainty_pct):>5}"
             f"{'' if p.in_distribution else ' ~'}")
    legend = "▶ what auto runs   * the default plan"
    if any(not p.in_distribution for p in rec.plans):
        legend += "   ~ outside the training distribution"
    line(legend)

    b = rec.bottleneck
    if b is None:
        rule("├", "┤", "bottleneck")
        line("unknown: this machine's bandwidth and GEMM peak are not measured")
    else:
        rule("├", "┤", f"bottleneck of {b.plan}" if len(b.plan) < inner - 20 else "bottleneck")
        others = ", ".join(f"{c} {p:.0%}" for c, p in
                           sorted(b.probabilities.items(), key=lambda kv: -kv[1]))
        line(f"class      {b.kind} ({others})", 11)
        r = b.roofline
        line(f"roofline   one batch reads {_si(r['bytes'], 'B')}, Gram {_si(r['flops'], 'FLOP')}"
             f": {r['arithmetic_intensity']:.3g} flop/B against a ridge of {b.ridge:.3g} "
             "flop/B", 11)
        line(f"           memory {_seconds(r['memory_s'])} at {_si(b.bandwidth_bytes_per_s, 'B/s')}"
             f" vs compute {_seconds(r['compute_s'])} at {_si(b.peak_flops_per_s, 'FLOP/s')}"
             f" → {r['bound_kind']}-bound", 11)
        ceiling = w.rows / r["bound_s"] if r["bound_s"] > 0 else math.inf
        predicted = next((p.rows_per_s for p in rec.plans if p.plan == b.plan), None)
        line(f"ceiling    {rate(ceiling)} rows/s at the roofline"
             + (f"; predicted {rate(predicted)}, {_share(predicted / ceiling)} of it"
                if predicted is not None and math.isfinite(ceiling) else ""), 11)
        line(f"action     {b.action}", 11)

    rule("├", "┤", "experiments that would reduce the uncertainty")
    if not rec.experiments:
        line("none" if predicts else "none until this machine is measured: "
             "`rhuber tune hardware`")
    for e in rec.experiments:
        line(f"{_pct(e.uncertainty_pct):>5}  {e.workload}  (most uncertain: {e.plan})", 7)
    for command in rec.commands:
        line(f"$ {command}", 4)
    if rec.experiments:
        line("(collect measures every plan at those sizes: both dtypes, penalty off and on, "
             "intercept on)", 1)
    rule("╰", "╯")
    return "\n".join(out)


@dataclass(frozen=True)
class TopPanel:
    """What ``rhuber top``'s recommendations panel shows, computed once per stream."""

    recommendation: Recommendation
    running: str | None  # the plan running, resolved
    running_prediction: PlanPrediction | None
    running_bottleneck: Bottleneck | None


def top_panel(advisor: Advisor, workload: Workload, running: Plan | str | None) -> TopPanel:
    """The recommendation for ``workload`` and the model's view of the ``running`` plan."""

    rec = recommend(workload, advisor)
    if running is None:
        return TopPanel(rec, None, None, None)
    plan = parse_plan(running).resolved(advisor.hardware.cores)
    prediction = next((p for p in rec.plans if p.plan == plan.id), None)
    if prediction is None and advisor.hardware.measured:
        r = advisor.ensemble.rank(workload, [plan], advisor.hardware)[0]
        prediction = PlanPrediction(plan.id, math.exp(r.log_rows_per_s), r.uncertainty,
                                    plan.id == rec.default_plan, plan.id == rec.auto_plan, False)
    return TopPanel(rec, plan.id, prediction, bottleneck_of(advisor, workload, plan))


def panel_lines(panel: TopPanel, measured_rows_per_s: float | None, *, width: int = 100
                ) -> list[str]:
    """The few lines of ``rhuber top``'s recommendations panel, wrapped to ``width``: the
    workload and model, the plan running (measured and predicted rows/s), the advisor's plan
    (predicted, and why), the top suggestion."""

    rec = panel.recommendation
    running = panel.running_prediction
    auto = next((p for p in rec.plans if p.auto), None)
    model = rec.model_id or f"{rec.model_source} model"
    entries = [f"workload {rec.workload.id} ({model})"]
    text = f"running  {panel.running or 'unknown'}: measured {rate(measured_rows_per_s)} rows/s"
    if running is not None and running.rows_per_s is not None:
        text += (f", predicted {rate(running.rows_per_s)} {_pct(running.uncertainty_pct)}"
                 f"{'' if running.in_distribution else ' (extrapolated)'}")
    entries.append(text)
    text = (f"advisor  {rec.auto_plan}: predicted {rate(rec.predicted_rows_per_s)} rows/s"
            + (f" {_pct(auto.uncertainty_pct)}" if auto and auto.uncertainty is not None else "")
            + f"; {rec.reason}")
    if rec.out_of_distribution or rec.reason == GAIN_BELOW_MARGIN:
        text += f" ({rec.detail})" if rec.detail else ""
    entries.append(text)
    b = panel.running_bottleneck or rec.bottleneck
    if (running is not None and running.rows_per_s is not None
            and panel.running != rec.auto_plan
            and rec.predicted_rows_per_s is not None and not rec.out_of_distribution
            and rec.predicted_rows_per_s >= running.rows_per_s * (1 + GAIN_MARGIN)):
        suggestion = (f"plan={rec.auto_plan!r}, predicted "
                      f"{(rec.predicted_rows_per_s / running.rows_per_s - 1) * 100:+.0f} % "
                      "over the running plan")
    elif b is not None:
        suggestion = f"{b.kind}-bound ({b.probabilities[b.kind]:.0%}): {b.action}"
    else:
        suggestion = "none (this machine's bandwidth and peak are not measured)"
    entries.append(f"suggest  {suggestion}")
    out: list[str] = []
    for entry in entries:
        out += textwrap.wrap(entry, max(40, width - 2), subsequent_indent=" " * 9,
                             break_on_hyphens=False) or [""]
    return out
