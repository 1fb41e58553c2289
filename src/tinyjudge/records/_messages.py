"""Messages in the OpenAI chat format, read tolerantly from other tools' files."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

__all__ = ["Role", "ToolFunction", "ToolCall", "Message", "content_text", "link_tool_calls"]

Role = Literal["system", "developer", "user", "assistant", "tool"]


# Other tools' spellings of the roles (ShareGPT, Gemini, Llama 3's tool role, the
# OpenAI API's legacy "function" role), read as the OpenAI role they stand for.
_ROLE_ALIASES = {
    "human": "user",
    "gpt": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "function": "tool",
    "ipython": "tool",
    "observation": "tool",
}
# What a content part that is not text is shown as, by its type.
_PART_NAMES = {
    "image_url": "image",
    "input_image": "image",
    "image": "image",
    "input_audio": "audio",
    "audio": "audio",
    "file": "file",
    "input_file": "file",
    "video": "video",
    "video_url": "video",
}


def _is_empty(value: Any) -> bool:
    return value is None or value == [] or value == {}


class _Tolerant(BaseModel):
    """A record read from other tools' files: fields tinyjudge does not use are kept.

    Unknown fields go into ``extra`` (empty ones, such as the OpenAI SDK's
    ``"audio": null``, are dropped), so a file written by another tool is never
    refused for them and nothing it said is lost.
    """

    # Unknown fields are moved into ``extra`` before validation, so the schema
    # says what is accepted (any field), not what is stored.
    model_config = ConfigDict(extra="forbid", json_schema_extra={"additionalProperties": True})
    extra: dict[str, Any] | None = None

    @classmethod
    def _normalize(cls, data: dict[str, Any]) -> dict[str, Any]:
        return data

    @model_validator(mode="before")
    @classmethod
    def _keep_unknown(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = cls._normalize(dict(data))
        known = cls.model_fields
        unknown = {k: v for k, v in data.items() if k not in known and not _is_empty(v)}
        out = {k: v for k, v in data.items() if k in known}
        if unknown:
            extra = out.get("extra")
            if not isinstance(extra, dict):  # a field of the sender's own named "extra"
                extra = {} if _is_empty(extra) else {"extra": extra}
            out["extra"] = {**extra, **unknown}
        return out


class ToolFunction(_Tolerant):
    """The function part of a tool call; ``arguments`` is a JSON string.

    Arguments given as an object (TRL, transformers chat templates) are stored
    as their JSON text.
    """

    name: str
    arguments: str = ""

    @field_validator("arguments", mode="before")
    @classmethod
    def _arguments_text(cls, value: Any) -> Any:
        if value is None:
            return ""
        if isinstance(value, dict | list):
            return json.dumps(value, ensure_ascii=False)
        return value


class ToolCall(_Tolerant):
    """One tool call made by an assistant message.

    ``id`` may be missing (TRL, transformers); an :class:`Item` then gives it one
    from its position (``call_<message>_<k>``). A flat ``{"name", "arguments"}``
    and an OpenAI custom tool call (``{"custom": {"name", "input"}}``) are read too.
    """

    id: str | None = None
    type: str = "function"
    function: ToolFunction

    @classmethod
    def _normalize(cls, data: dict[str, Any]) -> dict[str, Any]:
        if "function" not in data:
            if isinstance(data.get("custom"), dict):
                custom = data.pop("custom")
                data["function"] = {"name": custom.get("name"), "arguments": custom.get("input")}
                data.setdefault("type", "custom")
            elif "name" in data:
                data["function"] = {
                    "name": data.pop("name"),
                    "arguments": data.pop("arguments", ""),
                }
        return data


class Message(_Tolerant):
    """A chat message in the OpenAI format, tool calls and tool results included.

    Read tolerantly, since messages come from other tools' files: the OpenAI
    SDK's ``model_dump()`` (``refusal``, ``annotations``, ``audio``,
    ``function_call``), vLLM's and DeepSeek's ``reasoning_content``, TRL's tool
    calls (no ``id``, ``arguments`` as an object), ShareGPT's ``from``/``value``.
    ``name`` keeps the speaking agent's name in multi-agent transcripts.
    ``content`` may be a string or a list of content parts. ``reasoning`` is the
    model's reasoning text, kept but not part of :attr:`text`. ``is_error`` says
    that a tool result reports a failed call, where the framework that wrote it
    says so (Anthropic's ``is_error``, Inspect's ``error``, OpenHands' error
    observations). Fields tinyjudge does not use are kept in ``extra``.
    """

    role: Role
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    is_error: bool | None = None
    reasoning: str | None = None
    refusal: str | None = None

    @classmethod
    def _normalize(cls, data: dict[str, Any]) -> dict[str, Any]:
        if "role" not in data and "from" in data:  # ShareGPT
            data["role"] = data.pop("from")
            data.setdefault("content", data.pop("value", None))
        role = data.get("role")
        if isinstance(role, str):
            data["role"] = _ROLE_ALIASES.get(role.lower(), role.lower())
        for key in ("reasoning_content", "thinking"):
            if data.get(key) and not data.get("reasoning"):
                data["reasoning"] = data.pop(key)
        call = data.get("function_call")
        if isinstance(call, dict) and not data.get("tool_calls"):
            data["tool_calls"] = [{"type": "function", "function": data.pop("function_call")}]
        content = data.get("content")
        is_part = lambda p: isinstance(p, str) or (isinstance(p, dict) and "type" in p)  # noqa: E731
        if isinstance(content, list) and all(is_part(p) for p in content):
            data["content"] = [
                {"type": "text", "text": p} if isinstance(p, str) else p for p in content
            ]
        elif isinstance(content, dict) and "type" in content:
            data["content"] = [content]
        elif isinstance(content, dict | list | int | float | bool):
            # a tool's JSON result given as an object: its JSON text is the content
            data["content"] = json.dumps(content, ensure_ascii=False)
        if not data.get("tool_calls"):
            data.pop("tool_calls", None)
        return data

    @model_validator(mode="after")
    def _check_tool_fields(self) -> Message:
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f'only assistant messages carry "tool_calls", not {self.role!r}')
        return self

    @property
    def text(self) -> str:
        """The message content as plain text (content parts joined).

        With no content, the refusal or the spoken reply's transcript stands in.
        """
        audio = (self.extra or {}).get("audio")
        transcript = audio.get("transcript") if isinstance(audio, dict) else None
        return content_text(self.content) or self.refusal or str(transcript or "")


def content_text(content: str | list[dict[str, Any]] | None) -> str:
    """Flatten OpenAI message content (a string or parts) to plain text.

    Text parts are joined by newlines; a part with no text stands as a
    placeholder naming what it was (``[image]``, ``[audio]``, ``[file]``).
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    out = []
    for part in content:
        if not isinstance(part, dict):
            continue
        text = part.get("text") if part.get("type") != "refusal" else part.get("refusal")
        if isinstance(text, str):
            if text:
                out.append(text)
            continue
        kind = str(part.get("type", "part"))
        out.append(f"[{_PART_NAMES.get(kind, kind)}]")
    return "\n".join(out)


def link_tool_calls(messages: list[Message]) -> None:
    """Give tool calls without ``id`` one, and tool replies without ``tool_call_id`` theirs.

    A call's id comes from its position (``call_<message>_<k>``). A tool reply
    with no ``tool_call_id`` answers the open call of the same ``name`` if there
    is one, else the earliest open call, as TRL and chat templates assume.
    """
    open_calls: list[ToolCall] = []
    for i, message in enumerate(messages):
        if message.role == "assistant" and message.tool_calls:
            for k, call in enumerate(message.tool_calls):
                if not call.id:
                    call.id = f"call_{i}_{k}"
            open_calls = list(message.tool_calls)
        elif message.role == "tool":
            if message.tool_call_id:
                open_calls = [c for c in open_calls if c.id != message.tool_call_id]
            elif open_calls:
                named = [c for c in open_calls if message.name and c.function.name == message.name]
                call = (named or open_calls)[0]
                message.tool_call_id = call.id
                open_calls.remove(call)
