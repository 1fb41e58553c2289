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

import ipaddress
import os
import secrets
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tinyjudge.datasets.jsonl import read_items, read_labels
from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Item, Label
from tinyjudge.rubric import Rubric, load_rubric

from ._progress import agreement, rate_estimate, verdicts
from ._view import item_view
from .select import SelectMode, Selector, cheap_scores
from .store import LabelStore, check_reviewer

__all__ = ["LabelSession", "create_app", "serve", "is_loopback", "open_session", "check_token"]

_HERE = Path(__file__).resolve().parent
_STATIC = {"label.js": "text/javascript", "label.css": "text/css"}
_COOKIE = "tinyjudge_label_token"
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "::1", "[::1]"]
MIN_TOKEN_CHARS = 16


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class LabelSession:
    """Everything one reviewer's server needs: items, rubric, store, selector, labels."""

    items: dict[str, Item]
    item_ids: list[str]
    rubric: Rubric
    reviewer: str
    store: LabelStore
    selector: Selector
    labels: list[Label]
    cheap_source: str | None
    budget: int | None = None

    # -- state -----------------------------------------------------------------------------
    def my_answers(self) -> dict[str, str]:
        """item id -> label, of this reviewer's live labels (skips excluded)."""
        return {
            a.item_id: a.label
            for a in self.store.answers(self.reviewer)
            if a.kind == "label" and a.label is not None
        }

    def done(self) -> bool:
        return self.budget is not None and len(self.my_answers()) >= self.budget

    def current(self) -> str | None:
        """The item to show: the assigned one, or the selector's next (then assigned)."""
        cur = self.store.current(self.reviewer)
        if cur is not None and cur[0] in self.items:
            return cur[0]
        if self.done():
            return None
        finished = {a.item_id for a in self.store.answers(self.reviewer)}
        nxt = self.selector.next_item(self.reviewer, finished)
        if nxt is None:
            return None
        self.store.assign(self.reviewer, nxt[0], nxt[1])
        return nxt[0]

    def progress(self) -> dict[str, Any]:
        answers = self.store.answers(self.reviewer)
        mine = self.my_answers()
        cheap = self.selector.cheap
        method = "stratified" if self.selector.mode == "active" else "ppi++"
        est = rate_estimate(self.rubric, self.item_ids, mine, cheap, method)
        return {
            "labelled": len(mine),
            "skipped": sum(a.kind == "skip" for a in answers),
            "budget": self.budget,
            "total": len(self.item_ids),
            "select": self.selector.mode,
            "cheap_source": self.cheap_source,
            "positive": self.rubric.positive,
            "rate": est._asdict() if est else None,
            "agreement": [a._asdict() for a in agreement(self.labels, self.rubric, mine)],
        }


def open_session(
    items: str | os.PathLike[str],
    rubric: str | Rubric,
    labels: str | os.PathLike[str],
    reviewer: str,
    select: SelectMode | None = None,
    budget: int | None = None,
    cheap: str | None = None,
) -> LabelSession:
    """Load items, rubric and labels, open the store and check everything fits.

    Args:
        items: the items JSONL file.
        rubric: a built-in rubric name, a YAML path or a :class:`Rubric`.
        labels: the labels JSONL file (created when absent); answers are exported to it.
        reviewer: the reviewer's name; answers get the source ``human:<reviewer>``.
        select: ``active``, ``random`` or ``sequential``; by default ``active`` when a
            cheap source exists, else ``random``.
        budget: stop after this many labels by this reviewer.
        cheap: the judge or reward-model source that drives active selection.

    Raises:
        TinyjudgeError: a bad file, name, option, or an item the rubric cannot label.
    """
    check_reviewer(reviewer)
    rub = load_rubric(rubric)
    if rub.type == "step":
        raise TinyjudgeError(
            f"rubric {rub.id!r} is a step rubric (a verdict names a step and an agent); the "
            "labelling page supports nominal, ordinal and pairwise rubrics"
        )
    if budget is not None and budget < 1:
        raise TinyjudgeError(f"--budget must be at least 1, got {budget}")
    all_items = read_items(items)
    if not all_items:
        raise TinyjudgeError(f"{items}: no items")
    by_id: dict[str, Item] = {}
    for it in all_items:
        if it.id in by_id:
            raise TinyjudgeError(f"{items}: item id {it.id!r} appears twice; ids must be unique")
        if it.is_pairwise != (rub.type == "pairwise"):
            kind = "pairwise" if it.is_pairwise else "single"
            raise TinyjudgeError(
                f"{items}: item {it.id!r} is a {kind} item but rubric {rub.id!r} is {rub.type}"
            )
        by_id[it.id] = it
    labels_path = Path(labels)
    machine = read_labels(labels_path) if labels_path.exists() else []
    machine = [lab for lab in machine if not lab.source.startswith("human:")]
    ids = list(by_id)
    source, scores = cheap_scores(machine, rub, ids, cheap)
    mode: SelectMode = select or ("active" if source else "random")
    selector = Selector(ids, mode, scores if source else None)
    store = LabelStore(labels_path, rub)
    foreign = store.foreign_labels(reviewer)
    if foreign:
        store.close()
        raise TinyjudgeError(
            f"{labels_path} already holds {foreign} labels from human:{reviewer} for rubric "
            f"{rub.id!r} that were not made on this page; choose another --as name"
        )
    store.register(reviewer)
    store.export()  # repairs a file that disagrees with the store (a crash, a hand edit)
    return LabelSession(by_id, ids, rub, reviewer, store, selector, machine, source, budget)


class AnswerIn(BaseModel):
    """The body of ``POST /api/answer``."""

    item_id: str
    label: str
    note: str | None = Field(default=None, max_length=10_000)


class SkipIn(BaseModel):
    """The body of ``POST /api/skip``."""

    item_id: str


def _templates():  # type: ignore[no-untyped-def]
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,  # every template, whatever its name: transcripts are untrusted
        undefined=jinja2.StrictUndefined,
    )


def create_app(session: LabelSession, token: str | None = None, loopback: bool = True):  # type: ignore[no-untyped-def]
    """The FastAPI app of one reviewer's session.

    Args:
        session: from :func:`open_session`.
        token: when set, every request must present it (``?token=`` once, then the
            cookie; or ``Authorization: Bearer``).
        loopback: whether the server binds a loopback address; then only loopback
            ``Host`` headers are accepted.
    """
    from fastapi import FastAPI, Request
    from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

    env = _templates()
    app = FastAPI(title="tinyjudge label", docs_url=None, redoc_url=None, openapi_url=None)

    def _authorised(request: Request) -> bool:
        if token is None:
            return True
        given = request.cookies.get(_COOKIE) or request.query_params.get("token") or ""
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            given = auth[7:].strip()
        return secrets.compare_digest(given.encode(), token.encode())

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[..., Any]) -> Response:
        host = (request.headers.get("host") or "").rsplit(":", 1)[0]
        if request.headers.get("host", "").startswith("["):
            host = request.headers["host"].split("]")[0] + "]"
        if loopback and host not in _LOOPBACK_HOSTS:
            return Response("bad Host header", status_code=400, media_type="text/plain")
        if request.method == "POST":
            origin = request.headers.get("origin")
            if origin and origin.split("://", 1)[-1] != request.headers.get("host"):
                return Response("cross-origin request", status_code=403, media_type="text/plain")
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
            resp: Response = RedirectResponse(request.url.path, status_code=303)
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
        except TinyjudgeError as e:
            return _fail(e, 409)
        said = verdicts(session.labels, body.item_id, session.rubric)
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

    The socket is bound (and listening) before ``on_ready`` runs, so ``--port 0`` picks
    a free port and the printed URL is already reachable.
    """
    import uvicorn

    if sockets is None:
        family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host.strip("[]"), port))
        except OSError as e:
            sock.close()
            raise TinyjudgeError(
                f"cannot listen on {host}:{port} ({e.strerror}); try --port 0"
            ) from None
        sock.listen(128)
        sockets = [sock]
    bound = sockets[0].getsockname()[1]
    shown = f"[{host.strip('[]')}]" if ":" in host.strip("[]") else host
    url = f"http://{shown}:{bound}/" + (f"?token={token}" if token else "")
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    if on_ready is not None:
        on_ready(url)
    server.run(sockets=list(sockets))


def check_token(host: str, token: str | None) -> None:
    """Refuse to expose the page beyond this machine without a strong enough token."""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise TinyjudgeError(
            f"--token must be at least {MIN_TOKEN_CHARS} characters; make one with "
            '`python -c "import secrets; print(secrets.token_urlsafe())"`'
        )
    if not is_loopback(host) and token is None:
        raise TinyjudgeError(
            f"--host {host} lets other machines reach the labelling page: pass --token "
            "(or set TINYJUDGE_LABEL_TOKEN), e.g. from "
            '`python -c "import secrets; print(secrets.token_urlsafe())"`'
        )
