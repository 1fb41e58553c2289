"""OpenHands agent SDK (V1) events: typed records named by their ``kind``.

``SystemPromptEvent`` is the system turn, ``MessageEvent`` a user's or the
agent's turn (its ``llm_message``), ``ActionEvent`` a tool call (``tool_call``,
else ``tool_name`` + ``action``; ``thought`` the text before it; calls from one
model response, by ``llm_response_id``, one turn), ``ObservationEvent`` the
result of the call its ``tool_call_id`` names (``observation.is_error``),
``AgentErrorEvent`` a failed one, ``UserRejectObservation`` a refused one.
"""

from __future__ import annotations

from typing import Any

from ._chat import read_chat_message
from ._common import Unread, fields, json_text, new_message, text_of, tool_call

__all__ = ["is_sdk_event", "add_sdk_event"]

# Events that steer the conversation or its memory, not part of the exchange.
_BOOKKEEPING = frozenset(
    {"Condensation", "CondensationRequest", "ConversationStateUpdateEvent", "PauseEvent",
     "ConversationErrorEvent", "TokenEvent", "StreamingDeltaEvent"}
)  # fmt: skip
_KINDS = frozenset(
    {"SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent", "AgentErrorEvent",
     "UserRejectObservation", "CondensationSummaryEvent", *_BOOKKEEPING}
)  # fmt: skip


def is_sdk_event(obj: dict[str, Any]) -> bool:
    """Whether a record is an event of the OpenHands agent SDK."""
    kind = obj.get("kind")
    return isinstance(kind, str) and "source" in obj and (kind in _KINDS or kind.endswith("Event"))


def _observation_text(observation: Any) -> tuple[str, bool | None]:
    if not isinstance(observation, dict):
        return text_of(observation), None
    said = observation.get("is_error")
    failed = bool(said) if isinstance(said, bool) else (True if observation.get("error") else None)
    for key in ("content", "output", "text"):
        if observation.get(key) not in (None, "", []):
            return text_of(observation[key]), failed
    rest = {k: v for k, v in observation.items() if k not in ("kind", "is_error")}
    return json_text(rest), failed


def add_sdk_event(
    out: list[dict[str, Any]], event: dict[str, Any], state: dict[str, Any], unread: Unread
) -> None:
    """Read one SDK event onto the messages read so far (``state`` carries the last
    model response's id, so parallel calls share a turn)."""
    kind = event["kind"]
    if kind in _BOOKKEEPING:
        return
    if kind == "SystemPromptEvent":
        out.append(new_message("system", text_of(event.get("system_prompt"))))
    elif kind == "MessageEvent" and isinstance(event.get("llm_message"), dict):
        out.extend(read_chat_message(event["llm_message"], unread))
    elif kind == "ActionEvent":
        given: dict[str, Any] = (
            event["tool_call"] if isinstance(event.get("tool_call"), dict) else {}
        )
        action = {k: v for k, v in fields(event.get("action")).items() if k != "kind"}
        call_id = given.get("id") or event.get("tool_call_id") or f"event_{event.get('id')}"
        name = given.get("name") or event.get("tool_name")
        call = tool_call(call_id, name, given.get("arguments", action))
        response = event.get("llm_response_id")
        tail = out[-1] if out else None
        if (
            tail
            and tail.get("role") == "assistant"
            and response
            and response == state.get("response")
        ):
            tail.setdefault("tool_calls", []).append(call)
        else:
            thought = text_of(event.get("thought") or "") or None
            reasoning = event.get("reasoning_content") or None
            out.append(new_message("assistant", thought, reasoning=reasoning, tool_calls=[call]))
        state["response"] = response
    elif kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
        if kind == "ObservationEvent":
            text, failed = _observation_text(event.get("observation"))
        elif kind == "AgentErrorEvent":
            text, failed = str(event.get("error") or ""), True
        else:
            text, failed = f"rejected: {event.get('rejection_reason') or ''}".strip(), True
        out.append(
            new_message("tool", text, tool_call_id=event.get("tool_call_id"), is_error=failed)
        )
    elif kind == "CondensationSummaryEvent":
        out.append(new_message("user", f"[summary of earlier events] {event.get('summary', '')}"))
    else:
        unread.note("OpenHands event", kind)
