"""``tinyjudge label``: label items in the browser, each answer saved at once."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from ._io import out, resolve_rubric, store_rubric

__all__ = ["command"]


def command(
    items: Path = typer.Argument(..., help="items.jsonl to label"),
    rubric: str = typer.Option(..., "--rubric", help="built-in rubric name or a .yaml path"),
    labels: Path = typer.Option(..., "--labels", help="labels.jsonl: read, and answers added"),
    reviewer: str = typer.Option(
        ..., "--reviewer", "--as", help="your name: labels get source human:NAME"
    ),
    host: str = typer.Option("127.0.0.1", help="bind address; anything but loopback needs --token"),
    port: int = typer.Option(8765, min=0, max=65535, help="TCP port (0: any free port)"),
    select: str = typer.Option(
        None,
        help="active|random|sequential|teach (teach: where people would most likely "
        "overturn the judge, from an rm: model and the human: labels so far, for distill "
        "--human; default: active when --cheap exists, else random)",
    ),
    budget: int = typer.Option(None, help="stop after this many labels"),
    cheap: str = typer.Option(
        None,
        help="judge:/rm: source for active selection, rm: source for teach "
        "(default: the first with scores)",
    ),
    token: str = typer.Option(
        None, envvar="TINYJUDGE_LABEL_TOKEN", help="token to require (needed off loopback)"
    ),
    allowed_host: list[str] = typer.Option(
        None,
        "--allowed-host",
        help="a Host name to answer to (repeatable); on loopback only loopback names are "
        "answered besides these (no DNS rebinding)",
    ),
) -> None:
    """Label items in the browser; each answer is saved at once as human:NAME."""
    from tinyjudge._extras import require_extra

    require_extra("serve", "tinyjudge label")  # before anything is read or written
    from tinyjudge._http import is_loopback
    from tinyjudge.label import check_token, create_app, open_session, serve

    check_token(host, token)
    rub = resolve_rubric(rubric)
    session = open_session(items, rub, labels, reviewer, select, budget, cheap)  # type: ignore[arg-type]
    store_rubric(rub, labels.parent)
    done = len(session.my_answers())
    how = session.selector.mode + (f" on {session.cheap_source}" if session.cheap_source else "")
    out.print(f"{len(session.items)} items, {done} labelled by human:{reviewer}; order: {how}")
    if session.note:
        out.print(session.note)
    app_ = create_app(
        session, token=token, loopback=is_loopback(host), hosts=tuple(allowed_host or ())
    )

    def ready(url: str) -> None:
        out.print(f"open {url}  (Ctrl+C stops; every answer is already saved)")
        sys.stdout.flush()

    serve(app_, host, port, token, on_ready=ready)
