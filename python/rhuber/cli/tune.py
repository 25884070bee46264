"""``rhuber tune``: the hardware fingerprint, collecting measurements, and the store's summary."""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from ..engines.plans import Plan
from ..lab import collect as collecting
from ..lab import validate
from ..tuner import models, rule_search, rules
from ..tuner.hardware import describe, fingerprint
from ..tuner.labels import best_plans, stale
from ..tuner.store import Store, StoreError
from ._common import parse_duration
from .tune_calibrate import add_calibrate
from .tune_falsify import add_falsify
from .tune_recommend import add_recommend


def shipped_store_path() -> Path:
    """The shipped corpus (package data)."""
    return models.default_models_dir().parent / "corpus.sqlite"


def default_store_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                           "share")
    return Path(base) / "rhuber" / "measurements.sqlite"




def add_tune(commands: Any) -> None:
    parser = commands.add_parser(
        "tune", help="the learned tuner: hardware fingerprint, measurements, their summary",
        description="Measure which plan (engine and configuration) is fastest for which "
                    "workload on this machine (docs/tuner.md).")
    parser.set_defaults(run=lambda args: _usage(parser))
    sub = parser.add_subparsers(title="tune commands", metavar="COMMAND")

    hardware = sub.add_parser("hardware", help="print this machine's fingerprint")
    hardware.add_argument("--no-measure", action="store_true",
                          help="identity only: skip the bandwidth and GEMM probes")
    hardware.set_defaults(run=_run_hardware)

    collect = sub.add_parser(
        "collect", help="measure workloads x plans into the store (resumable)",
        description="Measure every plan valid here on the designed subset of workloads "
                    "(collect.DESIGN_POINTS), or on the grid --rows x --features, one stored "
                    "row per (hardware, workload, plan). A rerun resumes where the last one "
                    "stopped.")
    _add_store(collect)
    collect.add_argument("--budget", type=parse_duration, default=None, metavar="DURATION",
                         help="stop cleanly after this long (90s, 10m, 1h); rerun to resume")
    collect.add_argument("--max-batch-mb", type=float, default=None, metavar="MB",
                         help="skip workloads whose X batch is larger than this")
    collect.add_argument("--min-rows-per-coef", type=float, default=0.0, metavar="K",
                         help="skip workloads with fewer rows per batch than K x coefficients")
    collect.add_argument("--rows", type=_int_list, default=None, metavar="N,N,...",
                         help="a grid's rows-per-batch axis (default: the designed subset)")
    collect.add_argument("--features", type=_int_list, default=None, metavar="P,P,...",
                         help="a grid's features axis (default 2,8,32,128,512 with --rows)")
    collect.add_argument("--points", type=_point_list, default=None, metavar="NxP,...",
                         help="designed points instead of collect.DESIGN_POINTS, e.g. "
                              "4096x16,32768x90 (each in both dtypes and every penalty regime)")
    regime = collect.add_mutually_exclusive_group()
    regime.add_argument("--penalized-only", action="store_true",
                        help="only the penalized workloads (both L1 regimes) of the design")
    regime.add_argument("--unpenalized-only", action="store_true",
                        help="only the unpenalized workloads of the design (the threads and "
                             "the Gram and chunk knobs, which every regime shares)")
    collect.add_argument("--simulate-cores", type=int, default=None, metavar="N",
                         help="simulate a smaller machine: restrict this process to its first "
                              "N cores (a new hardware id, labelled simulated in the store)")
    collect.set_defaults(run=_run_collect)

    stats = sub.add_parser("stats", help="summarize the store: coverage, wins, rejected runs")
    _add_store(stats)
    stats.add_argument("--export", type=Path, default=None, metavar="FILE.parquet",
                       help="also write every measurement as a Parquet table")
    stats.set_defaults(run=_run_stats)

    train = sub.add_parser(
        "train", help="train the tuner's three models on a store (model files + a data card)",
        description="Train the throughput, plan and bottleneck models on the store's "
                    "measurements, holding out the latest workloads for `rhuber tune validate`; "
                    "search the default rule over all the store's machines and, with 2+ "
                    "machines, find by leaving one machine out where the model beats it "
                    "(rule.json).")
    _add_store(train)
    train.add_argument("--out", type=Path, required=True, metavar="DIR",
                       help="where the three .safetensors files and DATA_CARD.md go")
    train.add_argument("--holdout", type=float, default=None, metavar="FRACTION",
                       help="the latest fraction of workloads (by measured_at) left out of "
                            "training (default 0.2; 0 trains on everything)")
    train.add_argument("--seed", type=int, default=0, help="the models' random seed")
    train.add_argument("--no-lomo", action="store_true",
                       help="skip leaving machines out: the model is trusted nowhere")
    train.set_defaults(run=_run_train)

    validate = sub.add_parser(
        "validate", help="score models on the store's held-out workloads, from measurements",
        description="MAPE and R² of throughput, plan accuracy and regret against the default "
                    "plan and the rule, bottleneck precision/recall/F1, on the latest workloads "
                    "of the store; then each machine held out in turn (train on the others, "
                    "regret on it). Default: the shipped corpus and models.")
    validate.add_argument("--store", type=Path, default=shipped_store_path(), metavar="FILE",
                          help=f"the SQLite store (default: the shipped corpus, "
                               f"{shipped_store_path()})")
    validate.add_argument("--no-lomo", action="store_true",
                          help="only the time split: do not retrain with machines left out")
    validate.add_argument("--models", type=Path, default=None, metavar="DIR",
                          help="the model files (default: the shipped models)")
    validate.add_argument("--json", action="store_true", help="print the report as JSON")
    validate.set_defaults(run=_run_validate)


    for add in (add_recommend, add_calibrate, add_falsify):
        add(sub)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _point_list(text: str) -> list[tuple[int, int]]:
    try:
        points = [tuple(int(v) for v in item.lower().split("x")) for item in text.split(",")
                  if item.strip()]
    except ValueError:
        points = []
    if not points or any(len(p) != 2 or min(p) < 1 for p in points):
        raise argparse.ArgumentTypeError(f"expected comma-separated ROWSxFEATURES points of "
                                         f"positive numbers, e.g. 4096x16, got {text!r}")
    return points  # type: ignore[return-value]


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got "
                                         f"{text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive numbers, got {text!r}")
    return values


def _add_store(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", type=Path, default=default_store_path(), metavar="FILE",
                        help=f"the SQLite store (default {default_store_path()})")


def _open_store(path: Path, *, read_only: bool = False) -> Store:
    """The store at ``path``; read-only for the commands that only read, since a writable open
    would turn a sealed store (the shipped corpus) back to WAL mode."""
    if read_only and not path.exists():
        raise ValueError(f"{path}: no such store; `rhuber tune collect` makes one")
    try:
        return Store(path, read_only=read_only)
    except StoreError as exc:
        raise ValueError(str(exc)) from exc


def _run_hardware(args: argparse.Namespace) -> int:
    print(describe(fingerprint(measure=not args.no_measure)))
    return 0


def _run_collect(args: argparse.Namespace) -> int:
    args.store.parent.mkdir(parents=True, exist_ok=True)
    max_bytes = None if args.max_batch_mb is None else int(args.max_batch_mb * 2**20)
    if args.rows is None and args.features is None:
        regimes = (collecting.REGIMES[1:] if args.penalized_only else
                   collecting.REGIMES[:1] if args.unpenalized_only else collecting.REGIMES)
        workloads = [w for w in collecting.design(args.points or collecting.DESIGN_POINTS,
                                                  regimes)
                     if (max_bytes is None or w.rows * w.features * w.itemsize <= max_bytes)
                     and w.rows >= args.min_rows_per_coef * w.dim]
    elif args.points is not None or args.penalized_only or args.unpenalized_only:
        raise ValueError("--points, --penalized-only and --unpenalized-only choose designed "
                         "workloads; --rows and --features a grid: give one or the other")
    else:
        workloads = collecting.grid(
            args.rows or collecting.GRID_ROWS, args.features or collecting.GRID_FEATURES,
            max_batch_bytes=max_bytes, min_rows_per_coef=args.min_rows_per_coef)
    simulated = None
    if args.simulate_cores is not None:
        simulated = collecting.restrict_cores(args.simulate_cores)
    hardware = fingerprint(measure=True)
    with _open_store(args.store) as store:
        if simulated is not None:
            store.mark_simulated(hardware.hardware_id, simulated)
        summary = collecting.collect(store, hardware, workloads, budget_s=args.budget)
    print(f"rhuber tune collect: {summary.measured} measured in {summary.seconds:.0f} s "
          f"({summary.failed} failed, {summary.unstable} unstable), {summary.skipped} already "
          f"in {args.store}")
    if summary.pending:
        print(f"budget reached: {summary.pending} left; run the same command again to resume")
    return 0


def _run_stats(args: argparse.Namespace) -> int:
    with _open_store(args.store, read_only=True) as store:
        measurements = list(store.measurements())
        hardware = store.hardware()
        print(summarize(measurements, hardware, best_plans(measurements)))
        if args.export is not None:
            print(f"exported {len(measurements)} measurements to "
                  f"{store.export_parquet(args.export)}")
    return 0


def _read_store(path: Path) -> tuple[list[Any], dict[str, Any], dict[str, str]]:
    with _open_store(path, read_only=True) as store:
        return list(store.measurements()), store.hardware(), store.simulated()


def _run_train(args: argparse.Namespace) -> int:
    holdout = validate.HOLDOUT_FRACTION if args.holdout is None else args.holdout
    if not 0.0 <= holdout < 1.0:
        raise ValueError(f"--holdout must be in [0, 1), got {holdout}")
    measurements, fingerprints, simulated = _read_store(args.store)
    train, held = validate.split(measurements, holdout)
    trained = models.train(train, fingerprints, seed=args.seed)
    paths = models.save(trained, args.out)
    cores = {h: hw.cores for h, hw in models.hardware_of(fingerprints).items()}
    rule, score = rule_search.search(measurements, cores)
    machines = sorted({m.hardware_id for m in measurements})
    provenance: dict[str, Any] = {"store": str(args.store), "machines": machines,
                                  "regret_geomean_over_machines": score,
                                  "description": rule.describe()}
    if len(machines) >= 2 and not args.no_lomo:
        lomo = validate.leave_one_machine_out(measurements, fingerprints, simulated=simulated)
        rule = rule.replace(model_regions=tuple(lomo["model_regions"]))
        provenance["leave_one_machine_out"] = {f["held_out"]: f["summary"]
                                               for f in lomo["folds"]}
    rules.save(rule, args.out, **provenance)
    card = models.data_card(trained, paths, store=args.store, holdout=holdout,
                            held_workloads=len({(m.hardware_id, m.workload_id) for m in held}))
    (args.out / "DATA_CARD.md").write_text(card)
    print(f"rhuber tune train: {len(paths)} models in {args.out} from {len(train)} measurements "
          f"of {args.store} ({len(held)} held out); rule: {rule.describe()} (regret geomean "
          f"{score:.4f} over {len(machines)} machine(s)); model used in regions "
          f"{', '.join(rule.model_regions) or '(none)'}")
    return 0


def _run_validate(args: argparse.Namespace) -> int:
    measurements, fingerprints, simulated = _read_store(args.store)
    directory = args.models or models.default_models_dir()
    _, held = validate.split(measurements)
    report = validate.evaluate(models.load(directory), held, fingerprints,
                               rule=rules.load(directory))
    if not args.no_lomo and len({m.hardware_id for m in measurements}) >= 2:
        report["leave_one_machine_out"] = validate.leave_one_machine_out(
            measurements, fingerprints, simulated=simulated)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        text = validate.markdown(report)
        if "leave_one_machine_out" in report:
            text += "\n" + validate.lomo_markdown(report["leave_one_machine_out"])
        print(text, end="")
    return 0


def summarize(measurements: list[Any], hardware: dict[str, Any], best: dict[Any, Any]) -> str:
    """The text of ``rhuber tune stats``: counts, coverage, per-plan wins, rejected runs."""
    status = Counter(m.status for m in measurements)
    workloads = {(m.hardware_id, m.workload_id) for m in measurements}
    plans_per_workload: dict[Any, int] = defaultdict(int)
    for m in measurements:
        plans_per_workload[(m.hardware_id, m.workload_id)] += 1
    wins = Counter(b.plan_id for b in best.values())
    rejected = sum(m.rejected_runs for m in measurements)
    remeasured = sum(m.remeasured for m in measurements)
    stale_ok = sum(m.status == "ok" and stale(m) for m in measurements)
    lines = [
        f"{len(measurements)} measurements on {len(hardware)} machine(s), {len(workloads)} "
        f"workloads ({min(plans_per_workload.values(), default=0)}–"
        f"{max(plans_per_workload.values(), default=0)} plans each)",
        f"status: {status.get('ok', 0)} ok, {status.get('unstable', 0)} unstable (CV stayed "
        f"≥ 15 %), {status.get('failed', 0)} failed; {stale_ok} of the ok ones stale (their "
        f"solver measured before its code changed speed: left out of training)",
        f"quality: {rejected} runs rejected beyond 3σ, {remeasured} re-measured rounds",
        f"best plan per workload ({len(best)} workloads with a good measurement):",
    ]
    lines += [f"  {count:>5}  {plan}" for plan, count in wins.most_common()]
    versus = against_default(measurements, hardware, best)
    if versus["compared"]:
        top = versus["largest"]
        lines += [
            f"against the default plan (what backend='auto' runs): the best plan differs on "
            f"{versus['differs']} of {versus['compared']} workloads "
            f"({versus['differs'] / versus['compared']:.0%}), beyond 3 % on "
            f"{versus['beyond_near']}; median speed-up {versus['median_speedup']:.2f}x, "
            f"largest {top[0]:.2f}x ({top[1]}: {top[2]})",
        ]
    return "\n".join(lines)


def against_default(measurements: list[Any], hardware: dict[str, Any],
                    best: dict[Any, Any]) -> dict[str, Any]:
    """How the best plan of each workload compares with the default plan measured beside it:
    native_cpu with the engine's defaults (threads = the machine's cores) where it was measured,
    else numpy."""

    rate = {(m.hardware_id, m.workload_id, m.plan_id): m.rows_per_s for m in measurements
            if m.status == "ok"}
    speedups, differs, beyond = [], 0, 0
    for (hw, workload), b in best.items():
        cores = hardware.get(hw, {}).get("logical_cores")  # Hardware.cores, as stored
        native = Plan("native_cpu").resolved(cores).id
        default = native if (hw, workload, native) in rate else Plan("numpy").id
        if (hw, workload, default) not in rate:
            continue
        speedups.append((b.rows_per_s / rate[(hw, workload, default)], workload, b.plan_id))
        differs += b.plan_id != default
        beyond += default not in b.near_best
    speedups.sort()
    return {"compared": len(speedups), "differs": differs, "beyond_near": beyond,
            "median_speedup": speedups[len(speedups) // 2][0] if speedups else None,
            "largest": speedups[-1] if speedups else None}
