"""A user's own chat transcripts as items: ``tinyjudge import chat PATH --out DIR``.

Rows come from JSONL, a JSON array, CSV, Parquet or a ``datasets`` folder
(:func:`read_rows`); each row's messages are read tolerantly (the shapes the
OpenAI SDK, vLLM and TRL write), and every other column goes to the item's
``metadata``, so ``--by metadata.checkpoint`` works in audit and estimate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tinyjudge.errors import DataError, TinyjudgeError
from tinyjudge.records import Item, Label

from ._common import Imported
from ._rows import Row, jsonable, read_rows
from .label_sheet import label_text, match_label

__all__ = ["ChatImport", "import_chat", "MESSAGE_FIELDS"]

# Where the messages are when --messages-field is not given, in this order.
MESSAGE_FIELDS = ("messages", "conversations", "conversation", "chat", "dialog", "turns")
# A prompt/completion pair (TRL's format, plain or conversational) also makes an item.
# So does a logged request and its response (a request body, a ChatCompletion dump).
_PROMPT_FIELDS = ("prompt", "request")
_COMPLETION_FIELDS = ("completion", "response")


@dataclass
class ChatImport(Imported):
    """What :func:`import_chat` read, plus how many ids it made from content."""

    hashed_ids: int = 0
    metadata_fields: list[str] = field(default_factory=list)


def import_chat(
    path: Path,
    id_field: str | None = None,
    messages_field: str | None = None,
    label_field: str | None = None,
    rubric: Any = None,
    source: str | None = None,
    skip_bad: bool = False,
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
            with ``label_field``.
        source: the labels' source (e.g. ``human:final``); needed with ``label_field``.
        skip_bad: keep going past bad rows; they are listed in ``bad``.

    Raises:
        DataError: the first bad row (``file:line``) when not ``skip_bad``, and
            always a duplicate id, naming both rows.
        TinyjudgeError: ``label_field`` without ``rubric`` and ``source``.
    """
    from tinyjudge.rubric import load_rubric

    if label_field is not None and (rubric is None or not source):
        raise TinyjudgeError("--label-field needs --rubric and --source (e.g. human:final)")
    rub = load_rubric(rubric) if label_field is not None else None
    out = ChatImport()
    seen: dict[str, str] = {}  # id -> where it was first
    meta_fields: dict[str, None] = {}

    def bad(err: DataError) -> None:
        if not skip_bad:
            raise err
        out.bad.append(err)

    for row in read_rows(path, on_error=bad):
        try:
            item, hashed, used = _item(row, id_field, messages_field, label_field)
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
        out.items.append(item)
        if label is not None:
            out.labels.append(label)
        out.hashed_ids += hashed
        meta_fields.update(dict.fromkeys(k for k in row.data if k not in used))
    out.metadata_fields = list(meta_fields)
    return out


def _item(
    row: Row, id_field: str | None, messages_field: str | None, label_field: str | None
) -> tuple[Item, bool, set[str]]:
    """The item of one row, whether its id was made from content, and the columns used."""
    data = row.data
    messages, used = _messages(row, messages_field)
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
    hashed = raw_id is None or str(raw_id).strip() == ""
    try:
        item = Item.model_validate(
            {"id": "-" if hashed else str(raw_id), "messages": messages, "metadata": metadata}
        )
    except ValidationError as e:
        from tinyjudge.datasets.jsonl import describe_validation_error

        raise DataError(row.where, row.line, describe_validation_error(e)) from None
    if hashed:
        item.id = item.content_hash()[:16]
    return item, hashed, used


def _messages(row: Row, messages_field: str | None) -> tuple[list[Any], set[str]]:
    data = row.data
    if messages_field is not None:
        if messages_field not in data:
            raise DataError(
                row.where, row.line, f'missing field "{messages_field}"; found {sorted(data)}'
            )
        return _as_messages(row, messages_field, data[messages_field], "user"), {messages_field}
    for key in MESSAGE_FIELDS:
        if key in data and data[key] is not None:
            return _as_messages(row, key, data[key], "user"), {key}
    prompt = next((k for k in _PROMPT_FIELDS if data.get(k) is not None), None)
    completion = next((k for k in _COMPLETION_FIELDS if data.get(k) is not None), None)
    if prompt and completion:
        messages = _as_messages(row, prompt, data[prompt], "user")
        messages += _as_messages(row, completion, data[completion], "assistant")
        return messages, {prompt, completion}
    raise DataError(
        row.where,
        row.line,
        f"no messages: expected a column {list(MESSAGE_FIELDS)} or prompt + completion "
        f"(or name it with --messages-field); found {sorted(data)}",
    )


def _as_messages(row: Row, key: str, value: Any, text_role: str) -> list[Any]:
    """A column's value as a list of message objects (JSON text and plain text read too)."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith(("[", "{")):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as e:
                raise DataError(
                    row.where,
                    row.line,
                    f'"{key}" holds malformed JSON ({e.msg} at column {e.colno})',
                ) from None
        else:
            return [{"role": text_role, "content": value}]
    if isinstance(value, dict):
        value = _unwrap(value)
    if hasattr(value, "tolist"):  # a numpy array from pandas
        value = value.tolist()
    if not isinstance(value, list) or not value:
        raise DataError(
            row.where, row.line, f'"{key}" must be a non-empty list of messages, got {value!r:.60}'
        )
    return value


def _unwrap(obj: dict[str, Any]) -> Any:
    """The messages inside a logged object: a ChatCompletion's first choice, a request
    body's messages (also inside a Batch API line's ``body``), or the object as one message."""
    if isinstance(obj.get("body"), dict):
        return _unwrap(obj["body"])
    choices = obj.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return [choices[0].get("message")]
    if isinstance(obj.get("messages"), list):
        return obj["messages"]
    return [obj]
