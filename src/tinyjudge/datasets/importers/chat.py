"""A user's own chat transcripts as items: ``tinyjudge import chat PATH --out DIR``.

Rows come from JSONL, a JSON object or array, CSV, Parquet, a ``datasets``
folder, or an agent framework's log (:func:`read_rows`); each row's transcript
is read by :func:`tinyjudge.records.read_transcript`, whichever framework
wrote it (OpenAI, Anthropic, Responses, Inspect AI, SWE-agent, OpenHands,
LangChain), and every other column goes to the item's ``metadata``, so
``--by metadata.checkpoint`` works in audit and estimate. Preference rows
(HH-RLHF's ``chosen``/``rejected`` text or message lists, TRL's ``prompt``,
``chosen``, ``rejected``) become pairwise items, each with a label saying which
side was chosen (source ``human:preference``, rubric ``preference``, unless
named). What no reader knew is counted and named (``unread``), never passed
over in silence.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tinyjudge._progress import progress
from tinyjudge.errors import DataError, UsageError
from tinyjudge.records import (
    MESSAGE_FIELDS,
    Item,
    Label,
    Unread,
    canonical,
    is_claude_code_event,
    is_openhands_event,
    read_transcript,
)
from tinyjudge.rubric import Rubric

from ._common import Imported
from ._preference import is_preference_row, read_preference
from ._rows import Row, jsonable, read_rows
from .label_sheet import label_text, match_label

__all__ = ["ChatImport", "import_chat", "MESSAGE_FIELDS", "PREFERENCE_SOURCE", "PREFERENCE_RUBRIC"]

# what a preference row's label is, unless the user names another source or rubric
PREFERENCE_SOURCE = "human:preference"
PREFERENCE_RUBRIC = "preference"


@dataclass
class ChatImport(Imported):
    """What :func:`import_chat` read, plus how many ids it made from content."""

    hashed_ids: int = 0
    metadata_fields: list[str] = field(default_factory=list)
    unread: Counter[str] = field(default_factory=Counter)
    preference_rubric: Rubric | None = None


def import_chat(
    path: Path,
    id_field: str | None = None,
    messages_field: str | None = None,
    label_field: str | None = None,
    rubric: Any = None,
    source: str | None = None,
    skip_bad: bool = False,
    limit: int | None = None,
    preference_labels: bool = True,
) -> ChatImport:
    """Read a file of chat transcripts into items (and labels, when a column holds them).

    Args:
        path: a file or folder that :func:`read_rows` reads.
        id_field: the column with each item's id. Default ``id`` when rows
            have it; otherwise (or when empty) an id is made from the content
            (16 hex digits of :meth:`Item.content_hash`).
        messages_field: the column with the messages (a list of message
            objects, or that list as JSON text). Default: the first of
            :data:`MESSAGE_FIELDS` present, else ``prompt`` + ``completion``.
        label_field: a column holding a label of ``rubric`` for the row, as
            ``source`` says it; empty values make no label.
        rubric: a :class:`~tinyjudge.rubric.Rubric` (name, path or object); needed
            with ``label_field``. An Inspect AI sample's scores whose values are
            labels of it become labels (source ``scorer:<name>``); other scores
            go to metadata (``scores``).
        source: the labels' source (e.g. ``human:final``); needed with ``label_field``.
        skip_bad: keep going past bad rows; they are listed in ``bad``.
        limit: read only the first ``limit`` rows (a look at how a file is read).
        preference_labels: a preference row (``chosen``/``rejected``) gets a label
            saying which side was chosen: under ``rubric`` (default the built-in
            pairwise rubric ``preference``), source ``source`` (default
            :data:`PREFERENCE_SOURCE`). False: the pairs alone.

    Raises:
        DataError: the first bad row (``file:line``) when not ``skip_bad`` (a
            row with no messages, or none from the assistant), and always a
            duplicate id, naming both rows.
        UsageError: ``label_field`` without ``rubric`` and ``source``.
    """
    from tinyjudge.rubric import load_rubric

    if label_field is not None and (rubric is None or not source):
        raise UsageError(
            "label_field needs rubric and source (e.g. human:final)",
            param="label_field",
            also=("rubric", "source"),
        )
    rub = load_rubric(rubric) if rubric is not None else None
    out = ChatImport()
    seen: dict[str, str] = {}  # id -> where it was first
    meta_fields: dict[str, None] = {}

    def bad(err: DataError) -> None:
        if not skip_bad:
            raise err
        out.bad.append(err)

    with progress(f"reading {path.name}") as advance:
        for n, row in enumerate(_counted(_event_streams(read_rows(path, on_error=bad)), advance)):
            if limit is not None and n >= limit:
                break
            try:
                item, hashed, used, scores = _item(row, id_field, messages_field, label_field, out)
            except DataError as err:
                bad(err)
                continue
            where = f"{row.where}:{row.line}"
            if item.id in seen:
                how = " (an id made from the content: the same transcript twice)" if hashed else ""
                raise DataError(
                    row.where, row.line, f'duplicate id "{item.id}", first at {seen[item.id]}{how}'
                )
            seen[item.id] = where
            label = None
            if preference_labels and label_field is None and item.is_pairwise:
                # a preference row's label is its preference: which side was chosen
                if out.preference_rubric is None:
                    out.preference_rubric = rub or load_rubric(PREFERENCE_RUBRIC)
                prub = out.preference_rubric
                label = Label(item_id=item.id, rubric=prub.id, rubric_hash=prub.hash,
                              source=source or PREFERENCE_SOURCE,
                              label=str(item.metadata["preferred"]))  # fmt: skip
                if problem := prub.label_problem(label):
                    raise UsageError(
                        f"rubric {prub.id} cannot hold a preference ({problem}): give a "
                        "pairwise rubric with labels a and b",
                        param="rubric",
                    )
            if rub is not None and label_field is not None:
                value = label_text(row.data.get(label_field))
                if value is not None:
                    label = Label(
                        item_id=item.id,
                        rubric=rub.id,
                        rubric_hash=rub.hash,
                        source=source or "",
                        label=match_label(value, rub),
                    )
                    if problem := rub.label_problem(label):
                        bad(DataError(row.where, row.line, f"{label_field}: {problem}"))
                        continue
            scorer_labels = _scorer_labels(item, scores, rub) if rub is not None else []
            if scores and len(scorer_labels) < len(scores):
                taken = {lab.source.removeprefix("scorer:") for lab in scorer_labels}
                item.metadata["scores"] = {
                    k: jsonable(v) for k, v in scores.items() if k not in taken
                }
            out.items.append(item)
            if label is not None:
                out.labels.append(label)
            out.labels.extend(scorer_labels)
            out.hashed_ids += hashed
            meta_fields.update(dict.fromkeys(k for k in row.data if k not in used))
    out.metadata_fields = list(meta_fields)
    return out


def _counted(rows: Iterator[Row], advance: Callable[[int], None]) -> Iterator[Row]:
    for row in rows:
        yield row
        advance(1)


def _event_streams(rows: Iterator[Row]) -> Iterator[Row]:
    """Rows, with each run of one stream's events joined into one row: OpenHands events (a
    JSONL of events, or a folder of one event per file as OpenHands saves a session; in id
    order) and the lines of a Claude Code session log (one row per ``sessionId``)."""
    run: list[Row] = []

    def joined() -> Row:
        data = [r.data for r in run]
        if is_openhands_event(data[0]):
            return Row(run[0].where, run[0].line, {"events": sorted(data, key=_event_order)})
        session = data[0].get("sessionId")
        return Row(run[0].where, run[0].line, {"id": session, "sessionId": session, "events": data})

    for row in rows:
        key = _stream_of(row)
        if run and key != _stream_of(run[0]):
            yield joined()
            run = []
        if key is None:
            yield row
        else:
            run.append(row)
    if run:
        yield joined()


def _stream_of(row: Row) -> str | None:
    """Which event stream a row belongs to (None: a row of its own): the Claude Code
    session, or the file of OpenHands events (its folder, for one event per file)."""
    if is_claude_code_event(row.data):
        return f"claude code session {row.data.get('sessionId')}"
    if not is_openhands_event(row.data):
        return None
    path = Path(row.where)
    return str(path.parent) if path.stem.isdigit() else row.where


def _event_order(event: dict[str, Any]) -> tuple[int, Any]:
    event_id = event.get("id")
    return (0, event_id) if isinstance(event_id, int) else (1, str(event_id))


def _item(
    row: Row,
    id_field: str | None,
    messages_field: str | None,
    label_field: str | None,
    out: ChatImport,
) -> tuple[Item, bool, set[str], dict[str, Any]]:
    """The item of one row, whether its id was made from content, the columns used,
    and the scores the row's framework gave it (Inspect AI)."""
    data = row.data
    if messages_field is None and is_preference_row(data):
        return _pair_item(row, id_field, label_field, out)
    try:
        transcript = read_transcript(data, messages_field)
    except ValueError as e:
        raise DataError(row.where, row.line, str(e)) from None
    used = set(transcript.used)
    id_key = id_field or "id"
    if id_field is not None and id_field not in data:
        raise DataError(row.where, row.line, f'missing id field "{id_field}"; found {sorted(data)}')
    raw_id = data.get(id_key)
    used |= {id_key} if id_key in data else set()
    if label_field is not None:
        used.add(label_field)
    metadata = {k: jsonable(v) for k, v in data.items() if k not in used}
    if isinstance(metadata.get("metadata"), dict):  # a metadata column is merged, not nested
        metadata = {**metadata.pop("metadata"), **metadata}
    metadata.update(jsonable(transcript.metadata))
    hashed = raw_id is None or str(raw_id).strip() == ""
    messages = canonical(transcript.messages)
    try:
        item = Item.model_validate(
            {"id": "-" if hashed else str(raw_id), "messages": messages, "metadata": metadata}
        )
    except ValidationError as e:
        from tinyjudge.datasets.jsonl import describe_validation_error

        raise DataError(row.where, row.line, describe_validation_error(e)) from None
    if not any(m.role == "assistant" for m in item.messages):
        roles = _roles([m.role for m in item.messages])
        raise DataError(row.where, row.line, f"no assistant turn to judge (roles read: {roles})")
    if hashed:
        item.id = item.content_hash()[:16]
    out.unread.update(transcript.unread)
    return item, hashed, used, transcript.scores


def _pair_item(
    row: Row, id_field: str | None, label_field: str | None, out: ChatImport
) -> tuple[Item, bool, set[str], dict[str, Any]]:
    """The pairwise item of a preference row (``chosen``/``rejected``, maybe ``prompt``)."""
    unread = Unread()
    try:
        pair, used = read_preference(row.data, unread)
    except ValueError as e:
        raise DataError(row.where, row.line, str(e)) from None
    id_key = id_field or "id"
    if id_field is not None and id_field not in row.data:
        found = sorted(row.data)
        raise DataError(row.where, row.line, f'missing id field "{id_field}"; found {found}')
    raw_id = row.data.get(id_key)
    used |= {id_key} | ({label_field} if label_field else set())
    metadata = {k: jsonable(v) for k, v in row.data.items() if k not in used}
    hashed = raw_id is None or str(raw_id).strip() == ""
    try:
        item = Item.model_validate(
            {**pair, "id": "-" if hashed else str(raw_id),
             "metadata": {**metadata, **pair["metadata"]}}
        )  # fmt: skip
    except ValidationError as e:
        from tinyjudge.datasets.jsonl import describe_validation_error

        raise DataError(row.where, row.line, describe_validation_error(e)) from None
    if hashed:
        item.id = item.content_hash()[:16]
    out.unread.update(unread)
    return item, hashed, used, {}


def _roles(roles: list[Any]) -> str:
    """Roles in order, a run of one role shown once with its count."""
    runs: list[list[Any]] = []
    for role in roles:
        if runs and runs[-1][0] == role:
            runs[-1][1] += 1
        else:
            runs.append([role, 1])
    return ", ".join(f"{r} x{k}" if k > 1 else str(r) for r, k in runs) or "none"


def _scorer_labels(item: Item, scores: dict[str, Any], rubric: Any) -> list[Label]:
    """Labels from a framework's scores whose values are labels of ``rubric``."""
    out = []
    for name, score in scores.items():
        value = score.get("value") if isinstance(score, dict) else score
        text = label_text(value) if not isinstance(value, dict | list) else None
        if text is None:
            continue
        label = Label(
            item_id=item.id,
            rubric=rubric.id,
            rubric_hash=rubric.hash,
            source=f"scorer:{name}",
            label=match_label(text, rubric),
            rationale=score.get("explanation") if isinstance(score, dict) else None,
        )
        if rubric.label_problem(label) is None:
            out.append(label)
    return out
