"""Errors raised at tinyjudge's boundaries (load, construct, fit).

A :class:`TinyjudgeError` is a user's mistake or bad input: the CLI prints its
message as one line and exits with its ``exit_code`` (2; 1 for an endpoint that
stopped working), with no traceback.
"""

from __future__ import annotations

__all__ = ["TinyjudgeError", "DataError", "one_line"]


# Every character str.splitlines() breaks at, and the other C0 controls but tab: a
# message quotes file names, keys and values from the user's data, and must stay one line.
_ONE_LINE = {c: f"\\x{c:02x}" for c in [*range(0x09), *range(0x0B, 0x20), 0x7F, 0x85]} | {
    0x0A: "\\n",
    0x0D: "\\r",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def one_line(text: str) -> str:
    """``text`` with line breaks and control characters escaped (``\\n``, ``\\x1b``)."""
    return text.translate(_ONE_LINE)


class TinyjudgeError(ValueError):
    """Bad input or configuration; the message says what, where, and the fix.

    Its text is always one line: line breaks and control characters that came
    with the data it quotes are shown escaped (``\\n``, ``\\x1b``).
    """

    exit_code: int = 2

    def __str__(self) -> str:
        return one_line(super().__str__())


class DataError(TinyjudgeError):
    """A bad record in a data file, located by ``path:line``."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = path
        self.line = line
        self.detail = message
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")
