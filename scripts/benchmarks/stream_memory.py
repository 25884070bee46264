#!/usr/bin/env python3
"""The memory a stream adds: the peak RSS (``ru_maxrss``) of a fresh process over a stream's
batches through ``RenewableHuberRegressor`` with a pinned native_cpu plan, over what the process
held once its data was made and the estimator had fitted a first 64-row batch (the data is
generated block by block, so no temporary raises that base). One configuration per process:
run it in a fresh one, with ``RH_NATIVE_CPU_LIBRARY`` naming another build to compare.

    stream_memory.py 131072 1024 --dtype float64 --threads 2 --chunk-kib 256
    stream_memory.py 65536 512 --inference-matrices
    stream_memory.py 65536 2 --factorization qr --chunk-kib 1024
"""

from __future__ import annotations

import argparse
import resource

import numpy as np


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rows", type=int)
    parser.add_argument("features", type=int)
    parser.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    parser.add_argument("--factorization", default="cholesky", choices=("cholesky", "qr"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--chunk-kib", type=int, default=256)
    parser.add_argument("--batches", type=int, default=2)
    parser.add_argument("--inference-matrices", action="store_true")
    parser.add_argument("--alpha", type=float, default=0.0)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    X = np.empty((args.rows, args.features), args.dtype)
    y = np.empty(args.rows, args.dtype)
    coef = np.linspace(-1.0, 1.0, args.features)
    for i in range(0, args.rows, 2048):
        block = rng.standard_normal((min(2048, args.rows - i), args.features))
        X[i:i + len(block)] = block
        y[i:i + len(block)] = block @ coef + rng.standard_t(3, len(block))
    del block

    import rhuber

    plan = f"native_cpu/t{args.threads}/gram=incremental/chunk={args.chunk_kib}k/l1=lamm"
    est = rhuber.RenewableHuberRegressor(backend="native_cpu", plan=plan,
                                         factorization=args.factorization, alpha=args.alpha,
                                         inference_matrices=args.inference_matrices)
    est.partial_fit(X[:64], y[:64])  # the estimator and its engine built
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(args.batches):
        est.partial_fit(X, y)
    added = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
    x_mib = X.nbytes / 2**20
    print(f"{args.rows} x {args.features} {args.dtype} {args.factorization} {plan}"
          f"{' inference_matrices' if args.inference_matrices else ''}: X {x_mib:.0f} MiB, "
          f"the stream added {added:.1f} MiB ({added / x_mib:.2f}x X)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
