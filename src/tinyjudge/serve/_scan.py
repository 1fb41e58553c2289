"""Linear-time pieces of chat-template parsing: turns, tagged blocks, trailing tokens, JSON.

Every function here moves forward through the text with ``str.find`` and never
returns to a place it has left, so a rollout's text costs time in proportion to
its length whatever it holds. Regular expressions with a lazy ``.*?`` between
two markers, or a repeated group anchored at the end, cost time in proportion to
the square of it on text made of unclosed markers (``"<think>" * 40_000``) or
near-miss endings (``" <eos>" * 8_000 + "x"``): one small request held the
reward server for minutes.

>>> list(turns("<|im_start|>user\\nHi<|im_end|>", "<|im_start|>", "\\n", "<|im_end|>"))
[('user', 'Hi')]
>>> strip_trailing_tokens("Hello <eos><pad>\\n")
'Hello'
>>> tagged_blocks("a<b>1</b>c<b>2", "<b>", "</b>")
(['1'], 'ac<b>2')
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tinyjudge.errors import DataError

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_JSON_DIGITS",
    "turns",
    "strip_trailing_tokens",
    "tagged_blocks",
    "cut_from",
    "read_json",
]

# Longer role names are not roles: bounding them keeps a pattern whose prefix is empty
# ("{role}: {content}") linear on a long run of letters.
# (A bounded run of one character class: a regular expression that cannot backtrack.)
_ROLE_RUN = re.compile(r"[A-Za-z_]{1,64}")
_ROLE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
# End-of-sequence and padding tokens a rollout's text may end with, besides <|name|>.
_END_TOKENS = ("</s>", "<eos>", "<pad>", "<end_of_turn>")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz_")
# Deeper or longer than any tool call a policy writes; the limits keep what follows
# (pydantic, the content hash, the JSON answer) far from Python's recursion limit.
MAX_JSON_DEPTH = 64
MAX_JSON_DIGITS = 100


def _role_at(text: str, start: int, between: str) -> tuple[str, int] | None:
    """The role written at ``start`` and where the text after ``between`` begins, or None.

    Like ``[A-Za-z_]+`` followed by ``between`` in a regular expression: the longest
    run of role characters that ``between`` follows.
    """
    run = _ROLE_RUN.match(text, start)
    if run is None:
        return None
    # ``between`` can follow a shorter run only when it begins with a role character
    shortest = start + 1 if between[:1] in _ROLE_CHARS else run.end()
    for stop in range(run.end(), shortest - 1, -1):
        if text.startswith(between, stop):
            return text[start:stop], stop + len(between)
    return None


class _TurnStarts:
    """Finds, left to right, each place where ``before`` ROLE ``between`` is written."""

    def __init__(self, text: str, before: str, between: str) -> None:
        self.text, self.before, self.between = text, before, between
        self._found: tuple[int, str, int] | None = None  # (marker, role, content start)
        self._searched_to = 0  # no turn starts in [.., _searched_to) but _found

    def next_from(self, pos: int) -> tuple[int, str, int] | None:
        """The first turn start at ``pos`` or later: (its index, role, where content begins)."""
        if self._found is not None and self._found[0] >= pos:
            return self._found
        i = max(pos, self._searched_to)
        while True:
            at = self.text.find(self.before, i)
            if at < 0:
                self._found, self._searched_to = None, len(self.text) + 1
                return None
            role = _role_at(self.text, at + len(self.before), self.between)
            if role is not None:
                self._found, self._searched_to = (at, role[0], role[1]), at + 1
                return self._found
            i = at + 1


def turns(text: str, before: str, between: str, end: str) -> Iterator[tuple[str, str]]:
    """(role, content) of each turn of ``before{role}between{content}end`` in ``text``.

    A turn's content runs to its ``end`` marker, to the start of the next turn when
    the marker is missing, or to the end of the text. Text before the first turn is
    not a turn.
    """
    starts = _TurnStarts(text, before, between)
    next_end = -1  # where the next end marker is (cached: each search moves forward)
    pos = 0
    while (found := starts.next_from(pos)) is not None:
        _, role, content_start = found
        if end and next_end < content_start:
            next_end = text.find(end, content_start)
            if next_end < 0:
                next_end = len(text)
        following = starts.next_from(content_start)
        stop = len(text) if not end else next_end
        if following is not None and following[0] < stop:
            yield role, text[content_start : following[0]]
            pos = following[0]
        elif end and next_end < len(text):
            yield role, text[content_start:next_end]
            pos = next_end + len(end)
        else:
            yield role, text[content_start:]
            return


def strip_trailing_tokens(text: str) -> str:
    """``text`` without the end-of-sequence and padding tokens (and spaces) it ends with.

    The tokens are ``<|name|>`` (lower-case name) and those of ``_END_TOKENS``;
    text that ends with none of them comes back as it was.
    """
    end = len(text)
    stripped = False
    while True:
        cut = end
        while cut and text[cut - 1].isspace():
            cut -= 1
        token = next((t for t in _END_TOKENS if text.endswith(t, 0, cut)), None)
        if token is not None:
            end = cut - len(token)
        elif text.endswith("|>", 0, cut):
            name = cut - 2
            while name and text[name - 1] in _NAME_CHARS:
                name -= 1
            if name == cut - 2 or not text.endswith("<|", 0, name):
                break
            end = name - 2
        else:
            break
        stripped = True
    if not stripped:
        return text
    while end and text[end - 1].isspace():
        end -= 1
    return text[:end]


def tagged_blocks(text: str, open_tag: str, close_tag: str) -> tuple[list[str], str]:
    """The insides of each complete ``open_tag ... close_tag`` block, and the text outside them.

    An opening tag without a closing one after it is left in the text, as is
    everything after it.
    """
    inside: list[str] = []
    outside: list[str] = []
    pos = 0
    while (start := text.find(open_tag, pos)) >= 0:
        stop = text.find(close_tag, start + len(open_tag))
        if stop < 0:
            break
        outside.append(text[pos:start])
        inside.append(text[start + len(open_tag) : stop])
        pos = stop + len(close_tag)
    outside.append(text[pos:])
    return inside, "".join(outside)


def cut_from(text: str, marker: str) -> str:
    """``text`` up to the first ``marker`` and the newlines just before it; all of it without."""
    at = text.find(marker)
    if at < 0:
        return text
    while at and text[at - 1] == "\n":
        at -= 1
    return text[:at]


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_JSON_DIGITS:
        raise DataError(
            "tool call JSON", None, f"holds a number of {len(digits.lstrip('-'))} digits; "
            f"the limit is {MAX_JSON_DIGITS}"
        )  # fmt: skip
    return int(digits)


def _depth(value: Any) -> int:
    """How deep lists and objects nest in ``value`` (a scalar is 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list):
            deepest = max(deepest, depth + 1)
            if deepest > MAX_JSON_DEPTH:
                break
            stack.extend((child, depth + 1) for child in node)
    return deepest


def read_json(text: str) -> Any:
    """The JSON value of a tool call written in chat text; None when it is not JSON.

    Raises:
        DataError: JSON that nests deeper than :data:`MAX_JSON_DEPTH` or holds a
            number longer than :data:`MAX_JSON_DIGITS` digits: text no policy writes
            as a tool call, refused rather than read.
    """
    try:
        value = json.loads(text, parse_int=_bounded_int)
    except json.JSONDecodeError:
        return None
    except RecursionError:
        value = None
        depth = MAX_JSON_DEPTH + 1
    else:
        depth = _depth(value)
    if depth > MAX_JSON_DEPTH:
        raise DataError(
            "tool call JSON", None, f"nests lists and objects more than {MAX_JSON_DEPTH} "
            "levels deep, the limit"
        )  # fmt: skip
    return value
