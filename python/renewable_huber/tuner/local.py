"""This machine's own tuner data: the local measurement store and the local models that
``rhuber tune calibrate`` writes, keyed by the hardware id, under the user's cache directory."""

from __future__ import annotations

from pathlib import Path

from .hardware import cache_dir


def models_dir(hardware_id: str) -> Path:
    """Where the local models of the machine ``hardware_id`` live (may not exist)."""
    return cache_dir() / "models" / hardware_id
