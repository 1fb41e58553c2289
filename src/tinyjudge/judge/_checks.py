"""What a judge refuses before any call: options out of range, items of the wrong kind."""

from __future__ import annotations

from tinyjudge._numbers import check_number
from tinyjudge.errors import RubricError, UsageError
from tinyjudge.records import Item, check_unique_ids
from tinyjudge.rubric import Rubric

__all__ = ["NUMBERS", "check_numbers", "check_options", "check_items"]


# name -> (low, high, low_open, whole): the range of each number a judge takes
NUMBERS: dict[str, tuple[float, float | None, bool, bool]] = {
    "samples": (1, 1000, False, True),
    "concurrency": (1, 1024, False, True),
    "max_retries": (0, 100, False, True),
    "max_reply_mb": (0, 1024, True, False),
    "timeout": (0, 86_400, True, False),
    "stop_after": (0, None, False, True),
    "temperature": (0, 2, False, False),
    "max_tokens": (1, 1_000_000, False, True),
    "top_logprobs": (0, 20, False, True),
    "backoff": (0, 60, False, False),
    "price_in": (0, 100_000, False, False),
    "price_out": (0, 100_000, False, False),
}


def check_numbers(**values: float | None) -> None:
    """Each number a judge takes is finite and in its range (:data:`NUMBERS`); None passes.

    Raises:
        UsageError: the first one out of range, naming it, the value and the range.
    """
    for name, value in values.items():
        if value is not None:
            low, high, low_open, whole = NUMBERS[name]
            unit = " seconds" if name in {"timeout", "backoff"} else ""
            check_number(name, value, low, high, low_open=low_open, whole=whole, unit=unit)


def check_options(rubric: Rubric, model: str, *, prices: dict[str, float] | None) -> None:
    """Refuse what a :class:`~tinyjudge.judge.Judge` cannot run with besides its config.

    (Its numbers are checked where its :class:`~tinyjudge.judge.JudgeConfig` is made.)

    Raises:
        UsageError: an empty model, or prices with other keys or out of range.
        RubricError: a pairwise rubric without the labels 'a' and 'b'.
    """
    if not model:
        raise UsageError("model must not be empty; pass the endpoint's model name", param="model")
    if prices is not None and set(prices) - {"input", "output"}:
        raise UsageError(
            f"prices takes keys 'input' and 'output' (USD per 1M tokens), got {sorted(prices)}",
            param="prices",
        )
    if prices is not None:
        check_numbers(price_in=prices.get("input"), price_out=prices.get("output"))
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
