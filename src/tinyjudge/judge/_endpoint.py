"""What an endpoint can do to the judge, bounded: the reply's size, and credentials in its URL.

A reply is read as it streams and cut once it passes a limit, so a body of
gigabytes costs no more memory than the limit. The limit counts decoded bytes
(after gzip), which is what a reply costs in memory.

The client follows a redirect only within the endpoint's origin (scheme, host,
port): one to another origin would carry the prompts (the transcripts) there, so it
ends the run in one line (:class:`Redirected`) instead.

A base URL may carry ``user:password@``. The judge never prints the password
(:func:`shown_url`), and never sends it: the client is given the URL without
its userinfo (:func:`client_url`), so the API key is the only authorisation
(an HTTP client otherwise turns the userinfo into Basic auth in place of the key).
"""

from __future__ import annotations

import sys
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["ReplyTooLarge", "Redirected", "bounded_http_client", "client_url", "shown_url"]


class ReplyTooLarge(Exception):
    """A reply's body passed the size limit while it was read."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"reply over the {_size(limit)} limit (max_reply_mb); cut while reading")


class Redirected(Exception):
    """The endpoint answered with a redirect to another origin: nothing is sent there."""

    def __init__(self, location: str) -> None:
        self.location = location
        super().__init__(
            f"the endpoint redirected to {location[:200]}, another origin; the judge sends "
            "prompts only to the base_url given: give the endpoint's final URL as base_url"
        )


# Same-origin redirects followed (a trailing slash, http -> the same host's path).
_MAX_REDIRECTS = 5


def _origin(url: Any) -> tuple[str, str, int | None]:
    return (url.scheme, url.host, url.port)


def _size(n: int) -> str:
    return f"{n / 2**20:g} MB" if n >= 2**20 else f"{n:,} bytes"


def _split(url: str) -> tuple[Any, str] | None:
    """The parts of ``url`` and its host (with port), or None when it carries no userinfo."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return None
    return parts, parts.netloc.rpartition("@")[2]


def client_url(url: str | None) -> str | None:
    """``url`` without ``user:password@``: what the HTTP client is given."""
    if url is None or (split := _split(url)) is None:
        return url
    parts, host = split
    return urlunsplit(parts._replace(netloc=host))


def shown_url(url: str | None) -> str | None:
    """``url`` as printed: ``http://user:***@host/v1`` (the password, or a lone token, hidden)."""
    if url is None or (split := _split(url)) is None:
        return url
    parts, host = split
    userinfo = parts.netloc.rpartition("@")[0]
    user, colon, _ = userinfo.partition(":")
    shown = f"{user}:***" if colon else "***"
    return urlunsplit(parts._replace(netloc=f"{shown}@{host}"))


def _client_base() -> type[Any]:
    """The async client class the installed ``openai`` builds on (httpx's, or httpx2's)."""
    import openai

    return openai.DefaultAsyncHttpxClient  # type: ignore[no-any-return]


def _http_module(client_class: type[Any]) -> Any:
    """The httpx-like module (``httpx`` or ``httpx2``) whose AsyncClient ``client_class`` is."""
    for cls in client_class.__mro__:
        if cls.__name__ == "AsyncClient" and cls.__module__.split(".")[0] != "openai":
            return sys.modules[cls.__module__.split(".")[0]]
    raise RuntimeError(f"{client_class!r} is not an httpx AsyncClient")  # pragma: no cover


def bounded_http_client(max_bytes: int, timeout: float) -> Any:
    """An ``AsyncClient`` for ``openai.AsyncOpenAI(http_client=...)`` that bounds reply bodies.

    Args:
        max_bytes: the most a reply's body may hold, decoded; past it the read
            stops and :class:`ReplyTooLarge` is raised (and passes through the
            ``openai`` client unchanged).
        timeout: the client's per-operation timeout (connect, each read).
    """
    base = _client_base()
    http = _http_module(base)

    class BoundedClient(base):  # type: ignore[misc,valid-type]
        async def send(self, request: Any, *, stream: bool = False, **kw: Any) -> Any:
            kw["follow_redirects"] = False  # followed below, within the origin only
            response = await super().send(request, stream=True, **kw)
            for _ in range(_MAX_REDIRECTS):
                nxt = response.next_request if response.is_redirect else None
                if nxt is None:
                    break
                await response.aclose()
                if _origin(nxt.url) != _origin(request.url):
                    raise Redirected(str(nxt.url))
                response = await super().send(nxt, stream=True, **kw)
            if stream:
                return response
            try:
                body = await _read_bounded(response, max_bytes)
            finally:
                await response.aclose()
            headers = [
                (k, v)
                for k, v in response.headers.multi_items()
                if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
            ]
            return http.Response(
                response.status_code,
                headers=headers,
                content=body,
                request=request,
                extensions=response.extensions,
            )

    return BoundedClient(timeout=timeout)


async def _read_bounded(response: Any, max_bytes: int) -> bytes:
    declared = response.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > max_bytes:
        raise ReplyTooLarge(max_bytes)
    chunks: list[bytes] = []
    total = 0
    async for chunk in response.aiter_bytes():
        total += len(chunk)
        if total > max_bytes:
            raise ReplyTooLarge(max_bytes)
        chunks.append(chunk)
    return b"".join(chunks)
