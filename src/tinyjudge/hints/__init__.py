"""Step-level hints as textual feedback for RL, and as rows self-distillation trainers read.

A judge that localises a failure (``failure_step``, ``tool_error_recovery``) also
writes a hint: what the agent should have been told at that step. This package

- exports the hints with the step they target (:func:`export_hints`, ``{item_id, step, hint}``);
- turns each hinted step into a row for TRL's ``SDPOTrainer`` / ``SDFTTrainer``
  (:func:`hint_rows`, :func:`trl_dataset`): the conversation before the answer the hint
  targets as ``prompt`` (ending on a user turn: trailing tool results are folded into
  one), the hint as ``privileged_context``, the given answer as ``completion``; with
  checks for hints that copy the expected answer, and a shuffled-hint control;
- measures what a hint changes in a policy (:func:`hint_effect`): the per-token
  log-probability difference of the given answer with and without the hint.
"""

from ._config import HintsConfig
from ._dataset import HintRows, derangement, hint_rows, shuffle_hints, trl_dataset
from ._effect import HintEffect, hint_effect
from ._export import HintExport, export_hints
from ._rows import Refused
from ._tool_errors import tool_error_hints

__all__ = [
    "HintsConfig",
    "HintRows",
    "Refused",
    "hint_rows",
    "trl_dataset",
    "derangement",
    "shuffle_hints",
    "hint_effect",
    "HintEffect",
    "HintExport",
    "export_hints",
    "tool_error_hints",
]
