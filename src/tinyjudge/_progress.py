"""Progress of long work: said by the library, shown by the command line.

Library code wraps a long loop in :func:`progress` and calls the function it gets
with each step's size; nothing is shown unless someone installed a reporter with
:func:`reporting` (the CLI does, drawing rich bars on a terminal). So the library
stays quiet in notebooks and tests, and a command shows where a 12-minute embed is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

__all__ = ["Reporter", "progress", "reporting"]

# (what, total or None) -> a context giving the function that advances by k steps
Reporter = Callable[[str, int | None], AbstractContextManager[Callable[[int], None]]]

_reporters: list[Reporter] = []
_lock = threading.Lock()


@contextmanager
def progress(what: str, total: int | None = None) -> Iterator[Callable[[int], None]]:
    """A function to call with each finished step's size, shown by the reporter if any.

    Args:
        what: what is being done (``embedding 2,140 texts``).
        total: the steps in all (None: not known beforehand).
    """
    with _lock:
        reporter = _reporters[-1] if _reporters else None
    if reporter is None:
        yield lambda k: None
        return
    with reporter(what, total) as advance:
        yield advance


@contextmanager
def reporting(reporter: Reporter) -> Iterator[None]:
    """Show the library's progress through ``reporter`` while the block runs."""
    with _lock:
        _reporters.append(reporter)
    try:
        yield
    finally:
        with _lock:
            _reporters.remove(reporter)
