"""Errors raised at tinyjudge's boundaries (load, construct, fit).

A :class:`TinyjudgeError` is a user's mistake or bad input: the CLI prints its
message as one line and exits with its ``exit_code`` (2; 1 for an endpoint that
stopped working), with no traceback.
"""

from __future__ import annotations

__all__ = ["TinyjudgeError", "DataError"]


class TinyjudgeError(ValueError):
    """Bad input or configuration; the message says what, where, and the fix."""

    exit_code: int = 2


class DataError(TinyjudgeError):
    """A bad record in a data file, located by ``path:line``."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = path
        self.line = line
        self.detail = message
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")
