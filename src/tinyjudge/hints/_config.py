"""The options of the hints stage: one config dataclass, its flags derived by the CLI."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tinyjudge.config import Config, option

__all__ = ["HintsConfig", "HintFormat", "HintFrom"]

HintFormat = Literal["hints", "trl", "messages"]
HintFrom = Literal["hint", "rationale"]


@dataclass
class HintsConfig(Config):
    """How hinted labels become rows a trainer reads.

    Attributes:
        format: ``hints`` ({item_id, step, hint} per label), ``trl`` (``prompt``,
            ``privileged_context``, ``completion`` for TRL's self-distillation trainers)
            or ``messages`` (``trl`` plus ``hinted_prompt``, the hint as its own message).
        hint_from: the label's ``hint`` (a judge's), or its ``rationale`` (e.g.
            Who&When's people-written mistake reason) as the hint.
        control: ``shuffled`` permutes the hints across rows (a derangement: none
            is left on its own row), for the control run.
        seed: the shuffled control's permutation.
        max_hint_chars: a longer hint is refused (it would crowd the teacher's prompt).
        leak_ngram: a hint that shares a run of this many words with a reference or a
            ``metadata`` target (or holds a shorter target whole) is flagged as a leak.
        leaks: ``flag`` writes a leaking row and counts it; ``drop`` refuses it.
    """

    format: HintFormat = option(
        "hints", "hints: {item_id, step, hint}; trl: TRL rows; messages: trl + hinted_prompt"
    )
    hint_from: HintFrom = option("hint", "the hint text: the label's hint, or its rationale")
    control: Literal["none", "shuffled"] = option(
        "none", "shuffled: hints permuted across rows (a control run)"
    )
    seed: int = option(0, "seed of the shuffled control's permutation")
    max_hint_chars: int = option(4000, "refuse a hint longer than this", low=1, high=1_000_000)
    leak_ngram: int = option(
        5, "words shared in a row with a reference that flag a leak", low=1, high=100
    )
    leaks: Literal["flag", "drop"] = option(
        "flag", "flag: write leaking rows and count them; drop: refuse them"
    )
