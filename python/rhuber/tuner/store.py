"""The measurement store: one SQLite file, schema-versioned, one row per (hardware, workload,
plan) measurement.

SQLite (the standard library's sqlite3) because a collection is long and may be killed: every
measurement is one transaction, so the file holds whole rows or nothing, and WAL mode lets
``rhuber tune stats`` read while a collection writes.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: The schema this library writes. A store with a newer version is refused, an older one
#: migrated in place (each step in its own transaction).
SCHEMA_VERSION = 1

_MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE hardware (
        hardware_id TEXT PRIMARY KEY,
        fingerprint TEXT NOT NULL              -- JSON of the fingerprint's fields
    );
    CREATE TABLE measurements (
        hardware_id TEXT NOT NULL REFERENCES hardware(hardware_id),
        workload_id TEXT NOT NULL,
        plan_id TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('ok', 'unstable', 'failed')),
        rows_per_run INTEGER NOT NULL,         -- rows streamed by one timed run
        runs_s TEXT NOT NULL,                  -- JSON list: every timed run, rejected ones too
        rejected_runs INTEGER NOT NULL,        -- beyond 3 sigma of the mean
        remeasured INTEGER NOT NULL,           -- extra rounds taken because CV >= max_cv
        median_s REAL,
        cv REAL,
        rows_per_s REAL,
        brick_fractions TEXT,                  -- JSON {brick: share of the profiled run}
        brick_calls INTEGER,                   -- brick records in the profiled run
        error TEXT,
        library_version TEXT NOT NULL,
        git_revision TEXT,
        measured_at TEXT NOT NULL,             -- ISO 8601, UTC
        PRIMARY KEY (hardware_id, workload_id, plan_id)
    );
    """,
}


class StoreError(RuntimeError):
    """The store file cannot be used: not a store, corrupt, or written by a newer library."""


@dataclass(frozen=True)
class Measurement:
    """One (hardware, workload, plan) measurement, as stored."""

    hardware_id: str
    workload_id: str
    plan_id: str
    status: str  # "ok", "unstable" (CV stayed >= max_cv), "failed" (the plan raised)
    rows_per_run: int
    runs_s: list[float] = field(default_factory=list)
    rejected_runs: int = 0
    remeasured: int = 0
    median_s: float | None = None
    cv: float | None = None
    rows_per_s: float | None = None
    brick_fractions: dict[str, float] | None = None
    brick_calls: int | None = None
    error: str | None = None
    library_version: str = ""
    git_revision: str | None = None
    measured_at: str = ""


_COLUMNS = tuple(Measurement.__dataclass_fields__)


class Store:
    """A measurement store at ``path`` (created when missing).

    Raises
    ------
    StoreError
        When the file is not an SQLite database, lacks the store's tables, or has a newer schema.
    """

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        try:
            if read_only:  # the shipped corpus: never written, maybe in a read-only location
                if not self.path.exists():
                    raise StoreError(f"{self.path}: no such store")
                self._db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
                if self._version() != SCHEMA_VERSION:
                    raise StoreError(f"{self.path} has store schema version {self._version()}; "
                                     f"this library reads {SCHEMA_VERSION} read-only")
                return
            self._db = sqlite3.connect(self.path, timeout=30.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path} is not a usable measurement store: {exc}") from exc

    # ------------------------------------------------------------------ schema

    def _version(self) -> int:
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE "
                                                  "type = 'table'")}
        if not tables:
            return 0
        if "meta" not in tables:
            raise StoreError(f"{self.path} is an SQLite file but not a measurement store (no "
                             f"meta table; tables: {', '.join(sorted(tables))})")
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or not str(row[0]).isdigit():
            raise StoreError(f"{self.path}: the store's schema version is missing or malformed "
                             f"({row[0] if row else None!r})")
        return int(row[0])

    def _migrate(self) -> None:
        version = self._version()
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path} has store schema version {version}, newer than this "
                             f"library's {SCHEMA_VERSION}: upgrade rhuber to read it")
        for target in range(version + 1, SCHEMA_VERSION + 1):
            # executescript commits first, so each step is wrapped in its own transaction.
            self._db.executescript(f"BEGIN; {_MIGRATIONS[target]} "
                                   f"INSERT OR REPLACE INTO meta VALUES ('schema_version', "
                                   f"'{target}'); COMMIT;")

    @property
    def schema_version(self) -> int:
        return self._version()

    # ------------------------------------------------------------------ writing

    def add_hardware(self, hardware_id: str, fingerprint: dict[str, Any]) -> None:
        with self._db:
            # An upsert, not INSERT OR REPLACE: replacing would delete the row its
            # measurements refer to.
            self._db.execute("INSERT INTO hardware VALUES (?, ?) ON CONFLICT (hardware_id) DO "
                             "UPDATE SET fingerprint = excluded.fingerprint",
                             (hardware_id, json.dumps(fingerprint, sort_keys=True, default=str)))

    def mark_simulated(self, hardware_id: str, how: str) -> None:
        """Label machine ``hardware_id`` as simulated (``how``: what was restricted, on which
        real machine), kept in the ``meta`` table as ``simulated:<id>``."""
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                             (f"simulated:{hardware_id}", how))

    def record(self, m: Measurement) -> None:
        """Store one measurement, replacing an earlier one of the same key; all or nothing."""
        if m.status not in ("ok", "unstable", "failed"):
            raise ValueError(f"status must be 'ok', 'unstable' or 'failed', got {m.status!r}")
        values = asdict(m)
        values["runs_s"] = json.dumps(values["runs_s"])
        if values["brick_fractions"] is not None:
            values["brick_fractions"] = json.dumps(values["brick_fractions"], sort_keys=True)
        placeholders = ", ".join("?" for _ in _COLUMNS)
        with self._db:
            self._db.execute(f"INSERT OR REPLACE INTO measurements ({', '.join(_COLUMNS)}) "
                             f"VALUES ({placeholders})", [values[c] for c in _COLUMNS])

    # ------------------------------------------------------------------ reading

    def done(self, hardware_id: str) -> set[tuple[str, str]]:
        """(workload_id, plan_id) already measured on this hardware: a collection resumes here."""
        rows = self._db.execute("SELECT workload_id, plan_id FROM measurements WHERE "
                                "hardware_id = ?", (hardware_id,))
        return {(w, p) for w, p in rows}

    def simulated(self) -> dict[str, str]:
        """The machines labelled simulated (:meth:`mark_simulated`): id → how."""
        rows = self._db.execute("SELECT key, value FROM meta WHERE key LIKE 'simulated:%'")
        return {k.split(":", 1)[1]: v for k, v in rows}

    def hardware(self) -> dict[str, dict[str, Any]]:
        return {h: json.loads(f) for h, f in self._db.execute("SELECT * FROM hardware")}

    def measurements(self, hardware_id: str | None = None) -> Iterator[Measurement]:
        query = f"SELECT {', '.join(_COLUMNS)} FROM measurements"
        args: tuple[Any, ...] = ()
        if hardware_id is not None:
            query += " WHERE hardware_id = ?"
            args = (hardware_id,)
        for row in self._db.execute(query + " ORDER BY workload_id, plan_id", args):
            values = dict(zip(_COLUMNS, row, strict=True))
            values["runs_s"] = json.loads(values["runs_s"])
            if values["brick_fractions"] is not None:
                values["brick_fractions"] = json.loads(values["brick_fractions"])
            yield Measurement(**values)

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM measurements").fetchone()[0])

    def close(self) -> None:
        self._db.close()

    def seal(self) -> None:
        """Fold the write-ahead log into the file and leave WAL mode, so the store is one
        self-contained file (to ship or copy); the next writer turns WAL back on."""
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self._db.execute("PRAGMA journal_mode=DELETE")
        self._db.execute("VACUUM")

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def export_parquet(self, path: str | Path) -> Path:
        """Every measurement as one Parquet table (needs pandas and pyarrow: the io extra)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("exporting needs pandas and pyarrow: pip install "
                              "'rhuber[io]'") from exc
        frame = pd.DataFrame([asdict(m) for m in self.measurements()], columns=list(_COLUMNS))
        frame["runs_s"] = frame["runs_s"].map(json.dumps)
        frame["brick_fractions"] = frame["brick_fractions"].map(
            lambda f: None if f is None or (isinstance(f, float) and math.isnan(f))
            else json.dumps(f, sort_keys=True))
        out = Path(path)
        frame.to_parquet(out, index=False)
        return out
