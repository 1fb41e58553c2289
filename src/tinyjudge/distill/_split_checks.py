"""Warnings about a train/validation split whose validation figures would mislead.

Two ways a held-out agreement looks better (or rougher) than it is, both common
with a user's own transcripts:

- a validation split of fewer than :data:`MIN_VALIDATION` items, whose kappa
  moves by a tenth from one item to the next;
- items that share a prompt or task (``metadata.prompt_id``, ``metadata.task``...)
  on both sides of a split made without ``group_by``: the model meets near
  copies of its training items in validation, and new prompts will do worse.

They are :class:`SplitWarning` s (Python's ``warnings``), so a script sees them,
a test can turn them into errors, and ``tinyjudge distill`` prints them.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Literal

import numpy as np

from tinyjudge.records import Item

__all__ = ["MIN_VALIDATION", "SHARED_FIELDS", "SplitWarning", "check_split"]

MIN_VALIDATION = 50
# metadata fields that name the prompt or task an item answers
SHARED_FIELDS = (
    "prompt_id", "prompt", "task_id", "task", "instance_id", "problem_id", "question_id",
    "conversation_prefix_id", "dialogue_id", "sample_id",
)  # fmt: skip


class SplitWarning(UserWarning):
    """A split whose validation figures may mislead.

    Attributes:
        kind: ``small`` (few validation items) or ``shared`` (a shared field split).
        count: validation items (``small``) or field values on both sides (``shared``).
        key: the shared field, e.g. ``metadata.prompt_id`` (``shared`` only).
    """

    def __init__(self, kind: Literal["small", "shared"], count: int, key: str = "") -> None:
        self.kind, self.count, self.key = kind, count, key
        super().__init__(self.describe("val_fraction", f"group_by={key!r}"))

    def describe(self, more_held_out: str, group: str) -> str:
        """The warning, naming the two ways out as a caller spells them."""
        if self.kind == "small":
            return (
                f"validation holds {self.count} items (fewer than {MIN_VALIDATION}): its "
                f"agreement figures are rough; label more items or raise {more_held_out}"
            )
        return (
            f"{self.count} values of {self.key} are on both sides of the train/validation "
            "split: items that share one are near copies, so validation looks better than new "
            f"ones will; pass {group}"
        )


def check_split(
    items: Sequence[Item], train: np.ndarray, val: np.ndarray, group_by: str | None
) -> list[SplitWarning]:
    """Warn (and return the warnings) about a split of ``items`` into ``train`` and ``val``."""
    found = []
    if len(val) < MIN_VALIDATION:
        found.append(SplitWarning("small", len(val)))
    if group_by is None:
        for field in SHARED_FIELDS:
            sides: dict[str, set[bool]] = {}
            for side, indices in ((True, train), (False, val)):
                for i in indices:
                    value = items[int(i)].metadata.get(field)
                    if isinstance(value, (str, int)) and not isinstance(value, bool):
                        sides.setdefault(str(value), set()).add(side)
            split = sum(len(s) == 2 for s in sides.values())
            if split:
                found.append(SplitWarning("shared", split, f"metadata.{field}"))
                break  # one is enough to say what to do
    for warning in found:
        warnings.warn(warning, stacklevel=3)
    return found
