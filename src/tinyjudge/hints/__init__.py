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

from tinyjudge._faces import lazy_names

from ._config import HintsConfig as HintsConfig
from ._dataset import HintRows as HintRows
from ._dataset import derangement as derangement
from ._dataset import hint_rows as hint_rows
from ._dataset import shuffle_hints as shuffle_hints
from ._dataset import trl_dataset as trl_dataset
from ._effect import HintEffect as HintEffect
from ._effect import hint_effect as hint_effect
from ._export import HintExport as HintExport
from ._export import export_hints as export_hints
from ._rows import Refused as Refused
from ._tool_errors import tool_error_hints as tool_error_hints

_, __dir__ = lazy_names(__name__)
