"""The one way a stage gets a judge: ``open_judge(config, rubric)``, whatever kind it names.

Every stage that asks a judge (the judge command, the cascade, the exploit's
re-check and curve, the server's audit) holds a :class:`JudgeConfig` and opens it
here, so an endpoint, a replay of recorded labels, a local llama.cpp model and a
panel work wherever a judge is asked for, and a new kind is added in one place.
What a stage needs of the judge it gets is :class:`JudgeLike`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import fields
from typing import Any

from tinyjudge.errors import UsageError
from tinyjudge.records import Item
from tinyjudge.rubric import Rubric, load_rubric

from ._config import JudgeConfig
from ._like import JudgeLike
from ._panel import Panel, PanelJudgment, load_panel
from ._runner import Judge
from ._summary import Judgment, Summary

__all__ = ["open_judge", "PanelJudge"]


class PanelJudge:
    """A :class:`Panel` seen as one judge: ``run`` gives the panel's labels only.

    Args:
        panel: the panel.
    """

    def __init__(self, panel: Panel) -> None:
        self.panel = panel
        self.rubric = panel.rubric
        self.model = panel.source.split(":", 1)[-1]

    @property
    def source(self) -> str:
        """The panel's source (``judge:panel`` unless named)."""
        return self.panel.source

    def run_panel(
        self, items: Sequence[Item], on_member: Callable[[Judgment], None] | None = None
    ) -> PanelJudgment:
        """Every member's judgment and the vote (what ``tinyjudge judge`` writes)."""
        return self.panel.run(items, progress=on_member)

    def run(
        self, items: Iterable[Item], on_progress: Callable[[int, int], None] | None = None
    ) -> Judgment:
        """The panel's label per item, in input order; the members' figures summed.

        ``on_progress`` hears the share of the panel's work done as each member finishes.
        """
        todo = list(items)
        finished = [0]

        def member_done(_: Judgment) -> None:
            finished[0] += 1
            if on_progress is not None:
                share = finished[0] * len(todo) // max(len(self.panel.judges), 1)
                on_progress(min(share, len(todo)), len(todo))

        got = self.run_panel(todo, member_done)
        total = Summary()
        for judgment in got.members.values():
            for f in fields(Summary):
                value = getattr(judgment.summary, f.name)
                if isinstance(value, int | float) and f.name != "cost":
                    setattr(total, f.name, getattr(total, f.name) + value)
            if judgment.summary.cost is not None:
                total.cost = (total.cost or 0.0) + judgment.summary.cost
        total.items = len(got.panel)
        total.ok = sum(1 for lab in got.panel if lab.status == "ok")
        total.unscored = len(got.panel) - total.ok
        return Judgment(got.panel, self.source, self.rubric.id, self.rubric.hash, total)


@contextmanager
def open_judge(
    config: JudgeConfig,
    rubric: Rubric | str | os.PathLike[str],
    *,
    cache: str | os.PathLike[str] | None = None,
    items: Sequence[Item] | None = None,
) -> Iterator[JudgeLike]:
    """The judge ``config`` names, ready while the block runs.

    An endpoint (``model`` at ``base_url``, the key in ``$api_key_env``), a replay
    of recorded labels served on loopback (it needs the ``items`` it will be asked
    about), a local llama.cpp model (its server lives as long as the block) or a
    panel of judges. The options ``config`` leaves None take the endpoint's (or
    the local model's) defaults.

    Example:
        >>> with open_judge(JudgeConfig(model="gpt-4o"), "compliance") as judge:  # doctest: +SKIP
        ...     labels = judge.run(items)

    Args:
        config: the judge's options.
        rubric: a :class:`Rubric`, a built-in rubric name or a YAML path.
        cache: a SQLite file of finished judgments; None: no cache, no resume.
        items: the items the judge will see (a replay matches requests to them).

    Raises:
        UsageError: no model to judge with, or a replay without the items.
    """
    config.check_runnable()
    rub = load_rubric(rubric)
    common: dict[str, Any] = {"cache": cache, "prices": config.prices, **config.judge_options()}
    with ExitStack() as stack:
        judge: JudgeLike
        if config.panel is not None:
            # each member is a config of its own, opened here as any judge is (its fields
            # over the panel's options), so a member may be a local model or a replay
            members = load_panel(config.panel)
            for member in members:
                member.check_reachable()
            opened = [
                stack.enter_context(
                    open_judge(member.judge_config(config), rub, cache=cache, items=items)
                )
                for member in members
            ]
            panel = Panel(rub, opened, source=config.panel_source, vote=config.panel_vote)
            judge = PanelJudge(panel)
        elif config.local:
            from .local import local_judge

            judge = stack.enter_context(
                local_judge(
                    rub, gguf=config.gguf, threads=config.threads, n_ctx=config.n_ctx,
                    model=config.model, **common,
                )
            )  # fmt: skip
        elif config.replay is not None:
            if items is None:
                raise UsageError(
                    "a replay answers for the items it is given, and these are not known "
                    "in advance here: give model and base_url",
                    param="replay",
                    also=("model", "base_url"),
                )
            from ._replay import replay_server

            server = stack.enter_context(
                replay_server(config.replay, config.replay_source, items=items, rubric=rub)
            )
            model = config.model or "replay-" + config.replay_source.split(":", 1)[-1]
            judge = Judge(rub, model, base_url=server.base_url, api_key="replay", **common)
        else:
            api_key = os.environ.get(config.api_key_env) or None
            judge = Judge(rub, config.model, base_url=config.base_url, api_key=api_key, **common)
        yield judge
