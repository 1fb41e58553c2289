"""The LLM judge: a versioned rubric applied by any OpenAI-compatible model.

``Judge(rubric, model=...).run(items)`` gives a :class:`Judgment`: one
:class:`~tinyjudge.records.Label` per item (it reads as their list) and the run's
figures. Each label holds the verdict, its distribution (from logprobs or samples),
a rationale, an optional hint, both orders for a pair; cached in SQLite so that a
re-run or a resumed run makes no call twice. ``window_messages`` says which part of a long
trajectory the judge sees (steps are 0-based indices of ``item.messages``).
``Panel`` runs several judges on the same items and adds their vote.
A :class:`JudgeConfig` holds a judge's options and refuses those that conflict;
``open_judge(config, rubric)`` opens what it names (an endpoint, a replay of
recorded labels, a local llama.cpp model or a panel) as one :class:`JudgeLike`: every
stage that asks a judge gets it there; ``run_judge(items, rubric, config)`` runs it.
The local servers for tests and the keyless demo are in :mod:`tinyjudge.testing`.
"""

from __future__ import annotations

from ._config import JudgeConfig
from ._like import JudgeLike
from ._open import PanelJudge, open_judge
from ._panel import (
    Panel,
    PanelJudgment,
    PanelMember,
    is_panel_label,
    load_panel,
)
from ._parse import ParseFailure, Verdict, parse_verdict
from ._prompt import build_messages, item_agents, verdict_schema
from ._run import run_judge
from ._runner import EndpointFailing, EndpointRefused, Judge, Judgment, Summary
from ._window import Windowed, is_tool_error, window_messages

__all__ = [
    "Judge",
    "JudgeConfig",
    "run_judge",
    "open_judge",
    "JudgeLike",
    "PanelJudge",
    "Judgment",
    "Summary",
    "EndpointFailing",
    "EndpointRefused",
    "Panel",
    "PanelJudgment",
    "PanelMember",
    "load_panel",
    "is_panel_label",
    "window_messages",
    "Windowed",
    "is_tool_error",
    "build_messages",
    "verdict_schema",
    "item_agents",
    "parse_verdict",
    "Verdict",
    "ParseFailure",
]
