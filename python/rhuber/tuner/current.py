"""What this process's ``backend="auto"`` holds (docs/tuner.md, "The advisor"): the advisor once
loaded, the rule in force, and the generation of this machine's local models.

It imports nothing of the tuner, so that every stream's session may ask it: a stream starts on
the rule's plan (:func:`.rules.current_rule`) and loads the advisor (models, store, probes) only
once it has shown it is long.
"""

from __future__ import annotations

import threading
from typing import Any

from .reasons import UNLOADED

#: What the process loaded: "advisor" (the advisor, None when no model loads), "rule" (the rule
#: in force) and "generation" (of the local models they were read under). Read and written
#: under :data:`LOCK`, through :func:`loaded`.
SHARED: dict[str, Any] = {}
LOCK = threading.Lock()

#: How many times this process wrote or removed local models: what was loaded under an older
#: generation is read again at the next stream.
_GENERATION = [0]


def generation() -> int:
    return _GENERATION[0]


#: How many times this process recorded or forgot trials' winners: a session made before
#: (:func:`rhuber.dispatch.start` remembers them) may no longer be what a stream starts on.
_TRIALS_GENERATION = [0]


def trials_generation() -> int:
    return _TRIALS_GENERATION[0]


def trials_changed() -> None:
    """A trial's winner was recorded, or the recorded ones forgotten."""
    _TRIALS_GENERATION[0] += 1


def models_changed() -> None:
    """Local models were written or removed: the next stream reads the advisor and the rule
    again."""
    _GENERATION[0] += 1


def loaded() -> dict[str, Any]:
    """:data:`SHARED`, emptied first when the local models changed since it was filled; call
    it holding :data:`LOCK`."""
    if SHARED.get("generation") != _GENERATION[0]:
        SHARED.clear()
        SHARED["generation"] = _GENERATION[0]
    return SHARED


def available() -> Any:
    """The advisor this process has loaded (None: no model loads), else :data:`UNLOADED` —
    without loading anything (loading costs 0.1–0.5 s, which a stream pays only once it has
    shown it is long: :class:`.session.Session`)."""
    with LOCK:
        if SHARED.get("generation") != _GENERATION[0] or "advisor" not in SHARED:
            return UNLOADED
        return SHARED["advisor"]
