"""A pure ASGI middleware: bearer token, request-size limit and per-request metrics.

Written against ASGI directly because starlette's ``BaseHTTPMiddleware`` costs
more per request than scoring a small model does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from tinyjudge._http import bearer_token, token_matches

from ._metrics import CLIENT_CLOSED, Metrics

__all__ = ["Guard"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

OPEN_PATHS = {"/health"}


class Guard:
    """Refuses unauthorised (401) and oversized (413) requests; records every answer.

    Args:
        app: the ASGI app behind the guard.
        metrics: where requests, status codes and latencies are counted.
        token: the bearer token every path but ``/health`` needs; None = open.
        max_body_bytes: the largest request body accepted.
        paths: the paths the app serves; requests for any other path are counted
            under ``other``, so that anyone (even without the token) probing random
            paths cannot grow the metrics without bound. None counts every path.
    """

    def __init__(
        self,
        app: ASGIApp,
        metrics: Metrics,
        token: str | None,
        max_body_bytes: int,
        paths: frozenset[str] | None = None,
    ):
        self.app = app
        self.metrics = metrics
        self.paths = paths
        self.expected = token.encode() if token else None
        self.max_body = max_body_bytes

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
        if self.expected is not None and scope["path"] not in OPEN_PATHS:
            given = bearer_token(headers.get(b"authorization", b""))
            if not token_matches(given, self.expected):
                await _reply(send, 401, "missing or wrong bearer token")
                return
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_body:
            await _reply(send, 413, self._too_large(int(declared)))
            return
        # Read the body here (bounded), then hand it on: a chunked upload without a
        # Content-Length cannot slip past the limit.
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await _reply(send, 413, self._too_large(size, at_least=True))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _too_large(self, size: int, at_least: bool = False) -> str:
        more = "more than " if at_least else ""
        return f"request body is {more}{size} bytes; the limit is {self.max_body} (--max-body-mb)"


async def _reply(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
