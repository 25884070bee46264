"""CSV and Parquet: named columns, read chunk by chunk, never whole."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._base import Batch, BatchReader, ColumnLabel, as_float64


def _require(module: str, purpose: str) -> Any:
    try:
        return __import__(module, fromlist=["_"])
    except ImportError as exc:
        raise ImportError(
            f"{purpose} needs {module.split('.')[0]}: pip install 'rhuber[io]'"
        ) from exc


class _TableReader(BatchReader):
    """A reader whose columns have names, which become the estimator's feature names."""

    @property
    def feature_names(self) -> tuple[str, ...]:
        return tuple(str(c) for c in self.feature_columns)

    def _batch(self, columns: dict[ColumnLabel, Any], row_offset: int) -> Batch:
        """Assemble and check one batch from raw column arrays keyed by column name."""
        raw = [columns[c] for c in self.feature_columns]
        n = len(raw[0])
        X = np.empty((n, len(raw)), dtype=np.float64)
        for j, values in enumerate(raw):
            X[:, j] = as_float64(values)
        y = None
        if self.target is not None:
            raw.append(columns[self.target])
            y = as_float64(raw[-1])
        return self._checked(X, y, row_offset, raw)


class CSVReader(_TableReader):
    """A CSV file with a header line, parsed by pandas ``batch_size`` rows at a time.

    Blank lines are kept (they count as rows of missing values) so that data row ``r`` is
    always line ``r + 1`` of the file, which the error messages rely on.
    """

    format = "csv"

    def __init__(
        self,
        path: Path,
        *,
        target: str | None,
        features: Sequence[str] | None,
        batch_size: int,
        target_required: bool,
    ) -> None:
        super().__init__(path, batch_size)
        self._pd = _require("pandas", "reading CSV")
        self._sep = "\t" if path.name.lower().endswith((".tsv", ".tsv.gz")) else ","
        header = self._read(nrows=0)
        self.columns = tuple(str(c) for c in header.columns)
        self._select(target, features, target_required=target_required)

    def where(self, row: int) -> str:
        return f"line {row + 1} of the file, counting the header line"

    def _read(self, **kwargs: Any) -> Any:
        pd = self._pd
        try:
            return pd.read_csv(self.path, sep=self._sep, skip_blank_lines=False, **kwargs)
        except pd.errors.EmptyDataError:
            raise self.error("the file is empty; expected a header line of column names") from None
        except (UnicodeDecodeError, pd.errors.ParserError) as exc:
            raise self.error(f"cannot be read as CSV: {exc}") from None

    def __iter__(self) -> Iterator[Batch]:
        pd = self._pd
        chunks = self._read(chunksize=self.batch_size)
        row_offset = 0
        with chunks:
            while True:
                try:
                    chunk = next(chunks)
                except StopIteration:
                    return
                except pd.errors.ParserError as exc:
                    raise self._parser_error(exc) from None
                except UnicodeDecodeError as exc:
                    raise self.error(f"is not UTF-8 text ({exc.reason})") from None
                if len(chunk) == 0:  # a header line and no data: pandas yields one empty chunk
                    return
                yield self._batch({str(c): chunk[c].to_numpy() for c in chunk.columns}, row_offset)
                row_offset += len(chunk)

    def _parser_error(self, exc: Exception) -> Exception:
        # pandas words a ragged row as "Expected 3 fields in line 8, saw 4": turn it into our
        # row numbering so that every message counts rows the same way.
        match = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if match is None:
            return self.error(f"cannot be read as CSV: {exc}")
        expected, line, seen = (int(g) for g in match.groups())
        return self.error(
            f"wrong shape: {seen} fields where the header has {expected}", row=line - 1
        )


class ParquetReader(_TableReader):
    """A Parquet file, read by pyarrow ``batch_size`` rows at a time (row groups are split)."""

    format = "parquet"

    def __init__(
        self,
        path: Path,
        *,
        target: str | None,
        features: Sequence[str] | None,
        batch_size: int,
        target_required: bool,
    ) -> None:
        super().__init__(path, batch_size)
        self._pa = _require("pyarrow", "reading Parquet")
        self._pq = _require("pyarrow.parquet", "reading Parquet")
        schema, self.n_rows = self._schema()
        self.columns = tuple(schema.names)
        # Parquet allows two columns of one name; a column is chosen by its name here, so such
        # a name would be ambiguous (pyarrow looks it up as absent; found by fuzz/).
        repeated = sorted({name for name in self.columns if self.columns.count(name) > 1})
        if repeated:
            raise self.error(
                "has more than one column named " + " and ".join(repr(n) for n in repeated)
                + "; every column needs a name of its own"
            )
        self._select(target, features, target_required=target_required)
        for name in self._used_columns():
            kind = schema.field(name).type
            if not self._readable_type(kind):
                raise self.error(f"has Parquet type {kind}, not numbers", column=name)

    def _open(self) -> Any:
        try:
            return self._pq.ParquetFile(self.path)
        except (self._pa.ArrowException, OSError, ValueError) as exc:
            # ValueError: a column name that is not UTF-8 (UnicodeDecodeError; found by fuzz/).
            raise self.error(f"cannot be read as Parquet: {exc}") from None

    def _schema(self) -> tuple[Any, int]:
        file = self._open()
        try:
            return file.schema_arrow, file.metadata.num_rows
        except (self._pa.ArrowException, OSError, ValueError) as exc:
            raise self.error(f"cannot be read as Parquet: {exc}") from None

    def _used_columns(self) -> list[str]:
        target = [] if self.target is None else [self.target]
        return [str(c) for c in (*self.feature_columns, *target)]

    def _readable_type(self, kind: Any) -> bool:
        types = self._pa.types
        # Text columns are parsed like CSV cells, so a stray word is reported with its row.
        return (
            types.is_integer(kind)
            or types.is_floating(kind)
            or types.is_boolean(kind)
            or types.is_decimal(kind)
            or types.is_string(kind)
            or types.is_large_string(kind)
        )

    def __iter__(self) -> Iterator[Batch]:
        pa = self._pa
        row_offset = 0
        batches = self._open().iter_batches(
            batch_size=self.batch_size, columns=self._used_columns()
        )
        while True:
            try:
                record_batch = next(batches)
            except StopIteration:
                return
            except (pa.ArrowException, OSError) as exc:  # pyarrow's IOError is only an OSError
                raise self.error(
                    f"the file is damaged from here on: {exc}", row=row_offset + 1
                ) from None
            columns = {}
            for name in record_batch.schema.names:
                array = record_batch.column(name)
                try:
                    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
                        # Nulls become NaN in a float column, and are then reported as missing.
                        # Unsafe: an integer beyond 2**53 rounds, as NumPy's astype and the CSV
                        # reader round it, instead of failing the cast (found by fuzz/).
                        array = array.cast(pa.float64(), safe=False)
                    columns[name] = array.to_numpy(zero_copy_only=False)
                except pa.ArrowException as exc:
                    raise self.error(f"cannot be read as numbers: {exc}", row=row_offset + 1,
                                     column=name) from None
            yield self._batch(columns, row_offset)
            row_offset += record_batch.num_rows
