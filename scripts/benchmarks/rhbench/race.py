"""A fair race with SGD: ``SGDRegressor(loss="huber")`` given as many passes as it needs.

The sweep's one-pass SGD rows compare one pass of each; SGD converges over passes, so they say
little about what SGD costs to reach our answer. Here, for every (shape, dtype, penalty) where the
native engine ran through the estimator:

1. the learning rate is tuned as a careful user would, on a held-out stream of the same class
   (another seed): each (schedule, eta0) of a small grid trains one pass on its first 80 % of
   rows and is scored by the Huber loss of its predictions on the last 20 %; the best wins;
2. a fresh SGDRegressor with that rate streams the benchmark's batches pass after pass
   (``partial_fit``, the clock covering only those calls), its coefficient error measured after
   every pass, until it reaches the native estimator's error or ``MAX_PASSES`` passes;
3. the record holds the error after every pass with the cumulative time (the time-versus-error
   curve), the passes and time it needed (None: not reached), and ours beside it.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

MAX_PASSES = 50
SCHEDULES = ("invscaling", "constant")
ETA0 = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
HELD_OUT_SEED_OFFSET = 1_000


def _sgd(alpha: float, epsilon: float, schedule: str, eta0: float, seed: int) -> Any:
    from sklearn.linear_model import SGDRegressor

    return SGDRegressor(loss="huber", epsilon=epsilon, penalty="l1" if alpha > 0 else None,
                        alpha=alpha, learning_rate=schedule, eta0=eta0, random_state=seed)


def _huber_loss(residual: np.ndarray, epsilon: float) -> float:
    a = np.abs(residual)
    return float(np.mean(np.where(a <= epsilon, 0.5 * a * a, epsilon * a - 0.5 * epsilon ** 2)))


def tune(held_out: Sequence[tuple[np.ndarray, np.ndarray]], alpha: float, epsilon: float,
         seed: int) -> dict[str, Any]:
    """The (schedule, eta0) of the grid with the least held-out Huber loss after one pass."""
    X = np.concatenate([b[0] for b in held_out])
    y = np.concatenate([b[1] for b in held_out])
    cut = int(0.8 * len(y))
    batch = max(1, len(held_out[0][1]))
    scores = []
    for schedule in SCHEDULES:
        for eta0 in ETA0:
            model = _sgd(alpha, epsilon, schedule, eta0, seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with np.errstate(all="ignore"):
                    for lo in range(0, cut, batch):
                        model.partial_fit(X[lo:min(cut, lo + batch)], y[lo:min(cut, lo + batch)])
                    loss = _huber_loss(y[cut:] - model.predict(X[cut:]), epsilon)
            scores.append({"learning_rate": schedule, "eta0": eta0,
                           "held_out_huber_loss": loss if np.isfinite(loss) else None})
    finite = [s for s in scores if s["held_out_huber_loss"] is not None]
    best = min(finite, key=lambda s: s["held_out_huber_loss"]) if finite else scores[0]
    return {"chosen": {"learning_rate": best["learning_rate"], "eta0": best["eta0"]},
            "grid": scores}


def race(batches: Sequence[tuple[np.ndarray, np.ndarray]],
         held_out: Sequence[tuple[np.ndarray, np.ndarray]], coef: np.ndarray, intercept: float,
         alpha: float, epsilon: float, seed: int, ours_rel_l2: float,
         ours_s: float) -> dict[str, Any]:
    """SGD's passes until its coefficient error reaches ``ours_rel_l2`` (or MAX_PASSES)."""
    tuning = tune(held_out, alpha, epsilon, seed)
    chosen = tuning["chosen"]
    model = _sgd(alpha, epsilon, chosen["learning_rate"], chosen["eta0"], seed)
    norm = float(np.linalg.norm(coef))
    curve: list[dict[str, float]] = []
    elapsed = 0.0
    reached = None
    for k in range(1, MAX_PASSES + 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            for X, y in batches:
                model.partial_fit(X, y)
            elapsed += time.perf_counter() - start
        error = float(np.linalg.norm(np.asarray(model.coef_, np.float64) - coef) / norm)
        curve.append({"passes": k, "seconds": elapsed, "rel_l2": error})
        if not np.isfinite(error):
            break
        if error <= ours_rel_l2:
            reached = k
            break
    return {
        "sgd_parameters": {"loss": "huber", "epsilon": epsilon,
                           "penalty": "l1" if alpha > 0 else None, "alpha": alpha,
                           **chosen, "random_state": seed},
        "tuning": tuning,
        "max_passes": MAX_PASSES,
        "curve": curve,
        "passes_to_our_error": reached,
        "sgd_seconds_to_our_error": elapsed if reached is not None else None,
        "sgd_best_rel_l2": min((c["rel_l2"] for c in curve), default=None),
        "ours_rel_l2": ours_rel_l2,
        "ours_seconds": ours_s,
        "ours_faster": reached is None or ours_s < elapsed,
        "intercept_abs_error": abs(float(np.ravel(model.intercept_)[0]) - intercept),
    }


def plot(document: dict[str, Any], stem: Path) -> list[Path]:
    """``<stem>-sgd-race.png``: per shape, SGD's error against its cumulative time, ours as a
    point (one line per dtype and penalty); nothing when the run has no race."""
    races = document.get("sgd_race") or []
    if not races:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = list(dict.fromkeys(r["shape_class"] for r in races))
    fig, axes = plt.subplots(1, len(shapes), figsize=(4.6 * len(shapes), 4), squeeze=False)
    for ax, shape in zip(axes.flat, shapes, strict=True):
        for i, r in enumerate(x for x in races if x["shape_class"] == shape):
            color = f"C{i % 10}"
            label = f"{r['dtype']} {'l1' if r['alpha'] else 'none'}"
            ts = [c["seconds"] for c in r["curve"]]
            es = [c["rel_l2"] for c in r["curve"]]
            ax.plot(ts, es, "-", color=color, lw=1.2, label=f"SGD {label}")
            ax.plot([r["ours_seconds"]], [r["ours_rel_l2"]], "*", color=color, ms=11,
                    label=f"ours {label}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(shape)
        ax.set_xlabel("seconds (cumulative partial_fit)")
        ax.set_ylabel("coefficient error (rel. L2)")
        ax.grid(True, which="both", alpha=0.3)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle("SGDRegressor(huber), tuned, pass after pass, against one pass of ours")
    fig.tight_layout()
    path = Path(f"{stem}-sgd-race.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]
