"""Reading sweep documents: comparison of two runs, the promotion gate, tables and plots."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: RFC 0001: native must be at least as fast as its paired reference (gate); the calibration
#: advisor asks for a 10 % margin.
GATE_MARGIN = 0.0
ADVISOR_MARGIN = 0.10
ENGINE_ORDER = ("numpy", "native_cpu", "native_cpu_prox_newton", "cuda", "sgd_huber",
                "huber_regressor", "native_cpu_tau", "native_cpu_sched", "seed_native_cpu",
                "seed_numpy")
ENGINE_LABEL = {
    "numpy": "reference (NumPy)",
    "native_cpu": "native_cpu",
    "native_cpu_prox_newton": "native_cpu, prox_newton",
    "cuda": "cuda",
    "sgd_huber": "SGDRegressor(huber)",
    "huber_regressor": "HuberRegressor (all data)",
    "native_cpu_tau": "native_cpu, seed config, tau fixed",
    "native_cpu_sched": "native_cpu, seed config, MAD scale",
    "seed_native_cpu": "seed native_cpu (renewable-huber)",
    "seed_numpy": "seed NumPy (renewable-huber)",
}
#: Our estimator rows in the seed system's configuration (rhbench.seed): compared with the
#: seed, never with our reference (their λ schedule is not the reference rows' alpha).
MATCHED = ("native_cpu_tau", "native_cpu_sched")
SHAPE_ORDER = ("latency", "reference", "wide", "streaming", "custom")
#: The project's engines: timed on the engine path and, since schema v2 revision 1, also
#: through RenewableHuberRegressor on the estimator path. Peers have the estimator path only.
OUR_ENGINES = ("numpy", "native_cpu", "native_cpu_prox_newton", "cuda")


def record_path(record: dict[str, Any]) -> str:
    """The record's path; a revision-0 document has none: its engines timed ``update`` (the
    engine path) and its peers their public ``partial_fit`` or ``fit`` (the estimator path)."""
    return record.get("path") or ("engine" if record["engine"] in OUR_ENGINES else "estimator")


def _default_path(engine: str) -> str:
    return "engine" if engine in OUR_ENGINES else "estimator"


def _penalty(record: dict[str, Any]) -> str:
    alpha = record["penalty"]["alpha"]
    return f"L1 α={alpha:g}" if alpha else "none"


def record_key(record: dict[str, Any]) -> tuple:
    """What makes two records comparable: subject, path, contract, workload and input."""
    return (record["contract"], record["engine"], record_path(record), record["residency"],
            record["shape_class"], record["n_samples"], record["n_features"],
            record["batch_size"], record["penalty"]["alpha"], record["dtype"])


def _ok(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["status"] == "ok"]


@dataclass(frozen=True)
class Comparison:
    """One record present in both runs."""

    key: tuple
    old_s: float
    new_s: float
    same_input: bool

    @property
    def ratio(self) -> float:
        """New median time over old: above 1 is slower."""
        return self.new_s / self.old_s

    def is_regression(self, threshold: float) -> bool:
        return self.ratio > 1.0 + threshold


def compare(old: dict[str, Any], new: dict[str, Any]) -> tuple[list[Comparison], list[str]]:
    """Pair the ok records of two documents by :func:`record_key`.

    Returns
    -------
    (list of Comparison, list of str)
        The pairs, and warnings (different hardware, records only in one run).
    """
    warnings = []
    if old.get("hardware") != new.get("hardware"):
        warnings.append(f"different hardware: {old.get('hardware')!r} vs "
                        f"{new.get('hardware')!r}; RFC 0001 does not merge such results, "
                        "ratios are indicative only")
    old_threads = old.get("profile", {}).get("threads")
    new_threads = new.get("profile", {}).get("threads")
    if old_threads != new_threads:
        warnings.append(f"different thread limits: {old_threads} vs {new_threads} "
                        "(None: every library at its default)")
    old_by_key = {record_key(r): r for r in _ok(old["records"])}
    new_by_key = {record_key(r): r for r in _ok(new["records"])}
    pairs = [
        Comparison(key, old_by_key[key]["median_s"], new_by_key[key]["median_s"],
                   old_by_key[key]["input_sha256"] == new_by_key[key]["input_sha256"])
        for key in old_by_key
        if key in new_by_key
    ]
    only_old = len(set(old_by_key) - set(new_by_key))
    only_new = len(set(new_by_key) - set(old_by_key))
    if only_old or only_new:
        warnings.append(f"{only_old} record(s) only in the old run, {only_new} only in the new")
    return pairs, warnings


def format_comparison(pairs: list[Comparison], warnings: list[str], threshold: float) -> str:
    """A plain-text table of the ratios; regressions are flagged with ``REGRESSION``."""
    lines = [f"warning: {w}" for w in warnings]
    lines.append(f"{'contract':8} {'engine':22} {'path':9} {'shape':10} {'penalty':10} "
                 f"{'dtype':8} {'old s':>10} {'new s':>10} {'new/old':>8}")
    for c in sorted(pairs, key=lambda c: tuple(map(str, c.key))):
        contract, engine, path, _res, shape, _n, _p, _b, alpha, dtype = c.key
        flag = "  REGRESSION" if c.is_regression(threshold) else ""
        if not c.same_input:
            flag += "  (different input)"
        penalty = f"l1={alpha:g}" if alpha else "none"
        lines.append(f"{contract:8} {engine:22} {path:9} {shape:10} {penalty:10} {dtype:8} "
                     f"{c.old_s:10.4g} {c.new_s:10.4g} {c.ratio:8.3f}{flag}")
    n_reg = sum(c.is_regression(threshold) for c in pairs)
    lines.append(f"{len(pairs)} compared, {n_reg} regression(s) over {threshold:.0%}")
    return "\n".join(lines)


@dataclass(frozen=True)
class GatePair:
    """A native record and its paired reference under the identical contract and path."""

    shape: str
    contract: str
    penalty: str
    dtype: str
    engine: str
    residency: str
    native_s: float
    reference_s: float
    path: str = "engine"

    @property
    def speedup(self) -> float:
        """Reference time over native time: above 1 is native faster."""
        return self.reference_s / self.native_s

    @property
    def passes_gate(self) -> bool:
        return self.native_s <= self.reference_s * (1.0 - GATE_MARGIN)

    @property
    def passes_advisor(self) -> bool:
        return self.native_s <= self.reference_s * (1.0 - ADVISOR_MARGIN)


def gate(document: dict[str, Any]) -> tuple[list[GatePair], dict[tuple[str, str], dict]]:
    """Apply RFC 0001's promotion rule to every native engine and shape.

    A native record is paired with the reference record of the same contract, path, shape,
    sizes, penalty, dtype and input fingerprint (the CUDA engine with a reference of the same
    residency): engine rows with engine rows, estimator rows (RenewableHuberRegressor with
    ``backend="native_cpu"`` against ``backend="numpy"``) with estimator rows. A native engine
    is promoted for a shape only if it is at least as fast as its reference in every pair of
    that shape, on both paths; the advisor asks for a 10 % margin in every pair.

    Returns
    -------
    (list of GatePair, dict)
        The pairs, and per (engine, shape) ``{"promoted", "advised", "pairs", "worst_speedup"}``.
    """
    ok = _ok(document["records"])
    references = {
        (r["contract"], record_path(r), r["residency"], r["shape_class"], r["n_samples"],
         r["n_features"], r["batch_size"], r["penalty"]["alpha"], r["dtype"],
         r["input_sha256"]): r
        for r in ok if r["engine_kind"] == "reference"
    }
    pairs = []
    for r in ok:
        if r["engine_kind"] != "native" or r["engine"] in MATCHED:
            continue
        residency = "host" if r["engine"].startswith("native_cpu") else r["residency"]
        ref = references.get((r["contract"], record_path(r), residency, r["shape_class"],
                              r["n_samples"], r["n_features"], r["batch_size"],
                              r["penalty"]["alpha"], r["dtype"], r["input_sha256"]))
        if ref is None:
            continue
        pairs.append(GatePair(r["shape_class"], r["contract"], _penalty(r), r["dtype"],
                              r["engine"], r["residency"], r["median_s"], ref["median_s"],
                              record_path(r)))
    verdicts: dict[tuple[str, str], dict] = {}
    grouped: dict[tuple[str, str], list[GatePair]] = defaultdict(list)
    for p in pairs:
        grouped[(p.engine, p.shape)].append(p)
    for key, group in grouped.items():
        verdicts[key] = {
            "promoted": all(p.passes_gate for p in group),
            "advised": all(p.passes_advisor for p in group),
            "pairs": len(group),
            "worst_speedup": min(p.speedup for p in group),
        }
    return pairs, verdicts


def format_gate(pairs: list[GatePair], verdicts: dict[tuple[str, str], dict]) -> str:
    """A plain-text report of every pair and the verdict per (engine, shape)."""
    lines = [f"{'engine':22} {'path':9} {'shape':10} {'contract':8} {'penalty':10} "
             f"{'dtype':8} {'ref s':>10} {'native s':>10} {'speedup':>8}  gate  advisor(10%)"]
    for p in sorted(pairs, key=lambda p: (p.engine, SHAPE_ORDER.index(p.shape)
                                          if p.shape in SHAPE_ORDER else 99, p.path,
                                          p.contract, p.penalty, p.dtype)):
        lines.append(f"{p.engine:22} {p.path:9} {p.shape:10} {p.contract:8} {p.penalty:10} "
                     f"{p.dtype:8} {p.reference_s:10.4g} {p.native_s:10.4g} {p.speedup:8.2f}  "
                     f"{'pass' if p.passes_gate else 'FAIL':4}  "
                     f"{'pass' if p.passes_advisor else 'FAIL'}")
    lines.append("")
    for (engine, shape), v in sorted(verdicts.items()):
        verdict = "promoted" if v["promoted"] else "NOT promoted"
        advice = "advisor agrees" if v["advised"] else "advisor: margin under 10 %"
        lines.append(f"{engine} on {shape}: {verdict} ({v['pairs']} pairs, worst speedup "
                     f"{v['worst_speedup']:.2f}x; {advice})")
    if not verdicts:
        lines.append("no native record has a paired reference: nothing to gate")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- tables


def _fmt_s(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x * 1e3:.3g} ms" if x < 1 else f"{x:.3g} s"


def _fmt(x: float | None, spec: str = ".3g") -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def _index(document: dict[str, Any]) -> dict[tuple, dict[str, Any]]:
    return {(r["contract"], r["engine"], record_path(r), r["residency"], r["shape_class"],
             r["penalty"]["alpha"], r["dtype"]): r for r in document["records"]}


def _get(index: dict, contract: str, engine: str, shape: str, alpha: float, dtype: str,
         path: str | None = None, residency: str = "host") -> dict[str, Any] | None:
    """The record of a subject and workload; ``path`` defaults to the engine path for our
    engines and the estimator path for peers."""
    return index.get((contract, engine, path or _default_path(engine), residency, shape, alpha,
                      dtype))


def _ratio(numerator: dict[str, Any] | None, denominator: dict[str, Any] | None) -> str:
    """Median of ``numerator`` over median of ``denominator``, as "1.5×" (— unless both ok)."""
    if not (numerator and denominator and numerator["status"] == denominator["status"] == "ok"):
        return "—"
    return f"{numerator['median_s'] / denominator['median_s']:.3g}×"


def _workloads(document: dict[str, Any]) -> list[tuple[dict[str, Any], float, str]]:
    profile = document["profile"]
    dtypes = sorted(profile["dtypes"], key=lambda d: d != "float64")
    return [(shape, alpha, dtype) for shape in profile["shapes"] for alpha in profile["alphas"]
            for dtype in dtypes]


def _cell(index: dict, contract: str, engine: str, shape: str, alpha: float, dtype: str,
          path: str | None = None) -> str:
    r = _get(index, contract, engine, shape, alpha, dtype, path)
    if r is None:
        return "—"
    if r["status"] != "ok":
        return "skipped" if r["status"] == "skipped" else "failed"
    return f"{_fmt_s(r['median_s'])} (min {_fmt_s(r['min_s'])})"


def _estimator_tables(document: dict[str, Any], idx: dict) -> list[str]:
    """The estimator path: what users run, ours and SGDRegressor's partial_fit side by side."""
    if not any(record_path(r) == "estimator" and r["engine"] in OUR_ENGINES
               for r in document["records"]):
        return []
    ours = ["numpy", "native_cpu", "native_cpu_prox_newton"]
    out: list[str] = []
    for contract, title in (("steady", "Steady state"), ("cold", "Cold")):
        out += [f"### {title}, estimator path: median time of one pass of `partial_fit` "
                "(min in brackets)", "",
                "`RenewableHuberRegressor(backend=...).partial_fit(X, y)` and "
                "`SGDRegressor(loss=\"huber\").partial_fit(X, y)` per batch, on the same "
                "C-contiguous ndarrays. native / reference: the NumPy backend's time over "
                "native_cpu's; native / SGD: SGDRegressor's time over native_cpu's (above 1: "
                "native faster); estimator / engine: native_cpu's estimator time over its "
                "engine time (the estimator's overhead).", "",
                "| shape | rows × features / batch | penalty | dtype | "
                + " | ".join(f"{ENGINE_LABEL[e]}, estimator" for e in ours)
                + f" | {ENGINE_LABEL['sgd_huber']} | native / reference | native / SGD"
                " | prox_newton / SGD | native estimator / engine |",
                "|" + "---|" * (len(ours) + 9)]
        for shape, alpha, dtype in _workloads(document):
            name = shape["name"]
            cells = [_cell(idx, contract, e, name, alpha, dtype, "estimator") for e in ours]
            ref = _get(idx, contract, "numpy", name, alpha, dtype, "estimator")
            nat = _get(idx, contract, "native_cpu", name, alpha, dtype, "estimator")
            variant = _get(idx, contract, "native_cpu_prox_newton", name, alpha, dtype,
                           "estimator")
            sgd = _get(idx, contract, "sgd_huber", name, alpha, dtype)
            engine = _get(idx, contract, "native_cpu", name, alpha, dtype, "engine")
            out.append(f"| {name} | {shape['n_samples']:,} × {shape['n_features']} / "
                       f"{shape['batch_size']:,} | {_penalty({'penalty': {'alpha': alpha}})} | "
                       f"{dtype} | " + " | ".join(cells) + " | "
                       + _cell(idx, contract, "sgd_huber", name, alpha, dtype)
                       + f" | {_ratio(ref, nat)} | {_ratio(sgd, nat)} | {_ratio(sgd, variant)}"
                       f" | {_ratio(nat, engine)} |")
        out.append("")
    return out


def markdown_tables(document: dict[str, Any]) -> str:
    """Markdown tables of a sweep: limits, steady and cold times, speedups, errors, roofline."""
    idx = _index(document)
    lim = document["machine_limits"]
    out = ["### Machine limits (measured in the run)", "",
           "| probe | threads | result |", "|---|---|---|"]
    for b in lim["bandwidth_probes"]:
        out.append(f"| STREAM triad, {b['array_bytes'] / 2**20:.0f} MiB arrays | "
                   f"{b['threads']} | {b['bandwidth_bytes_per_s'] / 1e9:.2f} GB/s |")
    for g in lim["gemm_probes"]:
        out.append(f"| GEMM {g['n']}×{g['n']} {g['dtype']} | {g['threads']} | "
                   f"{g['flops_per_s'] / 1e9:.1f} GFLOP/s |")
    out += ["", "The roofline uses the best all-core figures: "
            f"{lim['memory_bandwidth_bytes_per_s'] / 1e9:.2f} GB/s, "
            f"{lim['peak_flops_per_s']['float64'] / 1e9:.1f} GFLOP/s float64, "
            f"{lim['peak_flops_per_s']['float32'] / 1e9:.1f} GFLOP/s float32.", ""]

    streamed = ["numpy", "native_cpu", "native_cpu_prox_newton", "sgd_huber"]
    for contract, title in (("steady", "Steady state"), ("cold", "Cold")):
        out += [f"### {title}, engine path: median time of one pass over the stream "
                "(min in brackets)", "",
                "Our engines: `engine.update` on the batches; the peers through their public "
                "estimators.", "",
                "| shape | rows × features / batch | penalty | dtype | "
                + " | ".join(ENGINE_LABEL[e] for e in streamed)
                + " | HuberRegressor (all data) | native / reference speedup"
                " | prox_newton / reference |",
                "|" + "---|" * (len(streamed) + 7)]
        for shape, alpha, dtype in _workloads(document):
            name = shape["name"]
            cells = [_cell(idx, contract, e, name, alpha, dtype) for e in streamed]
            ref = _get(idx, contract, "numpy", name, alpha, dtype)
            nat = _get(idx, contract, "native_cpu", name, alpha, dtype)
            variant = _get(idx, contract, "native_cpu_prox_newton", name, alpha, dtype)
            out.append(f"| {name} | {shape['n_samples']:,} × {shape['n_features']} / "
                       f"{shape['batch_size']:,} | {_penalty({'penalty': {'alpha': alpha}})} | "
                       f"{dtype} | " + " | ".join(cells) + " | "
                       + _cell(idx, "full_fit", "huber_regressor", name, alpha, dtype)
                       + f" | {_ratio(ref, nat)} | {_ratio(ref, variant)} |")
        out.append("")
    out += _estimator_tables(document, idx)
    out += seed_table(document)

    out += ["### Throughput and coefficient error", "",
            "Steady-state rows/s; relative L2 error of the slopes against the generating "
            "coefficients after one cold pass (HuberRegressor: after its fit on all rows).", "",
            "| shape | penalty | dtype | " + " | ".join(
                f"{ENGINE_LABEL[e]} rows/s | {ENGINE_LABEL[e]} error"
                for e in streamed) + " | HuberRegressor error |",
            "|" + "---|" * (2 * len(streamed) + 4)]
    for shape, alpha, dtype in _workloads(document):
        name = shape["name"]
        cells = []
        for e in streamed:
            s = _get(idx, "steady", e, name, alpha, dtype)
            c = _get(idx, "cold", e, name, alpha, dtype)
            cells.append(_fmt(s["throughput_rows_per_s"] if s and s["status"] == "ok" else None,
                              ".3g"))
            cells.append(_fmt(c["coef_error"]["rel_l2"] if c and c["status"] == "ok" else None,
                              ".2e"))
        h = _get(idx, "full_fit", "huber_regressor", name, alpha, dtype)
        cells.append(_fmt(h["coef_error"]["rel_l2"] if h and h["status"] == "ok" else None,
                          ".2e"))
        out.append(f"| {name} | {_penalty({'penalty': {'alpha': alpha}})} | {dtype} | "
                   + " | ".join(cells) + " |")
    out.append("")

    out += ["### Roofline: achieved fraction of the bound (steady state)", "",
            "Bound = max(bytes of every row read once / bandwidth, Gram flops / peak) for the "
            "renewable engines, which must form a weighted Gram matrix per batch; "
            "SGDRegressor forms none, so its fraction is against the read alone "
            "(the \"SGD bound\" column).", "",
            "| shape | penalty | dtype | bytes | Gram flops | bound | bound by | SGD bound | "
            + " | ".join(ENGINE_LABEL[e] for e in streamed) + " |",
            "|" + "---|" * (8 + len(streamed))]
    for shape, alpha, dtype in _workloads(document):
        name = shape["name"]
        any_ok = next((idx[k] for k in idx if k[4] == name and k[5] == alpha
                       and k[6] == dtype and idx[k]["status"] == "ok"
                       and idx[k]["roofline"].get("gram_in_bound", True)), None)
        if any_ok is None:
            continue
        roof = any_ok["roofline"]
        cells = []
        for e in streamed:
            r = _get(idx, "steady", e, name, alpha, dtype)
            cells.append(_fmt(r["roofline"]["achieved_fraction"] * 100, ".3g") + " %"
                         if r and r["status"] == "ok" else "—")
        out.append(f"| {name} | {_penalty({'penalty': {'alpha': alpha}})} | {dtype} | "
                   f"{roof['bytes'] / 2**20:.3g} MiB | {roof['flops'] / 1e9:.3g} G | "
                   f"{_fmt_s(roof['bound_s'])} | {roof['bound_kind']} | "
                   f"{_fmt_s(roof['memory_s'])} | "
                   + " | ".join(cells) + " |")
    out.append("")

    skipped = [r for r in document["records"] if r["status"] != "ok"]
    reasons = sorted({(r["engine"], record_path(r), r["residency"], r["reason"])
                      for r in skipped})
    if reasons:
        out += ["### Skipped or failed", ""]
        out += [f"- {e} ({path}, {res}): {why}" for e, path, res, why in reasons]
        out.append("")
    return "\n".join(out)


def seed_ratios(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Per (contract, shape, penalty, dtype): the seed's and our matched steady/cold times and
    the speedups seed / ours (above 1: ours faster; the issue's target is 2 against the seed's
    native CPU engine). "ours, MAD scale" is native_cpu_sched (native_cpu's estimator row in
    a run without it)."""
    idx = _index(document)
    rows = []
    for contract in ("steady", "cold"):
        for shape, alpha, dtype in _workloads(document):
            name = shape["name"]
            found = {}
            for engine in ("seed_native_cpu", "seed_numpy", "native_cpu_tau",
                           "native_cpu_sched", "native_cpu"):
                r = _get(idx, contract, engine, name, alpha, dtype, "estimator")
                found[engine] = r["median_s"] if r and r["status"] == "ok" else None
            if found["seed_native_cpu"] is None and found["seed_numpy"] is None:
                continue
            median = {"seed_native_cpu": found["seed_native_cpu"],
                      "seed_numpy": found["seed_numpy"], "ours_tau": found["native_cpu_tau"],
                      "ours_mad": found["native_cpu_sched"] or found["native_cpu"]}
            rows.append({"contract": contract, "shape": name, "rows": shape["n_samples"],
                         "features": shape["n_features"], "batch": shape["batch_size"],
                         "alpha": alpha, "dtype": dtype, "median_s": median,
                         "speedup_tau_vs_seed_native": _speedup(median, "seed_native_cpu",
                                                                "ours_tau"),
                         "speedup_mad_vs_seed_native": _speedup(median, "seed_native_cpu",
                                                                "ours_mad"),
                         "speedup_tau_vs_seed_numpy": _speedup(median, "seed_numpy",
                                                               "ours_tau")})
    return rows


def _speedup(median: dict[str, float | None], seed: str, ours: str) -> float | None:
    a, b = median[seed], median[ours]
    return a / b if a and b else None


def seed_table(document: dict[str, Any]) -> list[str]:
    """The Markdown table of :func:`seed_ratios` (empty without seed rows)."""
    rows = seed_ratios(document)
    if not rows:
        return []
    out: list[str] = []
    for contract, title in (("steady", "Steady state"), ("cold", "Cold")):
        out += [f"### {title}: against the seed system (renewable-huber 0.7.1), through the "
                "public estimators", "",
                "Median time of one pass through each public estimator's `partial_fit`, on "
                "the same batches, in the seed's configuration (tau = 1.345 fixed; L1: its λ "
                "schedule, λ_1 = α; rhbench/seed.py). Speedup = seed time / ours (above 1: "
                "ours faster; target 2 against its native CPU engine).", "",
                "| shape | rows × features / batch | penalty | dtype | seed native_cpu "
                "| seed NumPy | ours, tau fixed | ours, MAD scale | speedup tau fixed "
                "| speedup MAD scale | speedup vs seed NumPy |",
                "|" + "---|" * 11]
        for r in rows:
            if r["contract"] != contract:
                continue
            m = r["median_s"]
            penalty = f"L1 λ_1={r['alpha']:g}" if r["alpha"] else "none"

            def x(v: float | None) -> str:
                return "—" if v is None else f"{v:.2f}×"

            out.append(f"| {r['shape']} | {r['rows']:,} × {r['features']} / {r['batch']:,} | "
                       f"{penalty} | {r['dtype']} | {_fmt_s(m['seed_native_cpu'])} | "
                       f"{_fmt_s(m['seed_numpy'])} | {_fmt_s(m['ours_tau'])} | "
                       f"{_fmt_s(m['ours_mad'])} | {x(r['speedup_tau_vs_seed_native'])} | "
                       f"{x(r['speedup_mad_vs_seed_native'])} | "
                       f"{x(r['speedup_tau_vs_seed_numpy'])} |")
        out.append("")
    return out


# ---------------------------------------------------------------------------------- plots


def plot(document: dict[str, Any], stem: Path) -> list[Path]:
    """Write ``<stem>-throughput.png``, ``<stem>-roofline.png`` and, when the run has estimator
    rows of our engines, ``<stem>-estimator.png``; return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in _ok(document["records"]) if r["contract"] in ("steady", "full_fit")]
    shapes = [s["name"] for s in document["profile"]["shapes"]]
    panels = [(a, d) for a in document["profile"]["alphas"] for d in document["profile"]["dtypes"]]
    # One bar per (engine, path): our engines' estimator bars hatched, next to their engine bars.
    series = [(e, path) for e in ENGINE_ORDER for path in ("engine", "estimator")
              if any(r["engine"] == e and record_path(r) == path for r in ok)]
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    color = {e: palette[i % len(palette)] for i, e in enumerate(ENGINE_ORDER)}
    ncols = min(2, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(7 * ncols, 4.3 * nrows), squeeze=False)
    width = 0.8 / max(1, len(series))
    for ax, (alpha, dtype) in zip(axes.flat, panels, strict=False):
        for j, (engine, path) in enumerate(series):
            values = []
            for shape in shapes:
                r = next((r for r in ok if r["engine"] == engine and record_path(r) == path
                          and r["shape_class"] == shape and r["residency"] != "device_resident"
                          and r["penalty"]["alpha"] == alpha and r["dtype"] == dtype), None)
                values.append(r["throughput_rows_per_s"] if r else 0.0)
            xs = [i + (j - (len(series) - 1) / 2) * width for i in range(len(shapes))]
            ours_estimator = engine in OUR_ENGINES and path == "estimator"
            label = ENGINE_LABEL[engine] + (" · estimator" if ours_estimator else "")
            ax.bar(xs, values, width, label=label, color=color[engine],
                   hatch="//" if ours_estimator else None,
                   edgecolor="white" if ours_estimator else None)
        ax.set_yscale("log")
        ax.set_xticks(range(len(shapes)), shapes)
        ax.set_ylabel("rows / s (steady state; HuberRegressor: full fit)")
        ax.set_title(f"penalty {'L1 α=' + format(alpha, 'g') if alpha else 'none'}, {dtype}")
        ax.grid(axis="y", which="both", alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    _legend(axes)
    fig.suptitle(f"Throughput per engine and shape (hatched: through RenewableHuberRegressor."
                 f"partial_fit) — profile {document['profile']['name']}, "
                 f"{document['hardware']}", fontsize=9)
    fig.tight_layout()
    throughput = stem.with_name(stem.name + "-throughput.png")
    fig.savefig(throughput, dpi=120)
    plt.close(fig)
    written = [throughput, _plot_roofline(document, stem, ok, shapes)]
    estimator = _plot_estimator_ratios(document, stem, shapes, panels)
    seed = _plot_seed_ratios(document, stem, shapes, panels)
    return written + [p for p in (estimator, seed) if p]


def _legend(axes: Any) -> None:
    """One legend, on the first panel, with every series of every panel (a panel may lack
    some: prox_newton has no rows without a penalty)."""
    handles: dict[str, Any] = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    axes.flat[0].legend(list(handles.values()), list(handles), fontsize=7)


def _plot_roofline(document: dict[str, Any], stem: Path, ok: list[dict[str, Any]],
                   shapes: list[str]) -> Path:
    import matplotlib.pyplot as plt

    lim = document["machine_limits"]
    bw = lim["memory_bandwidth_bytes_per_s"]
    fig, ax = plt.subplots(figsize=(8, 5.5))
    # Only engines that form the Gram matrix belong on a Gram-flops roofline.
    # The estimator path does the same Gram work as its engine, plus overhead: engine path only.
    points = [r for r in ok if r["contract"] == "steady" and r["roofline"]
              and r["roofline"].get("gram_in_bound", True) and record_path(r) == "engine"]
    intensities = [r["roofline"]["arithmetic_intensity"] for r in points] or [1.0]
    lo, hi = min(intensities) / 4, max(intensities) * 8
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    for dtype, style in (("float64", "-"), ("float32", "--")):
        peak = lim["peak_flops_per_s"][dtype]
        ax.plot(grid, [min(peak, x * bw) for x in grid], style, color="black",
                label=f"roof {dtype}: {bw / 1e9:.1f} GB/s, {peak / 1e9:.0f} GFLOP/s")
    markers = {"numpy": "o", "native_cpu": "s", "native_cpu_prox_newton": "P", "cuda": "D",
               "sgd_huber": "^"}
    colors = dict(zip(shapes, plt.rcParams["axes.prop_cycle"].by_key()["color"], strict=False))
    seen = set()
    for r in points:
        label = None
        if (r["engine"], r["shape_class"]) not in seen:
            seen.add((r["engine"], r["shape_class"]))
            label = f"{ENGINE_LABEL[r['engine']]} · {r['shape_class']}"
        ax.scatter(r["roofline"]["arithmetic_intensity"], r["roofline"]["achieved_flops_per_s"],
                   marker=markers.get(r["engine"], "x"), color=colors.get(r["shape_class"]),
                   alpha=0.45 if r["dtype"] == "float32" else 0.9, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity of the stream (Gram flops / byte of input)")
    ax.set_ylabel("Gram flops / steady-state time (FLOP/s)")
    ax.set_title(f"Roofline (steady state; pale = float32) — {document['hardware']}",
                 fontsize=9)
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    roofline = stem.with_name(stem.name + "-roofline.png")
    fig.savefig(roofline, dpi=120)
    plt.close(fig)
    return roofline


#: The ratios of the estimator chart: (label, numerator, denominator), each a (engine, path);
#: a ratio above 1 means the denominator (native_cpu) is faster.
ESTIMATOR_RATIOS = (
    ("reference / native, engine path", ("numpy", "engine"), ("native_cpu", "engine")),
    ("reference / native, estimator path", ("numpy", "estimator"),
     ("native_cpu", "estimator")),
    ("SGDRegressor / native, estimator path", ("sgd_huber", "estimator"),
     ("native_cpu", "estimator")),
    ("SGDRegressor / native prox_newton, estimator path", ("sgd_huber", "estimator"),
     ("native_cpu_prox_newton", "estimator")),
)


def _plot_estimator_ratios(document: dict[str, Any], stem: Path, shapes: list[str],
                           panels: list[tuple[float, str]]) -> Path | None:
    """Steady-state time ratios per shape: reference over native on both paths, and SGD over
    native through the estimators (above 1: native faster)."""
    import matplotlib.pyplot as plt

    steady = {(r["engine"], record_path(r), r["shape_class"], r["penalty"]["alpha"],
               r["dtype"]): r["median_s"]
              for r in _ok(document["records"])
              if r["contract"] == "steady" and r["residency"] == "host"}
    if not any(k[0] in OUR_ENGINES and k[1] == "estimator" for k in steady):
        return None
    ncols = min(2, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(7 * ncols, 4 * nrows), squeeze=False)
    width = 0.8 / len(ESTIMATOR_RATIOS)
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (alpha, dtype) in zip(axes.flat, panels, strict=False):
        for j, (label, num, den) in enumerate(ESTIMATOR_RATIOS):
            values = []
            for shape in shapes:
                a = steady.get((*num, shape, alpha, dtype))
                b = steady.get((*den, shape, alpha, dtype))
                values.append(a / b if a and b else math.nan)
            if all(math.isnan(v) for v in values):
                continue
            xs = [i + (j - (len(ESTIMATOR_RATIOS) - 1) / 2) * width for i in range(len(shapes))]
            ax.bar(xs, values, width, label=label, color=palette[j % len(palette)])
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_xticks(range(len(shapes)), shapes)
        ax.set_ylabel("time ratio, steady state (above 1: native faster)")
        ax.set_title(f"penalty {'L1 α=' + format(alpha, 'g') if alpha else 'none'}, {dtype}")
        ax.grid(axis="y", which="both", alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    _legend(axes)
    fig.suptitle(f"native_cpu against the reference and SGDRegressor, engine and estimator "
                 f"paths — profile {document['profile']['name']}, {document['hardware']}",
                 fontsize=9)
    fig.tight_layout()
    path = stem.with_name(stem.name + "-estimator.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _plot_seed_ratios(document: dict[str, Any], stem: Path, shapes: list[str],
                      panels: list[tuple[float, str]]) -> Path | None:
    """Steady-state speedups seed / ours per shape (``<stem>-seed.png``; above 1: ours
    faster), with the target 2 drawn."""
    import matplotlib.pyplot as plt

    rows = [r for r in seed_ratios(document) if r["contract"] == "steady"]
    if not rows:
        return None
    series = (("tau fixed vs seed native_cpu", "speedup_tau_vs_seed_native"),
              ("MAD scale vs seed native_cpu", "speedup_mad_vs_seed_native"),
              ("tau fixed vs seed NumPy", "speedup_tau_vs_seed_numpy"))
    ncols = min(2, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(7 * ncols, 4 * nrows), squeeze=False)
    width = 0.8 / len(series)
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (alpha, dtype) in zip(axes.flat, panels, strict=False):
        for j, (label, key) in enumerate(series):
            values = []
            for shape in shapes:
                r = next((r for r in rows if r["shape"] == shape and r["alpha"] == alpha
                          and r["dtype"] == dtype), None)
                values.append(r[key] if r and r[key] else math.nan)
            xs = [i + (j - (len(series) - 1) / 2) * width for i in range(len(shapes))]
            ax.bar(xs, values, width, label=label, color=palette[j % len(palette)])
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.axhline(2.0, color="red", linewidth=0.8, linestyle="--", label="target 2×")
        ax.set_yscale("log")
        ax.set_xticks(range(len(shapes)), shapes)
        ax.set_ylabel("seed time / ours, steady state")
        ax.set_title(f"penalty {'L1 λ_1=' + format(alpha, 'g') if alpha else 'none'}, {dtype}")
        ax.grid(axis="y", which="both", alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    _legend(axes)
    fig.suptitle(f"rhuber against the seed system (renewable-huber 0.7.1), public estimators "
                 f"— profile {document['profile']['name']}, {document['hardware']}", fontsize=9)
    fig.tight_layout()
    path = stem.with_name(stem.name + "-seed.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
