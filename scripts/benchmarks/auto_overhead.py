#!/usr/bin/env python3
"""What ``backend="auto"`` costs a stream over the same plan pinned, for two builds of the
library side by side in one run (A/A controlled).

Each build is a PYTHONPATH prefix (a worktree's ``python/``, say; an empty string means this
environment as it is). One persistent worker process per contestant — A, B, and A again as the
control — holds the workloads' batches; round after round, in a seeded shuffled order, each
worker streams every workload through a fresh estimator twice, with ``backend="auto"`` and with
the plan auto runs pinned (``plan=``), adjacent in time. A contestant's figure per workload is
the median over rounds of auto's stream time over the pinned one's: auto's own cost (planning
the stream, reading the penalty's regime, the session's bookkeeping per batch). The A/A pair
(A against A) is the noise floor.

    scripts/benchmarks/auto_overhead.py --a /tmp/base/python --b "" --rounds 60 \\
        --out /tmp/auto_overhead.json

``--advisor loaded`` loads the tuner's advisor in each worker first (a later stream of a
process, as ``scripts/benchmarks/tuner_regret.py`` runs); ``unloaded`` (the default) plans as a
fresh process's first streams do.
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
from typing import Any

#: (rows, features, dtype, penalized): tuner_regret.py's six smallest streams and two more.
WORKLOADS = ((600, 24, "float32", True), (1500, 12, "float64", True),
             (3000, 48, "float64", True), (6000, 6, "float32", True),
             (12000, 3, "float64", True), (600, 6, "float64", False),
             (1500, 96, "float32", False), (4096, 16, "float64", False))

WORKER = r"""
import gc, json, sys, time
from rhuber import RenewableHuberRegressor
from rhuber.engines.workload import Workload
from rhuber.lab.collect import PENALTY_ALPHA, workload_batches
workloads, batches, advisor = json.loads(sys.argv[1])
if advisor == "loaded":
    from rhuber.tuner import advisor as adv
    adv.shared()
data = [workload_batches(Workload(n, p, dtype, penalized=l1), batches, seed=0)
        for n, p, dtype, l1 in workloads]
alphas = [PENALTY_ALPHA if l1 else 0.0 for *_, l1 in workloads]

def stream(k, plan):
    model = RenewableHuberRegressor(plan=plan, alpha=alphas[k])
    start = time.perf_counter()
    for X, y in data[k]:
        model.partial_fit(X, y)
    return time.perf_counter() - start, model

plans = []
for k in range(len(data)):  # warm-up; the plan auto runs, to pin
    _, auto = stream(k, None)
    plans.append(auto.plan_.plan)
    stream(k, plans[k])
print(json.dumps(plans), flush=True)
gc.disable()
for line in sys.stdin:
    k, first = json.loads(line)
    if first == "auto":
        a, _ = stream(k, None)
        p, _ = stream(k, plans[k])
    else:
        p, _ = stream(k, plans[k])
        a, _ = stream(k, None)
    print(json.dumps([a, p]), flush=True)
"""


def start(prefix: str, args: argparse.Namespace) -> tuple[subprocess.Popen, list[str]]:
    env = dict(os.environ)
    if prefix:
        env["PYTHONPATH"] = prefix + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, json.dumps([WORKLOADS, args.batches, args.advisor])],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    return proc, json.loads(proc.stdout.readline())


def ask(proc: subprocess.Popen, k: int, first: str) -> tuple[float, float]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps([k, first]) + "\n")
    proc.stdin.flush()
    auto, pinned = json.loads(proc.stdout.readline())
    return auto, pinned


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a", required=True, help="PYTHONPATH prefix of build A ('' = as is)")
    parser.add_argument("--b", required=True, help="PYTHONPATH prefix of build B ('' = as is)")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--batches", type=int, default=12, help="batches per stream")
    parser.add_argument("--advisor", choices=("unloaded", "loaded"), default="unloaded")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    names = ("A", "B", "A2")
    workers = {name: start(prefix, args) for name, prefix in zip(names, (args.a, args.b, args.a),
                                                                  strict=True)}
    ratios: dict[str, list[list[float]]] = {n: [[] for _ in WORKLOADS] for n in names}
    auto_s: dict[str, list[list[float]]] = {n: [[] for _ in WORKLOADS] for n in names}
    order = random.Random(args.seed)
    load = os.getloadavg()
    for r in range(args.rounds):
        for k in range(len(WORKLOADS)):
            turn = list(names)
            order.shuffle(turn)
            for name in turn:
                auto, pinned = ask(workers[name][0], k, "auto" if (r + k) % 2 else "pinned")
                ratios[name][k].append(auto / pinned)
                auto_s[name][k].append(auto)
    rows = []
    for k, (n, p, dtype, l1) in enumerate(WORKLOADS):
        row: dict[str, Any] = {"workload": f"{n}x{p} {dtype} {'l1' if l1 else 'no l1'}",
                               "plan": {name: workers[name][1][k] for name in names}}
        for name in names:
            row[f"auto/pinned {name}"] = statistics.median(ratios[name][k])
        row["auto B/A"] = statistics.median(b / a for a, b in zip(auto_s["A"][k], auto_s["B"][k],
                                                                   strict=True))
        row["auto A2/A (A/A)"] = statistics.median(
            b / a for a, b in zip(auto_s["A"][k], auto_s["A2"][k], strict=True))
        row["pinned stream ms (A)"] = 1e3 * statistics.median(
            a / q for a, q in zip(auto_s["A"][k], ratios["A"][k], strict=True))
        rows.append(row)
    for proc, _ in workers.values():
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait()

    def geomean(key: str) -> float:
        return math.exp(statistics.fmean(math.log(row[key]) for row in rows))

    summary = {key: geomean(key) for key in (*(f"auto/pinned {n}" for n in names), "auto B/A",
                                             "auto A2/A (A/A)")}
    summary["load_average_before_after"] = [load, os.getloadavg()]
    for row in rows:
        print(f"{row['workload']:24s} pinned {row['pinned stream ms (A)']:6.2f} ms  "
              + "  ".join(f"auto/pinned {n} {row[f'auto/pinned {n}']:.3f}" for n in names)
              + f"  auto B/A {row['auto B/A']:.3f}  A/A {row['auto A2/A (A/A)']:.3f}")
    print(json.dumps(summary, indent=1))
    if args.out:
        with open(args.out, "w") as out:
            json.dump({"argv": sys.argv[1:], "summary": summary, "workloads": rows}, out,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
