"""One judge run as its :class:`JudgeConfig` says: an endpoint, a replay, a local model, a panel."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any

from rich.console import Console

from tinyjudge.records import Item
from tinyjudge.rubric import Rubric, load_rubric

from ._config import JudgeConfig
from ._panel import Panel, PanelJudgment, load_panel
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
    config.check_runnable()
    rub = load_rubric(rubric)
    items = list(items)
    common: dict[str, Any] = {"cache": cache, "prices": config.prices, **config.judge_options()}
    if config.panel is not None:
        members = load_panel(config.panel)
        panel = Panel(rub, members, source=config.panel_source, vote=config.panel_vote, **common)
        return panel.run(items, progress=on_member)
    with ExitStack() as stack:
        judge: Judge
        if config.local:
            from .local import local_judge

            judge = stack.enter_context(
                local_judge(
                    rub, gguf=config.gguf, threads=config.threads, n_ctx=config.n_ctx,
                    model=config.model, **common,
                )
            )  # fmt: skip
        elif config.replay is not None:
            from .replay import replay_server

            server = stack.enter_context(
                replay_server(config.replay, config.replay_source, items=items, rubric=rub)
            )
            model = config.model or "replay-" + config.replay_source.split(":", 1)[-1]
            judge = Judge(rub, model, base_url=server.base_url, api_key="replay", **common)
        else:
            api_key = os.environ.get(config.api_key_env) or None
            judge = Judge(rub, config.model, base_url=config.base_url, api_key=api_key, **common)
        return judge.run(items, progress=progress)
