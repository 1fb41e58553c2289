"""Who&When (Zhang et al., 2025): failed multi-agent runs with the human-blamed step and agent.

Each ``Who&When/<subset>/<n>.json`` holds a ``history`` of ``{role, name,
content}`` messages, the ``mistake_agent``, ``mistake_step`` and
``mistake_reason`` that people assigned, and the task's question and ground truth.

Steps are **0-based indices into** ``history``, which the item's ``messages``
reproduce one to one, so ``Label.step`` indexes ``Item.messages`` directly.
On the 126 Algorithm-Generated runs the message at ``mistake_step`` is spoken
by ``mistake_agent`` in 123 cases; in runs 14 and 59 the agent spoke one
message earlier, and in run 15 not adjacent to the step. These are kept as the
people wrote them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast, get_args

from tinyjudge.errors import DataError
from tinyjudge.records import Item, Label, Message, Role

from ._common import Imported, SkipBad
from ._json import load_json

__all__ = ["import_who_and_when", "WHO_AND_WHEN_SOURCE"]

WHO_AND_WHEN_SOURCE = "human:who_and_when"
_RUBRIC = "failure_step"
_ROLES = set(get_args(Role))
_META = ("question", "question_ID", "level", "ground_truth", "is_correct")


def _messages(path: Path, history: Any) -> tuple[list[Message], list[str | None]]:
    """Messages with agent names, and each message's original role if it was mapped."""
    if not isinstance(history, list) or not history:
        raise DataError(str(path), None, '"history" is empty or not a list; nothing to judge')
    messages: list[Message] = []
    original: list[str | None] = []
    for i, entry in enumerate(history):
        if not isinstance(entry, dict) or not isinstance(entry.get("content", ""), str):
            raise DataError(str(path), None, f"history[{i}] is not a {{role, content}} message")
        role = str(entry.get("role", ""))
        name = entry.get("name") or None
        if name is not None and not isinstance(name, str):
            raise DataError(str(path), None, f"history[{i}] has a name that is not a string")
        if role in _ROLES and role != "tool":
            kept = cast(Role, role)
            messages.append(Message(role=kept, content=entry.get("content", ""), name=name))
            original.append(None)
        else:
            # Multi-agent logs use agent names ("Orchestrator (thought)") as roles; the
            # speaker is an agent, so it becomes an assistant message named after it.
            if not role and not name:
                raise DataError(str(path), None, f"history[{i}] has neither role nor name")
            messages.append(
                Message(role="assistant", content=entry.get("content", ""), name=name or role)
            )
            original.append(role)
    return messages, original


def _label(item_id: str, data: dict[str, Any], n_messages: int, rubric_hash: str | None) -> Label:
    base: dict[str, Any] = {
        "item_id": item_id,
        "rubric": _RUBRIC,
        "rubric_hash": rubric_hash,
        "source": WHO_AND_WHEN_SOURCE,
    }
    agent, raw_step = data.get("mistake_agent"), data.get("mistake_step")
    raw = {"mistake_agent": agent, "mistake_step": raw_step}
    try:
        step = int(str(raw_step).strip())
    except ValueError:
        return Label(
            **base,
            status="unscored",
            raw=raw,
            reason=f"{item_id}: mistake_step {raw_step!r} is not an integer",
        )
    if not 0 <= step < n_messages:
        return Label(
            **base,
            status="unscored",
            raw=raw,
            reason=f"{item_id}: mistake_step {step} is outside the trajectory "
            f"(0..{n_messages - 1})",
        )
    if not isinstance(agent, str) or not agent.strip():
        return Label(**base, status="unscored", raw=raw, reason=f"{item_id}: empty mistake_agent")
    return Label(
        **base,
        label=agent,
        probs={agent: 1.0},
        step=step,
        rationale=data.get("mistake_reason") or None,
    )


def import_who_and_when(
    src: Path, rubric_hash: str | None = None, skip_bad: bool = False
) -> Imported:
    """Import every run as one item with the human failure attribution as a label.

    Item ids are ``who_and_when:<subset>:<file stem>``. Metadata: ``subset``,
    ``question``, ``question_ID``, ``level``, ``ground_truth``, ``is_correct``,
    ``agents`` (sorted speaker names), ``system_prompts`` (agent -> prompt),
    ``error_type`` where the run has one, and ``original_roles`` (per message,
    null when the role was kept) when a non-OpenAI role was mapped to ``assistant``.
    The label's ``label`` is the agent to blame, ``step`` the 0-based message
    index of the first mistake, and ``rationale`` the people's reason.

    Args:
        src: the ``who_and_when`` folder (or ``Who&When`` inside it).
        rubric_hash: the ``failure_step`` rubric's hash, stamped on labels.
        skip_bad: record bad files and go on instead of raising at the first.
    """
    root = src / "Who&When" if (src / "Who&When").is_dir() else src
    files = sorted(root.glob("*/*.json"), key=lambda p: (p.parent.name, _num(p.stem)))
    if not files:
        raise DataError(str(root), None, "no <subset>/<n>.json run files")
    out = Imported()
    skip = SkipBad(skip_bad, out.bad)
    for path in files:
        # where=: a field of the wrong type (a number as a name) makes a bad file too
        with skip.record(where=str(path)):
            data = load_json(path.read_bytes(), path)
            if not isinstance(data, dict):
                raise DataError(str(path), None, 'expected a JSON object with "history"')
            messages, original = _messages(path, data.get("history"))
            item_id = f"who_and_when:{path.parent.name}:{path.stem}"
            metadata: dict[str, Any] = {"subset": path.parent.name}
            metadata.update({k: data[k] for k in _META if k in data})
            metadata["agents"] = sorted({m.name for m in messages if m.name})
            if isinstance(data.get("system_prompt"), dict):
                metadata["system_prompts"] = data["system_prompt"]
            if data.get("labels"):
                metadata["error_type"] = data["labels"]
            if any(r is not None for r in original):
                metadata["original_roles"] = original
            item = Item(id=item_id, messages=messages, metadata=metadata)
            label = _label(item_id, data, len(messages), rubric_hash)
            out.items.append(item)
            out.labels.append(label)
    return out


def _num(stem: str) -> tuple[int, str]:
    return (int(stem), "") if stem.isdigit() else (1 << 30, stem)
