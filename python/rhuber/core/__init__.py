"""The NumPy reference engine: the oracle every other engine is tested against."""

from .types import L1_SOLVERS, MAD_K, Config, Diagnostics, State
from .update import update

__all__ = ["L1_SOLVERS", "MAD_K", "Config", "Diagnostics", "State", "update"]
