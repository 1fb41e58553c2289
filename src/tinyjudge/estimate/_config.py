"""The estimate stage's config, light to import: ``tinyjudge estimate`` derives its flags
from it when the CLI starts."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from tinyjudge.config import Config, option
from tinyjudge.errors import UsageError

__all__ = ["EstimateConfig", "Method", "METHODS"]

Method = Literal["ppi++", "ppi", "stratified"]
METHODS: tuple[str, ...] = ("ppi++", "ppi", "stratified")


@dataclass
class EstimateConfig(Config):
    """Options of a rate estimate from a cheap source plus a few human labels
    (``tinyjudge estimate``'s flags, one per field).

    >>> sources = {"cheap": "judge:gpt-4", "human": "human:final"}
    >>> EstimateConfig(**sources).method
    'ppi++'
    >>> EstimateConfig(**sources, method="bayes")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tinyjudge.errors.UsageError: unknown method 'bayes' (method: choose one of [...])
    """

    cheap: str = option(help="the cheap source, e.g. judge:gpt-4")
    human: str = option(help="the human source, e.g. human:final")
    by: str | None = option(None, "group by this item key, e.g. metadata.answering_model")
    compare: tuple[str, str] | None = option(
        None, "two groups A B (values of the grouping key): also A's rate minus B's"
    )
    level: float = option(0.9, "coverage of the intervals", low=0.0, high=1.0)
    method: str = option("ppi++", "ppi++ (tuned weight), ppi or stratified")
    n_strata: int = option(5, "bins of the stratified design", low=1)
    human_fraction: float | None = option(
        None, "keep this share of the human labels, drawn at random (0 < share <= 1)"
    )
    seed: int = option(0, "seed of the human share's draw")
    cluster: str | None = option(
        None,
        "item key of dependent items, e.g. metadata.dialogue_id: cluster-robust intervals "
        "(needs the items)",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.method not in METHODS:
            raise UsageError(
                f"unknown method {self.method!r} (method: choose one of {list(METHODS)})",
                param="method",
            )
        share = self.human_fraction
        if share is not None and not (math.isfinite(share) and 0.0 < share <= 1.0):
            raise UsageError(
                f"human_fraction must be in (0, 1], got {share}", param="human_fraction"
            )
