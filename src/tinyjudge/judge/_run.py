"""One judge run as its :class:`JudgeConfig` says: an endpoint, a replay, a local model, a panel."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console

from tinyjudge.records import Item
from tinyjudge.rubric import Rubric

from ._config import JudgeConfig
from ._open import PanelJudge, open_judge
from ._panel import PanelJudgment
from ._runner import Judge
from ._summary import Judgment

__all__ = ["run_judge"]


def run_judge(
    items: Sequence[Item],
    rubric: Rubric | str | os.PathLike[str],
    config: JudgeConfig | None = None,
    *,
    cache: str | os.PathLike[str] | None = None,
    progress: bool | Console = False,
    on_member: Callable[[Judgment], None] | None = None,
    **options: Any,
) -> Judgment | PanelJudgment:
    """Judge ``items`` the way ``config`` says, and return the labels and the run's figures.

    With ``panel`` every member judges the items (one cache, resumed per member) and
    their vote is added (a :class:`PanelJudgment`); with ``replay`` recorded labels
    answer over HTTP (no key); with ``local`` a llama.cpp server runs while the items
    are judged (the local defaults for the options left None); else ``model`` at
    ``base_url`` with the key in ``$api_key_env``.

    Example:
        >>> config = JudgeConfig(replay=Path("labels.jsonl"))  # doctest: +SKIP
        >>> judgment = run_judge(items, "compliance", config)  # doctest: +SKIP

    Args:
        items: the items.
        rubric: a :class:`Rubric`, a built-in rubric name or a YAML path.
        config: the options; keyword ``options`` (its fields) go over it.
        cache: a SQLite file of finished judgments; None: no cache, no resume.
        progress: show a progress bar (on this console, if one is given); not for a panel.
        on_member: with a panel, called with each member's judgment as it finishes.

    Raises:
        UsageError: options that do not go together, or no model to judge with.
    """
    config = JudgeConfig.from_options(config, **options)
    items = list(items)
    with open_judge(config, rubric, cache=cache, items=items) as judge:
        if isinstance(judge, PanelJudge):
            return judge.run_panel(items, on_member)
        if isinstance(judge, Judge):  # an endpoint, a replay or a local model
            return judge.run(items, progress=progress)
        return judge.run(items)
