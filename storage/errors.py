"""Errors raised for bad input data.

Every message names what is wrong, where (file, row, column when known) and how to fix it,
so a data engineer can act on it without reading the code.
"""

from __future__ import annotations


class DataError(ValueError):
    """Bad input data: unreadable, malformed or inconsistent with what was asked for."""

    def __init__(
        self, problem: str, *, path: object = None, row: object = None, column: object = None, fix: str | None = None
    ) -> None:
        where = []
        if path is not None:
            where.append(f"{path}")
        if row is not None:
            where.append(f"row {row}")
        if column is not None:
            where.append(f"column {column}")
        msg = ": ".join([", ".join(where), problem]) if where else problem
        if fix:
            msg += f". Fix: {fix}"
        super().__init__(msg)
        self.path, self.row, self.column, self.fix = path, row, column, fix


class UnknownLabelError(DataError):
    """A label that is not one of the declared classes: ``label`` (canonical text) and ``classes``,
    for a caller that words the fix its own way (a retrain: the champion's classes)."""

    def __init__(self, problem: str, *, label: object = None, classes: object = (), **where: object) -> None:
        super().__init__(problem, **where)  # type: ignore[arg-type]  # (path, row, column, fix)
        self.label, self.classes = label, classes
