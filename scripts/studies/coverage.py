#!/usr/bin/env python3
"""Coverage of the renewable standard errors (docs/inference.md): seeded replications of a
stream, for four error laws, several batch sizes and every covariance type.

Each replication draws one stream of ``--rows`` rows (p = 3 features plus an intercept, x
standard normal), fits it batch by batch with the NumPy reference (``rhuber.core.update``,
``inference_matrices=True``) and asks whether each coefficient's 95 % normal interval covers
the true value. Error laws (all symmetric, so Huber's estimate is consistent for every
coefficient):

- ``gaussian``: N(0, 1);
- ``t3``: Student t with 3 degrees of freedom;
- ``contaminated``: N(0, 1), and 10 % of the rows get ±U(10, 30) added (response outliers);
- ``heteroscedastic``: N(0, 1) · (0.5 + |x₀|): the spread grows with the first feature.

Writes ``coverage.json`` (the settings and one record per law × batch size × cov type: the
coverage over all coefficients, the smallest per-coefficient coverage, the mean standard error
over the empirical standard deviation of the estimates), ``coverage.csv`` (the same records)
and ``coverage.png`` (coverage against batch size, one panel per law, with the binomial band of
a nominal 95 %) under ``--out``.

    .venv/bin/python scripts/studies/coverage.py --reps 500
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from rhuber.core import Config, update
from rhuber.core import inference as inf

LAWS = ("gaussian", "t3", "contaminated", "heteroscedastic")
BETA = np.array([1.0, -0.5, 0.25, 0.8])  # three slopes, the intercept last
Z95 = 1.959963984540054
ROOT = Path(__file__).resolve().parents[2]


def draw(rng: np.random.Generator, law: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    X = rng.standard_normal((n, BETA.size - 1))
    e = rng.standard_t(3, size=n) if law == "t3" else rng.standard_normal(n)
    if law == "contaminated":
        hit = rng.random(n) < 0.10
        e[hit] += rng.choice([-1.0, 1.0], size=hit.sum()) * rng.uniform(10, 30, size=hit.sum())
    elif law == "heteroscedastic":
        e *= 0.5 + np.abs(X[:, 0])
    return X, X @ BETA[:-1] + BETA[-1] + e


def replicate(seed: int, law: str, rows: int, batch_sizes: list[int],
              config: Config) -> dict[int, dict]:
    """One stream, fitted once per batch size: per batch size the estimate and each cov type's
    standard errors."""
    rng = np.random.default_rng(seed)
    X, y = draw(rng, law, rows)
    out = {}
    for size in batch_sizes:
        state = None
        for start in range(0, rows, size):
            state, _ = update(state, X[start:start + size], y[start:start + size], None, config)
        out[size] = {"coef": np.asarray(state.coef),
                     "se": {t: inf.standard_errors(inf.covariance(state, t))
                            for t in inf.COV_TYPES}}
    return out


def study(reps: int, rows: int, batch_sizes: list[int], seed: int,
          config: Config) -> list[dict]:
    records = []
    for law_index, law in enumerate(LAWS):
        coefs = {s: [] for s in batch_sizes}
        ses = {s: {t: [] for t in inf.COV_TYPES} for s in batch_sizes}
        started = time.perf_counter()
        for rep in range(reps):
            result = replicate(seed + 1_000_003 * law_index + rep, law, rows, batch_sizes,
                               config)
            for size, r in result.items():
                coefs[size].append(r["coef"])
                for t in inf.COV_TYPES:
                    ses[size][t].append(r["se"][t])
        print(f"{law}: {reps} replications in {time.perf_counter() - started:.1f} s",
              file=sys.stderr)
        for size in batch_sizes:
            b = np.array(coefs[size])
            sd = b.std(axis=0, ddof=1)
            for t in inf.COV_TYPES:
                se = np.array(ses[size][t])
                covered = np.abs(b - BETA) <= Z95 * se
                per_coef = covered.mean(axis=0)
                records.append({
                    "law": law, "batch_size": size, "batches": math.ceil(rows / size),
                    "cov_type": t, "coverage": float(covered.mean()),
                    "coverage_min": float(per_coef.min()),
                    "coverage_per_coef": [float(c) for c in per_coef],
                    "se_over_sd": float(np.mean(se.mean(axis=0) / sd)),
                })
    return records


def plot(records: list[dict], reps: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(LAWS), figsize=(4 * len(LAWS), 3.6), sharey=True)
    band = 1.96 * math.sqrt(0.95 * 0.05 / reps)
    for ax, law in zip(axes, LAWS, strict=True):
        sizes = sorted({r["batch_size"] for r in records if r["law"] == law})
        ax.axhspan(0.95 - band, 0.95 + band, color="0.88", label="95 % ± binomial 95 % band")
        ax.axhline(0.95, color="0.5", lw=0.8)
        for t in inf.COV_TYPES:
            values = [next(r["coverage_min"] for r in records if r["law"] == law
                           and r["batch_size"] == s and r["cov_type"] == t) for s in sizes]
            ax.plot(range(len(sizes)), values, marker="o", label=t)
        ax.set_xticks(range(len(sizes)), [str(s) for s in sizes])
        ax.set_xlabel("batch size (rows)")
        ax.set_title(law)
    axes[0].set_ylabel("coverage of the 95 % interval\n(least-covered coefficient)")
    axes[0].legend(fontsize=7, loc="lower left")
    fig.suptitle(f"Renewable Huber standard errors: {reps} replications per law", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=500, help="replications per law (500)")
    parser.add_argument("--rows", type=int, default=2000, help="rows per stream (2000)")
    parser.add_argument("--batch-sizes", default="2000,500,100",
                        help="comma-separated batch sizes (2000,500,100)")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--curvature", choices=("indicator", "smoothed"), default="indicator")
    parser.add_argument("--bandwidth-scale", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "inference")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.batch_sizes.split(",")]
    started = time.perf_counter()
    config = Config(inference_matrices=True, curvature=args.curvature,
                    bandwidth_scale=args.bandwidth_scale)
    records = study(args.reps, args.rows, sizes, args.seed, config)
    args.out.mkdir(parents=True, exist_ok=True)
    settings = {"reps": args.reps, "rows": args.rows, "batch_sizes": sizes, "seed": args.seed,
                "features": BETA.size - 1, "beta": BETA.tolist(), "laws": list(LAWS),
                "interval": "normal 95 %", "engine": "numpy reference",
                "curvature": args.curvature, "bandwidth_scale": args.bandwidth_scale,
                "seconds": round(time.perf_counter() - started, 1)}
    (args.out / "coverage.json").write_text(
        json.dumps({"settings": settings, "records": records}, indent=1) + "\n")
    with open(args.out / "coverage.csv", "w", newline="") as f:
        fields = ["law", "batch_size", "batches", "cov_type", "coverage", "coverage_min",
                  "se_over_sd"]
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows({**r, "coverage": f"{r['coverage']:.4f}",
                          "coverage_min": f"{r['coverage_min']:.4f}",
                          "se_over_sd": f"{r['se_over_sd']:.4f}"} for r in records)
    plot(records, args.reps, args.out / "coverage.png")
    print(f"wrote {args.out}/coverage.json, coverage.csv, coverage.png "
          f"({settings['seconds']} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
