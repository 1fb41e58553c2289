"""A real local OpenAI-compatible chat server, for tests, benchmarks and replay.

It answers ``POST /v1/chat/completions`` (and ``/chat/completions``) on
127.0.0.1 from a *responder*: a plain function of the request that returns the
reply text (optionally with a label distribution, turned into top logprobs) or
a :class:`Fault` to inject (429 with Retry-After, 5xx, a slow reply, a body
that is not JSON, a dropped connection). It counts the calls it answers.

Only the standard library is used (``http.server.ThreadingHTTPServer`` in a
background thread), so the demo needs no extra dependency.

Example:
    >>> with LocalServer(lambda req: Reply('{"label": "a", "rationale": "."}')) as url:
    ...     pass  # point an OpenAI client at ``url``
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from ._calls import Fault, Reply, Request, Responder
from ._completion import completion_body
from ._recognize import ItemIndex

if TYPE_CHECKING:
    from tinyjudge.records import Item
    from tinyjudge.rubric import Rubric

__all__ = ["LocalServer"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate writes; without this, Nagle + delayed ACK
    # add ~40 ms to every keep-alive reply.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read counters
        return

    def _send(
        self,
        status: int,
        body: bytes,
        ctype: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        body = json.dumps({"error": {"message": message, "type": "local_server", "code": status}})
        self._send(status, body.encode(), headers=headers)

    def _refuse(self, status: int, message: str) -> None:
        """Refuse an unsupported parameter the way real servers do at this status."""
        if status == 422:  # FastAPI's request validation error (no "error" object)
            param = "logprobs" if "logprobs" in message else "response_format"
            detail = [{"loc": ["body", param], "msg": message, "type": "value_error"}]
            self._send(422, json.dumps({"detail": detail}).encode())
        elif status == 500:  # llama-cpp-python: the validation error surfaces as a 500
            body = {"error": {"message": message, "type": "internal_server_error"}}
            self._send(500, json.dumps(body).encode())
        else:
            self._error(status, message)

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send(
                200,
                json.dumps(
                    {"object": "list", "data": [{"id": "local", "object": "model"}]}
                ).encode(),
            )
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"no route {self.path}")
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self._error(400, "request body is not JSON")
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = Request(body, headers, self.path, 0)
        request.item_id, request.order = owner.recognize(request.prompt)
        request.call = owner._count(request.item_id)
        if owner.latency:
            time.sleep(owner.latency)
        check = owner.check_request(body)
        if check:
            self._error(400, check)
            return
        refusal = owner.refusal(body)
        if refusal:
            self._refuse(owner.reject_status, refusal)
            return
        n = 1 if owner.ignore_n else int(body.get("n") or 1)
        replies: list[Reply] = []
        for sample in range(n):
            request.sample = sample
            got = owner.responder(request)
            if isinstance(got, Fault) and got.kind == "slow":
                time.sleep(got.delay)
                got = got.then or Reply("")
            if isinstance(got, Fault):
                self._fault(got)
                return
            replies.append(Reply(got) if isinstance(got, str) else got)
        # A cheap estimate (characters / 4): exact counts are not what the server tests.
        prompt_tokens = -(-len(request.prompt) // 4)
        data = completion_body(
            replies, str(body.get("model", "local")), bool(body.get("logprobs")), prompt_tokens
        )
        self._send(200, json.dumps(data).encode())

    def _fault(self, fault: Fault) -> None:
        if fault.kind == "status":
            headers = (
                {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else None
            )
            self._error(fault.status, fault.message, headers)
        elif fault.kind == "garbage":
            self._send(200, b"<html>502 upstream said no</html>", ctype="application/json")
        elif fault.kind == "body":
            self._send(200, fault.body)
        elif fault.kind == "drop":
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        else:
            raise ValueError(f"unknown fault kind {fault.kind!r}")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024
    owner: LocalServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        # A client that gave up (timeout) or was killed mid-reply is normal here.
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


@dataclass
class LocalServer:
    """A local OpenAI-compatible server on 127.0.0.1, run in a background thread.

    Use it as a context manager; it yields its ``base_url`` (``http://127.0.0.1:PORT/v1``).

    Args:
        responder: a function of the :class:`Request` returning a :class:`Reply`,
            a plain string, or a :class:`Fault`.
        latency: seconds each call waits before answering (simulated model time).
        reject_json_schema: answer 400 to ``response_format`` type ``json_schema``,
            as llama.cpp's server does.
        reject_logprobs: answer 400 to ``logprobs``.
        reject_status: the status of those refusals: 400 (OpenAI, vLLM), 422 with
            FastAPI's ``detail`` body, or 500 (llama-cpp-python's server).
        ignore_n: answer one choice whatever ``n`` asks (as Ollama does).
        port: 0 picks a free port.
        items: the items being judged, so that each :class:`Request` names its
            item (``item_id``, ``order``) and ``calls_by_item`` counts per item.
        rubric: the rubric (or rubrics) the items are judged under; needed with ``items``.
    """

    responder: Responder
    latency: float = 0.0
    reject_json_schema: bool = False
    reject_logprobs: bool = False
    reject_status: int = 400
    ignore_n: bool = False
    port: int = 0
    calls: int = 0
    calls_by_item: Counter[str] = field(default_factory=Counter)
    requests: list[dict[str, Any]] = field(default_factory=list)
    keep_requests: bool = False
    items: list[Item] | None = field(default=None, repr=False)
    rubric: Rubric | list[Rubric] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._index: ItemIndex | None = None
        if self.items is not None:
            if self.rubric is None:
                raise ValueError(
                    "LocalServer(items=...) needs the rubric the items are judged under"
                )
            rubrics = self.rubric if isinstance(self.rubric, list) else [self.rubric]
            self._index = ItemIndex(self.items, rubrics)
        self._lock = threading.Lock()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    def _count(self, item: str | None) -> int:
        with self._lock:
            self.calls += 1
            if item:
                self.calls_by_item[item] += 1
            return self.calls

    def recognize(self, prompt: str) -> tuple[str | None, str]:
        """The id of the item ``prompt`` shows (None if unknown) and its order."""
        return self._index.find(prompt) if self._index is not None else (None, "ab")

    def check_request(self, body: dict[str, Any]) -> str | None:
        """Why a request is refused as malformed for this server, or None."""
        if self.keep_requests:
            with self._lock:
                self.requests.append(body)
        if not isinstance(body.get("messages"), list):
            return '"messages" must be a list'
        return None

    def refusal(self, body: dict[str, Any]) -> str | None:
        """What of the request this server does not support (answered with ``reject_status``)."""
        rf = body.get("response_format") or {}
        if self.reject_json_schema and rf.get("type") == "json_schema":
            return "response_format type json_schema is not supported"
        if self.reject_logprobs and body.get("logprobs"):
            return "logprobs are not supported"
        return None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the server is not running; use it as a context manager")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> str:
        """Start serving in a background thread; returns the base URL."""
        self._httpd = _Server(("127.0.0.1", self.port), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self.base_url

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
