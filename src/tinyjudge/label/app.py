"""The labelling web app: one item at a time, answers committed at once.

Server-rendered HTML (Jinja2 with autoescape on every template) plus one small vanilla
script; no build step. Security: binds 127.0.0.1 by default and then accepts only
loopback ``Host`` headers (no DNS rebinding); anywhere else it refuses to start without
a token, which the browser presents once in the URL and then as an HttpOnly cookie.
The token is compared in constant time and never logged (uvicorn's access log is off;
the page's ``Referrer-Policy`` keeps it out of other sites' logs). A strict
Content-Security-Policy forbids inline scripts, a second wall behind the escaping.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from tinyjudge._http import (
    BodyLimit,
    allowed_hosts,
    bearer_token,
    check_exposure,
    describe_request_error,
    refuse_foreign,
    token_matches,
)
from tinyjudge.datasets.jsonl import lone_surrogate
from tinyjudge.errors import StorageError, TinyjudgeError, UsageError

from ._progress import verdicts
from ._session import LabelSession
from ._view import item_view

__all__ = ["create_app", "serve", "check_token"]

_HERE = Path(__file__).resolve().parent
_STATIC = {"label.js": "text/javascript", "label.css": "text/css"}
_COOKIE = "tinyjudge_label_token"
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


class SkipIn(BaseModel):
    """The body of ``POST /api/skip``."""

    item_id: str

    @field_validator("*")
    @classmethod
    def _unicode_text(cls, value: Any) -> Any:
        # A lone surrogate ("\ud800") can be neither stored in SQLite nor exported.
        if problem := lone_surrogate(value):
            raise ValueError(problem)
        return value


class AnswerIn(SkipIn):
    """The body of ``POST /api/answer``."""

    label: str
    note: str | None = Field(default=None, max_length=10_000)


def _templates():  # type: ignore[no-untyped-def]
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,  # every template, whatever its name: transcripts are untrusted
        undefined=jinja2.StrictUndefined,
    )


# An answer is a few hundred bytes; a note at most 10,000 characters.
MAX_BODY_BYTES = 256 << 10


def create_app(  # type: ignore[no-untyped-def]
    session: LabelSession,
    token: str | None = None,
    loopback: bool = True,
    hosts: Sequence[str] = (),
    max_body_bytes: int = MAX_BODY_BYTES,
):
    """The FastAPI app of one reviewer's session.

    Args:
        session: from :func:`open_session`.
        token: when set, every request must present it (``?token=`` once, then the
            cookie; or ``Authorization: Bearer``).
        loopback: whether the server binds a loopback address; then only loopback
            ``Host`` headers (and ``hosts``) are accepted.
        hosts: more ``Host`` names to answer to; off loopback, when given, only these.
        max_body_bytes: larger request bodies are refused with 413, unread.
    """
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

    env = _templates()
    app = FastAPI(title="tinyjudge label", docs_url=None, redoc_url=None, openapi_url=None)
    answered_hosts = allowed_hosts("127.0.0.1" if loopback else "0.0.0.0", hosts)

    def _authorised(request: Request) -> bool:
        if token is None:
            return True
        given = request.cookies.get(_COOKIE) or request.query_params.get("token") or ""
        return token_matches(bearer_token(request.headers.get("authorization", "")) or given, token)

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[..., Any]) -> Response:
        refused = refuse_foreign(
            request.headers.get("host"), request.headers.get("origin"), answered_hosts
        )
        if refused is not None:
            return Response(refused[1], status_code=refused[0], media_type="text/plain")
        if request.method == "POST":
            ctype = request.headers.get("content-type", "").split(";")[0].strip()
            if ctype != "application/json":
                return Response("expected JSON", status_code=415, media_type="text/plain")
        if not _authorised(request):
            return Response(
                "a token is required: open the URL that `tinyjudge label` printed",
                status_code=401,
                media_type="text/plain",
            )
        if token is not None and request.method == "GET" and "token" in request.query_params:
            # Trade the URL token for a cookie at once, so it leaves the address bar.
            # To a path on this origin only: "//evil.com/x" (or "/\\evil.com") as a
            # Location would send the browser off-site.
            here = "/" + request.url.path.lstrip("/\\")
            resp: Response = RedirectResponse(here, status_code=303)
            resp.set_cookie(_COOKIE, token, httponly=True, samesite="strict")
        else:
            resp = await call_next(request)
        resp.headers["Content-Security-Policy"] = _CSP
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers["Referrer-Policy"] = "no-referrer"
        resp.headers["Cache-Control"] = "no-store"
        return resp

    def _fail(e: TinyjudgeError, status: int) -> JSONResponse:
        return JSONResponse({"error": str(e)}, status_code=status)

    @app.exception_handler(StorageError)
    async def storage_full(_: Request, exc: StorageError) -> JSONResponse:
        # 507 Insufficient Storage: nothing was kept; the same answer works once there is room
        return JSONResponse({"error": str(exc)}, status_code=507)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's own answer echoes the input, which a lone surrogate makes unsendable (500)
        return JSONResponse({"error": describe_request_error(exc)}, status_code=422)

    # outermost: a body over the limit is refused before any of it is read or parsed
    app.add_middleware(BodyLimit, max_body_bytes=max_body_bytes, key="error")

    @app.get("/", response_class=HTMLResponse)
    def page() -> HTMLResponse:
        item_id = session.current()
        prog = session.progress()
        if item_id is None:
            html = env.get_template("done.html").render(s=session, progress=prog)
            return HTMLResponse(html)
        html = env.get_template("page.html").render(
            s=session,
            rubric=session.rubric,
            view=item_view(session.items[item_id], session.rubric),
            progress=prog,
            position=session.item_ids.index(item_id) + 1,
            seen=(session.reviewer, item_id) in session.store.seen(session.reviewer),
        )
        return HTMLResponse(html)

    @app.get("/static/{name}")
    def static(name: str) -> Response:
        if name not in _STATIC:
            return Response("not found", status_code=404, media_type="text/plain")
        return Response((_HERE / "static" / name).read_bytes(), media_type=_STATIC[name])

    @app.get("/api/current")
    def current() -> dict[str, Any]:
        return {"item_id": session.current(), "progress": session.progress()}

    @app.get("/api/progress")
    def progress() -> dict[str, Any]:
        return session.progress()

    @app.get("/partial/progress", response_class=HTMLResponse)
    def progress_html() -> HTMLResponse:
        return HTMLResponse(env.get_template("_progress.html").render(progress=session.progress()))

    @app.post("/api/answer", response_model=None)
    def answer(body: AnswerIn) -> dict[str, Any] | JSONResponse:
        try:
            session.store.answer(session.reviewer, body.item_id, body.label, body.note)
        except StorageError:
            raise
        except TinyjudgeError as e:
            return _fail(e, 409)
        said = verdicts(session.machine_labels([body.item_id]), body.item_id, session.rubric)
        prog = session.progress()
        return {
            "item_id": body.item_id,
            "label": body.label,
            "verdicts": said,
            "progress": prog,
            # rendered (and escaped) here so the page's script never builds HTML
            "verdicts_html": env.get_template("_verdicts.html").render(
                label=body.label, verdicts=said
            ),
            "progress_html": env.get_template("_progress.html").render(progress=prog),
        }

    @app.post("/api/skip", response_model=None)
    def skip(body: SkipIn) -> dict[str, Any] | JSONResponse:
        try:
            session.store.answer(session.reviewer, body.item_id, None)
        except StorageError:
            raise
        except TinyjudgeError as e:
            return _fail(e, 409)
        return {"item_id": body.item_id, "progress": session.progress()}

    @app.post("/api/undo")
    def undo() -> dict[str, Any]:
        undone = session.store.undo(session.reviewer)
        return {
            "undone": undone._asdict() if undone else None,
            "progress": session.progress(),
        }

    return app


def serve(
    app: Any,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    on_ready: Callable[[str], None] | None = None,
    sockets: Sequence[socket.socket] | None = None,
) -> None:
    """Run ``app`` with uvicorn until interrupted; ``on_ready`` gets the URL to open.

    The socket is bound (and listening) before ``on_ready`` runs, so ``port=0`` picks
    a free port and the printed URL is already reachable.
    """
    from tinyjudge._listen import serve_app

    if sockets is None:
        family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host.strip("[]"), port))
        except OSError as e:
            sock.close()
            raise UsageError(
                f"cannot listen on {host}:{port} ({e.strerror}); try port 0", param="port"
            ) from None
        sock.listen(128)
        sockets = [sock]
    bound = sockets[0].getsockname()[1]
    shown = f"[{host.strip('[]')}]" if ":" in host.strip("[]") else host
    url = f"http://{shown}:{bound}/" + (f"?token={token}" if token else "")
    if on_ready is not None:
        on_ready(url)
    serve_app(app, sockets=sockets, lifespan="off")


def check_token(host: str, token: str | None) -> None:
    """Refuse to expose the page beyond this machine without a strong enough token."""
    check_exposure(host, token, what="the labelling page", env="TINYJUDGE_LABEL_TOKEN")
