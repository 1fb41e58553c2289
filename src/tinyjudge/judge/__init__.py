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

from tinyjudge._faces import lazy_names

from ._config import JudgeConfig as JudgeConfig
from ._like import JudgeLike as JudgeLike
from ._open import PanelJudge as PanelJudge
from ._open import open_judge as open_judge
from ._panel import Panel as Panel
from ._panel import PanelJudgment as PanelJudgment
from ._panel import PanelMember as PanelMember
from ._panel import is_panel_label as is_panel_label
from ._panel import load_panel as load_panel
from ._parse import ParseFailure as ParseFailure
from ._parse import Verdict as Verdict
from ._parse import parse_verdict as parse_verdict
from ._prompt import build_messages as build_messages
from ._prompt import item_agents as item_agents
from ._prompt import verdict_schema as verdict_schema
from ._run import run_judge as run_judge
from ._runner import EndpointFailing as EndpointFailing
from ._runner import EndpointRefused as EndpointRefused
from ._runner import Judge as Judge
from ._runner import Judgment as Judgment
from ._runner import Summary as Summary
from ._window import Windowed as Windowed
from ._window import is_tool_error as is_tool_error
from ._window import window_messages as window_messages

_, __dir__ = lazy_names(__name__)
