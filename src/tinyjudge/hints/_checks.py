"""Whether a hint gives the answer away: word n-grams shared with what the item expects.

A hint that copies the expected answer (a rubric reference, the task's ground truth
or expected actions in ``metadata``) teaches the teacher to copy, not to recover; the
trained policy then learns an answer it will never be told again.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from tinyjudge.records import Item
from tinyjudge.rubric import Rubric

__all__ = ["METADATA_TARGETS", "leak_targets", "copied_target"]

# metadata keys that hold what the item expects (the importers' names)
METADATA_TARGETS = (
    "ground_truth",
    "expected_actions",
    "expected_answer",
    "expected_output",
    "answer",
    "reference",
    "target",
    "gold",
)
_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    """The words of ``text`` as compared: NFKC-normalised (full-width and compatibility
    forms folded), format characters (zero-width spaces and joiners, soft hyphens,
    direction marks) removed, case-folded. A leak spelled with ``c\u200bhn`` or
    ``ＣＨＮ`` is still the leak."""
    plain = unicodedata.normalize("NFKC", text)
    plain = "".join(c for c in plain if unicodedata.category(c) != "Cf")
    return [w.casefold() for w in _WORD.findall(plain)]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def leak_targets(item: Item, rubric: Rubric | None) -> dict[str, str]:
    """What the item expects, by where it came from (``metadata.ground_truth``, a reference)."""
    out = {
        f"metadata.{k}": _text(item.metadata[k])
        for k in METADATA_TARGETS
        if item.metadata.get(k) not in (None, "", [], {})
    }
    if rubric is not None:
        out.update({f"reference {k}": v for k, v in rubric.item_references(item).items()})
    return out


def copied_target(hint: str, targets: dict[str, str], n: int) -> str | None:
    """The first target the hint copies, or None.

    A target copies when the hint shares ``n`` consecutive words with it, or, for a
    target shorter than ``n`` words, holds all its words in a row.

    >>> copied_target("The answer is C H N, say so", {"gt": "CHN"}, 5) is None
    True
    >>> copied_target("Reply with CHN as the code", {"gt": "CHN"}, 5)
    'gt'
    """
    words = _words(hint)
    for name, target in targets.items():
        tw = _words(target)
        if not tw:
            continue
        k = min(n, len(tw))
        grams = {tuple(tw[i : i + k]) for i in range(len(tw) - k + 1)}
        if any(tuple(words[i : i + k]) in grams for i in range(len(words) - k + 1)):
            return name
    return None
