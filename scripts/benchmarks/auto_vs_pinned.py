#!/usr/bin/env python3
"""Does ``backend="auto"`` cost the user anything? Times a script's streams through the public
estimator — the first stream of a fresh process and a second one in the same process — with auto
and with native_cpu plans pinned, on the RFC shapes in both dtypes, and prints each one's time
over the best pinned plan's.

Every (shape, dtype, variant) runs in its own fresh subprocess, the variants interleaved and
their order shuffled per repetition so that load on a shared machine falls on all alike; the
figures are medians over repetitions, and beside them the paired figure: the median over
repetitions of auto's time over the best pinned plan's in the same repetition.

Two more figures separate what auto costs from which plan it picks:

- **over its own plan**: auto against the plan auto's first stream ended on (learnt from one
  untimed auto process before the repetitions), pinned with ``plan=``, paired per repetition:
  the cost of auto's decision itself;
- **over the best, chosen apart**: the best pinned plan chosen by its median over the *other*
  repetitions (leave one out), auto paired against it in the held-out one. Picking the best of
  several plans on the same repetitions that are then compared picks, among plans that run
  alike, the one whose noise happened to run low (the winner's curse), and biases every plan's
  ratio against it upward; choosing apart removes that bias.

``--build
NAME=PYTHONPATH`` adds a build of the library to compare (its auto only), e.g. the tree before a
change: ``--build before=/tmp/old/python``.

    auto_vs_pinned.py --repetitions 5 --out docs/perf/auto_vs_pinned.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rhbench.sweep import RFC_SHAPES

#: Pinned plans timed beside auto: threads × chunk (incremental Gram), and the engine's
#: defaults (backend="native_cpu").
PINNED = tuple(f"native_cpu/t{t}/gram=incremental/chunk={c}k/l1=lamm"
               for t in (1, 2) for c in (64, 256))

#: The variant that pins the plan auto's first stream ended on (its plan_: on a short stream,
#: the rule's).
OWN = "auto's plan, pinned"

CHILD = r"""
import json, sys, time
import numpy as np
rows, features, batch, dtype, backend, plan = json.loads(sys.argv[1])
rng = np.random.default_rng(0)
X = rng.standard_normal((rows, features)).astype(dtype)
y = (X @ np.linspace(-1, 1, features).astype(dtype) + rng.standard_t(3, rows).astype(dtype))
batches = [(X[k:k + batch], y[k:k + batch]) for k in range(0, rows, batch)]
from rhuber import RenewableHuberRegressor
times, plans = [], []
for _ in range(2):  # the process's first stream, then a second one (warm)
    model = RenewableHuberRegressor(backend=backend, plan=plan)
    start = time.perf_counter()
    for Xb, yb in batches:
        model.partial_fit(Xb, yb)
    times.append(time.perf_counter() - start)
    plans.append(str(model.plan_.plan))
print(json.dumps({"times": times, "plan": plans[-1], "first_plan": plans[0]}))
"""


def run(pythonpath: str, spec: list, env: dict) -> dict:
    child_env = dict(env)
    if pythonpath:
        child_env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)], env=child_env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _paired(a: list[list[float]], b: list[list[float]], stream: int) -> float:
    """The median over repetitions of a's time / b's time in the same repetition (stream 0 the
    process's first, 1 its second): load that drifts between repetitions cancels."""
    return statistics.median(x[stream] / y[stream] for x, y in zip(a, b, strict=True))


def _paired_chosen_apart(auto: list[list[float]], pinned: dict[str, list[list[float]]],
                         stream: int) -> float:
    """The median over repetitions of auto's time over the best pinned plan's in the same
    repetition, that plan chosen by its median over the other repetitions (leave one out); nan
    with fewer than two repetitions."""
    if len(auto) < 2:
        return math.nan
    ratios = []
    for k, mine in enumerate(auto):
        best = min(pinned, key=lambda p: statistics.median(
            t[stream] for j, t in enumerate(pinned[p]) if j != k))
        ratios.append(mine[stream] / pinned[best][k][stream])
    return statistics.median(ratios)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--build", action="append", default=[],
                        help="NAME=PYTHONPATH of another build whose auto is timed too")
    parser.add_argument("--shapes", default="latency,reference,wide,streaming")
    parser.add_argument("--dtypes", default="float64,float32")
    parser.add_argument("--pinned", default=",".join(PINNED),
                        help="the pinned plans timed beside auto (comma-separated ids; fewer "
                             "plans leave time for more repetitions)")
    parser.add_argument("--out", help="write the figures here as JSON")
    args = parser.parse_args(argv)
    # "auto (A/A)": auto again, the control of how far two runs of one variant differ here.
    builds = {"auto": "", "auto (A/A)": ""} | dict(b.split("=", 1) for b in args.build)
    pinned_plans = [p for p in args.pinned.split(",") if p]
    env = dict(os.environ)
    rng = random.Random(0)
    report = {}
    for shape in (s for s in RFC_SHAPES if s.name in args.shapes.split(",")):
        for dtype in args.dtypes.split(","):
            spec = [shape.n_samples, shape.n_features, shape.batch_size, dtype]
            own = run("", [*spec, "auto", None], env)["first_plan"]  # untimed: auto's plan
            variants = [(name, path, "auto", None) for name, path in builds.items()]
            variants += [(OWN, "", "auto", own), ("native_cpu", "", "native_cpu", None)]
            variants += [(plan, "", "auto", plan) for plan in pinned_plans]
            times: dict[str, list[list[float]]] = {v[0]: [] for v in variants}
            plans: dict[str, str] = {}
            for _ in range(args.repetitions):
                rng.shuffle(variants)
                for name, path, backend, plan in variants:
                    result = run(path, [*spec, backend, plan], env)
                    times[name].append(result["times"])
                    plans[name] = result["plan"]
            med = {name: [statistics.median(t[i] for t in runs) for i in (0, 1)]
                   for name, runs in times.items()}
            pinned = [*pinned_plans, "native_cpu"]
            best = [min(med[p][i] for p in pinned) for i in (0, 1)]
            best_plan = [min(pinned, key=lambda p, i=i: med[p][i]) for i in (0, 1)]
            key = f"{shape.name}/{dtype}"
            report[key] = {"median_s": med, "best_pinned": best_plan, "plans": plans,
                           "over_best": {n: [med[n][i] / best[i] for i in (0, 1)] for n in med},
                           "paired_over_best": {n: [_paired(times[n], times[best_plan[i]], i)
                                                    for i in (0, 1)] for n in builds},
                           "paired_over_best_chosen_apart": {
                               n: [_paired_chosen_apart(times[n], {p: times[p] for p in pinned},
                                                        i) for i in (0, 1)] for n in builds},
                           "own_plan": own,
                           "paired_over_own_plan": {n: [_paired(times[n], times[OWN], i)
                                                        for i in (0, 1)] for n in builds}}
            r = report[key]
            line = "  ".join(
                f"{n} {med[n][0] / best[0]:.3f}/{med[n][1] / best[1]:.3f} "
                f"(paired {r['paired_over_best'][n][0]:.3f}/{r['paired_over_best'][n][1]:.3f}; "
                f"chosen apart {r['paired_over_best_chosen_apart'][n][0]:.3f}/"
                f"{r['paired_over_best_chosen_apart'][n][1]:.3f}; own plan "
                f"{r['paired_over_own_plan'][n][0]:.3f}/{r['paired_over_own_plan'][n][1]:.3f})"
                for n in builds)
            print(f"{key:>20}  best pinned {best[0] * 1e3:8.2f} / {best[1] * 1e3:8.2f} ms "
                  f"({best_plan[0].split('/l1')[0]}, {best_plan[1].split('/l1')[0]})  "
                  f"first/warm over best: {line}  [auto ran {plans['auto']}]", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"repetitions": args.repetitions, "load": os.getloadavg(),
                       "results": report}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
