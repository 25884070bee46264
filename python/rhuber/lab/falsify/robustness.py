"""The checklist's F081–F100, generalization and robustness: left-out machines, feature
counts and dtypes, adversarial and out-of-distribution inputs, drift, degradation, cold start,
sparse and noisy data, missing or extreme hardware values, and reproducibility."""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np

from ...engines.plans import Plan
from ...engines.workload import Workload
from ...estimator import RenewableHuberRegressor
from ...tuner import advisor as _advisor
from ...tuner import model_files, models, reasons
from ...tuner import session as sessions
from ...tuner.features import SIMD_ORDINAL
from ...tuner.rules import DEFAULT_RULE
from .. import validate
from ..collect import workload_batches
from .context import SEED, Context, fit_proxy, mape, model_outputs, r2
from .registry import Outcome, check, compare, count, holds, not_applicable, pct


@check("F081", "Held-out R² within 5 % of the cross-validation R²")
def f081(ctx: Context) -> Outcome:
    cv = float(np.mean(ctx.cv_r2))
    held = ctx.proxy_r2()
    return pct(abs(held - cv) / cv, "<=", 0.05, f"held-out {held:.4f}, 5-fold {cv:.4f} (proxy)")


def _proxy_mape(ctx: Context, train_rows: np.ndarray, X_test: np.ndarray,
                y_test: np.ndarray) -> float:
    model = fit_proxy(ctx.train_set.X[train_rows], ctx.train_set.log_rate[train_rows])
    return mape(y_test, model.predict(X_test))


def _all_rows(ctx: Context) -> tuple[np.ndarray, np.ndarray, list[tuple[str, str, str]]]:
    return (np.vstack([ctx.train_set.X, ctx.held_set.X]),
            np.concatenate([ctx.train_set.log_rate, ctx.held_set.log_rate]),
            ctx.train_set.keys + ctx.held_set.keys)


@check("F082", "New hardware generalizes: MAPE < 15 % on a machine left out of training")
def f082(ctx: Context) -> Outcome:
    machines = sorted({k[0] for k in ctx.train_set.keys})
    if len(machines) < 2:
        return holds(False, f"{len(machines)} machine(s) in the store", "≥ 2 machines, < 15 %",
                     "no machine to leave out; calibration stores from other machines "
                     "(`rhuber tune calibrate`) would make this measurable")
    X, y, keys = _all_rows(ctx)
    errors = []
    for hw in machines:
        train_rows = np.array([k[0] != hw for k in ctx.train_set.keys])
        test = np.array([k[0] == hw for k in keys])
        errors.append(_proxy_mape(ctx, train_rows, X[test], y[test]))
    return pct(max(errors), "<", 0.15, "worst machine left out (proxy)")


@check("F083", "New model size (features p) generalizes: MAPE < 15 % on p values left out")
def f083(ctx: Context) -> Outcome:
    left_out = {8, 64}
    X, y, keys = _all_rows(ctx)
    p_of = [Workload.from_id(k[1]).features for k in ctx.train_set.keys]
    train_rows = np.array([p not in left_out for p in p_of])
    test = np.array([Workload.from_id(k[1]).features in left_out for k in keys])
    return pct(_proxy_mape(ctx, train_rows, X[test], y[test]), "<", 0.15,
               f"features {sorted(left_out)} never seen in training, {int(test.sum())} "
               "measurements (proxy)")


@check("F084", "New dtype (the seed's quantization) generalizes: float64-trained MAPE on "
               "float32 < 20 %")
def f084(ctx: Context) -> Outcome:
    X, y, keys = _all_rows(ctx)
    train_rows = np.array([Workload.from_id(k[1]).dtype == "float64"
                           for k in ctx.train_set.keys])
    test = np.array([Workload.from_id(k[1]).dtype == "float32" for k in keys])
    return pct(_proxy_mape(ctx, train_rows, X[test], y[test]), "<", 0.20,
               f"{int(test.sum())} float32 measurements (proxy)")


@check("F085", "Adversarial inputs handled: extreme workloads and non-finite vectors, no crash")
def f085(ctx: Context) -> Outcome:
    crashes, cases = [], 0
    workloads = [Workload(rows=n, features=p, dtype=d) for n in (1, 10**12)
                 for p in (1, 10**5) for d in ("float32", "float64")]
    for w in workloads:
        cases += 1
        try:
            ctx.advisor.advise(w)
        except ValueError:
            pass
        except Exception as exc:
            crashes.append(f"{w.id}: {type(exc).__name__}")
    for value in (np.nan, np.inf, -np.inf, 1e300, -1e300):
        x = np.full(len(ctx.extractor), value)
        for name, m in ctx.models.items():
            cases += 1
            try:
                out = model_outputs(m, x)
                if m.kind in model_files.TREE_KINDS and not np.isfinite(out).all():
                    crashes.append(f"{name}({value}): non-finite")
            except ValueError:
                pass
            except Exception as exc:
                crashes.append(f"{name}({value}): {type(exc).__name__}")
    return count(len(crashes), "==", 0, "unhandled",
                 "; ".join([f"{cases} cases", *crashes[:3]]))


@check("F086", "Out-of-distribution detection: sizes beyond the corpus are flagged, the "
               "corpus's are not")
def f086(ctx: Context) -> Outcome:
    outside = [Workload(rows=10**7, features=32), Workload(rows=64, features=32),
               Workload(rows=4096, features=4096), Workload(rows=4096, features=1)]
    flagged = sum(ctx.advisor.advise(w).out_of_distribution for w in outside)
    inside = ctx.held_advice
    quiet = sum(not a.out_of_distribution for a in inside)
    return holds(flagged == len(outside) and quiet >= len(inside) / 2,
                 f"{flagged}/{len(outside)} outside flagged, {quiet}/{len(inside)} held-out "
                 "workloads not flagged", "all outside; at least half inside")


@check("F087", "Concept drift detection: a chosen plan that measures slower than promised, and "
               "slower than the default, reverts to the default")
def f087(ctx: Context) -> Outcome:
    advice = ctx.chosen_advice
    if advice is None:
        return holds(False, "the advisor chose no plan on the held-out workloads",
                     "a chosen plan to observe")
    rows, promised = advice.workload.rows, advice.predicted_rows_per_s

    def after(rate: float, default_rate: float) -> str:
        session = sessions.Session.from_advice(advice)
        for _ in range(sessions.WARMUP_BATCHES + sessions.EVIDENCE_BATCHES):
            session = session.observe(rows, rows / rate)
        trial = sessions.WARMUP_BATCHES + sessions.TRIAL_BATCHES
        for _ in range(trial if session.trial is not None else 0):
            session = session.observe(rows, rows / default_rate)
        return session.reason

    slow = after(promised / 2, promised)
    on_time = after(promised, promised * 2)  # no trial: the default never runs
    return holds(slow == reasons.REVERTED and on_time == reasons.CHOSEN,
                 f"at half the promise (default at it): {slow}; at the promise: {on_time}",
                 f"{reasons.REVERTED!r} / {reasons.CHOSEN!r}", advice.workload.id)


@check("F088", "Retraining improves: more training workloads → higher held-out R²")
def f088(ctx: Context) -> Outcome:
    early, _ = validate.split(ctx.split[0], 0.5)
    first_half = {(m.hardware_id, m.workload_id) for m in early}
    rows = np.array([(k[0], k[1]) in first_half for k in ctx.train_set.keys])
    half = fit_proxy(ctx.train_set.X[rows], ctx.train_set.log_rate[rows])
    before = r2(ctx.held_set.log_rate, ctx.proxy_held(half))
    after = ctx.proxy_r2()
    return compare(after - before, ">", 0.0, "{:.4f}",
                   f"R² {before:.4f} on the earlier half of the training workloads, "
                   f"{after:.4f} on all (proxy)")


@check("F089", "Feature drift detection: a workload with features the training never saw is "
               "flagged")
def f089(ctx: Context) -> Outcome:
    seen = {Workload.from_id(m.workload_id).intercept for m in ctx.split[0]}
    drifted = [Workload(rows=4096, features=32, intercept=not v) for v in seen]
    if len(seen) == 2:  # both seen: drift in the dtype of a machine instead
        drifted = [Workload(rows=4096, features=32, location="device")]
    advice = [ctx.advisor.advise(w) for w in drifted]
    flagged = sum(a.out_of_distribution for a in advice)
    return count(flagged, "==", len(advice), "flagged",
                 "; ".join(f"{a.workload.id}: {a.detail}" for a in advice)[:160])


@check("F090", "Model degradation detection: validation flags a model whose predictions are 3× "
               "off")
def f090(ctx: Context) -> Outcome:
    m = ctx.models["throughput"]
    tensors = {**m.tensors, "init": m.tensors["init"] + math.log(3.0)}
    degraded = dataclasses.replace(m, tensors=tensors, native=None)
    report = validate.evaluate({**ctx.models, "throughput": degraded}, ctx.split[1],
                               ctx.fingerprints)
    target = report["targets"]["mape"]
    return holds(not target["met"] and ctx.report["targets"]["mape"]["met"],
                 f"degraded MAPE {target['measured']:.1%} flagged as not met, grade "
                 f"{report['grade']}", "the degraded model flagged, the shipped one not")


@check("F091", "Cold start: with no model, backend='auto' runs the default plan")
def f091(ctx: Context) -> Outcome:
    w = Workload(rows=1024, features=8)
    X, y = workload_batches(w, 1)[0]
    with _advisor._SHARED_LOCK:
        saved = dict(_advisor._SHARED)
        _advisor._SHARED.clear()
        _advisor._SHARED["generation"] = _advisor.local.generation()
        _advisor._SHARED["advisor"] = None
    try:
        est = RenewableHuberRegressor(backend="auto").partial_fit(X, y)
    finally:
        with _advisor._SHARED_LOCK:
            _advisor._SHARED.clear()
            _advisor._SHARED.update(saved)
    report = est.plan_

    expected = DEFAULT_RULE.plan(w, os.cpu_count() or 1).id  # the rule, without a model
    return holds(report.reason == reasons.NO_MODEL and report.plan == expected
                 and bool(np.isfinite(est.coef_).all()),
                 f"{report.plan} ({report.reason})", f"{expected} ({reasons.NO_MODEL})")


@check("F092", "Sparse data: training on 12 workloads works (held-out R² > 0.5); on one, a clear "
               "refusal")
def f092(ctx: Context) -> Outcome:
    one = ctx.small_training[0].workload_id
    try:
        models.train([m for m in ctx.small_training if m.workload_id == one], ctx.fingerprints)
        refusal = "trained on one workload"
    except ValueError:
        refusal = "one workload refused"
    small = ctx.small_models["throughput"]
    score = r2(ctx.held_set.log_rate, small.raw(ctx.held_set.X)[:, 0])
    ok = score > 0.5 and refusal == "one workload refused"
    return Outcome(ok, f"{score:.4f}", "> 0.5", f"{len(ctx.small_training)} measurements; "
                   f"{refusal}", score)


@check("F093", "Class imbalance handled: bottleneck balanced accuracy within 5 points of "
               "accuracy")
def f093(ctx: Context) -> Outcome:
    per_class = ctx.report["bottleneck"]
    support = np.array([v["support"] for v in per_class.values()], dtype=float)
    recall = np.array([v["recall"] for v in per_class.values()])
    accuracy = float(recall @ support / support.sum())
    balanced = float(recall.mean())
    return compare((accuracy - balanced) * 100, "<=", 5.0, "{:.1f} points",
                   f"accuracy {accuracy:.1%}, balanced {balanced:.1%}; the classifiers are "
                   "unweighted, this measures whether the minority classes pay for it")


@check("F094", "Noisy labels: 10 % noise on log(rows/s) costs < 0.02 of held-out R²")
def f094(ctx: Context) -> Outcome:
    rng = np.random.default_rng(SEED)
    noisy = ctx.train_set.log_rate + rng.normal(0.0, 0.1, ctx.train_set.log_rate.shape)
    model = fit_proxy(ctx.train_set.X, noisy)
    drop = ctx.proxy_r2() - r2(ctx.held_set.log_rate, ctx.proxy_held(model))
    return compare(drop, "<", 0.02, "{:.4f}", "Gaussian σ = 0.1 in log (proxy)")


@check("F095", "Missing hardware fields: unknown caches and SIMD fill 0, the rest stays valid")
def f095(ctx: Context) -> Outcome:
    partial = dataclasses.replace(ctx.machine, l1d_bytes=None, l2_bytes=None, l3_bytes=None,
                                  simd="none", blas_vendor=None, blas_version=None,
                                  blas_kernel=None)
    x = ctx.extractor.extract_dict(Workload(4096, 32), Plan("numpy"), partial)
    values = np.array(list(x.values()))
    filled = [x[n] for n in ("batch_over_l2_log", "batch_over_l3_log", "batch_fits_l2",
                             "batch_fits_l3", "simd_level")]
    ok = bool(np.isfinite(values).all() and (values >= 0).all() and (values <= 1).all()
              and not any(filled))
    return holds(ok, f"filled {filled}", "finite, in [0, 1], unknowns 0")


@check("F096", "Extreme values clipped: sizes far outside the grid map to the edges")
def f096(ctx: Context) -> Outcome:
    small = ctx.extractor.extract_dict(Workload(rows=1, features=1), Plan("numpy"), ctx.machine)
    huge = ctx.extractor.extract_dict(Workload(rows=10**12, features=10**6), Plan("numpy"),
                                      ctx.machine)
    edges = [small["rows_log"], small["features_log"], huge["rows_log"], huge["features_log"]]
    values = np.array(list(small.values()) + list(huge.values()))
    ok = edges == [0.0, 0.0, 1.0, 1.0] and bool(((values >= 0) & (values <= 1)).all())
    return holds(ok, f"rows_log, features_log: {edges[:2]} at 1 × 1, {edges[2:]} at 1e12 × 1e6",
                 "[0, 0] and [1, 1]")


not_applicable("F097", "Multi-GPU handling",
               "an estimator runs on one device (its `device` parameter) and the plans have no "
               "multi-device dimension; the corpus's one GPU machine has one device")
not_applicable("F098", "WASM compatibility (zero-JS browser)",
               "no browser target: the product is a Python package with C++ extension modules")


@check("F099", "ARM fingerprints handled (no ARM machine here): asimd/SVE map to SIMD levels")
def f099(ctx: Context) -> Outcome:
    bad = []
    for simd in ("asimd", "sve"):
        arm = dataclasses.replace(ctx.machine, machine="aarch64", cpu_model="ARM Neoverse",
                                  simd=simd)
        x = ctx.extractor.extract_dict(Workload(4096, 32), Plan("numpy"), arm)
        if x["simd_level"] != SIMD_ORDINAL[simd] or not x["simd_level"] > 0:
            bad.append(simd)
    return count(len(bad), "==", 0, "unmapped", "the extractor only; running on ARM is "
                 "untested here")


@check("F100", "Reproducibility: the same store and seed train identical models")
def f100(ctx: Context) -> Outcome:
    again = models.train(ctx.small_training, ctx.fingerprints, seed=SEED)
    differ = []
    for name, m in ctx.small_models.items():
        other = again[name]
        meta = {k: v for k, v in m.metadata.items() if k != "trained_at"}
        if meta != {k: v for k, v in other.metadata.items() if k != "trained_at"}:
            differ.append(f"{name} metadata")
        if any(not np.array_equal(m.tensors[k], other.tensors[k]) for k in m.tensors):
            differ.append(f"{name} tensors")
    return count(len(differ), "==", 0, "differences",
                 f"models.train twice on {len(ctx.small_training)} measurements, seed {SEED}")
