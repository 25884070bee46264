"""Where the tuner's files are: the user's cache directory, the shipped model files (package
data) and this machine's local ones (:mod:`.local` writes them), named apart from the code that
reads them so that finding the rule in force loads no model and, on a machine without local
models, not even the hardware fingerprint's code."""

from __future__ import annotations

import os
from pathlib import Path

#: The environment variable naming the cache directory (tests point it at a temporary one).
CACHE_DIR_VARIABLE = "RHUBER_CACHE_DIR"

#: The three files of a model set (:mod:`.models`), in its directory.
MODEL_FILES = {"throughput": "throughput.safetensors", "plan": "plan.safetensors",
               "bottleneck": "bottleneck.safetensors"}


def cache_dir() -> Path:
    """``$RHUBER_CACHE_DIR``, else ``$XDG_CACHE_HOME/rhuber``, else
    ``~/.cache/rhuber``."""
    return Path(_cache_dir_name())


def _cache_dir_name() -> str:
    explicit = os.environ.get(CACHE_DIR_VARIABLE)
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "rhuber")


def default_models_dir() -> Path:
    """The shipped models (package data)."""
    return Path(__file__).resolve().parent / "data" / "models"


def local_models_root() -> Path:
    """Where every machine's local models live, one directory per hardware id (may not
    exist)."""
    return cache_dir() / "models"


def any_local_models() -> bool:
    """Whether :func:`local_models_root` exists (some machine was calibrated here). In strings:
    every process's first ``backend="auto"`` stream asks, and there pathlib's first paths cost
    ~55 µs more than ``os.path`` (fresh processes on the 2-core Xeon)."""
    return os.path.isdir(os.path.join(_cache_dir_name(), "models"))


def models_dir(hardware_id: str) -> Path:
    """Where the local models of the machine ``hardware_id`` live (may not exist)."""
    return local_models_root() / hardware_id


def has_models(hardware_id: str) -> bool:
    """Whether this machine's local models are all there."""
    directory = models_dir(hardware_id)
    return all((directory / name).exists() for name in MODEL_FILES.values())
