"""Errors a user can act on, raised at the boundary before any Spark work."""

from __future__ import annotations


class InputError(Exception):
    """Bad input that the user must fix; the CLI turns it into exit code 2.

    The message always names the table (or file), the column (or key) and the problem, so that
    a nightly job's log says what to repair without a stack trace.
    """

    def __init__(self, table: str, column: str | None, problem: str) -> None:
        self.table = table
        self.column = column
        self.problem = problem
        where = f"{table}.{column}" if column else table
        super().__init__(f"{where}: {problem}")
