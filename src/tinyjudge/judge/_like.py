"""What a stage needs of a judge, whatever its kind: :class:`JudgeLike`.

Its own module, below the panel and the opener, so a panel holds members of any kind
(an endpoint, a local model, a replay) and :func:`~tinyjudge.judge.open_judge` gives
one, without an import in a circle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, runtime_checkable

from tinyjudge.records import Item
from tinyjudge.rubric import Rubric

from ._summary import Judgment

__all__ = ["JudgeLike"]


@runtime_checkable
class JudgeLike(Protocol):
    """What a stage needs of a judge: its rubric, its name and source, and ``run``.

    :class:`~tinyjudge.judge.Judge` is one; so is what
    :func:`~tinyjudge.judge.open_judge` gives for a local model, a replay or a panel.
    ``run`` returns one label per item, in input order.
    """

    rubric: Rubric
    model: str

    @property
    def source(self) -> str:
        """The labels' source, e.g. ``judge:gpt-4o``."""
        ...

    def run(
        self, items: Iterable[Item], on_progress: Callable[[int, int], None] | None = None
    ) -> Judgment:
        """One label per item, in input order, with the run's figures.

        ``on_progress(done, total)`` is told as the work goes (a progress bar's step).
        """
        ...
