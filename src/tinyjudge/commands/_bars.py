"""Progress bars for long commands: rich bars on stderr when it is a terminal, else none."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import typer
from rich.console import Console

from tinyjudge._progress import reporting

from ._io import err

__all__ = ["progress_bars", "quiet_option", "shows_bars", "bar_console"]


def quiet_option() -> Any:
    """``--quiet``: no progress bars (they are off anyway when stderr is not a terminal)."""
    return typer.Option(False, "--quiet", "-q", help="no progress bars")


def shows_bars(quiet: bool) -> bool:
    """Whether bars are drawn: on a terminal, unless ``--quiet``."""
    return not quiet and err.is_terminal


def bar_console(quiet: bool) -> Console | bool:
    """Where a library call that takes ``progress=`` draws its bar: stderr, or False (none)."""
    return err if shows_bars(quiet) else False


@contextmanager
def progress_bars(quiet: bool) -> Iterator[None]:
    """Draw a bar for each long step the library reports while the block runs."""
    if not shows_bars(quiet):
        yield
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TimeRemainingColumn())  # fmt: skip
    with Progress(*columns, console=err, transient=True) as bars:

        def reporter(what: str, total: int | None) -> AbstractContextManager[Callable[[int], None]]:
            @contextmanager
            def bar() -> Iterator[Callable[[int], None]]:
                task = bars.add_task(what, total=total)
                try:
                    yield lambda k: bars.advance(task, k)
                finally:
                    bars.remove_task(task)

            return bar()

        with reporting(reporter):
            yield
