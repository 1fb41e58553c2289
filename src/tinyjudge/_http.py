"""What the two local servers (``serve`` and ``label``) share: loopback and the token guard.

>>> is_loopback("[::1]"), is_loopback("0.0.0.0")
(True, False)
>>> token_matches(bearer_token(b"Bearer s3cret"), "s3cret")
True
"""

from __future__ import annotations

import hmac
import ipaddress

__all__ = ["LOOPBACK_HOSTS", "is_loopback", "bearer_token", "token_matches"]

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
