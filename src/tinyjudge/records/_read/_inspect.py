"""Inspect AI eval logs: an ``EvalLog`` (``.json``) or its zip (``.eval``), one transcript
per sample and epoch.

A sample's messages are chat messages with Inspect's own fields (read by
:func:`read_chat_message`); long texts a ``.eval`` file stores once, in the
sample's ``attachments``, are put back where ``attachment://<hash>`` names them.
The log format is read as written (``header.json`` or the log's ``eval``, and
``samples/<id>_epoch_<n>.json``), without ``inspect_ai``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .._messages import content_text
from ._common import fields, json_text

__all__ = [
    "INSPECT_SAMPLE_FIELDS",
    "input_text",
    "is_inspect_sample",
    "is_eval_log",
    "resolve_attachments",
    "sample_rows",
]

# A sample's fields read as the transcript (or too bulky to be metadata); the rest is metadata.
INSPECT_SAMPLE_FIELDS = (
    "messages", "output", "events", "events_data", "attachments", "store", "input", "scores"
)  # fmt: skip
_ATTACHMENT = "attachment://"


def input_text(value: Any) -> str:
    """A sample's ``input`` as text: a string, or the texts of its messages."""
    if isinstance(value, list):
        texts = [content_text(m.get("content")) for m in value if isinstance(m, dict)]
        return "\n".join(t for t in texts if t)
    return value if isinstance(value, str) else json_text(value)


def is_inspect_sample(row: dict[str, Any]) -> bool:
    """Whether a row is one sample of an Inspect AI log."""
    return (
        isinstance(row.get("messages"), list)
        and "epoch" in row
        and ("input" in row or "scores" in row)
    )


def is_eval_log(obj: Any) -> bool:
    """Whether a JSON object is an Inspect AI ``EvalLog``."""
    return isinstance(obj, dict) and isinstance(obj.get("eval"), dict) and "samples" in obj


# The text that attachments may add to one sample: each attachment once in full, and
# its repeats while the total stays under four times the attachments' own size (and
# 1 MiB): one attachment named by 800 messages would otherwise inflate a small log
# hundreds of times.
_REPEAT_FACTOR = 4
_REPEAT_FLOOR = 1 << 20


def resolve_attachments(sample: dict[str, Any]) -> dict[str, Any]:
    """The sample with each ``attachment://<hash>`` text replaced by the text it names.

    An attachment is put back in full where it is first named; a repeat is put back
    only within the sample's budget (see ``_REPEAT_FACTOR``), past it a short note
    names the attachment and where it was shown.
    """
    attachments = sample.get("attachments") or {}
    if not attachments or not isinstance(attachments, dict):
        return sample
    sizes = sum(len(v) for v in attachments.values() if isinstance(v, str))
    left = [max(_REPEAT_FLOOR, _REPEAT_FACTOR * sizes)]
    shown: set[str] = set()

    def expand(key: str, value: str) -> str:
        text = attachments.get(key)
        if not isinstance(text, str):
            return value
        if key in shown and len(text) > left[0]:
            return f"[attachment {key}: the same {len(text)} characters as shown earlier]"
        if key in shown:
            left[0] -= len(text)
        shown.add(key)
        return text

    def put_back(value: Any) -> Any:
        if isinstance(value, str) and value.startswith(_ATTACHMENT):
            return expand(value[len(_ATTACHMENT) :], value)
        if isinstance(value, dict):
            return {k: put_back(v) for k, v in value.items()}
        if isinstance(value, list):
            return [put_back(v) for v in value]
        return value

    return {k: put_back(v) if k in ("messages", "input") else v for k, v in sample.items()}


def _count(value: Any) -> int:
    """A count the log gives (an epoch, the epochs run); 1 when it gives none."""
    return value if isinstance(value, int) and value > 0 else 1


def sample_rows(header: dict[str, Any], samples: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Rows of a log's samples: the id is the sample's (``<id>:<epoch>`` when the log
    ran more than one epoch), and the run's task and model join each row's fields."""
    spec = fields(header.get("eval"))
    config = fields(spec.get("config"))
    epochs = max([_count(s.get("epoch")) for s in samples] + [_count(config.get("epochs"))])
    run = {"task": spec.get("task"), "model": spec.get("model"), "eval_id": spec.get("eval_id")}
    for sample in samples:
        sample_id = sample.get("id")
        row_id = f"{sample_id}:{sample.get('epoch', 1)}" if epochs > 1 else sample_id
        yield {**{k: v for k, v in run.items() if v is not None}, **sample, "id": str(row_id)}
