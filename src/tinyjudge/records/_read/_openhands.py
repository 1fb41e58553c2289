"""OpenHands event streams: actions and the observations that answer them.

An event is ``{"id", "source", "action", "args", "tool_call_metadata"}`` (an
action) or ``{"id", "cause", "observation", "content", "extras"}`` (an
observation). The user's and the agent's ``message`` actions are their turns,
the ``system`` action the system prompt, ``finish`` the agent's last word; any
other agent action is a tool call (named by its ``tool_call_metadata``, else by
the action), its ``thought`` the text before it. An observation is the tool
result of the action it names by ``cause`` (or by the tool call id); an
``error`` observation is a failed one (``is_error``). The agent SDK's typed
events (``"kind": "ActionEvent"``, ...) are read by ``_openhands_sdk``.
"""

from __future__ import annotations

from typing import Any

from ._common import Unread, fields, new_message, tool_call
from ._openhands_sdk import add_sdk_event, is_sdk_event

__all__ = ["is_openhands_event", "read_openhands"]

# Events that only record the agent's state or memory, not the exchange.
_BOOKKEEPING = frozenset(
    {"change_agent_state", "agent_state_changed", "recall", "null", "condensation",
     "condensation_request"}
)  # fmt: skip
# An action's arguments that steer OpenHands rather than the tool.
_STEERING = frozenset(
    {"thought", "hidden", "blocking", "is_input", "confirmation_state", "security_risk",
     "impl_source", "wait_for_response", "image_urls", "file_urls", "reasoning_content"}
)  # fmt: skip


def is_openhands_event(obj: dict[str, Any]) -> bool:
    """Whether a record is an OpenHands event (an action or an observation, or an
    agent SDK event named by its ``kind``)."""
    return is_sdk_event(obj) or ("source" in obj and ("action" in obj or "observation" in obj))


def _call_id(event: dict[str, Any], linked: dict[int, str]) -> str:
    meta = fields(event.get("tool_call_metadata"))
    if meta.get("tool_call_id"):
        return str(meta["tool_call_id"])
    cause = event.get("cause")
    return linked.get(cause, f"event_{cause}") if cause is not None else f"event_{event.get('id')}"


def read_openhands(events: list[dict[str, Any]], unread: Unread) -> list[dict[str, Any]]:
    """An OpenHands event stream as OpenAI messages."""
    out: list[dict[str, Any]] = []
    linked: dict[int, str] = {}  # action event id -> its tool call id
    last_response: Any = None  # the model response the last tool call came from
    sdk_state: dict[str, Any] = {}
    for event in events:
        if is_sdk_event(event):
            add_sdk_event(out, event, sdk_state, unread)
            continue
        action, args = event.get("action"), fields(event.get("args"))
        if isinstance(action, dict | list) or isinstance(event.get("observation"), dict | list):
            unread.note("OpenHands event", "with an object for its action or observation")
            continue
        if action in _BOOKKEEPING or event.get("observation") in _BOOKKEEPING:
            continue
        if action is not None:
            text = args.get("content") or event.get("message")
            if action == "system":
                out.append(new_message("system", args.get("content")))
            elif action == "message":
                role = "user" if event.get("source") == "user" else "assistant"
                out.append(new_message(role, text, reasoning=args.get("thought") or None))
            elif action == "finish":
                final = args.get("final_thought") or args.get("message") or args.get("thought")
                out.append(new_message("assistant", final or event.get("message")))
            elif event.get("source") == "agent":
                meta = fields(event.get("tool_call_metadata"))
                name = meta.get("function_name")
                call_id = _call_id(event, linked)
                linked[event.get("id", -1)] = call_id
                response = fields(meta.get("model_response")).get("id")
                arguments = {k: v for k, v in args.items() if k not in _STEERING}
                call = tool_call(call_id, name or str(action), arguments)
                tail = out[-1] if out else None
                if tail and tail["role"] == "assistant" and response and response == last_response:
                    tail.setdefault("tool_calls", []).append(call)
                else:
                    out.append(
                        new_message("assistant", args.get("thought") or None, tool_calls=[call])
                    )
                last_response = response
            else:
                unread.note("OpenHands event", f"action:{action}")
        elif event.get("cause") is not None or event.get("tool_call_metadata"):
            failed = event.get("observation") == "error" or event.get("success") is False
            call_id = _call_id(event, linked)
            error = True if failed else None
            out.append(
                new_message("tool", event.get("content"), tool_call_id=call_id, is_error=error)
            )
        elif event.get("observation") == "error":
            out.append(new_message("user", f"[error] {event.get('content', '')}"))
        else:
            unread.note("OpenHands event", f"observation:{event.get('observation')}")
    return out
