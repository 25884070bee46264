"""The learned tuner's room (shared/spec/bricks-and-tuner.md): plans, workloads, the hardware
fingerprint, features, and the measurement store that learning reads.

It uses the engines only through their public parameters (the estimator's ``backend``,
``n_jobs`` and ``plan``), never their internals. Importing a module of it imports no other: the
estimator's streams need only :mod:`.session` until they ask the advisor.
"""

from typing import Any

__all__ = ["learn_online"]


def __getattr__(name: str) -> Any:
    # learn_online needs the store and the models: loaded when asked for, not with the package.
    if name == "learn_online":
        from .online import learn_online

        return learn_online
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
