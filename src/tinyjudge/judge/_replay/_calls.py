"""What a local server's responder sees and returns: a request, a reply, a fault."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Request", "Reply", "Fault", "Responder"]


@dataclass
class Request:
    """One call as the responder sees it.

    Attributes:
        body, headers, path: the HTTP request.
        call: the server's call number (from 1).
        sample: the index of the choice being answered (for ``n`` > 1).
        item_id, order: the item the prompt shows and its order (``ab``/``ba``),
            when the server was given the items; else None and ``ab``.
    """

    body: dict[str, Any]
    headers: dict[str, str]
    path: str
    call: int
    sample: int = 0
    item_id: str | None = None
    order: str = "ab"

    @property
    def prompt(self) -> str:
        messages = self.body.get("messages")
        if not isinstance(messages, list):
            return ""
        return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))


@dataclass
class Reply:
    """A completion: its text and, optionally, the distribution of its label.

    With ``probs``, the tokens of the ``"label"`` value carry top logprobs that
    follow that distribution (conditional on the prefix chosen so far).
    """

    text: str
    probs: dict[str, float] | None = None
    merge_quote: bool = False


@dataclass
class Fault:
    """A fault to inject instead of (or before) a reply.

    kind: ``status`` (HTTP ``status`` with a JSON error, ``retry_after`` header
    if set), ``garbage`` (200 with a body that is not JSON), ``body`` (200 with
    ``body`` as it is, e.g. JSON that is not a completion), ``drop`` (close
    the connection without answering) or ``slow`` (sleep ``delay`` seconds,
    then answer with ``then``).
    """

    kind: str
    status: int = 500
    retry_after: float | str | None = None
    delay: float = 0.0
    then: Reply | None = None
    message: str = "injected fault"
    body: bytes = b""


Responder = Callable[[Request], "Reply | Fault | str"]
