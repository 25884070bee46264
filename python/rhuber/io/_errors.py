"""The one exception the readers raise for anything wrong with a data file."""

from __future__ import annotations

from os import PathLike


class DataFileError(ValueError):
    """A data file cannot be read as a regression dataset; the message says where and why.

    Parameters
    ----------
    path : path-like
        The file.
    problem : str
        What is wrong, in the user's words ("non-numeric value 'abc'").
    row : int, optional
        The 1-based data row (the first row after a CSV header is row 1).
    column : str or int, optional
        The column name (tables) or 0-based column index (arrays).
    where : str, optional
        How to find ``row`` in this kind of file ("line 8 of the file"); added to the message.

    Attributes
    ----------
    path, row, column, problem
        As given, for callers that want more than the message.
    """

    def __init__(
        self,
        path: str | PathLike[str],
        problem: str,
        *,
        row: int | None = None,
        column: str | int | None = None,
        where: str | None = None,
    ) -> None:
        self.path = str(path)
        self.problem = problem
        self.row = row
        self.column = column
        parts = [self.path]
        if row is not None:
            parts.append(f"row {row}" + (f" ({where})" if where else ""))
        if column is not None:
            parts.append(f"column {column!r}")
        super().__init__(f"{', '.join(parts)}: {problem}")
