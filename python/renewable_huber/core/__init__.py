"""The NumPy reference engine: the oracle every other engine is tested against."""

from .types import MAD_K, Config, Diagnostics, State
from .update import update

__all__ = ["MAD_K", "Config", "Diagnostics", "State", "update"]
