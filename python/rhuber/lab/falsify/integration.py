"""The checklist's F061–F080, integration correctness: the profiler, `rhuber top`, the CLI,
the recommendations, the native reader (vectors, matrices, determinism, threads, memory,
corrupted files), unseen hardware and plans, and versioning."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..._version import __version__
from ...engines.plans import Plan, plans_for
from ...engines.workload import Workload
from ...estimator import RenewableHuberRegressor
from ...tuner import labels, model_files, models
from ...tuner.advisor import Advisor
from ...tuner.features import BRICKS, SCHEMA_VERSION, FeatureExtractor
from ...tuner.hardware import Hardware
from ...tuner.model_files import native_evaluator
from ...tuner.recommend import recommend
from ...tuner.store import SCHEMA_VERSION as STORE_VERSION
from ..collect import workload_batches
from .context import SEED, Context, held_workloads, model_outputs
from .registry import Outcome, check, compare, count, holds, not_applicable


def rss_bytes() -> int:
    """This process's resident memory (Linux /proc; the peak elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def _no_native() -> Outcome:
    return holds(False, "native module missing", "the C++ reader")


@check("F061", "Brick profiler integration: a profiled stream's brick fractions feed the "
               "features and the bottleneck rules")
def f061(ctx: Context) -> Outcome:
    w, prof = ctx.profile_run
    rows = [r for r in prof.report() if r.calls > 0]
    total = sum(r.total_ns for r in rows)
    fractions = {r.brick: r.total_ns / total for r in rows if r.brick in BRICKS}
    x = ctx.extractor.extract_dict(w, Plan("native_cpu"), ctx.machine, fractions)
    label = labels.bottleneck(fractions, w, backend="native_cpu",
                              peak_gflops=ctx.machine.peak_flops_float64 / 1e9,
                              bandwidth_gbs=ctx.machine.memory_bandwidth_bytes_per_s / 1e9)
    return count(len(fractions), ">=", 5, "bricks",
                 f"profile_present {x['profile_present']:.0f}, bottleneck {label}")


@check("F062", "cbtop integration (here `rhuber top`): a frame shows the profile's bricks and "
               "a bottleneck hint")
def f062(ctx: Context) -> Outcome:
    _top = ctx.top
    if _top is None:
        return holds(False, "no renderer given", "Context(top=rhuber.cli._top), as "
                     "`rhuber tune falsify` passes it")
    w, prof = ctx.profile_run
    peaks = _top.Peaks(ctx.machine.memory_bandwidth_bytes_per_s / 1e9,
                       ctx.machine.peak_flops_float64 / 1e9)
    report = prof.report()
    hint = _top.bottleneck_hint(report, peaks, prof.roofline(peaks.gb_per_s,
                                                             peaks.gflop_per_s))
    frame = _top.render(_top.TopState(source=w.id, backend="native_cpu"), report,
                        prof.breakdown(), hint, final=True)
    shown = [r.brick for r in report.rows if r.brick in frame]
    return holds(len(shown) == len(report.rows) and "bottleneck:" in frame,
                 f"{len(shown)}/{len(report.rows)} bricks shown, hint "
                 f"{'shown' if 'bottleneck:' in frame else 'missing'}",
                 "every brick and the hint", hint)


not_applicable("F063", "batuta oracle integration",
               "batuta is the seed's external orchestration oracle; this product has no such "
               "consumer (the estimator's backend='auto' is the tuner's one user, F066–F067)")


@check("F064", "The CLI (the seed's `pmat brick-tune`; here `rhuber tune recommend --json`) "
               "exits 0")
def f064(ctx: Context) -> Outcome:
    # The command as a user runs it, in its own process (the lab layer does not import the CLI).
    run = subprocess.run([sys.executable, "-m", "rhuber.cli", "tune", "recommend", "--rows",
                          "4096", "--features", "32", "--json", "--no-measure", "--models",
                          str(ctx.models_dir)], capture_output=True, text=True, timeout=300,
                         check=False)
    code, out, err = run.returncode, io.StringIO(run.stdout), io.StringIO(run.stderr)
    try:
        json.loads(out.getvalue())
        parsed = "JSON parses"
    except json.JSONDecodeError:
        parsed = "output is not JSON"
    return holds(code == 0 and parsed == "JSON parses", f"exit {code}, {parsed}",
                 "exit 0 and JSON", err.getvalue().strip()[:120])


@check("F065", "Models load in < 100 ms (all three, native reader attached)")
def f065(ctx: Context) -> Outcome:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        models.load(ctx.models_dir)
        times.append(time.perf_counter() - start)
    return compare(float(np.median(times)) * 1e3, "<", 100.0, "{:.1f} ms", "median of 3")


RECOMMENDATION_KEYS = {"workload", "hardware_id", "cores", "model", "auto", "default", "plans",
                       "bottleneck", "experiments", "commands"}


@check("F066", "Recommendations JSON valid: round-trips with every documented key")
def f066(ctx: Context) -> Outcome:
    problems = []
    for w in held_workloads(ctx, 3):
        doc = recommend(w, ctx.advisor).as_dict()
        back = json.loads(json.dumps(doc))
        if back != doc:
            problems.append(f"{w.id}: changes through JSON")
        if set(doc) != RECOMMENDATION_KEYS:
            problems.append(f"{w.id}: keys {sorted(set(doc) ^ RECOMMENDATION_KEYS)}")
    return holds(not problems, "; ".join(problems) or "3 of 3 valid", "valid")


@check("F067", "Recommendations actionable: the advised plan parses, is valid here and fits")
def f067(ctx: Context) -> Outcome:
    bad, fitted = [], 0
    for advice in ctx.held_advice:
        if Plan.from_id(advice.plan.id) != advice.plan or advice.plan not in plans_for(
                advice.workload, ctx.machine):
            bad.append(advice.plan.id)
    chosen = ctx.chosen_advice
    if chosen is not None:
        small = dataclasses.replace(chosen.workload, rows=min(chosen.workload.rows, 1024))
        X, y = workload_batches(small, 1)[0]
        est = RenewableHuberRegressor(plan=chosen.plan.id, fit_intercept=small.intercept)
        est.partial_fit(X, y)
        fitted = int(np.isfinite(est.coef_).all())
    return holds(not bad and fitted == 1, f"{len(bad)} unusable plans; a chosen plan "
                 f"{'fitted' if fitted else 'did not fit or none was chosen'}",
                 "every advised plan usable", ", ".join(bad[:3]))


@check("F068", "Vector compatibility: a feature vector (1-D float64) goes into the native reader "
               "as is")
def f068(ctx: Context) -> Outcome:
    x = ctx.extractor.extract(Workload(4096, 32), Plan("numpy"), ctx.machine)
    native = ctx.models["throughput"].native
    if native is None:
        return _no_native()
    out = np.asarray(native.predict(x))
    ok = (x.dtype == np.float64 and x.ndim == 1 and x.flags.c_contiguous
          and out.shape == (native.n_outputs,))
    return holds(ok, f"x {x.dtype}{list(x.shape)} → {list(out.shape)}", "[48] → [n_outputs]")


@check("F069", "Matrix compatibility: rows of features predict as each row alone")
def f069(ctx: Context) -> Outcome:
    X = ctx.held_set.X[:64]
    worst = 0.0
    for name, m in ctx.models.items():
        if m.native is None:
            return _no_native()
        together = np.asarray(m.native.predict(X))
        alone = np.stack([np.asarray(m.native.predict(x)) for x in X])
        if together.shape != (len(X), m.native.n_outputs):
            return holds(False, f"{name} shape {together.shape}", "[rows, n_outputs]")
        worst = max(worst, float(np.max(np.abs(together - alone))))
    return compare(worst, "==", 0.0, "{:.3g}", "largest difference, 64 rows × 3 models")


@check("F070", "SafeTensors round trip: write, read, same tensors, metadata and predictions")
def f070(ctx: Context) -> Outcome:
    X = ctx.held_set.X[:256]
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, m in ctx.models.items():
            back = model_files.read(model_files.write(m, Path(tmp) / f"{name}.safetensors"))
            same = (back.metadata == m.metadata and set(back.tensors) == set(m.tensors)
                    and all(np.array_equal(back.tensors[k], m.tensors[k]) for k in m.tensors))
            if not same:
                problems.append(f"{name}: content")
            if not np.array_equal(back.raw(X), m.raw(X)):
                problems.append(f"{name}: predictions")
    return holds(not problems, "; ".join(problems) or "3 of 3 identical", "identical")


def _random_pairs(ctx: Context, n: int, seed: int) -> list[tuple[Workload, Plan]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        w = Workload(rows=int(rng.integers(1, 10**6)), features=int(rng.integers(1, 2048)),
                     dtype=str(rng.choice(["float32", "float64"])), penalized=bool(
                         rng.integers(2)), intercept=bool(rng.integers(2)))
        plans = [*plans_for(w, ctx.machine), Plan("native_cpu"), Plan("cuda")]
        out.append((w, plans[int(rng.integers(len(plans)))]))
    return out


@check("F071", "Feature extractor deterministic: 300 random inputs, same output bit for bit")
def f071(ctx: Context) -> Outcome:
    other = FeatureExtractor()
    differ = sum(not np.array_equal(ctx.extractor.extract(w, p, ctx.machine),
                                    other.extract(w, p, ctx.machine))
                 for w, p in _random_pairs(ctx, 300, SEED))
    return count(differ, "==", 0, "differences")


@check("F072", "Prediction deterministic: repeated calls equal, native = NumPy (≤ 1e-12), "
               "advice repeatable")
def f072(ctx: Context) -> Outcome:
    X = ctx.held_set.X[:256]
    worst, repeat = 0.0, 0
    for m in ctx.models.values():
        first = model_outputs(m, X)
        again = model_outputs(m, X)
        repeat += not np.array_equal(first, again)
        reference = model_outputs(dataclasses.replace(m, native=None), X)
        worst = max(worst, float(np.max(np.abs(first - reference)
                                        / np.maximum(1.0, np.abs(reference)))))
    changed = sum(a != ctx.advisor.advise(a.workload) for a in ctx.held_advice[:10])
    ok = repeat == 0 and changed == 0 and worst <= 1e-12
    return holds(ok, f"native vs NumPy {worst:.2e}, {repeat} unrepeatable predictions, "
                 f"{changed} changed advice", "≤ 1e-12, 0, 0")


@check("F073", "Thread-safe inference: 4 threads predicting and advising concurrently agree "
               "with serial")
def f073(ctx: Context) -> Outcome:
    X = ctx.held_set.X[:512]
    model = ctx.models["throughput"]
    workloads = held_workloads(ctx, 4)
    serial = (model.raw(X), [ctx.advisor.advise(w) for w in workloads])

    def work(_: int) -> tuple[np.ndarray, list[Any]]:
        return model.raw(X), [ctx.advisor.advise(w) for w in workloads]

    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(work, range(8)))
    differ = sum(not np.array_equal(r[0], serial[0]) or r[1] != serial[1] for r in results)
    return count(differ, "==", 0, "runs differing", "8 runs on 4 threads")


@check("F074", "Inference memory safe (host memory: no GPU here): RSS grows < 4 MB over 20,000 "
               "predictions and 200 loads")
def f074(ctx: Context) -> Outcome:
    path = ctx.models_dir / models.MODEL_FILES["bottleneck"]
    native = ctx.models["throughput"].native
    if native is None:
        return _no_native()
    x = ctx.held_set.X[0]
    for _ in range(1000):  # warm up allocators
        native.predict(x)
    before = rss_bytes()
    for _ in range(20_000):
        native.predict(x)
    for _ in range(200):
        native_evaluator(path)
    grown = (rss_bytes() - before) / 1e6
    return compare(grown, "<", 4.0, "{:.2f} MB")


@check("F075", "Error handling graceful: 400 corrupted model files refused cleanly, none crash")
def f075(ctx: Context) -> Outcome:
    path = ctx.models_dir / models.MODEL_FILES["bottleneck"]
    data = path.read_bytes()
    rng = np.random.default_rng(SEED)
    variants = [data[: int(rng.integers(0, len(data)))] for _ in range(100)]
    for _ in range(300):
        b = bytearray(data)
        b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
        variants.append(bytes(b))
    refused = crashed = 0
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "model.safetensors"
        for blob in variants:
            target.write_bytes(blob)
            try:
                m = model_files.read(target)
                m.predict_proba(ctx.held_set.X[:4])
            except ValueError:
                refused += 1
            except Exception:  # anything but a clear ValueError is a failure of the reader
                crashed += 1
    return count(crashed, "==", 0, "unclean failures",
                 f"{refused} refused with a ValueError, {len(variants) - refused - crashed} "
                 "still valid (bytes no check depends on); Python and native readers")


@check("F076", "Missing features handled: short vectors, unmeasured hardware → a clear error or "
               "the documented default")
def f076(ctx: Context) -> Outcome:
    x = ctx.held_set.X[0]
    unmeasured = dataclasses.replace(_unseen_machine(ctx.machine),
                                     memory_bandwidth_bytes_per_s=None)
    short = len(x) - 1
    cases: dict[str, Callable[[], Any]] = {
        f"{short} features, NumPy": lambda: dataclasses.replace(
            ctx.models["throughput"], native=None).raw(x[:-1]),
        f"{short} features, ensemble": lambda: ctx.ensemble.throughput(x[None, :-1]),
    }
    native = ctx.models["throughput"].native
    if native is not None:
        cases[f"{short} features, native"] = lambda: native.predict(x[:-1])
    handled = 0
    for call in cases.values():
        try:
            call()
        except ValueError:
            handled += 1
    # Unmeasured hardware: the documented default is the same features (schema 2 needs
    # nothing measured), finite and in [0, 1].
    v = ctx.extractor.extract(Workload(4096, 32), Plan("numpy"), unmeasured)
    handled += bool(np.isfinite(v).all() and (v >= 0).all() and (v <= 1).all())
    blind = Advisor(ctx.ensemble, dataclasses.replace(
        ctx.machine, cpu_model="another CPU", memory_bandwidth_bytes_per_s=None,
        peak_flops_float64=None, peak_flops_float32=None))
    handled += not blind.advise(Workload(4096, 32)).out_of_distribution
    return count(handled, "==", len(cases) + 2, "handled",
                 "the last: the advisor on a machine without measured limits answers (the "
                 "features need nothing measured)")


def _unseen_machine(h: Hardware) -> Hardware:
    return dataclasses.replace(
        h, cpu_model="unseen CPU", logical_cores=h.logical_cores * 8,
        physical_cores=h.physical_cores * 8,
        memory_bandwidth_bytes_per_s=4 * h.memory_bandwidth_bytes_per_s,
        peak_flops_float64=4 * h.peak_flops_float64, peak_flops_float32=4 * h.peak_flops_float32)


@check("F077", "Unseen hardware handled: the advisor falls back to the default plan")
def f077(ctx: Context) -> Outcome:
    advisor = ctx.advisor_for(_unseen_machine(ctx.machine))
    advice = [advisor.advise(w) for w in held_workloads(ctx, 10)]
    kept = sum(a.out_of_distribution and a.plan == a.default for a in advice)
    return count(kept, "==", len(advice), "of the workloads on the default",
                 "a machine with 8× the cores and 4× bandwidth and peak")


@check("F078", "Unseen plan handled: finite predictions, never advised outside the training "
               "range")
def f078(ctx: Context) -> Outcome:
    cores = ctx.machine.cores
    unseen = [Plan("native_cpu", threads=cores, gram="full", chunk_kib=1 << 20),
              Plan("native_cpu", threads=1, gram="incremental", chunk_kib=1), Plan("cuda")]
    chosen_unseen = nonfinite = 0
    default = ctx.native_plan
    for w in held_workloads(ctx, 10):
        nonfinite += int(np.sum(~np.isfinite(ctx.predict_log([(w, p) for p in unseen],
                                                             ctx.machine))))
        advice = ctx.advisor.advise(w, candidates=[default, *unseen[:2]])
        chosen_unseen += advice.plan in unseen
    return count(chosen_unseen + nonfinite, "==", 0, "failures",
                 f"{chosen_unseen} unseen plans advised, {nonfinite} non-finite predictions")


SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$")


@check("F079", "API versioned: semantic library version, integer format and schema versions")
def f079(ctx: Context) -> Outcome:
    ok = (bool(SEMVER.match(__version__)) and model_files.FORMAT_VERSION.isdigit()
          and isinstance(SCHEMA_VERSION, int) and isinstance(STORE_VERSION, int))
    return holds(ok, f"library {__version__}, model format {model_files.FORMAT_VERSION}, "
                 f"features {SCHEMA_VERSION}, store {STORE_VERSION}", "versioned")


TRAINING_DISTRIBUTION_KEYS = ("feature_min", "feature_max", "rows_range", "features_range",
                              "uncertainty_bound", "fingerprints")


@check("F080", "Backward compatible: a format-1 model without the newer metadata still loads "
               "and predicts the same")
def f080(ctx: Context) -> Outcome:
    m = ctx.models["throughput"]
    old = dataclasses.replace(m, metadata={k: v for k, v in m.metadata.items()
                                           if k not in TRAINING_DISTRIBUTION_KEYS}, native=None)
    X = ctx.held_set.X[:256]
    with tempfile.TemporaryDirectory() as tmp:
        back = model_files.read(model_files.write(old, Path(tmp) / "old.safetensors"))
        same = np.array_equal(back.raw(X), m.raw(X))
    try:
        Advisor(models.Ensemble({**ctx.models, "throughput": back}), ctx.machine)
        advisor = "advisor accepted it"
    except ValueError:
        advisor = "advisor asks to retrain (clear error)"
    return holds(same, f"loads, predictions {'equal' if same else 'differ'}; {advisor}",
                 "loads and predicts the same")
