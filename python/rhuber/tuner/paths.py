"""Where the tuner's model files are: the shipped ones (package data) and this machine's local
ones (:mod:`.local` writes them), named apart from the code that reads them so that finding the
rule in force loads no model."""

from __future__ import annotations

from pathlib import Path

from .hardware import cache_dir

#: The three files of a model set (:mod:`.models`), in its directory.
MODEL_FILES = {"throughput": "throughput.safetensors", "plan": "plan.safetensors",
               "bottleneck": "bottleneck.safetensors"}


def default_models_dir() -> Path:
    """The shipped models (package data)."""
    return Path(__file__).resolve().parent / "data" / "models"


def models_dir(hardware_id: str) -> Path:
    """Where the local models of the machine ``hardware_id`` live (may not exist)."""
    return cache_dir() / "models" / hardware_id


def has_models(hardware_id: str) -> bool:
    """Whether this machine's local models are all there."""
    directory = models_dir(hardware_id)
    return all((directory / name).exists() for name in MODEL_FILES.values())
