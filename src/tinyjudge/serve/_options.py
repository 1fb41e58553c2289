"""The reward server's options: one set, checked once, that the app and the runner both take."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tinyjudge._http import allowed_hosts, check_exposure
from tinyjudge._numbers import check_number
from tinyjudge.config import Config, option
from tinyjudge.errors import UsageError

from ._templates import check_template

__all__ = ["ServerOptions", "TOKEN_ENV"]

# the environment variable that also sets the token (on the command line too)
TOKEN_ENV = "TINYJUDGE_TOKEN"


@dataclass
class ServerOptions(Config):
    """How the reward server listens, whom it answers and how much it takes.

    Checked when made: a non-loopback ``host`` without a token (unless
    ``insecure_no_token``), a short token, a bad template, a port out of range or
    a limit below 1 is refused then, naming the field, before a model is loaded
    or a port bound. ``tinyjudge serve``'s flags are these fields.

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

    host: str = option("127.0.0.1", "bind address; anything but loopback needs a token")
    port: int = option(8000, "TCP port", low=1, high=65535)
    token: str | None = field(
        default=None,
        metadata={"help": "bearer token to require", "envvar": TOKEN_ENV},
    )
    insecure_no_token: bool = option(False, "allow a non-loopback host without a token")
    allowed_hosts: Sequence[str] = option((), "more Host names to answer to")
    max_batch: int = option(64, "most items per forward pass (1 turns batching off)")
    max_wait_ms: float = option(5.0, "how long a forward pass waits for more items")
    max_body_bytes: int = option(8 << 20, "larger requests are refused with 413")
    max_items: int = option(2048, "most items (rollouts) per request; more are refused with 413")
    max_text_chars: int = option(
        1 << 20, "most characters in one text rollout; longer ones get 413"
    )
    reward: Sequence[str] | None = option(None, "the labels whose probability is the reward")
    chat_template: str | None = option(
        None,
        "how /get_reward reads text rollouts: chatml, llama3, gemma, phi3, or a pattern "
        "with {role} and {content} (default: recognised by their markers)",
    )
    header_timeout_s: float = option(
        10.0, "seconds a connection may take to send a whole request head"
    )
    body_timeout_s: float = option(60.0, "seconds a request's body may take after its head")
    max_connections: int | None = option(
        None, "most open connections (default: from the file-descriptor limit)"
    )

    def __post_init__(self) -> None:
        check_exposure(
            self.host,
            self.token,
            what="the reward model",
            env=TOKEN_ENV,
            insecure=self.insecure_no_token,
        )
        if self.chat_template is not None:
            check_template(self.chat_template)
        for name in ("max_batch", "max_body_bytes", "max_items", "max_text_chars"):
            if getattr(self, name) < 1:  # nan is not < 1: check_number refuses it
                raise UsageError(f"{name} must be at least 1, got {getattr(self, name)}", name)
            check_number(name, getattr(self, name), 1, whole=True)
        check_number("max_wait_ms", self.max_wait_ms, 0, 10_000, unit=" ms")
        for name in ("header_timeout_s", "body_timeout_s"):
            if getattr(self, name) <= 0:
                raise UsageError(f"{name} must be positive, got {getattr(self, name)}", name)
            check_number(name, getattr(self, name), 0, 86_400, low_open=True, unit=" seconds")
        if self.max_connections is not None:
            check_number("max_connections", self.max_connections, 1, whole=True)
        super().__post_init__()  # the port's range, and every number finite

    @property
    def hosts(self) -> frozenset[str] | None:
        """The ``Host`` names answered (None: any); see :func:`tinyjudge._http.allowed_hosts`."""
        return allowed_hosts(self.host, self.allowed_hosts)
