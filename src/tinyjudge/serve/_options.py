"""The reward server's options: one set, checked once, that the app and the runner both take."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tinyjudge._http import allowed_hosts, check_exposure
from tinyjudge._numbers import check_number
from tinyjudge.errors import UsageError

from ._templates import check_template

__all__ = ["ServerOptions"]


@dataclass(frozen=True)
class ServerOptions:
    """How the reward server listens, whom it answers and how much it takes.

    Checked when made: a non-loopback ``host`` without a token (unless
    ``insecure_no_token``), a short token, a bad template or a limit below 1
    is refused then, before a model is loaded or a port bound.

    Attributes:
        host: the bind address.
        port: the TCP port.
        token: when set, every endpoint but ``/health`` needs
            ``Authorization: Bearer <token>``.
        insecure_no_token: listen beyond loopback without a token, on purpose.
        allowed_hosts: more ``Host`` names to answer to. On a loopback ``host``
            the loopback names are always answered and any other is refused (DNS
            rebinding); elsewhere, when given, only these are answered.
        max_batch: the most items gathered into one forward pass (1 = off).
        max_wait_ms: how long a forward pass waits to gather more items.
        max_body_bytes: larger request bodies are refused with 413.
        max_items: the most items (or rollouts) one request may carry; more are
            refused with 413 naming the limit, so one client cannot hold the model.
        max_text_chars: the most characters one text rollout (or its prompt) may
            hold; longer ones are refused with 413 naming the limit.
        reward: the labels whose summed probability ``/get_reward`` returns
            (default: the rubric's ``positive`` labels).
        chat_template: how ``/get_reward`` reads text rollouts: a name of
            ``CHAT_TEMPLATES`` or a ``{role}``/``{content}`` pattern (default: the
            built-in templates, recognised by their markers).
        header_timeout_s: a connection that has not sent a whole request head
            this long after it opened (or after its last answer) is closed.
        body_timeout_s: a request whose body has not all arrived this long after
            its head is cut off (its connection closed).
        max_connections: the most open connections; at the limit the longest
            idle one is closed for a new one. None: from the file-descriptor limit.
    """

    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = None
    insecure_no_token: bool = False
    allowed_hosts: Sequence[str] = ()
    max_batch: int = 64
    max_wait_ms: float = 5.0
    max_body_bytes: int = 8 << 20
    max_items: int = 2048
    max_text_chars: int = 1 << 20
    reward: Sequence[str] | None = None
    chat_template: str | None = None
    header_timeout_s: float = 10.0
    body_timeout_s: float = 60.0
    max_connections: int | None = field(default=None)

    def __post_init__(self) -> None:
        check_exposure(
            self.host,
            self.token,
            what="the reward model",
            env="TINYJUDGE_TOKEN",
            insecure=self.insecure_no_token,
        )
        if self.chat_template is not None:
            check_template(self.chat_template)
        for name in ("max_batch", "max_body_bytes", "max_items", "max_text_chars"):
            if getattr(self, name) < 1:  # nan is not < 1: check_number refuses it
                raise UsageError(f"{name} must be at least 1, got {getattr(self, name)}")
            check_number(name, getattr(self, name), 1, whole=True)
        check_number("max_wait_ms", self.max_wait_ms, 0, 10_000, unit=" ms")
        for name in ("header_timeout_s", "body_timeout_s"):
            if getattr(self, name) <= 0:
                raise UsageError(f"{name} must be positive, got {getattr(self, name)}")
            check_number(name, getattr(self, name), 0, 86_400, low_open=True, unit=" seconds")

    @property
    def hosts(self) -> frozenset[str] | None:
        """The ``Host`` names answered (None: any); see :func:`tinyjudge._http.allowed_hosts`."""
        return allowed_hosts(self.host, self.allowed_hosts)
