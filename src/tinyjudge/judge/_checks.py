"""What a judge refuses before any call: options out of range, items of the wrong kind."""

from __future__ import annotations

from tinyjudge.errors import RubricError, UsageError
from tinyjudge.records import Item, check_unique_ids
from tinyjudge.rubric import Rubric

from ._client import RESPONSE_FORMATS, ResponseFormat

__all__ = ["check_options", "check_items"]


def check_options(
    rubric: Rubric,
    model: str,
    *,
    samples: int,
    concurrency: int,
    response_format: ResponseFormat,
    max_retries: int,
    max_reply_mb: float,
    timeout: float,
    stop_after: int,
    prices: dict[str, float] | None,
) -> None:
    """Refuse the options a :class:`~tinyjudge.judge.Judge` cannot run with.

    Raises:
        UsageError: an option out of range (the message names it and the value).
        RubricError: a pairwise rubric without the labels 'a' and 'b'.
    """
    if not model:
        raise UsageError("model must not be empty; pass the endpoint's model name")
    for name, value, low in (("samples", samples, 1), ("concurrency", concurrency, 1)):
        if value < low:
            raise UsageError(f"{name} must be >= {low}, got {value}", param=name)
    if response_format not in RESPONSE_FORMATS:
        raise UsageError(
            f"response_format must be one of {list(RESPONSE_FORMATS)}, got {response_format!r}"
        )
    if max_retries < 0:
        raise UsageError(f"max_retries must be >= 0, got {max_retries}", param="max_retries")
    if not max_reply_mb > 0:
        raise UsageError(f"max_reply_mb must be > 0, got {max_reply_mb}", param="max_reply_mb")
    if not timeout > 0:
        raise UsageError(f"timeout must be > 0 seconds, got {timeout}", param="timeout")
    if stop_after < 0:
        raise UsageError(f"stop_after must be >= 0, got {stop_after}")
    if prices is not None and set(prices) - {"input", "output"}:
        raise UsageError(
            f"prices takes keys 'input' and 'output' (USD per 1M tokens), got {sorted(prices)}"
        )
    if rubric.type == "pairwise" and not {"a", "b"} <= set(rubric.label_names):
        raise RubricError(
            f"pairwise rubric {rubric.id!r} needs labels 'a' and 'b' (and optionally "
            f"'tie'), got {rubric.label_names}"
        )


def check_items(items: list[Item], rubric: Rubric) -> None:
    """Refuse duplicate ids and items of the other kind than the rubric (single, pairwise)."""
    check_unique_ids(items)
    pairwise_rubric = rubric.type == "pairwise"
    for item in items:
        if item.is_pairwise != pairwise_rubric:
            kind = "pairwise" if item.is_pairwise else "single"
            raise UsageError(
                f"item {item.id!r} is a {kind} item but rubric {rubric.id!r} is "
                f"{rubric.type}; use a rubric of the item's kind"
            )
