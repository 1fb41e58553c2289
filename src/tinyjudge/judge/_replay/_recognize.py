"""Which item (and which order of a pair) a judge request is about, read from its prompt.

The judge sends no item id over the wire: ids are the user's and endpoints are
often a third party's (and an id with an accent or a tab cannot even travel in
an HTTP header). Local servers that answer per item (the replay backend, test
responders) recognise the item instead from the fence nonce that every prompt
carries, a hash of the item's content and the rubric (see ``fence_nonce``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tinyjudge.records import Item
from tinyjudge.rubric import Rubric

from .._prompt import fence_nonce, render_response

__all__ = ["ItemIndex"]

_FENCE = re.compile(r"<<<(TRAJECTORY|CONTEXT|RESPONSE A) ([0-9a-f]{16})>>>\n")


class ItemIndex:
    """Items by the fence nonce their prompts carry under the given rubrics.

    Two items with the same content share a nonce (and a cache key): the first
    one given is named.

    Args:
        items: the items a server may be asked about.
        rubrics: the rubrics they may be judged under.
    """

    def __init__(self, items: Iterable[Item], rubrics: Iterable[Rubric]) -> None:
        self._by_nonce: dict[str, Item] = {}
        items = list(items)
        for rubric in rubrics:
            rubric_hash = rubric.hash
            for item in items:
                self._by_nonce.setdefault(fence_nonce(item, rubric, rubric_hash), item)

    def __len__(self) -> int:
        return len(self._by_nonce)

    def find(self, prompt: str) -> tuple[str | None, str]:
        """The id of the item a prompt shows (None if unknown) and its order, ``ab`` or ``ba``."""
        m = _FENCE.search(prompt)
        item = self._by_nonce.get(m.group(2)) if m else None
        if item is None or m is None:
            return None, "ab"
        if not item.is_pairwise:
            return item.id, "ab"
        nonce = m.group(2)
        start = prompt.find(f"<<<RESPONSE A {nonce}>>>\n")
        end = prompt.find(f"\n<<<END RESPONSE A {nonce}>>>", start)
        if start < 0 or end < 0:
            return item.id, "ab"
        first = prompt[start + len(f"<<<RESPONSE A {nonce}>>>\n") : end]
        shows_b = first == render_response(item.response_b or [])
        return item.id, "ba" if shows_b and first != render_response(
            item.response_a or []
        ) else "ab"
