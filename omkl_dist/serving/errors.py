"""The one error a request gets: an HTTP status and the CLI's one-line message (where: problem. Fix: fix)."""

from __future__ import annotations

from omkl_dist.storage.errors import DataError


class BadRequest(Exception):
    """A request refused before anything reaches the model: ``status`` (4xx) and a one-line message
    naming the problem, where it is (the endpoint, row, column) and the fix."""

    def __init__(
        self, status: int, problem: str, *, where: str, row: int | None = None, column: object = None, fix: str
    ) -> None:
        # DataError's layout is the command line's: "where, row r, column c: problem. Fix: fix"
        super().__init__(str(DataError(problem, path=where, row=row, column=column, fix=fix)))
        self.status = status
        self.message = str(self)
