"""What the two local servers (``serve`` and ``label``) share: loopback and the token guard.

>>> is_loopback("[::1]"), is_loopback("0.0.0.0")
(True, False)
>>> token_matches(bearer_token(b"Bearer s3cret"), "s3cret")
True
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any

from tinyjudge.errors import TinyjudgeError, one_line

__all__ = [
    "LOOPBACK_HOSTS",
    "MIN_TOKEN_CHARS",
    "is_loopback",
    "bearer_token",
    "token_matches",
    "check_exposure",
    "describe_request_error",
]

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
        insecure: the user said ``--insecure-no-token`` on purpose.

    Raises:
        TinyjudgeError: a token shorter than :data:`MIN_TOKEN_CHARS`, or a
            non-loopback host without a token (and without ``insecure``).
    """
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise TinyjudgeError(
            f"--token must be at least {MIN_TOKEN_CHARS} characters; make one with {_MAKE_ONE}"
        )
    if not is_loopback(host) and token is None and not insecure:
        raise TinyjudgeError(
            f"--host {host} lets other machines reach {what}: pass --token (or set {env}), "
            f"e.g. from {_MAKE_ONE}, or --insecure-no-token to run open on purpose"
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
