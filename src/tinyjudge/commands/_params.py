"""``--param KEY=VALUE`` options: the strings a user typed, read as the values they mean."""

from __future__ import annotations

from typing import Any

from tinyjudge.errors import UsageError

__all__ = ["parse_params"]

_WORDS: dict[str, Any] = {"true": True, "false": False, "none": None}


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """``["epochs=3", "lr=5e-5", "balanced=false"]`` -> typed keyword options.

    ``true``, ``false`` and ``none`` (any case) are the constants, a number is an
    ``int`` or a ``float``, and anything else stays a string.

    Raises:
        UsageError: a pair without ``=`` or without a key.
    """
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--param expects KEY=VALUE, got {pair!r}", param="param")
        params[key.strip()] = _value(text)
    return params


def _value(text: str) -> Any:
    if text.lower() in _WORDS:
        return _WORDS[text.lower()]
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text
