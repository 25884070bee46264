#!/usr/bin/env python3
"""The drift test and forgetting on simulated streams (docs/drift.md): the test's size on
stationary streams, its power against a jump, and the tracking error with and without half_life.

Streams have p = 3 features (standard normal) and an intercept, β = (1, −0.5, 0.25; 0.8). Error
laws, each of unit scale:

- ``gaussian``: N(0, 1);
- ``t3``: Student t with 3 degrees of freedom;
- ``contaminated``: N(0, 1), and 10 % of the rows get ±U(10, 30) added (response outliers).

1. **Size**: ``--streams`` stationary streams of ``--batches`` batches per law, batch size
   (100 to 5,000 rows) and scale mode (MAD: tau None; fixed: tau = 1.345); the fraction of the
   batches after the first with p < 0.01 and p < 0.05 (targets 0.5–2 % and 3.5–6.5 %).
2. **Power**: 10 stationary batches, then one whose first slope (or intercept) moves by 0.5 (the
   noise's unit scale); the fraction of streams whose jump batch has p < 0.01 and p < 0.05.
3. **Tracking**: 20 batches of 500 rows, a jump of 0.5 in the first slope, 10 more batches; the
   coefficient error ‖β̂ − β_new‖₂ after each batch without forgetting and with half_life = 4
   batches of weight (2,000), medians over the streams.

Writes ``drift.json`` (settings and every record), ``size.csv``, ``power.csv``,
``tracking.csv`` and ``drift.png`` under ``--out``. Runs on native_cpu when installed (the
NumPy reference otherwise; the two meet the same contract). About two minutes on two cores:

    .venv/bin/python scripts/studies/drift.py
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np

from rhuber.core import Config
from rhuber.engines import make_engine, native_cpu_available

LAWS = ("gaussian", "t3", "contaminated")
BETA = np.array([1.0, -0.5, 0.25, 0.8])  # three slopes, the intercept last
ROOT = Path(__file__).resolve().parents[2]
JUMP = 0.5
TAU = 1.345


def draw(rng: np.random.Generator, law: str, n: int, beta: np.ndarray) -> tuple[np.ndarray, ...]:
    X = rng.standard_normal((n, beta.size - 1))
    e = rng.standard_t(3, size=n) if law == "t3" else rng.standard_normal(n)
    if law == "contaminated":
        hit = rng.random(n) < 0.10
        e[hit] += rng.choice([-1.0, 1.0], size=hit.sum()) * rng.uniform(10, 30, size=hit.sum())
    return X, X @ beta[:-1] + beta[-1] + e


def run_stream(engine, rng, law, n, betas, config) -> tuple[list[float], list[np.ndarray]]:
    """p-values (NaN for the first batch) and the coefficients after each batch."""
    state, pvalues, coefs = None, [], []
    for beta in betas:
        X, y = draw(rng, law, n, beta)
        state, diag = engine.update(state, X, y, None, config)
        pvalues.append(diag.drift_pvalue)
        coefs.append(np.asarray(state.coef, dtype=float).copy())
    return pvalues, coefs


def size_study(engine, rng, streams, batches, sizes) -> list[dict]:
    records = []
    for law in LAWS:
        for mode, config in (("mad", Config()), ("fixed", Config(tau=TAU))):
            for n in sizes:
                p = []
                for _ in range(streams):
                    p += run_stream(engine, rng, law, n, [BETA] * batches, config)[0][1:]
                p = np.asarray(p)
                records.append({"law": law, "scale": mode, "batch_size": n, "tests": p.size,
                                "reject_01": float(np.mean(p < 0.01)),
                                "reject_05": float(np.mean(p < 0.05)),
                                "mean_p": float(np.mean(p))})
                print(f"size {law:>12} {mode:>5} n={n:>5}: p<0.01 {records[-1]['reject_01']:.4f}"
                      f"  p<0.05 {records[-1]['reject_05']:.4f}", file=sys.stderr)
    return records


def power_study(engine, rng, streams, sizes) -> list[dict]:
    records = []
    for law in ("gaussian", "t3"):
        for target, index in (("slope x0", 0), ("intercept", BETA.size - 1)):
            moved = BETA.copy()
            moved[index] += JUMP
            for mode, config in (("mad", Config()), ("fixed", Config(tau=TAU))):
                for n in sizes:
                    p = np.array([run_stream(engine, rng, law, n, [BETA] * 10 + [moved],
                                             config)[0][-1] for _ in range(streams)])
                    records.append({"law": law, "jump": target, "scale": mode, "batch_size": n,
                                    "streams": streams, "power_01": float(np.mean(p < 0.01)),
                                    "power_05": float(np.mean(p < 0.05))})
                    print(f"power {law:>8} {target:>9} {mode:>5} n={n:>4}: p<0.01 "
                          f"{records[-1]['power_01']:.3f}", file=sys.stderr)
    return records


def tracking_study(engine, rng, streams, half_life_batches) -> dict:
    n, before, after = 500, 20, 10
    moved = BETA.copy()
    moved[0] += JUMP
    betas = [BETA] * before + [moved] * after
    errors = {"none": [], "half_life": []}
    for _ in range(streams):
        seed = int(rng.integers(2**63))
        for key, config in (("none", Config(tau=TAU)),
                            ("half_life", Config(tau=TAU, half_life=half_life_batches * n))):
            coefs = run_stream(engine, np.random.default_rng(seed), "gaussian", n, betas,
                               config)[1]
            truth = [b for b in betas]
            errors[key].append([float(np.linalg.norm(c - t)) for c, t in zip(coefs, truth,
                                                                             strict=True)])
    median = {k: np.median(np.asarray(v), axis=0).tolist() for k, v in errors.items()}
    last = before + after - 1
    return {"batch_size": n, "batches_before": before, "batches_after": after,
            "half_life": half_life_batches * n, "streams": streams, "median_error": median,
            "error_after_10_none": median["none"][last],
            "error_after_10_half_life": median["half_life"][last],
            "ratio": median["half_life"][last] / median["none"][last]}


def plot(size, power, tracking, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax_size, ax_power, ax_track = fig.subplots(1, 3)
    sizes = sorted({r["batch_size"] for r in size})
    for law in LAWS:
        for mode, style in (("mad", "-"), ("fixed", "--")):
            values = [100 * next(r["reject_01"] for r in size if r["law"] == law and
                                 r["scale"] == mode and r["batch_size"] == s) for s in sizes]
            ax_size.plot(range(len(sizes)), values, style, marker="o", label=f"{law}, {mode}")
    ax_size.axhspan(0.5, 2.0, color="tab:green", alpha=0.15, label="target 0.5–2 %")
    ax_size.set_xticks(range(len(sizes)), [str(s) for s in sizes])
    ax_size.set_xlabel("batch size (rows)")
    ax_size.set_ylabel("stationary batches with p < 0.01 (%)")
    ax_size.set_title("size")
    ax_size.legend(fontsize=6)
    psizes = sorted({r["batch_size"] for r in power})
    for law in ("gaussian", "t3"):
        for target, style in (("slope x0", "-"), ("intercept", "--")):
            values = [100 * next(r["power_01"] for r in power if r["law"] == law and
                                 r["jump"] == target and r["scale"] == "mad" and
                                 r["batch_size"] == s) for s in psizes]
            ax_power.plot(range(len(psizes)), values, style, marker="o", label=f"{law}, {target}")
    ax_power.axhline(90, color="tab:green", lw=1, label="target 90 % (500 rows)")
    ax_power.set_xticks(range(len(psizes)), [str(s) for s in psizes])
    ax_power.set_xlabel("batch size (rows)")
    ax_power.set_ylabel("jump batches with p < 0.01 (%)")
    ax_power.set_title(f"power: a jump of {JUMP} at batch 11 (MAD scale)")
    ax_power.legend(fontsize=6)
    med = tracking["median_error"]
    batches = np.arange(1, len(med["none"]) + 1)
    ax_track.plot(batches, med["none"], marker=".", label="no forgetting")
    ax_track.plot(batches, med["half_life"], marker=".",
                  label=f"half_life = {tracking['half_life']:g} (4 batches)")
    ax_track.axvline(tracking["batches_before"] + 0.5, color="tab:red", lw=1, label="jump")
    ax_track.set_yscale("log")
    ax_track.set_xlabel("batch (500 rows)")
    ax_track.set_ylabel("median ‖β̂ − β_true‖₂")
    ax_track.set_title(f"tracking: ratio after 10 batches {tracking['ratio']:.2f}")
    ax_track.legend(fontsize=7)
    fig.savefig(path, dpi=110)


def write_csv(path: Path, records: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=300, help="streams per size cell (300)")
    parser.add_argument("--batches", type=int, default=8, help="batches per size stream (8)")
    parser.add_argument("--sizes", default="100,500,2000,5000", help="size study batch sizes")
    parser.add_argument("--power-streams", type=int, default=500)
    parser.add_argument("--power-sizes", default="100,200,500")
    parser.add_argument("--tracking-streams", type=int, default=200)
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "drift")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    engine = make_engine("native_cpu" if native_cpu_available() else "numpy")
    rng = np.random.default_rng(args.seed)
    sizes = [int(s) for s in args.sizes.split(",")]
    power_sizes = [int(s) for s in args.power_sizes.split(",")]
    size = size_study(engine, rng, args.streams, args.batches, sizes)
    power = power_study(engine, rng, args.power_streams, power_sizes)
    tracking = tracking_study(engine, rng, args.tracking_streams, 4)
    settings = {"streams": args.streams, "batches": args.batches, "sizes": sizes,
                "power_streams": args.power_streams, "power_sizes": power_sizes,
                "tracking_streams": args.tracking_streams, "seed": args.seed,
                "beta": BETA.tolist(), "jump": JUMP, "fixed_tau": TAU, "engine": engine.name,
                "seconds": round(time.perf_counter() - started, 1)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "drift.json").write_text(json.dumps(
        {"settings": settings, "size": size, "power": power, "tracking": tracking},
        indent=1) + "\n")
    write_csv(args.out / "size.csv", size)
    write_csv(args.out / "power.csv", power)
    med = tracking["median_error"]
    write_csv(args.out / "tracking.csv", [
        {"batch": k + 1, "median_error_none": f"{a:.5f}", "median_error_half_life": f"{b:.5f}"}
        for k, (a, b) in enumerate(zip(med["none"], med["half_life"], strict=True))])
    plot(size, power, tracking, args.out / "drift.png")
    print(f"tracking: error after 10 batches {tracking['error_after_10_half_life']:.4f} with "
          f"half_life, {tracking['error_after_10_none']:.4f} without: ratio "
          f"{tracking['ratio']:.3f}", file=sys.stderr)
    print(f"wrote {args.out}/drift.json, size.csv, power.csv, tracking.csv, drift.png "
          f"({settings['seconds']} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
