"""This machine's own tuner data: the local measurement store and the local models that
``rhuber tune calibrate`` (and opt-in online learning) write, keyed by the hardware id, under the
user's cache directory (:func:`hardware.cache_dir`: ``$RHUBER_CACHE_DIR``, else
``$XDG_CACHE_HOME/rhuber``, else ``~/.cache/rhuber``)::

    <cache_dir>/measurements.sqlite          the local store: every machine's rows, by hardware id
    <cache_dir>/models/<hardware_id>/        the local models of that machine (three files)

One store for every machine (rows are keyed by hardware id, as in the corpus) so that a cache
directory shared between machines keeps each machine's rows apart without a file per machine.

A local model is trained on the shipped corpus plus every local measurement (a local row replaces
the corpus row of the same hardware, workload and plan unless it is not ``ok`` and the corpus row
is), with this machine's freshly measured fingerprint. It is written atomically: into a temporary
directory beside the target, then renamed into place (the old one is renamed aside first and
removed after), under a file lock, so a killed writer leaves the old model or none, never half a
one.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import models
from .current import generation as generation  # re-exported: callers read it here
from .current import models_changed
from .hardware import Hardware, cache_dir
from .model_files import read
from .paths import MODEL_FILES, models_dir
from .paths import has_models as has_models  # re-exported: callers read it here
from .store import Measurement, Store

#: The local store's file name, in :func:`hardware.cache_dir`.
STORE_FILE = "measurements.sqlite"
#: Overrides of the shipped models' estimator parameters (models.fit) for the local models, so
#: that training on the whole corpus fits calibrate's budget (docs/tuner.md):
#:
#: - 300 boosting stages instead of 600 (≈ 5 s instead of ≈ 9 s on the 2-core development
#:   container); on the corpus's time split they score MAPE 8.7 % and regret geomean 1.032
#:   against 600 stages' 8.8 % and 1.029;
#: - the bottleneck model's solver ``sag`` instead of ``lbfgs``: lbfgs spends its time in
#:   multithreaded BLAS products that a busy machine slows by 50x and more (0.3 s alone, 21 s
#:   beside other work on 2 cores), sag loops in Cython (0.4 s either way); the probabilities
#:   differ by at most 0.013, the predicted classes on 0.05 % of the corpus.
LOCAL_PARAMS: dict[str, dict[str, Any]] = {"throughput": {"n_estimators": 300},
                                           "bottleneck": {"solver": "sag"}}
#: Leftover temporary directories of a killed writer older than this are removed.
STALE_TEMP_S = 3600.0
DATA_CARD = "DATA_CARD.md"


def store_path() -> Path:
    """The local measurement store (may not exist)."""
    return cache_dir() / STORE_FILE


def corpus_path() -> Path:
    """The shipped corpus (package data; sealed: opened read-only)."""
    return Path(__file__).resolve().parent / "data" / "corpus.sqlite"


def corpus() -> tuple[list[Measurement], dict[str, dict[str, Any]]]:
    """The shipped corpus's measurements and fingerprints."""
    with Store(corpus_path(), read_only=True) as store:
        return list(store.measurements()), store.hardware()


def writable_cache_dir() -> Path:
    """:func:`cache_dir`, created when missing; an OSError naming it and how to choose another
    when it cannot be (a read-only home, a path through a file)."""
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if not os.access(directory, os.W_OK | os.X_OK):
            raise PermissionError("not writable")
    except OSError as exc:
        raise OSError(f"the tuner's cache directory {directory} cannot be written "
                      f"({exc.strerror or exc}): point RHUBER_CACHE_DIR at a writable "
                      "directory") from exc
    return directory


def open_store() -> Store:
    """The local store, created (with its directory) when missing."""
    writable_cache_dir()
    return Store(store_path())


def local_measurements() -> tuple[list[Measurement], dict[str, dict[str, Any]]]:
    """Every measurement and fingerprint of the local store (empty when there is none)."""
    path = store_path()
    if not path.exists():
        return [], {}
    with Store(path) as store:
        return list(store.measurements()), store.hardware()


def training_data(hardware: Hardware,
                  base: tuple[Sequence[Measurement], dict[str, dict[str, Any]]] | None = None
                  ) -> tuple[list[Measurement], dict[str, dict[str, Any]], int]:
    """The measurements and fingerprints a local model trains on — ``base`` (default the
    shipped corpus) merged with the local store — and how many rows came from the local store.

    A local row replaces the base row of the same (hardware, workload, plan) unless the local one
    is not ``ok`` while the base one is; ``hardware`` (measured) is this machine's fingerprint.
    """
    if not hardware.measured:
        raise ValueError(f"the fingerprint of {hardware.hardware_id} has no measured bandwidth "
                         "and peak: take it with fingerprint(measure=True)")
    base_rows, base_fingerprints = corpus() if base is None else base
    local_rows, local_fingerprints = local_measurements()
    merged = {(m.hardware_id, m.workload_id, m.plan_id): m for m in base_rows}
    used = 0
    for m in local_rows:
        key = (m.hardware_id, m.workload_id, m.plan_id)
        if m.status == "ok" or key not in merged or merged[key].status != "ok":
            merged[key] = m
            used += 1
    fingerprints = {**base_fingerprints, **local_fingerprints,
                    hardware.hardware_id: hardware.as_dict()}
    return list(merged.values()), fingerprints, used


@dataclass(frozen=True)
class TrainResult:
    path: Path  # the local models' directory
    measurements: int  # training rows (base and local, after the merge)
    local: int  # of them from the local store
    seconds: float


def train(hardware: Hardware, *,
          base: tuple[Sequence[Measurement], dict[str, dict[str, Any]]] | None = None,
          params: dict[str, dict[str, Any]] | None = None, seed: int | None = None
          ) -> TrainResult:
    """Train the local models of ``hardware`` (its measured fingerprint) on the corpus plus the
    local store, and write them atomically into :func:`models_dir`. ``params`` as
    :func:`models.fit` (default :data:`LOCAL_PARAMS`)."""

    start = time.perf_counter()
    rows, fingerprints, local = training_data(hardware, base)
    files = models.train(rows, fingerprints, seed=models.SEED if seed is None else seed,
                         params=LOCAL_PARAMS if params is None else params)
    meta = files["throughput"].metadata
    card = "\n".join([
        "# Data card: this machine's local models", "",
        f"Trained {meta['trained_at']} by rhuber {meta['library_version']} (seed "
        f"{meta['seed']}) for hardware {hardware.hardware_id}, feature schema "
        f"{meta['feature_schema_version']}.",
        f"Training rows: {len(rows)} measurements ({local} from the local store "
        f"{store_path()}, the rest from the shipped corpus); {meta['samples']} good ones for "
        "the throughput model.",
        f"Estimator overrides: {json.dumps(LOCAL_PARAMS if params is None else params)} "
        "(over the shipped models' parameters, docs/tuner.md).", ""])
    path = write_models(files, hardware.hardware_id, card=card)
    return TrainResult(path, len(rows), local, time.perf_counter() - start)


# ---------------------------------------------------------------------- atomic writes


@contextlib.contextmanager
def _locked(parent: Path, hardware_id: str) -> Iterator[None]:
    """An exclusive lock on this machine's local models, across threads and processes (an
    advisory ``flock``; nothing where ``fcntl`` does not exist)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: the renames alone
        yield
        return
    with open(parent / f".{hardware_id}.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _leftovers(parent: Path, hardware_id: str) -> list[Path]:
    """Temporary directories of writers of ``hardware_id`` (this one's or killed ones)."""
    return sorted(p for p in parent.glob(f".{hardware_id}.*-*") if p.is_dir())


def write_models(files: dict[str, Any], hardware_id: str, *, card: str | None = None) -> Path:
    """Write a model set into :func:`models_dir` atomically and return that directory."""

    target = models_dir(hardware_id)
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    with _locked(parent, hardware_id):
        now = time.time()
        for stale in _leftovers(parent, hardware_id):  # a killed writer's, not a live one's
            with contextlib.suppress(OSError):
                if now - stale.stat().st_mtime > STALE_TEMP_S:
                    shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(dir=parent, prefix=f".{hardware_id}.tmp-"))
        old = None
        try:
            models.save(files, tmp)
            if card is not None:
                (tmp / DATA_CARD).write_text(card)
            for path in tmp.iterdir():  # on disk before the rename makes them visible
                with open(path, "rb") as handle:
                    os.fsync(handle.fileno())
            if target.exists():
                old = parent / f".{hardware_id}.old-{uuid.uuid4().hex[:8]}"
                os.rename(target, old)
            os.rename(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            if old is not None and not target.exists():
                os.rename(old, target)  # put the previous model back
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    models_changed()
    return target


def remove_models(hardware_id: str) -> list[Path]:
    """Remove the local models of ``hardware_id`` (and leftover temporary directories of killed
    writers); the paths removed, [] when there was nothing."""
    target = models_dir(hardware_id)
    parent = target.parent
    if not parent.exists():
        return []
    removed = []
    with _locked(parent, hardware_id):
        for path in [target, *_leftovers(parent, hardware_id)]:
            if path.exists():
                shutil.rmtree(path)
                removed.append(path)
    if removed:
        models_changed()
    return removed


def trained_at(hardware_id: str) -> str | None:
    """When the local throughput model was trained (its metadata), or None without one."""

    try:
        return read(models_dir(hardware_id) / MODEL_FILES["throughput"]).metadata["trained_at"]
    except (OSError, ValueError, KeyError):
        return None
