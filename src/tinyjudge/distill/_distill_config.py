"""distill's own options (beside the tier's, the hardening's and the ensemble's), light to
import: ``tinyjudge distill`` derives its flags from them when the CLI starts."""

from __future__ import annotations

from dataclasses import dataclass

from tinyjudge._people_methods import DEFAULT_PEOPLE_METHOD, PEOPLE_METHODS
from tinyjudge.config import Config, option

from ._tiers import DEFAULT_TIER, chosen_tiers

__all__ = ["DistillConfig"]

_TIERS_HELP = " | ".join(f"{n} ({t.help})" if t.help else n for n, t in chosen_tiers().items())
_PEOPLE_HELP = (
    " | ".join(f"{name} ({how.brief})" for name, how in PEOPLE_METHODS.items())
    + " (see docs/distill.md)"
)


@dataclass
class DistillConfig(Config):
    """What :func:`~tinyjudge.distill.distill` learns from and how it splits, one field per
    keyword of its own (``tinyjudge distill``'s flags; the tier's options are its config's).

    >>> DistillConfig(source="judge:gpt-4", human="human:final").human_method
    'auto'
    """

    source: str | None = option(
        None, "the teacher, e.g. judge:gpt-4 (default: the labels' one source)"
    )
    tier: str | None = option(
        None, f"{_TIERS_HELP} (default: the tier config's, else {DEFAULT_TIER})"
    )
    group_by: str | None = option(
        None, "kept on one side of the split: an item key, e.g. metadata.prompt_id"
    )
    val_fraction: float = option(0.2, "share of the groups held out for validation")
    split_seed: int = option(0, "seed of the split")
    name: str | None = option(None, "the model's name (its labels get source rm:<name>)")
    human: str | None = option(
        None, "people's labels too (e.g. human:final): learn to predict them"
    )
    human_method: str = option(DEFAULT_PEOPLE_METHOD, _PEOPLE_HELP)
    human_weight: float | None = option(
        None, "weighted: one person's row in judge rows (default: even)"
    )
    raters: list[str] = option(
        default_factory=list,
        help="dawid-skene: a human rater source, repeatable (default: human)",
        aliases=("rater",),
    )
