"""What the two local servers (``serve`` and ``label``) share: loopback, the token guard,
the ``Host``/``Origin`` check and the bounded read of a request body.

>>> is_loopback("[::1]"), is_loopback("0.0.0.0")
(True, False)
>>> token_matches(bearer_token(b"Bearer s3cret"), "s3cret")
True
>>> host_of("LocalHost:8000"), host_of("[::1]:80")
('localhost', '[::1]')
>>> refuse_foreign("127.0.0.1:8000", None, allowed_hosts("127.0.0.1")) is None
True
>>> refuse_foreign("evil.example", None, allowed_hosts("127.0.0.1"))[0]
400
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from tinyjudge.errors import UsageError, one_line

__all__ = [
    "LOOPBACK_HOSTS",
    "MIN_TOKEN_CHARS",
    "is_loopback",
    "bearer_token",
    "token_matches",
    "check_exposure",
    "describe_request_error",
    "host_of",
    "allowed_hosts",
    "refuse_foreign",
    "BodyTooLarge",
    "read_body",
    "replaying",
    "send_json",
    "BodyLimit",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# A shorter token can be guessed over the network.
MIN_TOKEN_CHARS = 16
_MAKE_ONE = '`python -c "import secrets; print(secrets.token_urlsafe())"`'

# Host header values a loopback-bound server accepts (no DNS rebinding).
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine.

    An IPv6 address may come bracketed as in a URL (``[::1]``).
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bearer_token(authorization: str | bytes) -> bytes:
    """The token of an ``Authorization: Bearer TOKEN`` header (the scheme in any case); else b""."""
    value = authorization.encode() if isinstance(authorization, str) else authorization
    scheme, _, token = value.partition(b" ")
    return token.strip() if scheme.lower() == b"bearer" else b""


def token_matches(given: str | bytes, expected: str | bytes) -> bool:
    """Compare a presented token with the expected one in constant time."""
    a = given.encode() if isinstance(given, str) else given
    b = expected.encode() if isinstance(expected, str) else expected
    return hmac.compare_digest(a, b)


def check_exposure(
    host: str, token: str | None, *, what: str, env: str, insecure: bool = False
) -> None:
    """Refuse to listen beyond this machine without a token of reasonable length.

    Args:
        host: the bind address.
        token: the bearer token required of clients, or None.
        what: what the server exposes, for the message ("the reward model").
        env: the environment variable that also sets the token.
        insecure: the user asked to run open on purpose (``insecure_no_token``).

    Raises:
        UsageError: a token shorter than :data:`MIN_TOKEN_CHARS`, or a
            non-loopback host without a token (and without ``insecure``).
    """
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise UsageError(
            f"token must be at least {MIN_TOKEN_CHARS} characters; make one with {_MAKE_ONE}",
            param="token",
        )
    if not is_loopback(host) and token is None and not insecure:
        raise UsageError(
            f"host {host} lets other machines reach {what}: pass token (or set {env}), "
            f"e.g. from {_MAKE_ONE}, or insecure_no_token to run open on purpose",
            param="token",
            also=("host", "insecure_no_token"),
        )


def describe_request_error(err: Any) -> str:
    """One line for a request body that failed validation (a pydantic or FastAPI error).

    Unlike FastAPI's own answer, it never echoes the input back: that may be
    megabytes, or text (a lone surrogate) that no JSON response can carry.
    """
    parts = []
    for e in err.errors()[:3]:
        loc = ".".join(str(x) for x in e["loc"] if x != "body") or "body"
        if e["type"] == "json_invalid":
            parts.append(f"malformed JSON: {e.get('ctx', {}).get('error', e['msg'])}")
        elif e["type"] == "missing":
            parts.append(f'missing field "{loc}"')
        elif e["type"] == "extra_forbidden":
            parts.append(f'unknown field "{loc}"')
        else:
            parts.append(f'field "{loc}": {e["msg"]}')
    return one_line("; ".join(parts))  # field names come from the client's JSON


def host_of(value: str) -> str:
    """The host of a ``Host`` header (or an origin's authority), lower-case, without port.

    An IPv6 address keeps its brackets (``[::1]``).
    """
    value = value.strip().lower()
    if value.startswith("["):
        close = value.find("]")
        return value[: close + 1] if close > 0 else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def allowed_hosts(bind: str, names: Iterable[str] = ()) -> frozenset[str] | None:
    """The ``Host`` names a server bound to ``bind`` answers to; None: any.

    A server on a loopback address answers to the loopback names and ``names``
    (a page on another name that resolves to 127.0.0.1 is DNS rebinding); one
    bound elsewhere answers to ``names`` when given, else to any name (its
    token guards it).
    """
    extra = frozenset(host_of(n) for n in names if n.strip())
    if is_loopback(bind):
        return LOOPBACK_HOSTS | extra
    return extra or None


def refuse_foreign(
    host: str | None, origin: str | None, allowed: frozenset[str] | None
) -> tuple[int, str] | None:
    """The status and reason to refuse a request that another site may have made, else None.

    Args:
        host: the request's ``Host`` header.
        origin: its ``Origin`` header, which browsers send on cross-site requests.
        allowed: from :func:`allowed_hosts`.

    Returns:
        400 for a ``Host`` the server does not answer to; 403 for an ``Origin``
        other than the server's own (``null`` included).
    """
    name = host_of(host or "")
    if allowed is not None and name not in allowed:
        names = ", ".join(sorted(allowed))
        return 400, one_line(
            f"bad Host header {name!r}: this server answers to {names} (add a name with "
            "allowed_hosts)"
        )
    if origin is not None and origin.split("://", 1)[-1].lower() != (host or "").lower():
        return 403, one_line(f"cross-origin request from {origin!r} refused")
    return None


class BodyTooLarge(Exception):
    """A request body over the limit; :meth:`detail` says so in one line."""

    def __init__(self, size: int, limit: int, at_least: bool) -> None:
        super().__init__(size, limit, at_least)
        self.size, self.limit, self.at_least = size, limit, at_least

    def detail(self, param: str) -> str:
        more = "more than " if self.at_least else ""
        return f"request body is {more}{self.size} bytes; the limit is {self.limit} ({param})"


async def read_body(scope: Scope, receive: Receive, limit: int) -> bytes | None:
    """The whole request body, read no further than ``limit`` bytes; None if the client left.

    A declared ``Content-Length`` over the limit is refused before anything is
    read, and a chunked upload without one cannot slip past it.

    Raises:
        BodyTooLarge: the body is (or would be) longer than ``limit``.
    """
    declared = dict(scope.get("headers") or []).get(b"content-length", b"")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(int(declared), limit, at_least=False)
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(size, limit, at_least=True)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app ``body`` (already read), then the client's messages."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def send_json(send: Send, status: int, payload: dict[str, Any]) -> None:
    """Answer a request with ``payload`` as JSON, from ASGI middleware."""
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """ASGI middleware: a body over ``max_body_bytes`` is answered 413, never read to the end.

    Args:
        app: the app behind it.
        max_body_bytes: the largest request body accepted.
        key: the field of the JSON answer that carries the reason.
    """

    def __init__(self, app: ASGIApp, max_body_bytes: int, key: str = "detail") -> None:
        self.app, self.limit, self.key = app, max_body_bytes, key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            body = await read_body(scope, receive, self.limit)
        except BodyTooLarge as e:
            await send_json(send, 413, {self.key: e.detail("max_body_bytes")})
            return
        if body is not None:
            await self.app(scope, replaying(body, receive), send)
