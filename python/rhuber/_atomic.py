"""Atomic file writes: a reader (or a crash) sees the old file or the new one, never half of one.

The bytes go to a temporary ``.<name>.<random>.tmp`` beside the target, held under an exclusive
``flock`` while written (where flock exists), flushed to disk, then renamed over the target; the
directory is synced so the rename itself survives a crash. A writer killed mid-write leaves its
temporary behind, unlocked: :func:`remove_stale_temporaries` (which :func:`atomic_write` runs
first) removes those, and leaves the locked temporaries of live writers alone.
"""

from __future__ import annotations

import errno
import glob
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None  # type: ignore[assignment]


@contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", *, encoding: str | None = None,
                 newline: str | None = None) -> Iterator[IO]:
    """A file object whose contents replace ``path`` only when the block ends without error.

    ``mode`` is ``"w"`` (text; UTF-8 unless ``encoding`` says otherwise) or ``"wb"``.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():  # else the error would name the temporary, not the directory
        raise FileNotFoundError(errno.ENOENT, f"cannot write {path}: the directory {directory} "
                                "does not exist")
    remove_stale_temporaries(path)  # first: a kill after it leaves one at most
    fd, tmp = _locked_temporary(path, directory)
    text = "b" not in mode
    try:
        with os.fdopen(fd, mode, encoding=(encoding or "utf-8") if text else None,
                       newline=newline if text else None) as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
            os.replace(tmp, path)  # before close: the lock is held until the name is gone
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _sync_directory(directory)


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically and return the path."""
    with atomic_write(path) as file:
        file.write(text)
    return Path(path)


def remove_stale_temporaries(path: str | os.PathLike) -> None:
    """Remove the temporaries of interrupted writes to ``path`` (their writer died, so nothing
    holds their flock); those of live writers are locked and left alone."""
    if fcntl is None:  # no flock (Windows): a live writer could not be told from a dead one
        return
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    for stale in directory.glob(f".{glob.escape(path.name)}.*.tmp"):
        try:
            fd = os.open(stale, os.O_RDONLY)
        except OSError:
            continue  # gone already, or not ours to read
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.stat(stale).st_ino == os.fstat(fd).st_ino:
                stale.unlink()
        except OSError:
            pass  # locked by a live writer, or removed by another cleaner meanwhile
        finally:
            os.close(fd)


def _locked_temporary(path: Path, directory: Path) -> tuple[int, str]:
    """A new temporary beside ``path``, open and under an exclusive flock (where flock exists).

    A cleaner may remove the file between its creation and the lock; then its name no longer
    leads to this file, and another is made.
    """
    while True:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
        if fcntl is None:
            return fd, tmp
        fcntl.flock(fd, fcntl.LOCK_EX)  # a new file: no one else can hold its lock yet
        try:
            if os.stat(tmp).st_ino == os.fstat(fd).st_ino:
                return fd, tmp
        except FileNotFoundError:
            pass
        os.close(fd)


def _sync_directory(directory: Path) -> None:
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # a directory that cannot be opened for reading (or no such call): best effort
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
