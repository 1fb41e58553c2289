"""A pure ASGI middleware: Host and Origin, bearer token, request-size limit, metrics.

Written against ASGI directly because starlette's ``BaseHTTPMiddleware`` costs
more per request than scoring a small model does.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from tinyjudge._http import (
    ASGIApp,
    BodyTooLarge,
    Message,
    Receive,
    Scope,
    Send,
    bearer_token,
    read_body,
    refuse_foreign,
    replaying,
    send_json,
    token_matches,
)

from ._metrics import CLIENT_CLOSED, Metrics

if TYPE_CHECKING:
    from ._options import ServerOptions

__all__ = ["Guard"]

OPEN_PATHS = {"/health"}


class Guard:
    """Refuses foreign (400, 403), unauthorised (401) and oversized (413) requests;
    records every answer.

    Args:
        app: the ASGI app behind the guard.
        metrics: where requests, status codes and latencies are counted.
        options: the server's options: its ``token`` (every path but ``/health``
            needs it; None = open), ``max_body_bytes`` (the largest request body
            accepted) and ``hosts`` (the ``Host`` names answered; None answers any;
            a browser's ``Origin`` must be the server's own).
        paths: the paths the app serves; requests for any other path are counted
            under ``other``, so that anyone (even without the token) probing random
            paths cannot grow the metrics without bound. None counts every path.
    """

    def __init__(
        self,
        app: ASGIApp,
        metrics: Metrics,
        options: ServerOptions,
        paths: frozenset[str] | None = None,
    ):
        self.app = app
        self.hosts = options.hosts
        self.metrics = metrics
        self.paths = paths
        self.expected = options.token.encode() if options.token else None
        self.max_body = options.max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status: list[int | None] = [None]
        gone = [False]

        async def recording_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        async def watching_receive() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect":
                gone[0] = True
            return message

        failed = True
        try:
            await self._handle(scope, watching_receive, recording_send)
            failed = False
        finally:
            path = scope["path"]
            if self.paths is not None and path not in self.paths:
                path = "other"
            code = status[0]
            if code is None:  # no answer: the client left first, or the app failed
                code = CLIENT_CLOSED if gone[0] or not failed else 500
            self.metrics.observe_request(path, code, time.perf_counter() - start)

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        origin = headers.get(b"origin")
        refused = refuse_foreign(
            headers.get(b"host", b"").decode("latin-1"),
            origin.decode("latin-1") if origin is not None else None,
            self.hosts,
        )
        if refused is not None:
            await send_json(send, refused[0], {"detail": refused[1]})
            return
        if self.expected is not None and scope["path"] not in OPEN_PATHS:
            given = bearer_token(headers.get(b"authorization", b""))
            if not token_matches(given, self.expected):
                await send_json(send, 401, {"detail": "missing or wrong bearer token"})
                return
        try:
            body = await read_body(scope, receive, self.max_body)
        except BodyTooLarge as e:
            await send_json(send, 413, {"detail": e.detail("max_body_bytes")})
            return
        if body is not None:
            await self.app(scope, replaying(body, receive), send)
