"""The learned tuner's room (shared/spec/bricks-and-tuner.md): plans, workloads, the hardware
fingerprint, features, and the measurement store that learning reads.

It uses the engines only through their public parameters (the estimator's ``backend``,
``n_jobs`` and ``plan``), never their internals.
"""

from .online import learn_online

__all__ = ["learn_online"]
