"""Errors raised at tinyjudge's boundaries (load, construct, fit).

A :class:`TinyjudgeError` is a user's mistake or bad input: the CLI prints its
message as one line and exits with its ``exit_code`` (2; 1 for an endpoint that
stopped working), with no traceback.

A caller catches a kind of failure by its class::

    TinyjudgeError (ValueError)
    ├── DataError        a bad record or data file (``path:line``)
    ├── RubricError      a rubric that cannot be loaded or is not valid
    ├── ModelDirError    a model directory that is missing, edited, or of another format
    ├── EndpointError    the judge's endpoint failed (exit 1: not the user's input)
    ├── StorageError     a store or output that cannot be written (full disk, locked, read-only)
    │   └── DiskFull     a write that ran out of space (also an ``OSError``, ``ENOSPC``)
    └── UsageError       a parameter value or combination that is not allowed

Messages from the library name Python parameters (``group_by``), never CLI flags:
``commands/`` alone speaks in flags.
"""

from __future__ import annotations

import errno as _errno

__all__ = [
    "TinyjudgeError",
    "DataError",
    "RubricError",
    "ModelDirError",
    "EndpointError",
    "StorageError",
    "DiskFull",
    "UsageError",
    "one_line",
]


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


class RubricError(TinyjudgeError):
    """A rubric (built-in name, YAML file or stored copy) that cannot be used."""


class ModelDirError(TinyjudgeError):
    """A model directory that is missing, incomplete, edited, or of another format."""


class EndpointError(TinyjudgeError):
    """The judge's endpoint failed; not the user's input, so the CLI exits 1."""

    exit_code = 1


class StorageError(TinyjudgeError):
    """A cache, store or output that cannot be written or read (full, locked, read-only)."""


class DiskFull(StorageError, OSError):
    """A write that failed because the disk (or a quota) is full.

    Also an ``OSError`` with ``errno`` ``ENOSPC``, so code that catches the
    operating system's error for a full disk catches this one too.

    Args:
        message: the file, what failed, and the fix.
        path: the output that could not be written.
    """

    def __init__(self, message: str, path: str) -> None:
        StorageError.__init__(self, message)
        self.errno = _errno.ENOSPC
        self.strerror = message
        self.filename = path

    def __str__(self) -> str:
        return one_line(str(self.args[0]))


class UsageError(TinyjudgeError):
    """A parameter value or a combination of parameters that is not allowed.

    Args:
        message: what was wrong, naming Python parameters (``max_length``).
        param: the parameter at fault, when there is one, so a front end can
            name its own spelling of it (``commands/`` maps it to a flag).
        also: other parameters the message names as the fix (``pass token``),
            which a front end spells its own way too.
    """

    def __init__(
        self, message: str, param: str | None = None, *, also: tuple[str, ...] = ()
    ) -> None:
        self.param = param
        self.also = also
        super().__init__(message)
