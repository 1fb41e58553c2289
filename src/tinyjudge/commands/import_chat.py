"""``tinyjudge import chat``: a user's own chat transcripts into items.jsonl (and labels.jsonl)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from tinyjudge.errors import DataError, UsageError
from tinyjudge.records import Item

from ._bars import progress_bars, quiet_option
from ._io import REPLACE_LABELS_HELP, err, labels_to_keep, out, resolve_rubric, store_rubric

if TYPE_CHECKING:
    from tinyjudge.datasets.importers import ChatImport

__all__ = ["command"]

_CHECK_ROWS = 3  # rows --check shows


def _shown(text: str, width: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _reading(item: Item) -> list[str]:
    """How an item was read: one line per message (role, text, tool calls, results, errors)."""
    if item.is_pairwise:
        sections = [("context", item.context or []), ("response_a", item.response_a or []),
                    ("response_b", item.response_b or [])]  # fmt: skip
        preferred = item.metadata.get("preferred")
        lines = [f"{item.id}: a pair" + (f" (preferred: {preferred})" if preferred else "")]
    else:
        sections = [("", item.messages)]
        lines = [f"{item.id}: {len(item.messages)} messages"]
    for name, messages in sections:
        if name:
            lines.append(f"  {name}: {len(messages)} messages")
        lines += _message_lines(messages)
    return lines


def _message_lines(messages: list[Any]) -> list[str]:
    lines = []
    for i, m in enumerate(messages):
        what = [f"  {i:>3} {m.role:<9}"]
        if m.reasoning:
            what.append(f"(reasoning {len(m.reasoning)} chars)")
        if m.text:
            what.append(repr(_shown(m.text)))
        for call in m.tool_calls or []:
            what.append(
                f"-> {call.function.name}({_shown(call.function.arguments, 40)}) [{call.id}]"
            )
        if m.role == "tool":
            what.append(f"<- result of {m.tool_call_id}")
            if m.is_error:
                what.append("ERROR")
        lines.append(" ".join(what))
    return lines


def command(
    path: Path = typer.Argument(
        ...,
        help="a .jsonl, .json, .csv, .parquet, Inspect .eval or SWE-agent .traj file, or a "
        "folder (of such files, or a `datasets` save_to_disk folder)",
    ),
    out_dir: Path = typer.Option(
        None, "--out", help="writes OUT/items.jsonl (and OUT/labels.jsonl with labels)"
    ),
    id_field: str = typer.Option(None, "--id-field", help="column of ids (default: id, if any)"),
    messages_field: str = typer.Option(
        None, "--messages-field", help="column of messages (default: messages, conversations, ...)"
    ),
    label_field: str = typer.Option(None, "--label-field", help="column of labels, if any"),
    rubric: str = typer.Option(None, "--rubric", help="the labels' rubric (name or .yaml path)"),
    source: str = typer.Option(None, "--source", help="the labels' source, e.g. human:final"),
    skip_bad: bool = typer.Option(False, "--skip-bad", help="report bad rows and go on"),
    replace_labels: bool = typer.Option(False, "--replace-labels", help=REPLACE_LABELS_HELP),
    preference_labels: bool = typer.Option(
        True,
        "--preference-labels/--no-preference-labels",
        help="label each preference pair with the chosen side (source human:preference, "
        "rubric preference, unless --source/--rubric name others)",
    ),
    check: bool = typer.Option(
        False, "--check", help="print how the first rows are read, and write nothing"
    ),
    quiet: bool = quiet_option(),
) -> None:
    """Import your own agent transcripts as items, whichever framework wrote them.

    Read: OpenAI chat messages (SDK, vLLM, TRL), Anthropic Messages, OpenAI
    Responses items, Inspect AI logs (.eval, .json), SWE-agent .traj,
    OpenHands event streams, LangChain messages_to_dict, Claude Code session
    logs; preference pairs (HH-RLHF chosen/rejected, TRL prompt/chosen/rejected)
    as pairwise items, each labelled with the side chosen (source human:preference,
    rubric preference; --source and --rubric name others, --no-preference-labels
    writes none). Every other column goes to the items' metadata. Rows without an id
    get one from their content. A bad row (no messages, no assistant turn)
    stops the import (file:line) and writes nothing, unless --skip-bad. With
    --rubric, an Inspect AI sample's scores that are labels of it become
    labels (scorer:<name>). Labels already in OUT/labels.jsonl from other
    sources stay, unless --replace-labels.
    """
    from tinyjudge._atomic import atomic_dir, exclusive_lock
    from tinyjudge.datasets.importers import import_chat
    from tinyjudge.datasets.jsonl import write_jsonl

    if out_dir is None and not check:
        raise UsageError(
            "give --out DIR to write the items (or --check to look first)", param="out_dir"
        )
    if out_dir is not None and out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--out {out_dir} is a file; give a folder to write into", param="out_dir")
    rub = resolve_rubric(rubric) if rubric is not None else None
    limit = _CHECK_ROWS if check else None
    with progress_bars(quiet):
        got = import_chat(
            path, id_field, messages_field, label_field, rub, source, skip_bad or check, limit,
            preference_labels=preference_labels,
        )  # fmt: skip
    if check:
        _print_check(path, got)
        if not got.items:
            raise DataError(
                str(path),
                None,
                f"none of the first {_CHECK_ROWS} rows could be read "
                f"({len(got.bad)} refused, reasons above); see --messages-field or the formats "
                "in docs/formats.md",
            )
        return
    assert out_dir is not None
    if not got.items:
        raise DataError(str(path), None, f"no items read (all {len(got.bad)} rows were bad)")
    # the labels file's lock from the read of the kept labels to the swap
    with exclusive_lock(out_dir / "labels.jsonl"), atomic_dir(out_dir, keep_others=True) as tmp:
        write_jsonl(tmp / "items.jsonl", got.items)
        if label_field is not None or got.labels:
            kept = labels_to_keep(out_dir / "labels.jsonl", got.labels, replace_labels)
            write_jsonl(tmp / "labels.jsonl", [*got.labels, *kept])
            stored = rub or got.preference_rubric
            if stored is not None:
                store_rubric(stored, tmp)
    out.print(
        f"{path}: {len(got.items)} items -> {out_dir / 'items.jsonl'}", markup=False, soft_wrap=True
    )
    if got.hashed_ids:
        out.print(
            f"  ids: {got.hashed_ids} made from the content (16 hex digits of its SHA-256; "
            "the same transcript always gets the same id)",
            markup=False,
            soft_wrap=True,
        )
    if got.metadata_fields:
        out.print(f"  metadata: {', '.join(got.metadata_fields)}", markup=False, soft_wrap=True)
    if label_field is not None or got.labels:
        sources = ", ".join(f"{n} {s}" for s, n in got.sources().items()) or source
        out.print(
            f"  labels: {len(got.labels)} ({sources}) -> {out_dir / 'labels.jsonl'}", markup=False
        )
    if got.preference_rubric is not None and label_field is None:
        from tinyjudge.datasets.importers.chat import PREFERENCE_SOURCE

        out.print(
            f"  preference pairs labelled with the side chosen: source "
            f"{source or PREFERENCE_SOURCE}, rubric {got.preference_rubric.id} "
            "(--no-preference-labels: none)",
            markup=False,
            soft_wrap=True,
        )
    _print_unread(got.unread)
    for bad in got.bad:
        err.print(f"skipped: {bad}", markup=False, soft_wrap=True)
    if got.bad:
        err.print(f"{len(got.bad)} bad rows skipped (listed above)", markup=False, soft_wrap=True)


def _print_unread(unread: dict[str, int]) -> None:
    """What no reader knew, named and counted: kept as placeholders or left out, never silent."""
    if not unread:
        return
    names = ", ".join(f"{name} x{n}" for name, n in sorted(unread.items(), key=lambda kv: -kv[1]))
    err.print(
        f"  unread: {sum(unread.values())} parts or records of no known shape ({names}); "
        "content parts stand as [type] in the text, other records are left out",
        markup=False,
        soft_wrap=True,
    )


def _print_check(path: Path, got: ChatImport) -> None:
    out.print(f"{path}: the first rows as read (nothing written)", markup=False, soft_wrap=True)
    for item in got.items:
        for line in _reading(item):
            out.print(line, markup=False, soft_wrap=True)
        if item.metadata:
            out.print(f"  metadata: {', '.join(item.metadata)}", markup=False, soft_wrap=True)
    for lab in got.labels:
        out.print(f"  label {lab.source}: {lab.item_id} {lab.label}", markup=False, soft_wrap=True)
    for bad in got.bad:
        out.print(f"  refused: {bad}", markup=False, soft_wrap=True)
    _print_unread(got.unread)
