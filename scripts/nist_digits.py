#!/usr/bin/env python3
"""Correct digits on NIST StRD's hardest linear least-squares data sets, per factorization, data
set, batch size and engine (the table of docs/numerics.md): LRE = −log10(|b − c| / |c|), the
fewest over the coefficients, as NIST scores it (capped at 15 where the fit is exact).

    .venv/bin/python scripts/nist_digits.py --backend numpy --backend native_cpu

Filip (tests/fixtures/nist_filip.json), Longley (statsmodels' copy), Wampler 1 and 2 (exact
degree-5 fits, generated from their definitions). tau = 1e9: Huber is least squares there.
An engine without the qr mode prints "refused" in that column.

A cell's last digit moves with the order in which rounding happens (±0.5, up to ±1 on Wampler 1),
so one row order says little about a change of the algorithm. ``--orders N`` fits each cell on N
row orders (the natural one, then the rows permuted by ``numpy.random.default_rng(seed)``, seeds
1 … N − 1) and prints the median and the range: "median (min–max)". ``--paired`` adds, per
engine, qr against Cholesky on the same orders: the median of the differences and in how many
orders qr kept at least as many digits ("−0.3 (4/12)").

    .venv/bin/python scripts/nist_digits.py --backend numpy --backend native_cpu --orders 12 \
        --paired
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from rhuber import IllConditionedWarning, RenewableHuberRegressor

ROOT = Path(__file__).resolve().parent.parent

LONGLEY_CERTIFIED = [-3482258.63459582, 15.0618722713733, -0.358191792925910e-01,
                     -2.02022980381683, -1.03322686717359, -0.511041056535807e-01,
                     1829.15146461355]


def data_sets() -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...]]]:
    """name: (X, y, certified intercept-first, batch sizes)."""
    filip = json.loads((ROOT / "tests" / "fixtures" / "nist_filip.json").read_text())
    x = np.asarray(filip["x"])
    out = {"Filip": (np.column_stack([x**k for k in range(1, 11)]), np.asarray(filip["y"]),
                     np.asarray(filip["certified_b0_to_b10"]), (82, 20, 7))}
    from statsmodels.datasets import longley

    data = longley.load_pandas()
    out["Longley"] = (data.exog.to_numpy(dtype=np.float64), data.endog.to_numpy(np.float64),
                      np.asarray(LONGLEY_CERTIFIED), (16, 8, 4))
    w = np.arange(21.0)
    W = np.column_stack([w**j for j in range(1, 6)])
    for k, certified in ((1, np.ones(6)), (2, 10.0 ** -np.arange(6.0))):
        out[f"Wampler {k}"] = (W, W @ certified[1:] + certified[0], certified, (21, 7, 3))
    return out


def row_orders(n: int, count: int) -> list[np.ndarray]:
    """The natural order of n rows, then ``count − 1`` permutations (seeds 1, 2, …)."""
    return [np.arange(n)] + [np.random.default_rng(seed).permutation(n)
                             for seed in range(1, count)]


def digits(X, y, certified, batch, backend, factorization) -> float | None:
    """The fewest correct digits over the coefficients (capped at 15, and at 0 where not even
    the first digit is right) of a stream of ``batch`` rows at a time; None where the engine
    refuses the factorization."""
    model = RenewableHuberRegressor(tau=1e9, backend=backend, factorization=factorization)
    try:
        with warnings.catch_warnings():
            # Filip's Cholesky mode ends on the svd rung without converging: its cells say so.
            warnings.simplefilter("ignore", IllConditionedWarning)
            warnings.simplefilter("ignore", ConvergenceWarning)
            for start in range(0, len(y), batch):
                model.partial_fit(X[start:start + batch], y[start:start + batch])
    except ValueError as exc:
        if "does not implement qr" in str(exc):
            return None
        raise
    estimate = np.r_[model.intercept_, model.coef_]
    error = np.maximum(np.abs(estimate - certified) / np.abs(certified), 1e-15)
    return max(float(np.min(-np.log10(error))), 0.0)


def over_orders(X, y, certified, batch, backend, factorization, orders: int
                ) -> list[float] | None:
    """The digits of each of ``orders`` row orders (row_orders); None where refused."""
    found = [digits(X[order], y[order], certified, batch, backend, factorization)
             for order in row_orders(len(y), orders)]
    return None if None in found else found


def cell(found: list[float] | None) -> str:
    """One table cell: the one order's digits, or over several their median (min–max)."""
    if found is None:
        return "refused"
    if len(found) == 1:
        return f"{found[0]:.1f}"
    return f"{float(np.median(found)):.1f} ({min(found):.1f}–{max(found):.1f})"


def paired(cholesky: list[float] | None, qr: list[float] | None) -> str:
    """qr against Cholesky on the same row orders: the median of the per-order differences
    qr − cholesky, and in how many orders qr kept at least as many digits."""
    if cholesky is None or qr is None:
        return "refused"
    difference = np.asarray(qr) - np.asarray(cholesky)
    median = round(float(np.median(difference)), 1) + 0.0  # + 0.0: "+0.0", never "-0.0"
    return f"{median:+.1f} ({int(np.sum(difference >= 0))}/{len(qr)})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", action="append", choices=("numpy", "native_cpu", "cuda"))
    parser.add_argument("--orders", type=int, default=1,
                        help="row orders per cell: the natural one and N − 1 permutations; "
                             "cells then give the median (min–max)")
    parser.add_argument("--paired", action="store_true",
                        help="a column per engine: the median over row orders of qr − "
                             "cholesky, and in how many orders qr kept at least as many digits")
    parser.add_argument("--data-set", action="append", dest="data_sets",
                        help="only this data set (repeatable; default all)")
    args = parser.parse_args(argv)
    if args.orders < 1:
        parser.error(f"--orders must be at least 1, got {args.orders}")
    sets = data_sets()
    unknown = sorted(set(args.data_sets or ()) - set(sets))
    if unknown:
        parser.error(f"unknown data set(s) {unknown}; choose from {sorted(sets)}")
    backends = args.backend or ["numpy"]
    modes = ("cholesky", "qr")
    columns = [f"{mode} {backend}" for backend in backends for mode in modes]
    if args.paired:
        columns += [f"qr − cholesky {backend}" for backend in backends]
    print("| data set | batch | " + " | ".join(columns) + " |")
    print("|---|---|" + "---|" * len(columns))
    for name, (X, y, certified, batches) in sets.items():
        if args.data_sets and name not in args.data_sets:
            continue
        for batch in batches:
            found = {(backend, mode): over_orders(X, y, certified, batch, backend, mode,
                                                  args.orders)
                     for backend in backends for mode in modes}
            cells = [cell(found[key]) for key in found]
            if args.paired:
                cells += [paired(found[backend, "cholesky"], found[backend, "qr"])
                          for backend in backends]
            label = f"{batch} (at once)" if batch >= len(y) else str(batch)
            print(f"| {name} | {label} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
