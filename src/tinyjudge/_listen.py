"""How the two local servers (``serve`` and ``label``) listen: uvicorn over h11, bounded.

Idle connections cost a file descriptor each and nothing else, so a client (or a
page the user visits) can open them until the process has none left; then every
``accept`` failed with a traceback and ``/health`` waited with the rest. Here:

- a connection must send a whole request head within ``header_timeout_s`` of
  opening (or of its last answer), and the body within ``body_timeout_s`` of the
  head, else it is closed;
- at most ``max_connections`` are open (by default a share of the file-descriptor
  limit); a new one past that closes the longest idle one (else the oldest still
  sending its body), so a fresh client is answered however many came before it;
- when descriptors do run out anyway, one line on stderr says so (at most every
  ten seconds), and asyncio retries the accept a second later instead of spinning.

uvicorn is imported with this module, which only the servers import.
"""

from __future__ import annotations

import asyncio
import resource
import socket
import sys
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["default_max_connections", "bounded_server", "serve_app"]

_FD_MESSAGE = "socket.accept() out of system resource"
_FD_LINE_EVERY_S = 10.0


def default_max_connections() -> int:
    """Three quarters of the file-descriptor limit (the rest for model files, SQLite,
    logs), between 8 and 4,096."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 16
    return max(8, min(4096, soft - max(16, soft // 4)))


class _Connections:
    """The open connections of one server, the idle ones in the order they fell idle."""

    def __init__(self, limit: int, header_timeout_s: float, body_timeout_s: float) -> None:
        self.limit = limit
        self.header_timeout_s = header_timeout_s
        self.body_timeout_s = body_timeout_s
        self.open: set[_BoundedH11] = set()
        self.idle: OrderedDict[_BoundedH11, None] = OrderedDict()


class _BoundedH11(H11Protocol):
    """uvicorn's h11 protocol with a request-head deadline and a place in ``connections``."""

    connections_: _Connections  # set on the subclass each server makes

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._head_at = self.loop.time()
        book = self.connections_
        if len(book.open) >= book.limit:
            if book.idle:
                oldest, _ = book.idle.popitem(last=False)
                oldest._close_idle()
            else:
                uploading = [c for c in book.open if c._receiving_body()]
                if not uploading:  # every connection is being answered
                    transport.close()
                    return
                min(uploading, key=lambda c: c._head_at)._close_idle()
        book.open.add(self)
        self._await_head()

    def _receiving_body(self) -> bool:
        cycle = self.cycle
        return cycle is not None and cycle.more_body and not cycle.response_started

    def _await_head(self) -> None:
        """From now the client has ``header_timeout_s`` to send a whole request head."""
        book = self.connections_
        book.idle[self] = None
        book.idle.move_to_end(self)
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_later(book.header_timeout_s, self._close_idle)

    def _close_idle(self) -> None:
        self.connections_.idle.pop(self, None)
        if not self.transport.is_closing():
            self.transport.close()

    def handle_events(self) -> None:
        waiting = self in self.connections_.idle  # no request head yet
        super().handle_events()
        cycle = self.cycle
        if cycle is None or cycle.response_complete:
            return
        if waiting:  # a request head came: from now its body has body_timeout_s
            self.connections_.idle.pop(self, None)
            self._head_at = self.loop.time()
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None
            if cycle.more_body:
                self._deadline = self.loop.call_later(
                    self.connections_.body_timeout_s, self._close_if_receiving
                )
        elif not cycle.more_body and self._deadline is not None:  # the whole body is in
            self._deadline.cancel()
            self._deadline = None

    def _close_if_receiving(self) -> None:
        if self._receiving_body() and not self.transport.is_closing():
            self.transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        done = self.cycle is None or self.cycle.response_complete
        if done and not self.transport.is_closing():
            self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        book = self.connections_
        book.open.discard(self)
        book.idle.pop(self, None)
        if getattr(self, "_deadline", None) is not None:
            self._deadline.cancel()  # type: ignore[union-attr]
        super().connection_lost(exc)


class _Server(uvicorn.Server):
    """uvicorn's server, saying in one line (not a traceback per accept) that fds ran out."""

    def __init__(self, config: uvicorn.Config, connections: _Connections) -> None:
        super().__init__(config)
        self.connections_ = connections
        self._last_fd_line = -_FD_LINE_EVERY_S
        self._fd_misses = 0

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        asyncio.get_running_loop().set_exception_handler(self._on_loop_error)
        await super().startup(sockets=sockets)

    def _on_loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if self.should_exit and "_start_serving" in repr(context.get("handle")):
            return  # asyncio's accept retry, due after the listening socket closed
        if context.get("message") != _FD_MESSAGE:
            loop.default_exception_handler(context)
            return
        self._fd_misses += 1
        now = time.monotonic()
        if now - self._last_fd_line < _FD_LINE_EVERY_S:
            return
        self._last_fd_line = now
        err = context.get("exception")
        why = getattr(err, "strerror", None) or type(err).__name__
        print(
            f"tinyjudge: cannot accept connections ({why}) with "
            f"{len(self.connections_.open)} open; {self._fd_misses} refused so far, retrying "
            "each second (raise the file limit, `ulimit -n`, or lower max_connections)",
            file=sys.stderr,
            flush=True,
        )


def bounded_server(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    header_timeout_s: float = 10.0,
    body_timeout_s: float = 60.0,
    max_connections: int | None = None,
    lifespan: str = "auto",
) -> uvicorn.Server:
    """A uvicorn server for the ASGI ``app``, bounded as this module says (not yet running).

    Args:
        app: the ASGI application.
        host: the bind address (unless ``run`` is given sockets).
        port: the TCP port (unless ``run`` is given sockets).
        header_timeout_s: how long a connection may take to send a request head.
        body_timeout_s: how long a request may take to send its body after its head.
        max_connections: the most open connections; None: :func:`default_max_connections`.
        lifespan: uvicorn's lifespan mode (``"off"`` for an app without one).
    """
    limit = max_connections if max_connections is not None else default_max_connections()
    connections = _Connections(limit, header_timeout_s, body_timeout_s)
    protocol = type("BoundedH11", (_BoundedH11,), {"connections_": connections})
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol,
        log_level="warning",
        access_log=False,
        lifespan=lifespan,  # type: ignore[arg-type]
        timeout_keep_alive=5,
        # asyncio accepts up to `backlog` connections per wake-up before any is seen:
        # a small one keeps a burst from running past the connection limit
        backlog=max(16, min(2048, limit // 4)),
    )
    return _Server(config, connections)


def serve_app(app: Any, *, sockets: Sequence[socket.socket] | None = None, **bounds: Any) -> None:
    """Run the ASGI ``app`` until interrupted: :func:`bounded_server`'s server, on
    ``sockets`` when given (already listening), else on its ``host`` and ``port``."""
    bounded_server(app, **bounds).run(sockets=list(sockets) if sockets is not None else None)
