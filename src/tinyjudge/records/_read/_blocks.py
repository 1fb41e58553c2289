"""A message whose content is a list of typed blocks, as Anthropic's Messages API writes it.

The block types of the Anthropic Messages API (``text``, ``thinking``,
``redacted_thinking``, ``tool_use``, ``tool_result``, server tools such as
``server_tool_use`` + ``web_search_tool_result``, ``image``, ``document``) and
the few other names for the same things (Responses' ``input_text`` /
``output_text``, Inspect's and LangChain's ``reasoning``, LangChain's
``tool_call``) become OpenAI messages: text joined, thinking kept as
``reasoning``, tool uses as tool calls, and each tool result as a ``tool``
message linked by ``tool_use_id``, with ``is_error``. Blocks keep their order:
a tool result inside an assistant turn (a server tool) or a user turn closes the
message before it.
"""

from __future__ import annotations

from typing import Any

from ._common import Unread, json_text, new_message, tool_call

__all__ = ["PLAIN_PARTS", "has_blocks", "read_blocks", "block_text", "result_text"]

# Content parts an OpenAI message carries as they are (content_text shows them).
PLAIN_PARTS = frozenset(
    {"text", "image_url", "input_audio", "file", "refusal", "image", "audio", "video",
     "video_url", "input_image", "input_file"}
)  # fmt: skip
_TEXT = frozenset({"text", "input_text", "output_text"})
_REASONING = frozenset({"thinking", "redacted_thinking", "reasoning"})
_TOOL_USE = frozenset({"tool_use", "server_tool_use", "mcp_tool_use", "tool_call"})
# What a block that is not text stands as in the text, by its type.
_PLACEHOLDERS = {
    "image": "image",
    "image_url": "image",
    "input_image": "image",
    "document": "document",
    "file": "file",
    "input_file": "file",
    "audio": "audio",
    "input_audio": "audio",
    "video": "video",
    "container_upload": "file",
    "data": "data",
}
# Server tool results carry encrypted payloads only the provider reads.
_OPAQUE = frozenset({"encrypted_content", "encrypted_index", "signature"})


def _is_tool_result(kind: str) -> bool:
    return kind == "tool_result" or kind.endswith("_tool_result")


def has_blocks(content: Any) -> bool:
    """Whether message content is a list of typed blocks, one of them not a plain
    OpenAI content part."""
    if not isinstance(content, list):
        return False
    if not all(isinstance(b, str) or (isinstance(b, dict) and "type" in b) for b in content):
        return False  # a tool's JSON result given as a list, not content parts
    return any(isinstance(b, dict) and str(b["type"]) not in PLAIN_PARTS for b in content)


def block_text(block: dict[str, Any], unread: Unread) -> str:
    """The text a content block stands for: its text, or a placeholder naming it."""
    kind = str(block.get("type", "part"))
    if kind in _TEXT and isinstance(block.get("text"), str):
        return str(block["text"])
    if kind == "refusal":
        return str(block.get("refusal") or "")
    if kind in _PLACEHOLDERS:
        title = block.get("title") or block.get("filename") or block.get("name")
        name = _PLACEHOLDERS[kind]
        return f"[{name}: {title}]" if isinstance(title, str) and title else f"[{name}]"
    if kind == "search_result":
        found = result_text(block.get("content"), unread)
        return f"[search result: {block.get('title', '')}]\n{found}"
    if isinstance(block.get("text"), str):  # a text part under another name
        unread.note("content part", kind)
        return str(block["text"])
    unread.note("content part", kind)
    return f"[{kind}]"


def result_text(content: Any, unread: Unread) -> str:
    """A tool result's content (a string, blocks, or a server tool's payload) as text."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, dict) and "type" in content and not _is_error_payload(content):
        content = [content]
    if isinstance(content, list) and all(isinstance(b, dict) and "type" in b for b in content):
        texts = []
        for b in content:
            if b.get("type") in _TEXT | set(_PLACEHOLDERS) | {"search_result", "refusal"}:
                texts.append(block_text(b, unread))
            else:  # a server tool's result record (web_search_result, ...): its fields
                texts.append(json_text({k: v for k, v in b.items() if k not in _OPAQUE}))
        return "\n".join(t for t in texts if t)
    return json_text(content)


def _is_error_payload(content: Any) -> bool:
    return isinstance(content, dict) and (
        str(content.get("type", "")).endswith("_error") or "error_code" in content
    )


def _reasoning_text(block: dict[str, Any]) -> str:
    if block.get("type") == "redacted_thinking" or block.get("redacted"):
        return "[redacted thinking]"
    for key in ("thinking", "reasoning", "text"):
        if isinstance(block.get(key), str):
            return str(block[key])
    summary = block.get("summary")
    return "\n".join(s.get("text", "") for s in summary if isinstance(s, dict)) if summary else ""


def read_blocks(message: dict[str, Any], unread: Unread) -> list[dict[str, Any]]:
    """A message whose content is a list of blocks, as one or more OpenAI messages.

    Args:
        message: ``{"role", "content": [blocks]}`` (other fields are kept on
            the message that carries the text).
        unread: where blocks of an unknown type are tallied.
    """
    role = message.get("role")
    rest = {k: v for k, v in message.items() if k not in ("role", "content")}
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[dict[str, Any]] = list(rest.pop("tool_calls", None) or [])

    def flush() -> None:
        if texts or thoughts or calls:
            content = "\n".join(t for t in texts if t) or None
            reasoning = "\n".join(t for t in thoughts if t) or rest.pop("reasoning", None)
            fields = {**rest, "reasoning": reasoning, "tool_calls": list(calls)}
            out.append(new_message(str(role), content, **fields))
            rest.clear()
        texts.clear()
        thoughts.clear()
        calls.clear()

    for block in message.get("content") or []:
        if isinstance(block, str):
            texts.append(block)
            continue
        if not isinstance(block, dict):
            unread.note("content part", type(block).__name__)
            continue
        kind = str(block.get("type", ""))
        if kind in _REASONING:
            thoughts.append(_reasoning_text(block))
        elif kind in _TOOL_USE and role == "assistant":
            arguments = block.get("input", block.get("args", block.get("arguments")))
            call = tool_call(block.get("id"), block.get("name"), arguments)
            if not any(c.get("id") == call["id"] and call["id"] for c in calls):
                calls.append(call)
            if "result" in block:  # Inspect's ContentToolUse: a server tool's call and result
                flush()
                error = True if block.get("error") else None
                text = result_text(block.get("result"), unread) or str(block.get("error") or "")
                out.append(new_message("tool", text, tool_call_id=block.get("id"), is_error=error))
        elif _is_tool_result(kind):
            flush()
            content = block.get("content")
            error = block.get("is_error")
            if error is None and _is_error_payload(content):
                error = True
            out.append(
                new_message(
                    "tool",
                    result_text(content, unread),
                    tool_call_id=block.get("tool_use_id"),
                    is_error=bool(error) if error is not None else None,
                )
            )
        else:
            texts.append(block_text(block, unread))
    flush()
    if not out:  # an empty turn stays a turn
        out.append(new_message(str(role), None, **rest))
    return out
